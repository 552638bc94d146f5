"""Inference: what names stand for, and what each ``if`` condition depends on.

The printed text is close to SSA: every value is bound once to a name (``_2``,
``x0``, ``branch_testing``), except where both branches of an ``if`` or a loop body
assign the same name.  This module follows names back to their definitions
(def-use), resolves locals to paths from ``self`` (``conv = layer1.conv`` after
``layer1 = self.layer1`` is ``self.layer1.conv``), and classifies each condition by
its sources (``../shared/DESIGN.md`` §5):

* walking down from the condition, an operator listed in ``grammars/semantics.toml``
  ``[conditions]`` marks everything beneath it with its kind; the innermost mark wins;
* a source with no mark above it has its natural kind: an argument is ``argument``,
  a read of ``self`` state is ``attribute``, a runtime query is ``runtime``, a name
  that cannot be followed is ``unknown``; literals are not sources;
* a value assigned inside an ``if`` (or loop) and used outside it also depends on
  that ``if``'s condition (the loop's iteration), as in TorchScript's own IR where it
  is an output of the ``prim::If`` (``prim::Loop``) node;
* the condition's kind is the highest-priority kind among its sources, ``constant``
  when it has none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .expressions import Attr, CallExpr, Const, Expr, ExpressionReader, Index, Name, Opaque, Seq, walk

__all__ = ["Definition", "Scope", "FunctionFacts", "Semantics", "Inference", "PRIORITY"]

PRIORITY = ("tensor_value", "tensor_shape", "argument", "attribute", "runtime", "unknown", "constant")
_RANK = {k: i for i, k in enumerate(PRIORITY)}
_MAX_RESOLVED = 2000  # characters of a resolved condition before it stops expanding
_MAX_RESOLVE_DEPTH = 24
_EMPTY: tuple[frozenset, frozenset] = (frozenset(), frozenset())


def _union(results: list) -> tuple[frozenset, frozenset]:
    if not results:
        return _EMPTY
    if len(results) == 1:
        return results[0]
    return (frozenset().union(*(r[0] for r in results)), frozenset().union(*(r[1] for r in results)))


@dataclass(frozen=True)
class Scope:
    """A block a statement sits in: the ``if``/loop that owns it, and which branch."""

    kind: str  # "if", "for", "while", "with", "def"
    branch: str  # "then", "else", "body"
    test: tuple[int, int]  # span of the condition / iteration expression
    key: int  # identity of the owning statement (its start offset)


@dataclass
class Definition:
    """One binding of a name: an assignment, a for target, or a parameter."""

    name: str
    kind: str  # "assign", "for", "with", "param"
    value: Optional[tuple[int, int]]  # span of the value expression
    element: Optional[int]  # index into a tuple value that is not a display
    scopes: tuple[Scope, ...]
    annotation: Optional[str] = None
    start: int = 0


@dataclass
class FunctionFacts:
    """What inference needs to know about one function."""

    params: dict[str, Optional[str]]  # name -> annotation
    defs: dict[str, list[Definition]] = field(default_factory=dict)
    # Declared `self` attributes: name -> (role, type), from the class, if any.
    declared: Optional[dict[str, tuple[str, Optional[str]]]] = None
    self_name: str = "self"
    # Declarations of other classes (an archive's), for paths of more than one step:
    # qualified class name -> its declared attributes, or None when unknown.
    types: Optional[Callable[[str], Optional[dict[str, tuple[str, Optional[str]]]]]] = None


class Semantics:
    """The tables of ``grammars/semantics.toml``, in the shapes lookups want."""

    def __init__(self, data: dict[str, Any]):
        names, calls, cond = data["names"], data["calls"], data["conditions"]
        self.self_name: str = names["self"]
        self.root: str = names["qualified_root"]
        self.literals: dict[str, str] = dict(names["literals"])
        self.constants_object: str = names["constants_object"]
        self.custom_classes: str = names["custom_classes"]
        self.prefixes: list[tuple[str, str]] = [tuple(p) for p in calls["operator_prefixes"]]
        self.ops_root: str = calls["ops_root"]
        self.builtins: dict[str, str] = dict(calls["builtin_operators"])
        self.intrinsics = frozenset(calls["intrinsics"])
        self.value_intrinsics = frozenset(calls["value_intrinsics"])
        self.module_methods = frozenset(calls["module_methods"])
        self.none_checks = frozenset(calls["none_checks"])
        self.comparisons = frozenset(calls["comparisons"])
        self.class_kinds: dict[str, str] = dict(data["classes"]["kinds"])
        self.tensor_types = frozenset(data["classes"]["tensor_types"])
        self.value_ops = frozenset(cond["tensor_value"])
        self.shape_ops = frozenset(cond["tensor_shape"])
        self.shape_prefix: str = cond["tensor_shape_prefix"]
        self.tensor_only = frozenset(cond["tensor_only"])
        self.conversions = frozenset(cond["tensor_value_conversions"])
        self.runtime = frozenset(cond["runtime"])

    def operator(self, callee: str) -> Optional[str]:
        """``torch.conv2d`` -> ``aten::conv2d``; ``ops.prim.dtype`` -> ``prim::dtype``."""
        if "." not in callee:
            return self.builtins.get(callee)
        if callee.startswith(self.ops_root + "."):
            parts = callee.split(".")
            if len(parts) == 3:
                return f"{parts[1]}::{parts[2]}"
            return None
        for prefix, template in self.prefixes:
            if callee.startswith(prefix):
                rest = callee[len(prefix):]
                if rest and "." not in rest:
                    return template.format(op=rest)
        return None

    def mark(self, op_name: str) -> Optional[str]:
        """The condition kind an operator (without namespace) marks its operands with."""
        if op_name in self.runtime:
            return "runtime"
        if op_name in self.value_ops:
            return "tensor_value"
        if op_name in self.shape_ops or op_name.startswith(self.shape_prefix):
            return "tensor_shape"
        return None


def literal_type(node: Expr, sem: Semantics) -> Optional[str]:
    if isinstance(node, Const):
        if node.kind == "string":
            return "str"
        t = node.text
        if t.endswith("j"):
            return "complex"
        return "float" if any(c in t for c in ".eEn") else "int"
    if isinstance(node, Name) and node.id in sem.literals:
        return sem.literals[node.id]
    return None


class Inference:
    """Def-use resolution and condition classification for one function."""

    def __init__(self, text: str, reader: ExpressionReader, facts: FunctionFacts, sem: Semantics):
        self.text = text
        self.reader = reader
        self.facts = facts
        self.sem = sem
        self._trees: dict[tuple[int, int], Expr] = {}
        self._paths: dict[str, Optional[str]] = {}
        self._memo_results: dict = {}
        self._on_stack: dict = {}
        self._low = 0

    # -- trees and names -------------------------------------------------------
    def tree(self, span: tuple[int, int]) -> Expr:
        node = self._trees.get(span)
        if node is None:
            node = self._trees[span] = self.reader.read(*span)
        return node

    def value_of(self, d: Definition) -> Optional[Expr]:
        """The expression a definition binds (the tuple element, when it has one)."""
        if d.value is None:
            return None
        node = self.tree(d.value)
        if d.element is not None:
            if isinstance(node, Seq) and node.kind == "tuple" and d.element < len(node.items):
                return node.items[d.element]
        return node

    def single_def(self, name: str) -> Optional[Definition]:
        defs = self.facts.defs.get(name)
        if defs and len(defs) == 1 and defs[0].kind == "assign":
            return defs[0]
        return None

    def name_path(self, name: str, depth: int = 0) -> Optional[str]:
        """The path from ``self`` a name stands for (``self.layer1``), if it does."""
        if name == self.facts.self_name and name in self.facts.params:
            return name
        if name in self._paths:
            return self._paths[name]
        self._paths[name] = None  # cycle guard
        d = self.single_def(name)
        path = None
        if d is not None and depth < _MAX_RESOLVE_DEPTH:
            node = self.value_of(d)
            if d.element is None or node is not self.tree(d.value):
                path = self.expr_path(node, depth + 1) if node is not None else None
        self._paths[name] = path
        return path

    def expr_path(self, node: Expr, depth: int = 0) -> Optional[str]:
        """The path from ``self`` an expression reads, if it is one."""
        if isinstance(node, Name):
            return self.name_path(node.id, depth)
        if isinstance(node, Attr):
            base = self.expr_path(node.value, depth)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, CallExpr) and isinstance(node.func, Name) and node.func.id == "getattr":
            if len(node.args) == 2 and isinstance(node.args[1], Const) and node.args[1].kind == "string":
                base = self.expr_path(node.args[0], depth)
                return f"{base}.{unquote(node.args[1].text)}" if base else None
        return None

    def callee_target(self, node: Expr) -> tuple[str, Optional[str]]:
        """Kind and qualified target of a callee: ("operator", "aten::eq"), ("function", ...)."""
        text = dotted(node)
        if text is None:
            return "function", None
        if text in self.sem.intrinsics:
            return "intrinsic", text
        op = self.sem.operator(text)
        if op is not None:
            return "operator", op
        if text.startswith(self.sem.root + "."):
            return "function", text
        if "." not in text:
            d = self.single_def(text)
            if d is not None:
                value = self.value_of(d)
                bound = dotted(value) if value is not None else None
                if bound and bound.startswith(self.sem.root + "."):
                    return "function", bound
        return "function", None

    def declared(self, path: str) -> tuple[Optional[str], Optional[str]]:
        """Declared (role, type) of a one-step path ``self.x``."""
        decl = self.facts.declared
        if decl is None:
            return None, None
        head, _, rest = path.partition(".")
        if "." in rest:
            if self.facts.types is None:
                return None, None
            first, _, more = rest.partition(".")
            role, typ = decl.get(first, ("unknown", None))
            for part in more.split("."):
                attrs = self.facts.types(typ) if typ else None
                if attrs is None:
                    return None, None
                role, typ = attrs.get(part, ("unknown", None))
            return role, typ
        return decl.get(rest, ("unknown", None))

    # -- conditions ------------------------------------------------------------
    # A visit returns the sources beneath a node as a set of
    # (ref, mark, natural kind, type): `mark` is the innermost marking operator above
    # the source inside the node (None if none), so an outer mark applies only where
    # there is none yet.  Results are memoized per name use and per definition; a
    # result computed while a definition up the stack was re-entered (a loop-carried
    # value) is incomplete and is not memoized (Tarjan's low-link test).

    def condition(self, test: tuple[int, int], scopes: tuple[Scope, ...]) -> dict:
        node = self.tree(test)
        found, pins = self._visit(node, scopes)
        pins = dict(pins)
        if isinstance(node, (Name, Attr)):
            # The whole condition is this value: it is a bool.
            ref, declared = self._ref_type(node)
            if ref and not declared:
                pins.setdefault(ref, "bool")
        # One entry per source, with the highest-priority kind it reaches the condition by.
        best: dict[str, tuple[str, Optional[str]]] = {}
        for ref, mark, natural, typ in found:
            kind = mark or natural
            if ref not in best or _RANK[kind] < _RANK[best[ref][0]]:
                best[ref] = (kind, typ or (best[ref][1] if ref in best else None))
            elif typ and not best[ref][1]:
                best[ref] = (best[ref][0], typ)
        sources = [
            {"ref": ref, "kind": kind, "type": typ or pins.get(ref) or "unknown"}
            for ref, (kind, typ) in best.items()
        ]
        sources.sort(key=lambda s: (_RANK[s["kind"]], s["ref"]))
        kind = sources[0]["kind"] if sources else "constant"
        return {
            "text": self.text[test[0]:test[1]],
            "resolved": self.resolved(node),
            "kind": kind,
            "sources": sources,
            "none_check": self.none_check(node),
        }

    def _memo(self, key, compute):
        memo = self._memo_results
        if key in memo:
            return memo[key]
        stack = self._on_stack
        if key in stack:
            self._low = min(self._low, stack[key])
            return _EMPTY
        depth = stack[key] = len(stack)
        outer_low, self._low = self._low, depth
        result = compute()
        del stack[key]
        if self._low >= depth:
            memo[key] = result
        self._low = min(outer_low, self._low)
        return result

    def _ref_type(self, node: Expr) -> tuple[Optional[str], Optional[str]]:
        """The source a simple operand stands for (param name or self path) and its type."""
        if isinstance(node, Name):
            if node.id in self.facts.params and node.id != self.facts.self_name:
                return node.id, self.facts.params[node.id]
            path = self.name_path(node.id)
            if path and path != self.facts.self_name:
                return path, self.declared(path)[1]
            d = self.single_def(node.id)
            if d is not None:
                value = self.value_of(d)
                if isinstance(value, (Name, Attr)):
                    return self._ref_type(value)
            return None, None
        path = self.expr_path(node)
        if path and path != self.facts.self_name:
            return path, self.declared(path)[1]
        return None, None

    def _is_tensor(self, node: Expr) -> Optional[bool]:
        _, typ = self._ref_type(node)
        if typ is None:
            return None
        return typ in self.sem.tensor_types

    def _visit(self, node: Expr, scopes: tuple[Scope, ...]):
        """(sources, pins) beneath ``node``, used at ``scopes``."""
        sem = self.sem
        if isinstance(node, Name):
            name = node.id
            if name in sem.literals or name == self.facts.self_name:
                return _EMPTY
            if name in self.facts.params:
                return frozenset({(name, None, "argument", self.facts.params[name])}), frozenset()
            if not self.facts.defs.get(name):
                return frozenset({(name, None, "unknown", None)}), frozenset()
            return self._memo(("name", name, id(scopes)), lambda: self._visit_name(name, scopes))
        if isinstance(node, Const):
            return _EMPTY
        if isinstance(node, Opaque):
            return frozenset({(self.text[node.start:node.end][:60], None, "unknown", None)}), frozenset()
        if isinstance(node, Attr):
            path = self.expr_path(node)
            if path:
                return frozenset({(path, None, "attribute", self.declared(path)[1])}), frozenset()
            root = node
            while isinstance(root, Attr):
                root = root.value
            if isinstance(root, Name) and root.id in (sem.constants_object, "torch", sem.root):
                return _EMPTY  # CONSTANTS.c0, torch.float32, __torch__.Color.RED: fixed values
            return self._visit(node.value, scopes)
        if isinstance(node, (Index, Seq)):
            return _union([self._visit(child, scopes) for child in node.children()])
        if isinstance(node, CallExpr):
            return self._visit_call(node, scopes)
        return _EMPTY

    def _visit_name(self, name: str, scopes: tuple[Scope, ...]):
        path = self.name_path(name)
        if path and path != self.facts.self_name:
            return frozenset({(path, None, "attribute", self.declared(path)[1])}), frozenset()
        parts = []
        for d in self.facts.defs[name]:
            parts.append(self._memo(("def", id(d)), lambda d=d: self._visit_def(d)))
            # Control dependence: the ifs and loops around the definition that do not
            # also surround the use.
            for scope in d.scopes:
                if scope not in scopes and scope.kind in ("if", "for", "while"):
                    parts.append(self._visit(self.tree(scope.test), d.scopes))
        return _union(parts)

    def _visit_def(self, d: Definition):
        if d.value is None:
            return _EMPTY
        value = self.value_of(d)
        return self._visit(value, d.scopes) if value is not None else _EMPTY

    def _visit_call(self, node: CallExpr, scopes):
        sem = self.sem
        func = node.func
        args = node.args
        operands = [*args, *(v for _, v in node.keywords)]
        # `(receiver).method(...)`: a method call on an object.
        if isinstance(func, Attr) and dotted(func) is None:
            receiver = func.value
            path = self.expr_path(receiver)
            is_module = path is not None and (
                path == self.facts.self_name
                or func.attr in sem.module_methods
                or self.declared(path)[0] in ("submodule", "unknown", None)
            )
            parts = [self._visit(a, scopes) for a in operands]
            if not is_module:
                parts.append(self._visit(receiver, scopes))
            return _union(parts)
        kind, target = self.callee_target(func)
        if kind == "intrinsic":
            if target == "getattr":
                path = self.expr_path(node)
                if path:
                    return frozenset({(path, None, "attribute", self.declared(path)[1])}), frozenset()
            if target in sem.value_intrinsics and args:
                operands = [args[-1]]
            elif target == "uninitialized":
                return _EMPTY
            return _union([self._visit(a, scopes) for a in operands])
        if kind == "operator" and target:
            name = target.rpartition(":")[2]
        else:
            name = target.rpartition(".")[2] if target else ""
        mark = sem.mark(name) if name else None
        if mark == "runtime":
            text = dotted(func) or name
            typ = "bool" if name.startswith(("is_", "has_", "are_", "_is_")) else None
            return frozenset({(text, None, "runtime", typ)}), frozenset()
        pins: set[tuple[str, str]] = set()
        if kind == "operator" and target:
            if name in sem.tensor_only:
                mark = "tensor_shape" if (args and self._is_tensor(args[0])) else None
            elif name in sem.conversions and target.startswith("aten::"):
                mark = "tensor_value" if (args and self._is_tensor(args[0]) is not False) else None
            elif mark is None and target in sem.comparisons and len(args) == 2:
                pins.update(self._pins(args))
            if mark in ("tensor_shape", "tensor_value") and args:
                ref, declared = self._ref_type(args[0])
                if ref and not declared:
                    pins.add((ref, "Tensor"))
        elif kind == "function" and mark not in ("tensor_value", "tensor_shape"):
            mark = None
        found, inner_pins = _union([self._visit(a, scopes) for a in operands])
        if mark:
            found = frozenset((ref, m or mark, nat, typ) for ref, m, nat, typ in found)
        return found, inner_pins | pins if pins else inner_pins

    def _pins(self, args: list) -> set[tuple[str, str]]:
        """`torch.eq(x, True)`: the literal pins the other operand's type."""
        out = set()
        for this, other in ((args[0], args[1]), (args[1], args[0])):
            typ = literal_type(other, self.sem)
            # An int literal does not pin: `torch.lt(is_float, 0)` compares a float.
            if typ and typ not in ("NoneType", "int"):
                ref, declared = self._ref_type(this)
                if ref and not declared:
                    out.add((ref, typ))
        return out

    def none_check(self, node: Expr) -> bool:
        seen = 0
        while isinstance(node, Name) and seen < _MAX_RESOLVE_DEPTH:
            d = self.single_def(node.id)
            if d is None:
                return False
            value = self.value_of(d)
            if value is None:
                return False
            node, seen = value, seen + 1
        if not isinstance(node, CallExpr):
            return False
        kind, target = self.callee_target(node.func)
        if kind != "operator" or target not in self.sem.none_checks:
            return False
        return any(isinstance(a, Name) and a.id == "None" for a in node.args)

    # -- resolved text ----------------------------------------------------------
    def resolved(self, node: Expr) -> str:
        """The expression as printed, temporaries and locals replaced by their definitions."""
        return self._resolve(node, 0, set())

    def _resolve(self, node: Expr, depth: int, active: set) -> str:
        text = self.text
        pieces: list[str] = []
        pos = node.start
        names = sorted((n for n in walk(node) if isinstance(n, Name)), key=lambda n: n.start)
        for n in names:
            replacement = self._replacement(n, depth, active)
            if replacement is None:
                continue
            pieces.append(text[pos:n.start])
            pieces.append(replacement)
            pos = n.end
        pieces.append(text[pos:node.end])
        return "".join(pieces)

    def _replacement(self, n: Name, depth: int, active: set) -> Optional[str]:
        inner_text = self.text[n.start:n.end]
        if inner_text != n.id:  # a parenthesised name: `(layer1)`
            inner = self._replacement(Name(n.id, n.start + 1, n.end - 1), depth, active)
            return f"({inner})" if inner is not None else None
        if depth >= _MAX_RESOLVE_DEPTH or n.id in active:
            return None
        path = self.name_path(n.id)
        if path:
            return None if path == n.id else path
        d = self.single_def(n.id)
        if d is None or d.element is not None:
            return None
        value = self.value_of(d)
        if value is None or isinstance(value, Opaque):
            return None
        active.add(n.id)
        out = self._resolve(value, depth + 1, active)
        active.discard(n.id)
        if len(out) > _MAX_RESOLVED:
            return None
        return out


def dotted(node: Optional[Expr]) -> Optional[str]:
    """``torch.nn.functional.relu`` for a chain of names, else None."""
    parts = []
    while isinstance(node, Attr):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, Name):
        return None
    if node.end - node.start != len(node.id):  # parenthesised: `(x).f` is a method call
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def unquote(literal: str) -> str:
    """The value of a printed string literal (C escapes, as the printer writes them)."""
    body = literal[1:-1]
    if "\\" not in body:
        return body
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567":
                j = i + 1
                while j < len(body) and j < i + 4 and body[j] in "01234567":
                    j += 1
                out.append(chr(int(body[i + 1:j], 8)))
                i = j
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)
