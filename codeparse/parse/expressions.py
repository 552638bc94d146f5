"""The expression reader: builds small trees for the expressions inference needs.

Statements are matched whole by the grammar; most expressions are never turned into
trees (calls and attribute reads are found by one scan, see ``extract.py``).  Only
conditions and the definitions they depend on are read here, on demand.

The reader is the engine half of the grammar's ``[expression]`` section.  Most text it
reads is a name, a dotted name (the grammar's ``dotted``: split at its dots) or a call whose
arguments are names, numbers and strings (``flat_call``: one match gives the callee or the
receiver and method, and the arguments; :meth:`ExpressionReader._flat`).  The rest is
mostly one well-formed expression of names, numbers, strings, brackets, separators and
keywords: one ``findall`` of the grammar's ``tokens`` splits it, and the tree is built
bottom-up from the tokens with a stack of the brackets open (:meth:`ExpressionReader._tree`),
without a match per atom or a split per bracket.  Where the tokens do not make such an
expression (a character no token takes, a closer that is not the opener's, text after an
item, nesting as deep as the limit) the general reader below reads it; wherever the token
read gives a tree, it is the one the general reader builds (property tests check both on
random text, mutated expressions and every read of the fixtures).

The general reader matches ``atom`` at a position, then ``trailer`` repeatedly; inside
brackets ``items`` (a recursive pattern, so the whole bracket is checked in one C-level
match) gives the spans of the items, and each item is read in turn.  Depth is bounded by
the grammar's ``max_expression_depth``; past it an :class:`Opaque` node stands for the rest.

Where the text read holds no line break (most of it), the items of a bracket are found
by counting brackets and separators in one ``re`` pass (:func:`split_items`) that reads
each string literal whole with the grammar's ``string_item`` fragment (the grammar's
``[lines].string_quotes`` and ``bracket_pairs`` say which characters those are); it gives
what ``items`` gives on such text (property tests check it against the pattern of every
grammar, with and without strings).  Elsewhere, and where a quote starts no string,
``items`` is matched (a ``regex`` pattern: some ten times slower).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Iterator, Optional, Union

from ..grammar.engine import Grammar, char_class

__all__ = ["Name", "Const", "Attr", "CallExpr", "Index", "Seq", "Opaque", "Expr", "ExpressionReader", "names_in"]


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
# The separator of the grammars' ``items`` (``SEP``: a comma, then spaces), for split_items.
_SEPARATOR = ","
_SPACE = " "
# What separates the parts of the grammars' ``dotted`` fragment, as the ``attr`` trailer reads it.
_ATTRIBUTE_DOT = "."
FALLBACK = object()  # split_items cannot decide: match ``items``
_SEQ_KINDS = {"paren": "tuple", "list": "list", "dict": "dict"}
# What a token of the grammars' ``tokens`` is, by its first character (:func:`token_kinds`).
_T_NAME, _T_NUMBER, _T_STRING, _T_OPEN, _T_CLOSE, _T_SEP, _T_DOT = range(7)
_KEYWORD = "="  # ends a name token that starts a keyword argument


def structure_finder(grammar: Grammar):
    """``finditer`` of the characters that split items (brackets and the separator), and
    the grammar's openers -> closers; None when the grammar names no brackets or quotes."""
    pairs = grammar.bracket_pairs
    quotes = grammar.string_quotes
    if not pairs or not quotes:
        return None
    return char_class("".join(o + c for o, c in pairs) + _SEPARATOR).finditer, dict(pairs), quotes


def _top_level(text: str, start: int, end: int, finder, openers: dict) -> Iterator[int]:
    """The offset of each separator or closer of ``text[start:end]`` that no bracket
    encloses, in order; ``-1`` (and nothing after it) where brackets do not nest or stay
    open at ``end``."""
    stack: list[str] = []
    for m in finder(text, start, end):
        at = m.start()
        ch = text[at]
        closer = openers.get(ch)
        if closer is not None:
            stack.append(closer)
        elif not stack:
            yield at
        elif ch != _SEPARATOR and stack.pop() != ch:
            yield -1
            return
    if stack:
        yield -1


def string_structure_finder(grammar: Grammar):
    """:func:`structure_finder` that also reads string literals: its ``finditer`` gives each
    string the grammar's ``string_item`` fragment matches as one match (longer than one
    character: nothing inside it splits items) and each quote character that starts none
    (:func:`split_items` then defers to ``items``).  None where :func:`structure_finder` is,
    or where ``string_item`` needs ``regex``."""
    found = structure_finder(grammar)
    if found is None:
        return None
    import re

    string = grammar.fragments["string_item"]
    if not isinstance(string, re.Pattern):
        return None
    finder, openers, quotes = found
    chars = "".join(o + c for o, c in grammar.bracket_pairs) + _SEPARATOR + "".join(quotes)
    from ..grammar.compiled import compile_re

    return compile_re("(?:" + string.pattern + ")|[" + re.escape(chars) + "]").finditer, openers, quotes


def split_items(text: str, pos: int, end: int, finder, openers: dict):
    """``(item spans, trailing comma, closer offset)`` of the bracket whose items start at
    ``pos``, as the grammar's ``items`` gives them on ``text[pos:end]`` without line breaks
    (and without quotes, unless ``finder`` is :func:`string_structure_finder`'s); the closer
    offset is None when ``items`` stops short of a closer; ``FALLBACK`` where brackets
    inside do not nest or a quote starts no string (``items`` is matched there).

    One pass over the brackets and separators (strings skipped whole) with a stack of
    the closers expected; the items end at the separators and the closer no bracket
    encloses."""
    spans: list[tuple[int, int]] = []
    start = pos  # of the current item; the first one keeps its leading spaces
    stack: list[str] = []
    for m in finder(text, pos, end):
        ch = m.group()
        if len(ch) > 1:  # a string literal
            continue
        closer = openers.get(ch)
        if closer is not None:
            stack.append(closer)
            continue
        if stack:
            if ch != _SEPARATOR and stack.pop() != ch:  # a quote is no closer either
                return FALLBACK
            continue
        if ch != _SEPARATOR and ch not in openers.values():
            return FALLBACK  # a quote that starts no string
        # A separator or a closer at the top level ends the current item.
        at = m.start()
        if at == start:  # an empty item: `items` ends before it
            if not spans:
                return spans, False, (at if ch != _SEPARATOR else None)
            return spans, True, (at if ch != _SEPARATOR else None)
        spans.append((start, at))
        if ch != _SEPARATOR:
            return spans, False, at
        nxt = at + 1
        while nxt < end and text[nxt] == _SPACE:
            nxt += 1
        start = nxt
    return FALLBACK


def split_list(text: str, start: int, end: int, finder, openers: dict):
    """The item spans of ``text[start:end]`` as a full match of the grammars' ``expr_items``
    gives them (``a, b``, ``a, b, ``), or None where that does not match (an empty item),
    for text without quotes or line breaks; ``FALLBACK`` where brackets do not nest or a
    closer stands alone (``expr_items`` is matched there)."""
    spans: list[tuple[int, int]] = []
    item = start  # start of the current item; the first one keeps its leading spaces
    for at in _top_level(text, start, end, finder, openers):
        if at < 0 or text[at] != _SEPARATOR:
            return FALLBACK
        if at == item:  # an empty item: no full match
            return None
        spans.append((item, at))
        item = at + 1
        while item < end and text[item] == _SPACE:
            item += 1
    if item < end:
        spans.append((item, end))
    return spans


def token_kinds(grammar: Grammar) -> Optional[tuple]:
    """What :meth:`ExpressionReader._tree` reads from the grammar: the kind of a
    token by its first character (ASCII: an identifier's first character (the grammar's
    ``identifier``) starts a name, a quote a string, a dot attributes (or a number such as
    ``.5``), the separator a separator, an opener or a closer itself; any other one starts
    a number, as no other token of ``tokens`` does), each opener's closer, and what each
    opener starts as an atom (``paren``, ``list``, ``dict``: the grammar's ``atom``) and
    after an expression (``call``, ``index``, or nothing: its ``trailer``).  None where
    the grammar has no ``tokens`` pattern."""
    expression = grammar.expression
    if "tokens" not in expression or "identifier" not in grammar.fragments or not grammar.bracket_pairs:
        return None
    identifier = grammar.fragments["identifier"].fullmatch
    kinds: dict[str, int] = {}
    for code in range(128):
        ch = chr(code)
        kinds[ch] = _T_NAME if identifier(ch) is not None else _T_NUMBER
    for ch in grammar.string_quotes:
        kinds[ch] = _T_STRING
    kinds[_SEPARATOR] = _T_SEP
    kinds[_ATTRIBUTE_DOT] = _T_DOT
    closers, atoms, trailers = {}, {}, {}
    for opener, closer in grammar.bracket_pairs:
        kinds[opener], kinds[closer] = _T_OPEN, _T_CLOSE
        closers[opener] = closer
        atom = expression["atom"].fullmatch(opener)
        trailer = expression["trailer"].fullmatch(opener)
        if atom is None or atom.lastgroup not in _SEQ_KINDS:
            return None
        atoms[opener] = atom.lastgroup
        if trailer is not None:
            trailers[opener] = trailer.lastgroup
    return kinds, closers, atoms, trailers


def _dotted_name(text: str, start: int) -> Expr:
    """The tree of a name or dotted name (``self.layer1.conv``) at ``start``, as an atom
    and attribute trailers read it, split at its dots without a match per part."""
    parts = text.split(_ATTRIBUTE_DOT)
    cur = start + len(parts[0])
    node: Expr = Name(parts[0], start, cur)
    for attr in parts[1:]:
        cur += 1 + len(attr)
        node = Attr(node, attr, start, cur)
    return node


def _close(stack: list, trailing: bool, end: int) -> tuple[Expr, int, Optional[list]]:
    """The node of the innermost open bracket of :meth:`ExpressionReader._tree`,
    closed at ``end``, its start, and the bracket open around it."""
    _closer, kind, start, base, items, keywords, _keyword = stack.pop()
    if kind == "call":
        node: Expr = CallExpr(base, items, keywords, start, end)
    elif kind == "index":
        node = Index(base, items, start, end)
    elif kind == "paren" and len(items) == 1 and not trailing:
        node = _reparent(items[0], start, end)
    else:
        node = Seq(_SEQ_KINDS[kind], items, start, end)
    return node, start, (stack[-1] if stack else None)


# The groups of the grammars' ``flat_call``, in order (:meth:`ExpressionReader._flat` reads them so).
_FLAT_GROUPS = ("callee", "receiver", "method", "keyword1", "operand1", "sep1", "keyword2", "operand2", "sep2",
                "keyword3", "operand3", "sep3", "more")


def _flat_call(expression) -> Optional[object]:
    """``fullmatch`` of the grammar's ``flat_call``; None where it has none, or where its
    groups are not :data:`_FLAT_GROUPS` in that order."""
    if "flat_call" not in expression or "flat_argument" not in expression:
        return None
    pattern, argument = expression["flat_call"], expression["flat_argument"]
    if _group_names(pattern) != _FLAT_GROUPS or _group_names(argument) != ("keyword", "operand", "sep"):
        return None
    return pattern.fullmatch


def _group_names(pattern) -> tuple:
    """The names of a pattern's groups in their order (None for an unnamed one)."""
    names: list = [None] * pattern.groups
    for name, index in pattern.groupindex.items():
        names[index - 1] = name
    return tuple(names)


_MATCHERS: dict[int, tuple] = {}


def _matchers(grammar: Grammar) -> tuple:
    """What a reader reads from its grammar, looked up once per grammar (a reader is made
    per text): the ``atom``, ``trailer``, ``items`` and ``keyword`` matchers, the counting
    finder and openers (:func:`string_structure_finder`'s, else :func:`structure_finder`'s),
    the quote characters that rule counting out (none when the finder reads strings), the
    ``dotted``, ``tokens``, ``flat_call`` and ``flat_argument`` matchers, :func:`token_kinds`,
    the closers and the token kinds by first character."""
    found = _MATCHERS.get(id(grammar))
    if found is None or found[0] is not grammar:
        if len(_MATCHERS) >= 64:  # grammars loaded from files by tests: bounded
            _MATCHERS.clear()
        expression = grammar.expression
        structure = string_structure_finder(grammar)
        if structure is not None:
            counting = (structure[0], structure[1], ())
        else:
            structure = structure_finder(grammar)
            counting = structure if structure is not None else (None, None, ())
        fragments = grammar.fragments
        kinds = token_kinds(grammar)
        found = _MATCHERS[id(grammar)] = (grammar, (
            expression["atom"].match, expression["trailer"].match, expression["items"].match,
            expression["keyword"].match, *counting,
            fragments["dotted"].fullmatch if "dotted" in fragments else None,
            expression["tokens"].findall if "tokens" in expression else None, kinds,
            _flat_call(expression),
            expression["flat_argument"].findall if "flat_argument" in expression else None,
            frozenset(closer for _opener, closer in grammar.bracket_pairs),
            kinds[0] if kinds is not None else None))
    return found[1]


class ExpressionReader:
    """Reads expressions of one source text with one grammar."""

    def __init__(self, text: str, grammar: Grammar):
        self.text = text
        self._grammar = grammar  # `dict_entry` is looked up when a dict is read (rare)
        # `_quotes`: the quote characters that make `read` match `items` (none when the
        # counting finder reads strings itself).
        # `_closers`: text that ends with one is no name, text that ends with none no call
        # (which of the two is tried first: each only takes what it reads exactly).
        (self._atom, self._trailer, self._items, self._keyword, self._finder, self._openers, self._quotes,
         self._dotted, self._tokens, self._token_kinds, self._flat_call, self._flat_arguments, self._closers,
         self._kinds) = _matchers(grammar)
        if self._token_kinds is None:
            self._tokens = None
        self.max_depth = int(grammar.limits["max_expression_depth"])
        if self._flat_arguments is None or self._token_kinds is None or self.max_depth < 1:
            self._flat_call = None  # (arguments are one level deep)
        self.too_deep: Optional[int] = None  # offset where the depth limit was hit
        self._counting = False  # the text being read is split by counting (no line break)

    def read(self, start: int, end: int) -> Expr:
        """The expression that spans exactly ``text[start:end]``."""
        text = self.text
        if text[end - 1:end] in self._closers:
            # Perhaps a call of names, numbers and strings (no name ends with a closer).
            flat = self._flat_call
            if flat is not None:
                m = flat(text, start, end)
                if m is not None:
                    node = self._flat(m.groups(), start, end)
                    if node is not None:
                        return node
        else:
            dotted = self._dotted
            if dotted is not None and dotted(text, start, end) is not None:
                # A name or a dotted name (`self.layer1.conv`), as an atom and attribute
                # trailers read it, without a match per part.
                name = text[start:end]
                return Name(name, start, end) if _ATTRIBUTE_DOT not in name else _dotted_name(name, start)
        tokens = self._tokens
        if tokens is not None:
            node = self._tree(tokens(text, start, end), start, end)
            if node is not None:
                return node
        counting = self._finder is not None and text.find("\n", start, end) == -1
        if counting:
            for quote in self._quotes:
                if text.find(quote, start, end) != -1:
                    counting = False
                    break
        outer, self._counting = self._counting, counting
        try:
            node, stop = self._expr(start, end, 0)
        finally:
            self._counting = outer
        if stop != end:
            return Opaque("not an expression", start, end)
        return node

    def _flat(self, groups: tuple, start: int, end: int) -> Optional[CallExpr]:
        """The tree of a call whose arguments are names, numbers and strings (the grammar's
        ``flat_call``, whose match on ``text[start:end]`` gave ``groups``): its callee, or
        its receiver in parentheses and the method's name; the arguments in the match's
        groups, three at a time (keyword, operand, separator; beyond three, ``flat_argument``
        reads the rest), each placed by the lengths before it."""
        callee = groups[0]
        if callee is not None:
            at = start + len(callee)
            func = Name(callee, start, at) if _ATTRIBUTE_DOT not in callee else _dotted_name(callee, start)
        else:  # `(recv).method(`: the receiver's node spans its parentheses
            at = start + len(groups[1]) + 2
            func = Name(groups[1], start, at)
            for attr in groups[2][1:].split(_ATTRIBUTE_DOT):
                at += 1 + len(attr)
                func = Attr(func, attr, start, at)
        items: list[Expr] = []
        keywords: list[tuple[str, Expr]] = []
        if groups[4] is None:  # no argument
            return CallExpr(func, items, keywords, start, end)
        at += 1
        kinds = self._kinds
        i, stop_at = 3, 12  # the argument's keyword, operand and separator: groups[i:i + 3]
        if groups[12]:  # beyond the third argument (`more`: empty after a trailing comma)
            more = list(groups[3:12])
            for found in self._flat_arguments(self.text, end - 1 - len(groups[12]), end - 1):
                more.extend(found)
            groups, i, stop_at = more, 0, len(more)
        while True:
            keyword = groups[i]
            operand = groups[i + 1]
            if keyword:
                at += len(keyword)
            stop = at + len(operand)
            kind = kinds.get(operand[0])
            if kind is _T_NAME:
                node = Name(operand, at, stop) if _ATTRIBUTE_DOT not in operand else _dotted_name(operand, at)
            elif kind is _T_STRING:
                node = Const("string", operand, at, stop)
            elif kind is _T_NUMBER:
                node = Const("number", operand, at, stop)
            else:  # a character token_kinds does not know: the tokens or the matches read it
                return None
            if keyword:
                keywords.append((keyword[:-1], node))
            else:
                items.append(node)
            sep = groups[i + 2]
            if sep is None:
                break
            at = stop + len(sep)
            i += 3
            if i >= stop_at or groups[i + 1] is None:
                break
        return CallExpr(func, items, keywords, start, end)

    def _tree(self, found: list[str], start: int, end: int) -> Optional[Expr]:
        """The tree of ``text[start:end]`` from ``found``, the grammar's ``tokens`` there
        (a ``findall``), built bottom-up with a stack of the brackets open; None where the
        text is not one well-formed expression of names, numbers, strings, brackets,
        attributes, separators and keywords (:meth:`_expr` then reads it, and says what is
        wrong).

        A token is known by its first character (:func:`token_kinds`) and placed by the
        lengths of the tokens before it; where tokens leave a character out, the lengths do
        not add up to the text's and the read declines.  Where it gives a tree, it is the one
        :meth:`_expr` builds: an item is an atom and its trailers, items end at a separator
        or a closer, a keyword starts an item of a call, a closer right after a separator is
        a trailing comma; anything else (text :meth:`_expr` would leave unread, a closer that
        is not the opener's, brackets left open, nesting as deep as the depth limit) declines."""
        kinds, closers, atoms, trailers = self._token_kinds
        stack: list[list] = []  # per open bracket: [closer, kind, start, base, items, keywords, keyword]
        frame: Optional[list] = None  # the innermost open bracket
        node: Optional[Expr] = None  # the expression read so far at this level (None: expecting one)
        pos = start  # where that expression starts
        at = start  # where the token starts
        after_sep = False  # a separator ended the last item (a closer now is a trailing comma)
        limit = self.max_depth
        for tok in found:
            kind = kinds.get(tok[0])
            nxt = at + len(tok)
            if node is None:  # expecting an operand, a keyword, or a closer
                if kind is _T_NAME:
                    last = tok[-1]
                    trailer = trailers.get(last)
                    if trailer is not None:
                        tok = tok[:-1]
                    elif last == _KEYWORD:
                        if frame is None or frame[1] != "call" or frame[6] is not None or _ATTRIBUTE_DOT in tok:
                            return None
                        frame[6] = tok[:-1]
                        at = nxt
                        continue
                    pos = at
                    if _ATTRIBUTE_DOT in tok:
                        node = _dotted_name(tok, at)
                    else:
                        node = Name(tok, at, at + len(tok))
                    if trailer is not None:
                        if len(stack) >= limit:
                            return None
                        frame = [closers[last], trailer, at, node, [], [], None]
                        stack.append(frame)
                        node = None
                        after_sep = False
                elif kind is _T_OPEN:
                    if len(stack) >= limit:
                        return None
                    frame = [closers[tok], atoms[tok], at, None, [], [], None]
                    stack.append(frame)
                    after_sep = False
                elif kind is _T_STRING:
                    pos = at
                    node = Const("string", tok, at, nxt)
                elif kind is _T_NUMBER:
                    pos = at
                    node = Const("number", tok, at, nxt)
                elif kind is _T_CLOSE:  # empty brackets, or a trailing comma
                    if frame is None or frame[0] != tok or frame[6] is not None:
                        return None
                    if not after_sep and (frame[4] or frame[5]):
                        return None
                    node, pos, frame = _close(stack, after_sep, nxt)
                    after_sep = False
                else:
                    return None
            # After an expression: a trailer, or the end of the item.
            elif kind is _T_SEP:
                if frame is None:
                    return None
                if frame[6] is None:
                    frame[4].append(node)
                else:
                    frame[5].append((frame[6], node))
                    frame[6] = None
                node = None
                after_sep = True
            elif kind is _T_CLOSE:
                if frame is None or frame[0] != tok:
                    return None
                if frame[6] is None:
                    frame[4].append(node)
                else:
                    frame[5].append((frame[6], node))
                node, pos, frame = _close(stack, False, nxt)
            elif kind is _T_DOT:
                if kinds.get(tok[1]) is not _T_NAME:  # a number such as `.5`: no trailer
                    return None
                last = tok[-1]
                trailer = trailers.get(last)
                cur = at
                for attr in (tok[1:-1] if trailer is not None else tok[1:]).split(_ATTRIBUTE_DOT):
                    cur += 1 + len(attr)
                    node = Attr(node, attr, pos, cur)
                if trailer is not None:
                    if len(stack) >= limit:
                        return None
                    frame = [closers[last], trailer, pos, node, [], [], None]
                    stack.append(frame)
                    node = None
                    after_sep = False
            elif kind is _T_OPEN and tok in trailers:
                if len(stack) >= limit:
                    return None
                frame = [closers[tok], trailers[tok], pos, node, [], [], None]
                stack.append(frame)
                node = None
                after_sep = False
            else:
                return None
            at = nxt
        if at != end or stack:
            return None
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
        cur = m.end()
        if kind == "name":
            node: Expr = Name(m.group(), pos, cur)
            if cur == end:
                return node, cur
        elif kind == "string" or kind == "number":
            node = Const(kind, m.group(), pos, cur)
        else:
            items, close = self._bracket(cur, end, depth, kind == "dict")
            if close is None:
                return Opaque("unbalanced bracket", pos, end), end
            cur = close + 1
            if kind == "paren" and len(items[0]) == 1 and not items[1]:
                node = items[0][0]  # a parenthesised expression, not a tuple
                node = _reparent(node, pos, cur)
            else:
                node = Seq(_SEQ_KINDS[kind], items[0], pos, cur)
        trailers = self._trailer
        while cur < end:
            t = trailers(text, cur, end)
            if t is None:
                break
            trailer = t.lastgroup
            if trailer == "attr":
                cur = t.end()
                node = Attr(node, t.group("attr"), pos, cur)
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
        found = split_items(text, pos, end, self._finder, self._openers) if self._counting else FALLBACK
        if found is FALLBACK:
            m = self._items(text, pos, end)
            if m is None:
                return ([], False, []), None
            close = m.end()
            if close >= end or text[close] not in ")]}":
                return ([], False, []), None
            spans, trailing = m.spans("item"), m.group("trailing") is not None
        else:
            spans, trailing, close = found
            if close is None:
                return ([], False, []), None
        items: list[Expr] = []
        keywords: list[tuple[str, Expr]] = []
        for start, stop in spans:
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
        return (items, trailing, keywords), close


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


_start = attrgetter("start")


def names_in(node: Expr) -> list[Name]:
    """The names of a tree, in textual order (a walk without a generator: the hot path of
    inference asks this of every definition it follows)."""
    out: list[Name] = []
    stack = [node]
    push = stack.extend
    while stack:
        n = stack.pop()
        kind = type(n)
        if kind is Name:
            out.append(n)
        elif kind is CallExpr:
            if n.keywords:
                push([v for _, v in reversed(n.keywords)])
            push(reversed(n.args))
            stack.append(n.func)
        elif kind is Attr:
            stack.append(n.value)
        elif kind is Index:
            push(reversed(n.items))
            stack.append(n.value)
        elif kind is Seq:
            push(reversed(n.items))
    out.sort(key=_start)  # keywords before positional arguments (bad text) come out of order
    return out
