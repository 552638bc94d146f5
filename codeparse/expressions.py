"""The expression reader: builds small trees for the expressions inference needs.

Statements are matched whole by the grammar; most expressions are never turned into
trees (calls and attribute reads are found by one scan, see ``extract.py``).  Only
conditions and the definitions they depend on are read here, on demand.

The reader is the engine half of the grammar's ``[expression]`` section: it matches
``atom`` at a position, then ``trailer`` repeatedly; inside brackets ``items`` (a
recursive pattern, so the whole bracket is checked in one C-level match) gives the
spans of the items, and each item is read in turn.  Depth is bounded by the
grammar's ``max_expression_depth``; past it an :class:`Opaque` node stands for the rest.
"""

from __future__ import annotations

from typing import Optional, Union

from .grammar import Grammar

__all__ = ["Name", "Const", "Attr", "CallExpr", "Index", "Seq", "Opaque", "Expr", "ExpressionReader"]


class _Node:
    __slots__ = ("start", "end")

    def children(self) -> list["Expr"]:
        return []


class Name(_Node):
    __slots__ = ("id",)

    def __init__(self, id: str, start: int, end: int):
        self.id, self.start, self.end = id, start, end


class Const(_Node):
    """A string or number literal (``True``/``None`` are :class:`Name`)."""

    __slots__ = ("kind", "text")

    def __init__(self, kind: str, text: str, start: int, end: int):
        self.kind, self.text, self.start, self.end = kind, text, start, end


class Attr(_Node):
    __slots__ = ("value", "attr")

    def __init__(self, value: "Expr", attr: str, start: int, end: int):
        self.value, self.attr, self.start, self.end = value, attr, start, end

    def children(self):
        return [self.value]


class CallExpr(_Node):
    __slots__ = ("func", "args", "keywords")

    def __init__(self, func: "Expr", args: list, keywords: list, start: int, end: int):
        self.func, self.args, self.keywords = func, args, keywords
        self.start, self.end = start, end

    def children(self):
        return [self.func, *self.args, *(v for _, v in self.keywords)]


class Index(_Node):
    __slots__ = ("value", "items")

    def __init__(self, value: "Expr", items: list, start: int, end: int):
        self.value, self.items, self.start, self.end = value, items, start, end

    def children(self):
        return [self.value, *self.items]


class Seq(_Node):
    """A tuple, list or dict display (dict items alternate key, value)."""

    __slots__ = ("kind", "items")

    def __init__(self, kind: str, items: list, start: int, end: int):
        self.kind, self.items, self.start, self.end = kind, items, start, end

    def children(self):
        return list(self.items)


class Opaque(_Node):
    """Text that was not read into a tree (too deep, or not an expression)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str, start: int, end: int):
        self.reason, self.start, self.end = reason, start, end


Expr = Union[Name, Const, Attr, CallExpr, Index, Seq, Opaque]

_CLOSERS = {"paren": ")", "list": "]", "dict": "}", "call": ")", "index": "]"}


class ExpressionReader:
    """Reads expressions of one source text with one grammar."""

    def __init__(self, text: str, grammar: Grammar):
        self.text = text
        expression = grammar.expression
        self._atom = expression["atom"].match
        self._trailer = expression["trailer"].match
        self._items = expression["items"].match
        self._keyword = expression["keyword"].match
        self._grammar = grammar  # `dict_entry` is looked up when a dict is read (rare)
        self.max_depth = int(grammar.limits["max_expression_depth"])
        self.too_deep: Optional[int] = None  # offset where the depth limit was hit

    def read(self, start: int, end: int) -> Expr:
        """The expression that spans exactly ``text[start:end]``."""
        node, stop = self._expr(start, end, 0)
        if stop != end:
            return Opaque("not an expression", start, end)
        return node

    def _expr(self, pos: int, end: int, depth: int) -> tuple[Expr, int]:
        text = self.text
        if depth > self.max_depth:
            if self.too_deep is None:
                self.too_deep = pos
            return Opaque("too deep", pos, end), end
        m = self._atom(text, pos, end)
        if m is None:
            return Opaque("not an expression", pos, end), end
        kind = m.lastgroup
        if kind == "name":
            node: Expr = Name(m.group(), pos, m.end())
            cur = m.end()
        elif kind in ("string", "number"):
            node = Const(kind, m.group(), pos, m.end())
            cur = m.end()
        else:
            items, close = self._bracket(m.end(), end, depth, kind == "dict")
            if close is None:
                return Opaque("unbalanced bracket", pos, end), end
            cur = close + 1
            if kind == "paren" and len(items[0]) == 1 and not items[1]:
                node = items[0][0]  # a parenthesised expression, not a tuple
                node = _reparent(node, pos, cur)
            else:
                seq_kind = {"paren": "tuple", "list": "list", "dict": "dict"}[kind]
                node = Seq(seq_kind, items[0], pos, cur)
        while cur < end:
            t = self._trailer(text, cur, end)
            if t is None:
                break
            trailer = t.lastgroup
            if trailer == "attr":
                node = Attr(node, t.group("attr"), pos, t.end())
                cur = t.end()
                continue
            (args, _trailing, keywords), close = self._bracket(t.end(), end, depth, False, calls=trailer == "call")
            if close is None:
                return Opaque("unbalanced bracket", pos, end), end
            cur = close + 1
            if trailer == "call":
                node = CallExpr(node, args, keywords, pos, cur)
            else:
                node = Index(node, args, pos, cur)
        return node, cur

    def _bracket(self, pos: int, end: int, depth: int, is_dict: bool, calls: bool = False):
        """Items between an opening bracket (before ``pos``) and its closer."""
        text = self.text
        m = self._items(text, pos, end)
        if m is None:
            return ([], False, []), None
        close = m.end()
        if close >= end or text[close] not in ")]}":
            return ([], False, []), None
        items: list[Expr] = []
        keywords: list[tuple[str, Expr]] = []
        for start, stop in m.spans("item"):
            if is_dict:
                e = self._grammar.expression["dict_entry"].match(text, start, stop)
                if e is not None:
                    key, _ = self._expr(e.start("key"), e.end("key"), depth + 1)
                    value, _ = self._expr(e.start("value"), e.end("value"), depth + 1)
                    items.extend((key, value))
                    continue
            if calls:
                k = self._keyword(text, start, stop)
                if k is not None:
                    value, _ = self._expr(k.end(), stop, depth + 1)
                    keywords.append((k.group("keyword"), value))
                    continue
            node, _ = self._expr(start, stop, depth + 1)
            items.append(node)
        return (items, m.group("trailing") is not None, keywords), close


def _reparent(node: Expr, start: int, end: int) -> Expr:
    """A parenthesised expression keeps its own node; only the span grows."""
    node.start, node.end = start, end
    return node


def walk(node: Expr):
    """Every node of a tree, parents first."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children()))
