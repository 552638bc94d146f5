"""Inference: what names stand for, and what each ``if`` condition depends on.

The printed text is close to SSA: every value is bound once to a name (``_2``,
``x0``, ``branch_testing``), except where both branches of an ``if`` or a loop body
assign the same name.  This module follows names back to their definitions
(def-use), resolves locals to paths from ``self`` (``conv = layer1.conv`` after
``layer1 = self.layer1`` is ``self.layer1.conv``), and classifies each condition by
its sources (README "What a condition depends on"; the tables are
``grammars/semantics.toml`` ``[conditions]``, which ``tests/ir_oracle.py`` reads too):

1. runtime readers (operators by name, compiled helpers by fully qualified name) are
   sources of kind ``runtime``, reached directly or through a local bound to them;
2. a marking operator over a Tensor keeps its mark when nothing beneath it is a named
   source (the operand's text is the source); list mutators (``torch.append(l, v)``)
   are definitions of the list, at the uses they can run before (earlier in the text, or
   in a loop around both: a later pass);
3. calls are followed: a receiver rooted at ``self`` is a source, and where the
   callee's body is available (same text, or any file of an archive through the
   ``functions`` hook) the call depends on what the callee's return values depend on,
   mapped from its parameters to the call's arguments (a summary per function,
   memoized; a call back into a function whose summary is being computed adds
   nothing); without the body, on its arguments;
4. only operators are marked by name (``__torch__.*`` functions are user code);
5. conversions mark ``tensor_value`` only on a Tensor; types come from declarations,
   casts, container element types, operator schemas (``grammars/operators.json.gz``)
   and return annotations;
6. ``lengths.tolist()`` on a local is a method call on ``lengths``;
7. a value defined inside a loop depends on the loop's test or iterable, wherever it is
   used; a value defined inside an ``if`` and used outside it depends on its condition;
8. walking down from the condition, the first marking operator met (the one nearest
   the condition) decides the kind of everything beneath it;
9. sources are listed deciding source first, then by kind priority, then by position
   in the resolved text.

Recursion depth: a condition is visited depth-first, memoized per name use, per
definition site, per enclosing test (and per function summary).  When that visit nests
deeper than ``_DEEP`` memo entries (all functions together) or ``_DEEP_CALLS``
summaries, it is abandoned where it stopped and resumed from there
(:func:`_drive`): the entry it was about to enter is computed first, on a fresh stack,
and memoized; then the abandoned visit runs again and finds it done.  A chain of
thousands of temporaries, tests or functions so costs a few shallow visits per
``_DEEP`` links, in any order of entries (uses, tests, definitions, summaries).  A
cycle longer than the depth limit (a loop whose carried values pass through more
entries than that) cannot be cut this way: the limit is raised for it, up to
``DEEPEST_CYCLE``; a cycle longer still makes that condition ``unknown``, reported
(:class:`DepthLimit`, CP113), never an internal error.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional

from ..parse.expressions import Attr, CallExpr, Const, Expr, ExpressionReader, Index, Name, Opaque, Seq, names_in, walk
from .facts import Definition, FunctionFacts, Scope
from .semantics import Semantics
from .types import element_type, literal_type, operator_return_type

__all__ = ["Inference", "Callee", "CalleeRegistry", "PRIORITY"]

PRIORITY = ("tensor_value", "tensor_shape", "argument", "attribute", "runtime", "unknown", "constant")
_RANK = {k: i for i, k in enumerate(PRIORITY)}
_MAX_RESOLVED = 2000  # characters of a resolved condition before it stops expanding
_MAX_RESOLVE_DEPTH = 24
_MAX_TYPE_DEPTH = 200  # nested operands typed before a type is given up
_MAX_REF = 60  # characters of an operand's text used as a source's name
_MAX_PATH = 1000  # characters of a path from `self` (`self.a.b...`); longer is no module path
_CUT = "…"  # ends a resolved condition cut at _MAX_RESOLVED characters
_EMPTY: tuple[frozenset, frozenset] = (frozenset(), frozenset())
_DEEP = 80  # memo entries on the stack (all functions together) before a visit is resumed deeper
_DEEP_CALLS = 8  # nested summaries before the callees are summarized bottom-up
_MAX_ROUNDS = 64  # rounds of a cycle's fixpoint (results only grow; a few rounds settle it)


_nesting = [0]  # memo entries being computed, in every Inference of the process
# Rule 3's following of calls into available bodies; off only to measure what it costs
# (bench/bench_verdicts.py): without it a call depends on its receiver and arguments.
FOLLOW_CALLS = True


class _TooDeep(Exception):
    """A depth-first visit went too deep: ``resume`` computes (and memoizes) the entry it
    was about to enter, on a fresh stack; ``key`` names that entry (see _drive)."""

    def __init__(self, resume: Callable[[], Any], key: Any):
        super().__init__("depth limit")
        self.resume = resume
        self.key = key


class _AroundCycle(Exception):
    """A walk entered an entry that is being resumed below it: a cycle longer than the
    depth limit (see _drive)."""


class _TypesTooDeep(Exception):
    """Typing a chain of names went too deep: type ``name`` first (Inference.name_type)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


_type_nesting = [0]  # names being typed (Inference._name_type), all functions together
_MAX_TYPE_NESTING = 120


class DepthLimit(Exception):
    """A chain of definitions that resuming cannot cut (a cycle longer than the depth
    limit): the condition is ``unknown`` (CP113)."""


_driving = [False]  # a _drive is running (inner visits let _TooDeep through to it)
_live: set = set()  # Inferences that entered memo entries during the current _drive
_MAX_RESUMES = 1_000_000  # resumed entries per drive (each is memoized, so each is met once)
_resumed: set = set()  # keys of the entries being resumed (see _drive)
_walk: list = [None]  # the key of the entry the current walk resumes (None: the visit itself)
_depth = [_DEEP]  # the depth limit in force (raised while a long cycle settles, see _drive)
DEEPEST_CYCLE = 5120  # the most memo entries one cycle may nest (about 6 interpreter frames each)


def _drive(thunk: Callable[[], Any]) -> Any:
    """``thunk()``; where a visit stops at the depth limit, compute the entry it stopped
    at first (itself resumable the same way), then run the visit again.

    Every resumed entry is memoized when it completes (it is the root of its own walk,
    so its component closes), so each is resumed once and the abandoned visit goes
    further each time.  Resumed entries form a stack, each reached from the one below;
    a walk that enters an entry lower on that stack has come round a cycle longer than
    the depth limit, which no resumption cuts (nothing on it completes before the whole
    cycle does): the limit is raised fourfold (and the interpreter's recursion limit
    with it) and the visit starts again, until the cycle fits, up to ``DEEPEST_CYCLE``
    entries; past that, :class:`DepthLimit`."""
    if _driving[0]:
        return thunk()
    _driving[0] = True
    todo: list = [(thunk, None)]
    recursion = sys.getrecursionlimit()
    try:
        while True:
            _walk[0] = todo[-1][1]
            try:
                result = todo[-1][0]()
            except (_TooDeep, _AroundCycle) as stop:
                _reset_live()
                if isinstance(stop, _AroundCycle) or stop.key in _resumed:
                    if _depth[0] >= DEEPEST_CYCLE:
                        raise DepthLimit() from None
                    _depth[0] = min(_depth[0] * 4, DEEPEST_CYCLE)
                    sys.setrecursionlimit(max(recursion, 8 * _depth[0] + 1000))
                    todo = [(thunk, None)]  # start again, in longer strides
                    _resumed.clear()
                    continue
                if len(todo) > _MAX_RESUMES:
                    raise DepthLimit() from None
                _resumed.add(stop.key)
                todo.append((stop.resume, stop.key))
                continue
            _resumed.discard(todo.pop()[1])
            if not todo:
                return result
    finally:
        _driving[0] = False
        _depth[0] = _DEEP
        _walk[0] = None
        _resumed.clear()
        sys.setrecursionlimit(recursion)
        _reset_live()


def _reset_live() -> None:
    """Forget the open memo entries of every Inference a visit abandoned."""
    for inf in _live:
        inf._reset()
    _live.clear()
_VALUE_MARKS = ("tensor_value", "tensor_shape")


def _union(results: list) -> tuple[frozenset, frozenset]:
    """One (sources, pins) of several; most parts are empty, and one part is its own union."""
    parts = [r for r in results if r[0] or r[1]]
    if not parts:
        return _EMPTY
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        return _union2(parts[0], parts[1])
    return (frozenset().union(*(r[0] for r in parts)), frozenset().union(*(r[1] for r in parts)))


def _union2(a: tuple, b: tuple) -> tuple[frozenset, frozenset]:
    """_union([a, b])."""
    if not (a[0] or a[1]):
        return b if (b[0] or b[1]) else _EMPTY
    if not (b[0] or b[1]):
        return a
    return (a[0] | b[0] if b[0] else a[0], a[1] | b[1] if b[1] else a[1])


def _remark(found: frozenset, mark: Optional[str]) -> frozenset:
    """Rule 8: a mark above replaces the marks beneath it (runtime sources keep theirs)."""
    if not mark:
        return found
    return frozenset((ref, mark if nat != "runtime" else m, nat, typ) for ref, m, nat, typ in found)


# -- types (rule 5) ----------------------------------------------------------------------


# -- callees (rule 3) --------------------------------------------------------------------


class Callee:
    """A function whose body is available to its callers: its parameters and a summary
    of what its return values depend on, computed once (memoized) on first use."""

    def __init__(self, qualified: str, inference: "Inference", params: list[tuple[str, bool]],
                 returns: Optional[str], active: set):
        self.qualified = qualified
        self.inference = inference
        self.params = params  # (name, has default), `self` included
        self.returns = returns
        self._active = active  # qualified names whose summaries are being computed
        self._summary: Optional[frozenset] = None

    computed = 0  # summaries computed, all callees together (a test counts them)

    def summary(self) -> frozenset:
        if self._summary is None:
            if self.qualified in self._active:
                return frozenset()  # recursion cut: the cycle adds nothing
            if len(self._active) > _DEEP_CALLS:
                raise _TooDeep(self._compute, ("summary", id(self)))
            self._compute()
        return self._summary if self._summary is not None else frozenset()

    def _compute(self) -> None:
        if self._summary is not None or self.qualified in self._active:
            return
        self._active.add(self.qualified)
        try:
            inf = self.inference
            try:
                parts = [inf.sources_of(inf.tree(span), scopes) for span, scopes in inf.facts.returns]
                result = _union(parts)[0]
            except DepthLimit:  # only when this summary is the outermost visit
                result = frozenset({(self.qualified, None, "unknown", None)})
        finally:
            self._active.discard(self.qualified)
        Callee.computed += 1
        self._summary = result


class CalleeRegistry:
    """The functions of several files (an archive's), for following calls across them.

    Files register their functions as they are parsed; a lookup of a name not (yet)
    registered is recorded per file, so that the caller can parse that file again once
    every file is known (:func:`codeparse.text.program.parse_program`)."""

    def __init__(self, root: str):
        self.root = root
        self.callees: dict[str, Callee] = {}
        self.active: set = set()
        self.current: Optional[str] = None
        self.misses: dict[str, set[str]] = {}

    def register(self, qualified: str, callee: Callee) -> None:
        self.callees[qualified] = callee  # a file parsed again replaces its first reading

    def __call__(self, qualified: str) -> Optional[Callee]:
        found = self.callees.get(qualified)
        if found is None and self.current is not None and qualified.startswith(self.root + "."):
            self.misses.setdefault(self.current, set()).add(qualified)
        return found


class Inference:
    """Def-use resolution and condition classification for one function."""

    def __init__(self, text: str, reader: ExpressionReader, facts: FunctionFacts, sem: Semantics):
        self.text = text
        self.reader = reader
        self.facts = facts
        self.sem = sem
        self._trees: dict[tuple[int, int], Expr] = {}
        self._paths: dict[str, Optional[str]] = {}
        self._types: dict[str, Optional[str]] = {}
        self._memo_results: dict = {}
        # Tarjan's strongly connected components over memo entries (see _memo).
        self._index: dict = {}  # entry -> preorder number, while on the component stack
        self._tstack: list = []  # entries of components not yet closed
        self._provisional: dict = {}  # entry -> result so far, while its component is open
        self._computers: dict = {}  # entry -> how to compute it, once it stays open (cycles)
        self._reread: set = set()  # entries read while open (a cycle goes through them)
        self._count = 0
        self._low = 0
        self._named_only = False  # rule 2's operand sources held back (a cycle settling)
        self._control_scopes: dict[str, list] = {}
        self._targets: dict[tuple[int, int], tuple[str, Optional[str]]] = {}  # callee span -> callee_target
        self._locals: dict[tuple[int, int], bool] = {}  # `a.f` span -> is `a` a local receiver
        self._tensors: dict[tuple[int, int], bool] = {}  # expression span -> is it a Tensor
        self._names_in: dict[tuple[int, int], list] = {}  # expression span -> its names, in order
        self._loop_keys: dict[tuple, Optional[tuple]] = {}  # scopes -> memo key of its loops
        self._typed: set[str] = set()
        self._replacements: dict[tuple[str, int], Optional[str]] = {}  # (name, depth) -> resolved text
        self._leaves: dict[str, Optional[tuple]] = {}  # name -> its visit when no definition decides it
        self._mutated = {name for name, defs in facts.defs.items() if any(d.kind == "mutate" for d in defs)}
        if facts.self_name in facts.params:
            self._paths[facts.self_name] = facts.self_name

    # -- trees and names -------------------------------------------------------
    def value_spans(self) -> list[tuple[int, int]]:
        """Every expression a definition or a return of the function holds."""
        facts = self.facts
        spans = {d.value for defs in facts.defs.values() for d in defs if d.value is not None}
        spans.update(span for span, _ in facts.returns)
        scopes = [d.scopes for defs in facts.defs.values() for d in defs] + [sc for _, sc in facts.returns]
        spans.update(scope.test for group in scopes for scope in group)
        return sorted(spans)

    def tree(self, span: tuple[int, int]) -> Expr:
        node = self._trees.get(span)
        if node is None:
            node = self._trees[span] = self.reader.read(*span)
        return node

    def value_of(self, d: Definition) -> Optional[Expr]:
        """The expression a definition binds (the tuple element, when it has one)."""
        span = d.value
        if span is None:
            return None
        node = self.tree(span)
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
        found = self._paths.get(name, False)  # `self` is in it from the start
        if found is not False:
            return found
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
            return _joined(base, node.attr)
        if isinstance(node, CallExpr) and isinstance(node.func, Name) and node.func.id == "getattr":
            if len(node.args) == 2 and isinstance(node.args[1], Const) and node.args[1].kind == "string":
                base = self.expr_path(node.args[0], depth)
                return _joined(base, unquote(node.args[1].text))
        return None

    def callee_target(self, node: Expr) -> tuple[str, Optional[str]]:
        """Kind and qualified target of a callee: ("operator", "aten::eq"), ("function", ...)."""
        key = (node.start, node.end)  # the same text: the same answer, within one function
        found = self._targets.get(key)
        if found is None:
            found = self._targets[key] = self._callee_target(node)
        return found

    def _callee_target(self, node: Expr) -> tuple[str, Optional[str]]:
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
        if not rest:
            return "submodule", self.facts.owner
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

    # -- types (rule 5) ----------------------------------------------------------
    def expr_type(self, node: Expr, depth: int = 0) -> Optional[str]:
        """The TorchScript type of an expression, when declarations, casts, element types,
        operator schemas or return annotations decide it; else None."""
        if depth > _MAX_TYPE_DEPTH:
            return None
        sem = self.sem
        lit = literal_type(node, sem)
        if lit is not None:
            return lit
        if isinstance(node, Name):
            return self._name_type(node.id) if _type_nesting[0] else self.name_type(node.id)
        if isinstance(node, Attr):
            path = self.expr_path(node)
            if path:
                return self.declared(path)[1]
            root = node
            while isinstance(root, Attr):
                root = root.value
            if isinstance(root, Name) and root.id == sem.constants_object:
                return "Tensor"
            return None
        if isinstance(node, Index):
            base = self.expr_type(node.value, depth + 1)
            index = None
            if len(node.items) == 1 and isinstance(node.items[0], Const) and node.items[0].kind == "number":
                try:
                    index = int(node.items[0].text)
                except ValueError:
                    index = None
            return element_type(base, index)
        if isinstance(node, CallExpr):
            path = self.expr_path(node)
            if path:
                return self.declared(path)[1]
            func = node.func
            kind, target = self.callee_target(func)
            if kind == "intrinsic":
                if target in sem.value_intrinsics and len(node.args) == 2:
                    return self.text[node.args[0].start:node.args[0].end]
                return None
            if kind == "operator" and target:
                name = target.rpartition(":")[2]
                if name in sem.conversions or name == "len":
                    return {"Bool": "bool", "Int": "int", "Float": "float", "Complex": "complex"}.get(name, "int")
                return operator_return_type(target, [self.expr_type(a, depth + 1) for a in node.args])
            callee = self._callee_of(node)
            if callee is not None:
                return callee.returns
            method = self._method_operator(node)
            if method is not None:
                args = [node.func.value, *node.args]
                return operator_return_type(method, [self.expr_type(a, depth + 1) for a in args])
        return None

    def name_type(self, name: str) -> Optional[str]:
        """The type of a name: its definitions' types when they agree.  A chain of names
        deeper than ``_MAX_TYPE_NESTING`` is typed from where it stopped first (the way
        _drive resumes conditions); a name met again while it is being resumed lies on a
        cycle that long and stays untyped."""
        facts = self.facts
        if name in facts.params:
            return facts.params[name]
        if name in self._types:
            return self._types[name]
        if _type_nesting[0]:
            return self._name_type(name)
        todo, pending = [name], set()
        while True:
            try:
                typ = self._name_type(todo[-1])
            except _TypesTooDeep as stop:
                if stop.name in pending:
                    self._types[stop.name] = None
                else:
                    pending.add(stop.name)
                    todo.append(stop.name)
                continue
            todo.pop()
            if not todo:
                return typ

    def _name_type(self, name: str) -> Optional[str]:
        facts = self.facts
        if name in facts.params:
            return facts.params[name]
        if name in self._types:
            return self._types[name]
        if _type_nesting[0] > _MAX_TYPE_NESTING:
            raise _TypesTooDeep(name)
        self._types[name] = None  # cycle guard
        _type_nesting[0] += 1
        try:
            found: set = set()
            for d in facts.defs.get(name, ()):
                if d.kind == "mutate":
                    continue
                if d.annotation:
                    found.add(d.annotation)
                    continue
                value = self.value_of(d)
                if value is None:
                    found.add(None)
                elif d.kind == "for":
                    found.add("int" if self._is_range(value) else element_type(self.expr_type(value, 1)))
                else:
                    found.add(self.expr_type(value, 1))
        except _TypesTooDeep:
            del self._types[name]  # not typed yet: typed again when the chain beneath is
            raise
        finally:
            _type_nesting[0] -= 1
        typ = found.pop() if len(found) == 1 else None
        self._types[name] = typ
        return typ

    def _warm_types(self, node: Expr) -> None:
        """Type the names ``node`` depends on first to last in the text (an iterative walk),
        so that a chain of thousands of temporaries is typed one link at a time."""
        defs = self.facts.defs
        todo = [n.id for n in self._names(node)]
        found: list[tuple[int, str]] = []
        while todo:
            name = todo.pop()
            if name in self._types or name in self._typed or name not in defs:
                continue
            self._typed.add(name)
            first = None
            for d in defs[name]:
                if d.value is None or d.kind == "mutate":
                    continue
                first = d.start if first is None else min(first, d.start)
                if not d.annotation:
                    todo.extend(n.id for n in self._names(self.tree(d.value)))
            if first is not None:
                found.append((first, name))
        for _, name in sorted(found):
            self.name_type(name)

    def _names(self, node: Expr) -> list[Name]:
        """The names in an expression, in textual order (remembered per span)."""
        key = (node.start, node.end)
        names = self._names_in.get(key)
        if names is None:
            names = self._names_in[key] = names_in(node)
        return names

    def _is_range(self, node: Expr) -> bool:
        return isinstance(node, CallExpr) and isinstance(node.func, Name) and node.func.id == "range"

    def _is_tensor(self, node: Expr) -> bool:
        key = (node.start, node.end)  # the same text: the same answer, within one function
        found = self._tensors.get(key)
        if found is None:
            self._warm_types(node)
            typ = self.expr_type(node)
            found = self._tensors[key] = typ is not None and typ in self.sem.tensor_types
        return found

    # -- conditions ------------------------------------------------------------
    # A visit returns the sources beneath a node as a set of
    # (ref, mark, natural kind, type): `mark` is the marking operator nearest the
    # condition above the source inside the node (None if none); an outer mark replaces
    # it (rule 8).  Results are memoized per name use and per definition; a result
    # computed while a definition up the stack was re-entered (a loop-carried value) is
    # incomplete and is not memoized (Tarjan's low-link test).

    def condition(self, test: tuple[int, int], scopes: tuple[Scope, ...]) -> dict:
        node = self.tree(test)
        try:
            found, pins = self.sources_of(node, scopes)
        except DepthLimit:
            text = self.text[test[0]:test[1]]
            return {"text": text, "resolved": self.resolved(node), "kind": "unknown",
                    "sources": [{"ref": text[:_MAX_REF], "kind": "unknown", "type": "unknown"}],
                    "none_check": self.none_check(node), "too_deep": DEEPEST_CYCLE}
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
        resolved = self.resolved(node)
        sources = [
            {"ref": ref, "kind": kind, "type": typ or pins.get(ref) or "unknown"}
            for ref, (kind, typ) in best.items()
        ]
        # Rule 9: the deciding source first, then by kind priority, then by position.
        sources.sort(key=lambda s: (_RANK[s["kind"]], _position(resolved, s["ref"]), s["ref"]))
        kind = sources[0]["kind"] if sources else "constant"
        return {
            "text": self.text[test[0]:test[1]],
            "resolved": resolved,
            "kind": kind,
            "sources": sources,
            "none_check": self.none_check(node),
        }

    def _memo(self, key, compute, *args):
        """``compute(*args)``, once per ``key``: memo entries are the nodes of a graph (an entry
        reads the entries its computation reaches), walked depth-first with Tarjan's
        low-link bookkeeping.  An entry read while its component is still open (a cycle of
        definitions: a loop-carried value, a local reassigned in both branches of ifs)
        gives its result so far; when the component closes, its entries are computed
        again against each other's results until none changes (a fixpoint: results only
        grow), then memoized together.  So every entry is computed once, plus a few rounds
        per cycle, whatever the number of paths through it.

        Keys, each kind its own shape (cheap to hash): ``(name, scopes)`` a use of a name,
        ``name`` its definitions together, ``id(definition)`` one definition,
        ``("test", scope, scopes)`` an enclosing test, ``("loops", ...)`` the loops around a use."""
        found = self._memo_results.get(key)
        if found is not None:
            return found
        return self._enter(key, compute, args)

    def _enter(self, key, compute, args):
        """:meth:`_memo` for a key not memoized (its callers looked)."""
        index = self._index
        number = index.get(key)
        if number is not None:  # open: a cycle goes through it
            if number < self._low:
                self._low = number
            self._reread.add(key)
            return self._provisional.get(key, _EMPTY)
        if _nesting[0] > _depth[0]:
            raise _TooDeep(lambda: self._memo(key, compute, *args), (id(self), key))
        if _resumed:
            whole = (id(self), key)
            if whole in _resumed and whole != _walk[0]:
                raise _AroundCycle()
        if not self._tstack:
            _live.add(self)
        number = self._count
        self._count = number + 1
        index[key] = number
        stack = self._tstack
        stack.append(key)
        outer_low = self._low
        self._low = number
        _nesting[0] += 1
        try:
            result = compute(*args)
        finally:
            _nesting[0] -= 1
        low = self._low
        if low >= number:
            if stack[-1] is key and key not in self._reread:  # no cycle through it: done
                stack.pop()
                del index[key]
                self._memo_results[key] = result
            else:
                # How to compute an entry is kept only while its component is open
                # (_settle computes the members again).
                self._computers[key] = (compute, args)
                result = self._close(key, result)
        else:
            self._computers[key] = (compute, args)
            self._provisional[key] = result
        self._low = outer_low if outer_low < low else low
        return result

    def _close(self, root, result):
        """Close the component rooted at ``root``: iterate it to a fixpoint if it holds a
        cycle, memoize every entry, and return the root's result."""
        stack = self._tstack
        at = len(stack) - 1
        while stack[at] is not root and stack[at] != root:
            at -= 1
        members = stack[at:]
        provisional = self._provisional
        if len(members) > 1 or root in self._reread:
            # Rule 2's operand source ("nothing beneath is a named source") is no monotone
            # function: read from a result still incomplete, it would keep itself alive
            # around the cycle.  So the named sources settle first, from nothing; then the
            # rule applies to those settled results.
            saved = self._low, self._named_only
            for key in members:
                provisional[key] = _EMPTY
            self._named_only = True
            self._settle(at)
            self._named_only = saved[1]
            if not self._named_only:
                self._settle(at)
            self._low = saved[0]
            members = stack[at:]
            result = provisional[root]
        memo, index, computers, reread = self._memo_results, self._index, self._computers, self._reread
        for key in members:
            memo[key] = provisional.pop(key, None) or (result if key == root else _EMPTY)
            del index[key]
            del computers[key]
            reread.discard(key)
        del stack[at:]
        memo[root] = result
        return result

    def _settle(self, at: int) -> None:
        """Compute the open entries from ``at`` on again until no result changes."""
        stack, provisional, computers = self._tstack, self._provisional, self._computers
        for _ in range(_MAX_ROUNDS):
            changed = False
            for key in reversed(stack[at:]):  # deepest first; entries first met here join
                compute, args = computers[key]
                value = compute(*args)
                if value != provisional.get(key):
                    provisional[key] = value
                    changed = True
            if not changed:
                return

    def _reset(self) -> None:
        """Forget the open components (a visit abandoned at the depth limit, see _drive)."""
        self._named_only = False
        self._index.clear()
        self._tstack.clear()
        self._provisional.clear()
        self._computers.clear()
        self._reread.clear()
        self._low = 0

    def sources_of(self, node: Expr, scopes: tuple[Scope, ...]):
        """(sources, pins) of an expression: a depth-first visit, memoized, resumed where
        it goes too deep (see _drive); raises DepthLimit when even that cannot answer."""
        if _driving[0]:
            return self._visit(node, scopes)
        return _drive(lambda: self._visit(node, scopes))

    def _ref_type(self, node: Expr, depth: int = 0) -> tuple[Optional[str], Optional[str]]:
        """The source a simple operand stands for (param name or self path) and its type."""
        if depth > _MAX_RESOLVE_DEPTH:  # `y = y` in broken text
            return None, None
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
                    return self._ref_type(value, depth + 1)
            return None, None
        path = self.expr_path(node)
        if path and path != self.facts.self_name:
            return path, self.declared(path)[1]
        return None, None

    def _visit(self, node: Expr, scopes: tuple[Scope, ...]):
        """(sources, pins) beneath ``node``, used at ``scopes``."""
        kind = type(node)
        if kind is Name:
            name = node.id
            leaf = self._leaves.get(name, False)
            if leaf is False:
                leaf = self._leaves[name] = self._leaf(name)
            if type(leaf) is tuple:
                return leaf
            if name in self._mutated:
                kept = self._defs_before(name, node.start, scopes)
                if kept is not None:  # a mutation after this use defines nothing here
                    key = ("before", name, scopes, tuple(id(d) for d in kept))
                    found = self._memo_results.get(key)
                    if found is not None:
                        return found
                    return self._enter(key, self._visit_some, (name, scopes, kept))
            key = (name, scopes)  # a use of the name (see _memo for the other kinds of entry)
            found = self._memo_results.get(key)
            if found is not None:
                return found
            if leaf is not None:
                return self._visit_single(name, leaf, key)
            return self._enter(key, self._visit_name, (name, scopes))
        sem = self.sem
        if kind is CallExpr:
            result = self._visit_call(node, scopes)
            func = node.func
            if type(func) is Name and func.id in sem.intrinsics and func.id != "getattr":
                return result  # `annotate(T, v)`, `range(n)`: no computation of their own
            return self._in_loops(result, scopes) if scopes else result
        if kind is Const:
            return _EMPTY
        if isinstance(node, Opaque):
            return frozenset({(self.text[node.start:node.end][:_MAX_REF], None, "unknown", None)}), frozenset()
        if isinstance(node, Attr):
            path = self.expr_path(node)
            if path:
                return frozenset({(path, None, "attribute", self.declared(path)[1])}), frozenset()
            root = node
            while isinstance(root, Attr):
                root = root.value
            if isinstance(root, Name) and root.id in (sem.constants_object, "torch", sem.root):
                return _EMPTY  # CONSTANTS.c0, torch.float32, __torch__.Color.RED: fixed values
            return self._in_loops(self._visit(node.value, scopes), scopes)
        if isinstance(node, (Index, Seq)):
            return self._in_loops(self._visit_all(node.children(), scopes), scopes)
        return _EMPTY

    def _leaf(self, name: str):
        """The visit of a name that no definition of this function decides (a literal,
        ``self``, a parameter, an unknown name); else its definition when it has one and no
        if or loop encloses it (see _visit_single); else None."""
        facts = self.facts
        if name in self.sem.literals or name == facts.self_name:
            return _EMPTY
        if name in facts.params:
            return frozenset({(name, None, "argument", facts.params[name])}), frozenset()
        defs = facts.defs.get(name)
        if not defs:
            return frozenset({(name, None, "unknown", None)}), frozenset()
        if len(defs) == 1 and not any(scope.kind in ("if", "for", "while") for scope in defs[0].scopes):
            return defs[0]
        return None

    def _visit_single(self, name: str, d: Definition, key):
        """A use of a name with one definition and no if or loop around it (most of them).

        Its use entry would only pass the definitions entry's result through (no control
        dependence; a union of one part), so that answers it directly (see _single_def),
        with the depth check the use entry would make, in the same order; the result is
        remembered for the use once the definition's entry is closed."""
        path = self.name_path(name)
        memo = self._memo_results
        if path and path != self.facts.self_name:
            found = memo[key] = frozenset({(path, None, "attribute", self.declared(path)[1])}), frozenset()
            return found
        found = memo.get(name)
        if found is None:
            if _nesting[0] > _depth[0]:  # the use entry's check (a resumed entry is memoized)
                raise _TooDeep(lambda: self._single_def(name, d), (id(self), id(d)))
            _nesting[0] += 1  # inside the use entry
            try:
                found = self._single_def(name, d)
            finally:
                _nesting[0] -= 1
            if memo.get(name) is None:
                return found  # open: part of a cycle still settling
        memo[key] = found
        return found

    def _single_def(self, name: str, d: Definition):
        """The definitions entry of a name with one definition: it would only pass that
        definition's result through (a union of one part), so the definition's entry
        answers it, with the depth check the definitions entry would make; remembered for
        the name once the definition's entry is closed.  (A pass-through entry changes no
        result, not even around a cycle: it sits next to the definition's entry on the
        component stack, so each round of a fixpoint reads the same values without it.)"""
        memo = self._memo_results
        entry = id(d)
        found = memo.get(entry)
        if found is None:
            if _nesting[0] > _depth[0]:  # the definitions entry's check
                raise _TooDeep(lambda: self._single_def(name, d), (id(self), id(d)))
            _nesting[0] += 1  # inside the definitions entry
            try:
                found = self._enter(entry, self._visit_def, (d,))
            finally:
                _nesting[0] -= 1
            if memo.get(entry) is None:
                return found  # open: part of a cycle still settling
        memo[name] = found
        return found

    def _visit_all(self, nodes: list, scopes: tuple[Scope, ...]):
        """The union of the visits of ``nodes`` (as _union of them, without the lists)."""
        visit = self._visit
        first = sources = pins = None
        for node in nodes:
            r = visit(node, scopes)
            if r[0] or r[1]:
                if first is None:
                    first = r
                elif sources is None:
                    sources, pins = set(first[0]), set(first[1])
                    sources.update(r[0])
                    pins.update(r[1])
                else:
                    sources.update(r[0])
                    pins.update(r[1])
        if first is None:
            return _EMPTY
        if sources is None:
            return first
        return frozenset(sources), frozenset(pins)

    def _in_loops(self, result, scopes: tuple[Scope, ...]):
        """Rule 7: a value computed inside a loop depends on the loop's test or iterable."""
        if not scopes:
            return result
        key = self._loop_keys.get(scopes, False)
        if key is False:
            loops = tuple(i for i, scope in enumerate(scopes) if scope.kind in ("for", "while"))
            key = self._loop_keys[scopes] = ("loops", tuple(scopes[i].key for i in loops), loops) if loops else None
        if key is None:
            return result
        deps = self._memo(key, self._visit_loops, scopes, key[2])
        return _union2(result, deps) if deps[0] else result

    def _visit_name(self, name: str, scopes: tuple[Scope, ...]):
        path = self.name_path(name)
        if path and path != self.facts.self_name:
            return frozenset({(path, None, "attribute", self.declared(path)[1])}), frozenset()
        # What the definitions compute does not depend on the use: one entry per name.
        defs = self._memo_results.get(name)  # the entry of a name's definitions is the name itself
        if defs is None:
            found = self.facts.defs[name]
            if len(found) == 1:
                defs = self._single_def(name, found[0])
            else:
                defs = self._enter(name, self._visit_defs, (name,))
        parts = [defs]
        # Control dependence: the ifs around a definition that do not also surround the
        # use, and every loop around it (rule 7: the trip count decides it).
        for scope, def_scopes in self._controls(name):
            if scope.kind != "if" or scope not in scopes:
                key = ("test", scope, def_scopes)
                found = self._memo_results.get(key)
                if found is None:
                    found = self._enter(key, self._visit_test, (scope, def_scopes))
                parts.append(found)
        return _union(parts)

    def _defs_before(self, name: str, at: int, scopes: tuple[Scope, ...]) -> Optional[tuple[Definition, ...]]:
        """The definitions of ``name`` that can run before its use at offset ``at``, when a
        mutation cannot (it comes after the use in the text, and no loop encloses both):
        None when every definition can."""
        defs = self.facts.defs[name]
        kept = tuple(d for d in defs if d.kind != "mutate" or d.start < at or any(
            scope.kind in ("for", "while") and scope in scopes for scope in d.scopes))
        return None if len(kept) == len(defs) else kept

    def _visit_some(self, name: str, scopes: tuple[Scope, ...], kept: tuple[Definition, ...]):
        """A use of a name that only some of its definitions reach (see _defs_before): as
        _visit_name, over those definitions and the ifs and loops around them."""
        path = self.name_path(name)
        if path and path != self.facts.self_name:
            return frozenset({(path, None, "attribute", self.declared(path)[1])}), frozenset()
        memo = self._memo_results
        parts = []
        controls: dict = {}
        for d in kept:
            found = memo.get(id(d))
            parts.append(found if found is not None else self._enter(id(d), self._visit_def, (d,)))
            for scope in d.scopes:
                if scope.kind in ("if", "for", "while"):
                    controls.setdefault((scope, d.scopes), None)
        for scope, def_scopes in controls:
            if scope.kind != "if" or scope not in scopes:
                key = ("test", scope, def_scopes)
                found = memo.get(key)
                if found is None:
                    found = self._enter(key, self._visit_test, (scope, def_scopes))
                parts.append(found)
        return _union(parts)

    def _visit_defs(self, name: str):
        memo = self._memo_results
        parts = []
        for d in self.facts.defs[name]:
            key = id(d)  # the entry of one definition: its identity
            found = memo.get(key)
            parts.append(found if found is not None else self._enter(key, self._visit_def, (d,)))
        return _union(parts)

    def _visit_test(self, scope: Scope, scopes: tuple[Scope, ...]):
        return self._visit(self.tree(scope.test), scopes)

    def _visit_loops(self, scopes: tuple[Scope, ...], loops: tuple[int, ...]):
        return _union([self._visit(self.tree(scopes[i].test), scopes[:i]) for i in loops])

    def _controls(self, name: str) -> list[tuple[Scope, tuple[Scope, ...]]]:
        """The ifs and loops around the definitions of ``name`` (each with the scopes of a
        definition it encloses), once per distinct pair."""
        found = self._control_scopes.get(name)
        if found is None:
            seen: dict = {}
            for d in self.facts.defs[name]:
                for scope in d.scopes:
                    if scope.kind in ("if", "for", "while"):
                        seen.setdefault((scope, d.scopes), None)
            found = self._control_scopes[name] = list(seen)
        return found

    def _visit_def(self, d: Definition):
        if d.value is None:
            return _EMPTY
        value = self.value_of(d)
        if value is None:
            return _EMPTY
        if d.kind == "mutate" and isinstance(value, CallExpr):
            # `torch.append(l, v)` defines `l` by what it adds.
            return self._visit_all(value.args[1:], d.scopes)
        return self._visit(value, d.scopes)

    # -- calls -----------------------------------------------------------------
    def _listed(self, node: Expr) -> bool:
        """``node`` is ``t.tolist()`` (through locals and ``annotate``)."""
        for _ in range(_MAX_RESOLVE_DEPTH):
            if isinstance(node, Name):
                d = self.single_def(node.id)
                node = self.value_of(d) if d is not None else None
                if node is None:
                    return False
                continue
            if not isinstance(node, CallExpr):
                return False
            kind, target = self.callee_target(node.func)
            if kind == "intrinsic" and target in self.sem.value_intrinsics and node.args:
                node = node.args[-1]
                continue
            op = self._method_operator(node) or (target if kind == "operator" else None)
            return bool(op) and op.rpartition(":")[2] == "tolist"
        return False

    def _method_operator(self, node: CallExpr) -> Optional[str]:
        """``lengths.tolist()`` on a Tensor local: the operator ``aten::tolist``."""
        func = node.func
        if not isinstance(func, Attr) or self._local_receiver(func) is None:
            return None
        if not self._is_tensor(func.value):
            return None
        return f"aten::{func.attr}"

    def _local_receiver(self, func: Attr) -> Optional[Expr]:
        """Rule 6: the receiver of ``name.method`` when ``name`` is a local or parameter."""
        key = (func.start, func.end)  # the same text: the same answer, within one function
        local = self._locals.get(key)
        if local is None:
            local = self._locals[key] = self._is_local_receiver(func)
        return func.value if local else None

    def _is_local_receiver(self, func: Attr) -> bool:
        text = dotted(func)
        if text is None:
            return True  # `(receiver).method`
        root = text.partition(".")[0]
        sem = self.sem
        if root in ("torch", sem.ops_root, sem.root, sem.constants_object) or text in sem.intrinsics:
            return False
        return root in self.facts.params or root in self.facts.defs

    def _callee_of(self, node: CallExpr) -> Optional[Callee]:
        """The callee of a call whose body is available (rule 3), if any."""
        lookup = self.facts.functions
        if lookup is None or not FOLLOW_CALLS:
            return None
        func = node.func
        if isinstance(func, Attr):
            receiver = self._local_receiver(func)
            if receiver is None:
                kind, target = self.callee_target(func)
                return lookup(target) if kind == "function" and target else None
            path = self.expr_path(receiver)
            if path == self.facts.self_name:
                owner = self.facts.owner
                return lookup(f"{owner}.{func.attr}" if owner else func.attr)
            typ = self.declared(path)[1] if path else self.expr_type(receiver)
            if typ and typ.startswith(self.sem.root + "."):
                return lookup(f"{typ}.{func.attr}")
            return None
        kind, target = self.callee_target(func)
        if kind == "function" and target:
            return lookup(target)
        return None

    def _follow(self, callee: Callee, node: CallExpr, receiver: Optional[Expr], scopes):
        """The call's sources from the callee's summary, mapped onto this call."""
        params = callee.params
        names = [p for p, _ in params]
        if receiver is not None and names and names[0] == self.sem.self_name:
            names = names[1:]
        bound: dict[str, Expr] = dict(zip(names, node.args))
        for key, value in node.keywords:
            bound[key] = value
        receiver_path = self.expr_path(receiver) if receiver is not None else None
        parts = []
        for ref, m, nat, typ in callee.summary():
            if nat == "argument" and ref in bound:
                found, pins = self._visit(bound[ref], scopes)
                parts.append((_remark(found, m), pins))
            elif nat == "argument" and ref in names:
                continue  # a default: a literal
            elif nat == "attribute" and receiver is not None and (ref == "self" or ref.startswith("self.")):
                if receiver_path:
                    parts.append((frozenset({(receiver_path + ref[len("self"):], m, "attribute", typ)}), frozenset()))
                else:
                    found, pins = self._visit(receiver, scopes)
                    parts.append((_remark(found, m), pins))
            else:
                parts.append((frozenset({(ref, m, nat, typ)}), frozenset()))
        return _union(parts)

    def _visit_call(self, node: CallExpr, scopes):
        sem = self.sem
        func = node.func
        args = node.args
        operands = args + [v for _, v in node.keywords] if node.keywords else args
        # `(receiver).method(...)` and `name.method(...)` on a local: method calls.
        if type(func) is Attr:
            receiver = self._local_receiver(func)
            if receiver is not None:
                return self._visit_method(node, receiver, operands, scopes)
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
            return self._visit_all(operands, scopes)
        if kind == "function":
            if target and sem.is_runtime_function(target):
                # Rule 1: by its full name, wherever it is reached (an alias included).
                return frozenset({(target, None, "runtime", "bool")}), frozenset()
            callee = self._callee_of(node)
            if target and not node.args and target.rpartition(".")[2] in sem.runtime_copies and (
                    callee is None or not callee.summary()):
                # a copy of a tracing predicate (torchvision's `_is_tracing` in user code)
                return frozenset({(target, None, "runtime", "bool")}), frozenset()
            if callee is not None:
                return self._follow(callee, node, None, scopes)
            return self._visit_all(operands, scopes)
        return self._visit_operator(node, target, operands, scopes, args)

    def _visit_method(self, node: CallExpr, receiver: Expr, operands: list, scopes):
        func = node.func
        path = self.expr_path(receiver)
        op = self._method_operator(node)
        if op is not None:  # a Tensor method: the operator of that name
            return self._visit_operator(node, op, [receiver, *operands], scopes, [receiver, *node.args])
        parts = []
        # Rule 3: a receiver rooted at self is a source; any other receiver is followed.
        if path:
            parts.append((frozenset({(path, None, "attribute", self.declared(path)[1])}), frozenset()))
        else:
            parts.append(self._visit(receiver, scopes))
        callee = self._callee_of(node)
        if callee is not None:
            parts.append(self._follow(callee, node, receiver, scopes))
        else:
            parts.extend(self._visit(a, scopes) for a in operands)
        return _union(parts)

    def _visit_operator(self, node: CallExpr, target: Optional[str], operands: list, scopes, args: list):
        mark, name, role = self.sem.operator_facts(target) if target else (None, "", None)
        if mark == "runtime":
            text = dotted(node.func) or target
            typ = "bool" if name.startswith(("is_", "has_", "are_", "_is_")) else None
            return frozenset({(text, None, "runtime", typ)}), frozenset()
        pins: Optional[set[tuple[str, str]]] = None
        if role is not None:
            if role == "tensor_only":
                # `len(t)`, and `len(t.tolist())`: the list's length is t's size, not its values.
                mark = "tensor_shape" if (args and (self._is_tensor(args[0]) or self._listed(args[0]))) else None
            elif role == "conversion":
                mark = "tensor_value" if (args and self._is_tensor(args[0])) else None
            elif len(args) == 2:  # a comparison
                pins = self._pins(args)
        if mark in _VALUE_MARKS and args:
            ref, declared = self._ref_type(args[0])
            if ref and not declared:
                if pins is None:
                    pins = set()
                pins.add((ref, "Tensor"))
        found, inner_pins = self._visit_all(operands, scopes)
        if mark:
            if not found and mark in _VALUE_MARKS and args and not self._named_only:
                # Rule 2: the operator reads a Tensor that no named source produced.
                operand = self.resolved(args[0])[:_MAX_REF]
                found = frozenset({(operand, mark, "unknown", "Tensor")})
            else:
                found = _remark(found, mark)
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
        """The expression as printed, temporaries and locals replaced by their definitions.

        Each name's replacement is built once per depth and shared (a temporary used twice
        by each of 22 others costs 22 replacements, not 4 million); one longer than
        ``_MAX_RESOLVED`` stays a name, and the whole is cut there with a marker."""
        out = self._resolve(node, 0, set())
        return out if len(out) <= _MAX_RESOLVED else out[:_MAX_RESOLVED - 1] + _CUT

    def _resolve(self, node: Expr, depth: int, active: set) -> str:
        text = self.text
        pieces: list[str] = []
        pos = node.start
        for n in self._names(node):
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
        key = (n.id, depth)
        if key in self._replacements:
            return self._replacements[key]
        out = self._replacements[key] = self._replace(n, depth, active)
        return out

    def _replace(self, n: Name, depth: int, active: set) -> Optional[str]:
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


def _joined(base: Optional[str], attr: str) -> Optional[str]:
    """``base.attr``, or None when there is no base or the path would pass ``_MAX_PATH``
    (a chain of 32,000 ``a_i = a_{i-1}.b`` is no module path; kept, it would be 1 GB)."""
    if not base or len(base) + len(attr) >= _MAX_PATH:
        return None
    return f"{base}.{attr}"


def _position(text: str, ref: str) -> int:
    at = text.find(ref)
    return at if at != -1 else len(text)


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
