"""Event trees: a function as a tree of call events, ``if`` choices and loop repetitions.

Every call of a function is an :class:`Event`, labelled as a reader names it and placed in
evaluation order (a call is evaluated when its arguments are, so calls are ordered by the
*end* of their span).  Blocks are sequences, an ``if`` an :class:`IfNode` with two branches,
a loop a :class:`LoopNode` with its body.  Compiled functions and self methods whose code
the input holds are inlined, as the tracer inlines them.  Events that a trace never
records (condition-only values, operators on Python scalars) are *weak*.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Union

from .expressions import CallExpr, Const, ExpressionReader, Name, Seq
from .grammar import load_grammar
from .models import Call, Function, IfStatement, Loop
from .parser import Stmt, parse_statements
from .render import short_call
from .source import SourceText
from .diffsides import Unit

__all__ = ["Event", "IfNode", "LoopNode", "FunctionTree", "SCRIPT_MISSING", "SCALAR_OPERATORS"]

# A script event the trace does not have, by what its absence says.
SCRIPT_MISSING = {
    "submodule": 60,  # the tracer keeps module calls: losing one is strong evidence
    "operator": 10,  # tensor operators are recorded, unless dead code was removed
    "function": 4,  # compiled functions are inlined into their operators by a trace
    "self_method": 4,  # self methods too
    "method": 4,
    "weak": 2,  # condition-only and scalar operators: never in a trace
}
# Operators on Python scalars, lists and strings: a trace never records them.
SCALAR_OPERATORS = frozenset({
    "aten::size", "aten::len", "aten::dim", "aten::numel", "aten::__getitem__", "aten::append",
    "aten::Int", "aten::Bool", "aten::Float", "aten::Complex", "aten::ScalarImplicit", "aten::format",
    "aten::str", "aten::list", "aten::__is__", "aten::__isnot__", "aten::__not__", "aten::__and__",
    "aten::__or__", "aten::__contains__", "aten::keys", "aten::values", "aten::items", "aten::warn",
    "aten::is_scripting", "prim::RaiseException", "prim::dtype", "prim::device", "prim::layout",
    "prim::requires_grad", "prim::is_cuda", "prim::min", "prim::max", "prim::abs", "aten::__range_length",
    "aten::__derive_index", "aten::_set_item", "aten::insert", "aten::pop", "aten::extend",
})
# Operators whose result is a Python scalar whatever their operands.
SCALAR_RESULTS = frozenset({
    "aten::size", "aten::len", "aten::dim", "aten::numel", "aten::Int", "aten::Float", "aten::Bool",
    "aten::ScalarImplicit", "aten::__is__", "aten::__isnot__", "aten::__not__", "aten::str", "aten::format",
})
# Tensor factories: all-scalar operands, tensor result (never weak).
TENSOR_FACTORIES = frozenset({
    "aten::zeros", "aten::ones", "aten::empty", "aten::full", "aten::rand", "aten::randn", "aten::randint",
    "aten::arange", "aten::linspace", "aten::eye", "aten::tensor", "aten::scalar_tensor", "aten::as_tensor",
})
RAISE = "prim::RaiseException"  # how the printer raises; a finished trace never ran it
_MAX_INLINE_PATH = 64
_MAX_INLINE = 6  # nesting of compiled functions and self methods inlined into the script's events  # receiver path segments followed when resolving a submodule's class

_LITERAL_NAMES = frozenset({"True", "False", "None", "inf", "nan"})


@dataclass
class Event:
    index: int  # number of the event, unique among a function and the callees inlined into it
    call: Call
    label: str
    weak: bool

    @property
    def cost(self) -> int:
        return SCRIPT_MISSING["weak" if self.weak else self.call.kind]

    @property
    def telling(self) -> bool:
        """Whether a trace without this event says the script did not run it."""
        return not self.weak and self.call.kind in ("submodule", "operator")


@dataclass
class IfNode:
    index: int
    stmt: IfStatement
    then: list
    orelse: list


@dataclass
class LoopNode:
    index: int
    loop: Loop
    body: list


Item = Union[Event, IfNode, LoopNode]


# A traced submodule called again gets its method recorded again as `forward1`, `forward2`...
_RETRACED_METHOD = ".forward"


def _label(call: Call, trace: bool = False) -> str:
    label = short_call(call)
    if trace and call.kind == "submodule":
        base = label.rstrip("0123456789")
        if base != label and base.endswith(_RETRACED_METHOD):
            return base
    return label


def _events_in(items: list) -> Iterable[Event]:
    for item in items:
        if isinstance(item, Event):
            yield item
        elif isinstance(item, IfNode):
            yield from _events_in(item.then)
            yield from _events_in(item.orelse)
        else:
            yield from _events_in(item.body)


def _condition_only(stmts: list[Stmt], text: str, names) -> set[str]:
    """Names whose values reach only ``if``/``while`` tests (so a trace drops them)."""
    uses: dict[str, list[Optional[tuple[str, ...]]]] = {}
    assigned: set[str] = set()

    def use(span: tuple[int, int], owner: Optional[tuple[str, ...]]) -> None:
        for m in names.finditer(text, *span):
            uses.setdefault(m.group(), []).append(owner)

    def walk(block: list[Stmt]) -> None:
        for s in block:
            k = s.kind
            if k == "assign":
                targets = tuple(names.findall(s.group("targets") or ""))
                assigned.update(targets)
                use(s.span_of("value"), targets)
            elif k in ("if", "elif", "while"):
                use(s.span_of("test"), ("<test>",))
            elif k != "def":
                use((s.start, s.end), None)
            walk(s.body)
            if s.orelse:
                walk(s.orelse)

    walk(stmts)
    only = {name for name in assigned if uses.get(name)}  # an unused value may be a side effect
    changed = True
    while changed:
        changed = False
        for name in list(only):
            for owner in uses.get(name, ()):
                if owner is None or not (owner == ("<test>",) or all(t in only for t in owner)):
                    only.discard(name)
                    changed = True
                    break
    return only


def _callee_text(node: CallExpr, text: str) -> str:
    return text[node.func.start:node.func.end]


class _Scalars:
    """Which local names hold Python scalars (int, float, bool, str), by an optimistic fixpoint.

    A name is scalar when every definition is: a literal, a scalar name, a ``range``
    loop target, a scalar-typed parameter, an operator of :data:`SCALAR_RESULTS`, or an
    operator (not a tensor factory) whose positional operands are all scalar.  An
    operator call on scalar names only is then *weak*: a trace never records it.
    """

    def __init__(self, stmts: list[Stmt], fn: Function, text: str, reader: ExpressionReader, names):
        from .api import _sem

        self.text, self.reader, self.sem = text, reader, _sem()
        defs: dict[str, list] = {}
        for p in fn.signature.params:
            a = p.annotation
            scalar = a is not None and "Tensor" not in a and "__torch__" not in a and a != "Any"
            defs.setdefault(p.name, []).append("scalar" if scalar else None)

        def walk(block: list[Stmt]) -> None:
            for s in block:
                k = s.kind
                if k == "assign":
                    targets = names.findall(s.group("targets") or "")
                    value = reader.read(*s.span_of("value"))
                    if len(targets) == 1:
                        defs.setdefault(targets[0], []).append(value)
                    elif isinstance(value, Seq) and value.kind == "tuple" and len(value.items) == len(targets):
                        for t, v in zip(targets, value.items):
                            defs.setdefault(t, []).append(v)
                    else:
                        for t in targets:
                            defs.setdefault(t, []).append(None)
                elif k == "for":
                    it = s.group("iter") or ""
                    for t in names.findall(s.group("target") or ""):
                        defs.setdefault(t, []).append("scalar" if it.startswith("range(") else None)
                elif k == "with":
                    for t in names.findall(s.group("target") or "") if "target" in s.match.groupdict() else []:
                        defs.setdefault(t, []).append(None)
                walk(s.body)
                if s.orelse:
                    walk(s.orelse)

        walk(stmts)
        self.names = set(defs)
        changed = True
        while changed:
            changed = False
            for name in list(self.names):
                if not all(d == "scalar" or (d is not None and d != "scalar" and self.expr(d)) for d in defs[name]):
                    self.names.discard(name)
                    changed = True

    def operator(self, node: CallExpr) -> Optional[str]:
        return self.sem.operator(_callee_text(node, self.text))

    def expr(self, node) -> bool:
        if isinstance(node, Const):
            return True
        if isinstance(node, Name):
            return node.id in _LITERAL_NAMES or node.id in self.names
        if isinstance(node, CallExpr):
            op = self.operator(node)
            if op is None:
                return False
            if op in SCALAR_RESULTS:
                return True
            return self.weak_call(node, op)
        return False

    def weak_call(self, node: CallExpr, op: Optional[str]) -> bool:
        """An operator on scalar names (and literals) only."""
        if op is None or op in TENSOR_FACTORIES or not node.args or node.keywords:
            return False
        if not any(isinstance(a, (Name, CallExpr)) for a in node.args):
            return False
        return all(not isinstance(a, Seq) and self.expr(a) for a in node.args)


class FunctionTree:
    """The event tree of one function: blocks of events, ifs and loops."""

    def __init__(self, fn: Function, unit: Unit, module: str, trace: bool = False,
                 resolver: Optional[Callable[[Call, Function], Optional[tuple[Function, Unit]]]] = None,
                 root: Optional["FunctionTree"] = None, stack: tuple[str, ...] = ()):
        self.fn = fn
        self.trace = trace
        self.unit = unit
        self.module = module
        self.source = SourceText(unit.text, unit.code_file.path)
        self.grammar = load_grammar(unit.code_file.grammar)
        self.resolver = resolver
        self.root = root or self  # inlined callees share the root's numbering
        self.stack = stack + (fn.qualified_name,)
        self.events: list[Event] = []  # this function's own (not inlined) events
        self.ifs: list[IfNode] = []
        self.loops: list[LoopNode] = []
        self._counts = [0, 0, 0] if root is None else root._counts  # events, ifs, loops
        self.inlined: list[FunctionTree] = []  # on the root: every callee inlined, in order
        calls = sorted(fn.calls, key=lambda c: (c.span.start, c.span.end))
        self._calls = calls
        self._starts = [c.span.start for c in calls]
        self._if_by_start = {i.span.start: i for i in fn.ifs}
        self._loop_by_start = {lp.span.start: lp for lp in fn.loops}
        stmt = self._find_def(parse_statements(self.source, self.grammar).body)
        self._weak_names: set[str] = set()
        self._scalars: Optional[_Scalars] = None
        if stmt is not None:
            self._weak_names = _condition_only(stmt.body, unit.text, self.grammar.fragments["name_use"])
            self._scalars = _Scalars(stmt.body, fn, unit.text, ExpressionReader(unit.text, self.grammar),
                                    self.grammar.fragments["name_use"])
            self.items = self._block(stmt.body)
        else:  # the def was not found again: a flat list of its calls
            self.items = self._simple(list(fn.calls), False)

    def _find_def(self, stmts: list[Stmt]) -> Optional[Stmt]:
        for s in stmts:
            if s.kind == "def" and s.start == self.fn.span.start:
                return s
            if s.body:
                found = self._find_def(s.body)
                if found is not None:
                    return found
        return None

    def _calls_between(self, start: int, end: int) -> list[Call]:
        from bisect import bisect_left

        lo, hi = bisect_left(self._starts, start), bisect_left(self._starts, end)
        return self._calls[lo:hi]

    def _next(self, which: int) -> int:
        self._counts[which] += 1
        return self._counts[which] - 1

    def _event(self, call: Call, weak: bool) -> Event:
        label = _label(call, self.trace)
        weak = weak or (call.kind == "operator" and label in SCALAR_OPERATORS)
        if not weak and call.kind == "operator" and self._scalars is not None:
            node = self._scalars.reader.read(call.span.start, call.span.end)
            weak = isinstance(node, CallExpr) and self._scalars.weak_call(node, call.target)
        event = Event(self._next(0), call, label, weak)
        self.events.append(event)
        return event

    def _inline(self, call: Call) -> Optional[list[Item]]:
        """The callee's items, for a compiled function or self method whose code we have."""
        if self.resolver is None or call.kind not in ("function", "self_method") or len(self.stack) > _MAX_INLINE:
            return None
        found = self.resolver(call, self.fn)
        if found is None or found[0].qualified_name in self.stack:
            return None
        callee = FunctionTree(found[0], found[1], self.module, self.trace, self.resolver, self.root, self.stack)
        self.root.inlined.append(callee)
        return callee.items

    def _simple(self, calls: list[Call], weak: bool) -> list[Item]:
        items: list[Item] = []
        for c in sorted(calls, key=lambda c: (c.span.end, -c.span.start)):
            inlined = self._inline(c)
            items.extend(inlined if inlined is not None else [self._event(c, weak)])
        return items

    def _block(self, stmts: list[Stmt]) -> list[Item]:
        items: list[Item] = []
        for s in stmts:
            k = s.kind
            header = self._calls_between(s.start, s.end)
            if k in ("if", "elif"):
                items.extend(self._simple(header, True))
                stmt = self._if_by_start.get(s.start)
                node = IfNode(self._next(1), stmt, [], [])  # type: ignore[arg-type]
                self.ifs.append(node)
                node.then = self._block(s.body)
                node.orelse = self._block(s.orelse or [])
                if stmt is not None:
                    items.append(node)
            elif k in ("for", "while"):
                items.extend(self._simple(header, k == "while"))
                node = LoopNode(self._next(2), self._loop_by_start.get(s.start), [])  # type: ignore[arg-type]
                self.loops.append(node)
                node.body = self._block(s.body)
                items.append(node)
            elif k == "with":
                items.extend(self._simple(header, False))
                items.extend(self._block(s.body))
            elif k == "assign":
                targets = self.grammar.fragments["name_use"].findall(s.group("targets") or "")
                weak = bool(targets) and all(t in self._weak_names for t in targets)
                items.extend(self._simple(self._calls_between(s.start, s.block_end), weak))
            elif k == "def":  # a nested def (a closure the printer emits): not run here
                continue
            else:
                items.extend(self._simple(self._calls_between(s.start, s.block_end), False))
        return items


