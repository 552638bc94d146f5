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

from ..contract.text import Call, Function, IfStatement, Loop
from ..grammar.engine import load_grammar, load_tracediff
from ..output.render import short_call
from ..parse.expressions import CallExpr, Const, ExpressionReader, Index, Name, Seq
from ..parse.statements import Stmt
from .sides import Unit, overload_base

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
# Operators on Python scalars, lists and strings: a trace never records them
# (`[scalar_operators]` of grammars/tracediff.toml, as the two tables below).
_TABLES = load_tracediff()
SCALAR_OPERATORS = frozenset(_TABLES["scalar_operators"]["operators"])
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
# What an `@torch.jit.unused` method compiles to: a raise that no trace ever takes as evidence
UNUSED_STUB = "annotated to be ignored"
# Operators (and method names) that change their operands: never dead, whatever their result
MUTATORS = frozenset(_TABLES["mutators"]["operators"])
# Trace operators that stand for other script operators: the tracer records the op that
# ran underneath (`torch.conv2d` runs `aten::_convolution`); keys of the same operator that
# differ by overload are told apart by their arguments (see `match_key`).
TRACE_EQUIVALENTS: dict[str, frozenset] = {
    trace_op: frozenset(script_ops) for trace_op, script_ops in _TABLES["trace_equivalents"].items()}
# Script operators that a trace records as a device move (`torch.to(x, dtype=6, layout=0,
# device=torch.device("cpu"))` on torch 2.13) or as a dtype conversion (`torch.to(x, 7, ...)`).
DEVICE_MOVES = frozenset({"aten::cpu", "aten::cuda"})
DTYPE_CONVERSIONS = frozenset({"aten::float", "aten::double", "aten::half", "aten::bfloat16", "aten::long",
                               "aten::int", "aten::short", "aten::bool", "aten::byte", "aten::char"})
TO_DEVICE, TO_DTYPE = "aten::to[device]", "aten::to[dtype]"
# Compiled library functions (`__torch__.torch.nn.functional.dropout`) run an operator of their
# own name: in a trace, `aten::dropout`.
LIBRARY_FUNCTIONS = "__torch__.torch.nn.functional."
_MAX_INLINE_PATH = 64
_MAX_INLINE = 6  # nesting of compiled functions and self methods inlined into the script's events  # receiver path segments followed when resolving a submodule's class

_LITERAL_NAMES = frozenset({"True", "False", "None", "inf", "nan"})


@dataclass
class Event:
    index: int  # number of the event, unique among a function and the callees inlined into it
    call: Call
    label: str
    weak: bool
    keys: frozenset = frozenset()  # the trace labels it matches (its label, refined, and equivalents)
    dead: bool = False  # its value is used on no path: the tracer drops it
    maybe_dead: bool = False  # its value is used on some paths only
    opaque: bool = False  # a call whose body a trace inlines and whose code we lack

    @property
    def cost(self) -> int:
        if self.dead:
            return 0
        if self.weak or self.maybe_dead:
            return SCRIPT_MISSING["weak"]
        return SCRIPT_MISSING[self.call.kind]

    @property
    def telling(self) -> bool:
        """Whether a trace without this event says the script did not run it."""
        if self.weak or self.dead or self.maybe_dead:
            return False
        if self.call.kind == "function":
            # a library function's own operator, when present, is evidence; its absence is not:
            # `F.interpolate` runs `aten::upsample_bilinear2d`, not an operator of its own name
            return False
        return self.call.kind == "operator" or (self.call.kind == "submodule" and not self.opaque)


@dataclass
class IfNode:
    index: int
    stmt: IfStatement
    then: list
    orelse: list
    # When the `if` only sets the continue flag of its `while` loop (how `break` compiles):
    # the branch that stops the loop ("then"/"else"), and the loop's index.
    loop_flag: Optional[tuple[str, int]] = None


@dataclass
class LoopNode:
    index: int
    loop: Loop
    body: list


Item = Union[Event, IfNode, LoopNode]


# A traced submodule called again gets its method recorded again as `forward1`, `forward2`...
_RETRACED_METHOD = ".forward"
def _label(call: Call, trace: bool = False, prefix: str = "self") -> str:
    label = short_call(call)
    if call.kind == "submodule":
        if trace:
            base = label.rstrip("0123456789")
            if base != label and base.endswith(_RETRACED_METHOD):
                label = base
        elif call.method:
            base = overload_base(call.method)
            if base != call.method:
                label = label[: len(label) - len(call.method)] + base
    if prefix != "self" and call.receiver and (call.receiver == "self" or call.receiver.startswith("self.")):
        label = prefix + label[len("self"):]
    return label


def _is_mutator(label: str) -> bool:
    return label in MUTATORS or (label.endswith("_") and not label.endswith("__"))


def refine_to(node: Optional[CallExpr], text: str) -> Optional[str]:
    """``aten::to`` told apart by its arguments: a device move or a dtype conversion (None: unsure)."""
    if node is None:
        return None
    if any(k == "device" for k, _ in node.keywords):
        return TO_DEVICE
    if any(k == "dtype" for k, _ in node.keywords):
        return TO_DTYPE
    for arg in node.args[1:2]:
        if isinstance(arg, Const):
            return TO_DEVICE if text[arg.start:arg.end].startswith(('"', "'")) else TO_DTYPE
        if isinstance(arg, CallExpr) and text[arg.func.start:arg.func.end].endswith("device"):
            return TO_DEVICE
    return None


def script_keys(label: str, call: Call, node: Optional[CallExpr], text: str) -> frozenset:
    """The trace labels a script event matches (see :data:`TRACE_EQUIVALENTS`)."""
    keys = {label}
    if label == "aten::to":
        refined = refine_to(node, text)
        keys |= {refined} if refined else {TO_DEVICE, TO_DTYPE}
    elif label in DEVICE_MOVES:
        keys.add(TO_DEVICE)
    elif label in DTYPE_CONVERSIONS:
        keys.add(TO_DTYPE)
    elif call.kind == "function" and label.startswith(LIBRARY_FUNCTIONS):
        base = label[len(LIBRARY_FUNCTIONS):]
        keys |= {f"aten::{base}", f"aten::{base}_"}
    for trace_op, script_ops in TRACE_EQUIVALENTS.items():
        if label in script_ops:
            keys.add(trace_op)
    return frozenset(keys)


def trace_label(label: str, node: Optional[CallExpr], text: str) -> str:
    """A trace event's label, with ``aten::to`` refined by its arguments."""
    if label == "aten::to":
        return refine_to(node, text) or label
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


def literal_value(node, text: str) -> object:
    """The value of a literal (``None``, ``True``, ``2``, ``0.5``, ``"reflect"``); ``...`` otherwise."""
    if isinstance(node, Name):
        return {"True": True, "False": False, "None": None}.get(node.id, ...)
    if isinstance(node, Const):
        import ast

        try:
            value = ast.literal_eval(node.text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return ...
        return value if isinstance(value, (int, float, str)) else ...
    return ...


def _assigned(stmts: list[Stmt], text: str, names) -> set[str]:
    """Names a block assigns (``for`` targets included)."""
    out: set[str] = set()
    for s in stmts:
        if s.kind == "assign":
            out.update(names.findall(s.group("targets") or ""))
        elif s.kind == "for":
            out.update(names.findall(s.group("target") or ""))
        out |= _assigned(s.body, text, names)
        if s.orelse:
            out |= _assigned(s.orelse, text, names)
    return out


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


def _liveness(stmts: list[Stmt], text: str, names) -> tuple[set[int], set[int]]:
    """Statements (by start offset) whose assigned values are used on no path after them
    (*dead*: the tracer drops their operators) and those used on some paths only (*maybe*).

    A backward pass computes, after each statement, the names used on some path (may-live)
    and on every path (must-live) before being assigned again; loops run zero or more times.
    """
    dead: set[int] = set()
    maybe: set[int] = set()

    def uses(a: int, b: int) -> set[str]:
        return set(names.findall(text, a, b))

    def block(body: list[Stmt], may: set[str], must: set[str], record: bool) -> tuple[set[str], set[str]]:
        may, must = set(may), set(must)
        for st in reversed(body):
            k = st.kind
            if k == "assign":
                targets = set(names.findall(st.group("targets") or ""))
                value = uses(*st.span_of("value"))
                if targets & may:
                    if record and not targets & must:
                        maybe.add(st.start)
                    may = (may - targets) | value
                    must = ((must - targets) | value) if targets & must else (must - targets)
                elif record:
                    dead.add(st.start)
            elif k in ("if", "elif"):
                test = uses(*st.span_of("test"))
                t_may, t_must = block(st.body, may, must, record)
                e_may, e_must = block(st.orelse or [], may, must, record)
                may, must = t_may | e_may | test, (t_must & e_must) | test
            elif k in ("for", "while"):
                header = uses(st.start, st.body[0].start if st.body else st.end)
                loop_may = may | header
                for _ in range(8):  # a fixpoint: each round adds names, and there are few
                    body_may, _ = block(st.body, loop_may, set(), False)
                    grown = loop_may | body_may
                    if grown == loop_may:
                        break
                    loop_may = grown
                block(st.body, loop_may, must | header, record)
                may, must = loop_may, must | header
            elif k == "return":
                may = must = uses(st.start, st.block_end)
            elif k == "def":
                continue
            elif k == "with":
                header = uses(st.start, st.body[0].start if st.body else st.end)
                may, must = block(st.body, may, must, record)
                may, must = may | header, must | header
            else:
                found = uses(st.start, st.block_end)
                may, must = may | found, must | found
        return may, must

    block(stmts, set(), set(), True)
    return dead, maybe


def _callee_text(node: CallExpr, text: str) -> str:
    return text[node.func.start:node.func.end]


_SCALAR_TYPES = frozenset({"int", "float", "bool", "str"})
_SCALAR_LIST_TYPES = frozenset(f"List[{t}]" for t in _SCALAR_TYPES)


@dataclass(frozen=True)
class _ItemOf:
    """The definition of a ``for`` target: an item of ``iterable``."""

    iterable: object


class _Scalars:
    """Which local names hold Python scalars (int, float, bool, str), by an optimistic fixpoint.

    A name is scalar when every definition is: a literal, a scalar name, a ``range``
    loop target, a scalar-typed parameter, an operator of :data:`SCALAR_RESULTS`, an
    operator (not a tensor factory) whose positional operands are all scalar, or an item of
    a *scalar list*.  A name is a scalar list when every definition is a list display of
    scalars, another scalar list, or ``annotate(List[int], ...)`` (of ``int``, ``float``,
    ``bool``, ``str``): TorchScript lists are typed, so what is appended later is scalar too.
    ``uninitialized(int)`` (of the same types) is scalar.
    The target of a ``for`` over a scalar list is scalar.  An operator call on scalar names
    only is then *weak*: a trace never records it.
    """

    def __init__(self, stmts: list[Stmt], fn: Function, text: str, reader: ExpressionReader, names, grammar,
                 returns: Optional[Callable[[CallExpr], Optional[str]]] = None):
        from ..infer.semantics import shared_semantics

        self.text, self.reader, self.sem = text, reader, shared_semantics()
        self.returns = returns  # the declared return type of a callee whose code the input holds
        defs: dict[str, list] = {}
        items = grammar.expression["items"].match

        def _top_level_items(span: tuple[int, int]) -> list[tuple[int, int]]:
            m = items(text, *span)
            return m.spans("item") if m is not None and m.end() == span[1] else []

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
                    elif len(split := _top_level_items(s.span_of("value"))) == len(targets):  # `a, b = x, y`
                        for t, (a, b) in zip(targets, split):
                            defs.setdefault(t, []).append(reader.read(a, b))
                    else:
                        for t in targets:
                            defs.setdefault(t, []).append(None)
                elif k == "for":
                    it = s.group("iter") or ""
                    item = "scalar" if it.startswith("range(") else _ItemOf(reader.read(*s.span_of("iter")))
                    for t in names.findall(s.group("target") or ""):
                        defs.setdefault(t, []).append(item)
                elif k == "with":
                    for t in names.findall(s.group("target") or "") if "target" in s.match.groupdict() else []:
                        defs.setdefault(t, []).append(None)
                walk(s.body)
                if s.orelse:
                    walk(s.orelse)

        walk(stmts)
        self.names = set(defs)  # optimistic: every name scalar, and every name a scalar list
        self.lists = set(defs)
        changed = True
        while changed:
            changed = False
            for name in list(self.names):
                if not all(self._scalar_def(d) for d in defs[name]):
                    self.names.discard(name)
                    changed = True
            for name in list(self.lists):
                if not all(d is not None and not isinstance(d, (str, _ItemOf)) and self.list_expr(d)
                           for d in defs[name]):
                    self.lists.discard(name)
                    changed = True

    def _scalar_def(self, d) -> bool:
        if d == "scalar":
            return True
        if isinstance(d, _ItemOf):
            return self.list_expr(d.iterable)
        return d is not None and self.expr(d)

    def list_expr(self, node) -> bool:
        """A list of Python scalars."""
        if isinstance(node, Seq):
            return node.kind == "list" and all(self.expr(a) for a in node.items)
        if isinstance(node, Name):
            return node.id in self.lists
        if isinstance(node, CallExpr) and _callee_text(node, self.text) == "annotate" and node.args:
            return self.text[node.args[0].start:node.args[0].end].replace(" ", "") in _SCALAR_LIST_TYPES
        return False

    def operator(self, node: CallExpr) -> Optional[str]:
        return self.sem.operator(_callee_text(node, self.text))

    def expr(self, node) -> bool:
        if isinstance(node, Const):
            return True
        if isinstance(node, Name):
            return node.id in _LITERAL_NAMES or node.id in self.names
        if isinstance(node, Index):  # an item of a scalar list
            return len(node.items) == 1 and self.list_expr(node.value) and self.expr(node.items[0])
        if isinstance(node, CallExpr):
            op = self.operator(node)
            if op is None:  # `uninitialized(int)`: a placeholder the compiler adds, of a scalar type
                if (_callee_text(node, self.text) == "uninitialized" and len(node.args) == 1
                        and self.text[node.args[0].start:node.args[0].end] in _SCALAR_TYPES):
                    return True
                # a compiled function or method declared to return one (`_get_no_batch_dim() -> int`)
                return self.returns is not None and self.returns(node) in _SCALAR_TYPES
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


Resolver = Callable[[Call, "FunctionTree"], Optional[tuple]]
"""``(call, caller tree) -> (function, unit, class or None, receiver prefix)`` of a callee whose
code the input holds (compiled function, self method, non-``forward`` submodule method), or None."""


class FunctionTree:
    """The event tree of one function: blocks of events, ifs and loops.

    ``keep`` names compiled functions that the trace calls by name (scripted code inside a
    trace): they stay one event each instead of being inlined.  ``prefix`` is the receiver
    path of the module the function belongs to, seen from the root (``self.proj`` for a
    submodule method inlined into the root's ``forward``).
    """

    def __init__(self, fn: Function, unit: Unit, module: str, trace: bool = False,
                 resolver: Optional[Resolver] = None, root: Optional["FunctionTree"] = None,
                 stack: tuple[str, ...] = (), cls=None, prefix: str = "self",
                 keep: frozenset = frozenset(), bindings: Optional[dict[str, object]] = None):
        self.fn = fn
        self.trace = trace
        self.unit = unit
        self.module = module
        self.cls = cls
        self.prefix = prefix
        self.keep = keep
        # parameter -> the literal its (one) call site passes, for parameters the body never assigns
        self.bindings: dict[str, object] = dict(bindings or {})
        self.grammar = load_grammar(unit.code_file.grammar)
        self.resolver = resolver
        self.root = root or self  # inlined callees share the root's numbering
        self.stack = stack + (fn.qualified_name,)
        self.events: list[Event] = []  # this function's own (not inlined) events
        self.ifs: list[IfNode] = []
        self.loops: list[LoopNode] = []
        self._counts = [0, 0, 0] if root is None else root._counts  # events, ifs, loops
        self.inlined: list[FunctionTree] = []  # on the root: every callee inlined, in order
        self.kept_calls: list[tuple] = []  # on the root: (function, unit) of every kept callee
        calls = sorted(fn.calls, key=lambda c: (c.span.start, c.span.end))
        self._calls = calls
        self._starts = [c.span.start for c in calls]
        self._if_by_start = {i.span.start: i for i in fn.ifs}
        self._loop_by_start = {lp.span.start: lp for lp in fn.loops}
        self.reader = ExpressionReader(unit.text, self.grammar)
        stmt = self._find_def(unit.statements(self.grammar))
        self._weak_names: set[str] = set()
        self._dead: set[int] = set()
        self._maybe_dead: set[int] = set()
        self._scalars: Optional[_Scalars] = None
        if stmt is not None:
            names = self.grammar.fragments["name_use"]
            self._weak_names = _condition_only(stmt.body, unit.text, names)
            if not trace:
                self._dead, self._maybe_dead = _liveness(stmt.body, unit.text, names)
            self._scalars = _Scalars(stmt.body, fn, unit.text, self.reader, names, self.grammar, self._returns)
            if self.bindings:
                assigned = _assigned(stmt.body, unit.text, names)
                self.bindings = {k: v for k, v in self.bindings.items() if k not in assigned}
            self.items = self._block(stmt.body)
        else:  # the def was not found again: a flat list of its calls
            self.items = self._simple(list(fn.calls), False)

    def _bound(self, call: Call, callee: Function) -> dict[str, object]:
        """The callee's parameters that this call passes a literal (``None``, ``True``, a number, a
        string) or a parameter of its own bound to one."""
        node = self._node(call)
        if node is None:
            return {}
        params = [p.name for p in callee.signature.params]
        if call.kind != "function" and params[:1] == ["self"]:
            params = params[1:]
        out: dict[str, object] = {}
        pairs = list(zip(params, node.args)) + [(k, v) for k, v in node.keywords if k in params]
        for name, arg in pairs:
            value = literal_value(arg, self.unit.text)
            if value is ... and isinstance(arg, Name) and arg.id in self.bindings:
                value = self.bindings[arg.id]
            if value is not ...:
                out[name] = value
        return out

    def _returns(self, node: CallExpr) -> Optional[str]:
        """The declared return type of the callee of ``node``, when the input holds its code."""
        if self.resolver is None:
            return None
        call = next((c for c in self._calls if c.span.start == node.start and c.span.end == node.end), None)
        if call is None or call.kind not in ("function", "self_method", "submodule"):
            return None
        found = self.resolver(call, self)
        return found[0].signature.returns if found is not None else None

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

    def _node(self, call: Call) -> Optional[CallExpr]:
        node = self.reader.read(call.span.start, call.span.end)
        return node if isinstance(node, CallExpr) else None

    def _event(self, call: Call, weak: bool, dead: bool = False, maybe_dead: bool = False) -> Event:
        label = _label(call, self.trace, self.prefix)
        weak = weak or (call.kind == "operator" and label in SCALAR_OPERATORS)
        node = self._node(call) if call.kind in ("operator", "function") else None
        if not weak and call.kind == "operator" and self._scalars is not None:
            weak = node is not None and self._scalars.weak_call(node, call.target)
        if self.trace:
            event = Event(self._next(0), call, trace_label(label, node, self.unit.text), weak)
        else:
            mutates = _is_mutator(label) or call.kind != "operator"
            event = Event(self._next(0), call, label, weak, script_keys(label, call, node, self.unit.text),
                          dead=dead and not mutates, maybe_dead=maybe_dead and not mutates,
                          opaque=call.kind == "submodule" and bool(call.method)
                          and overload_base(call.method) != "forward")
        self.events.append(event)
        return event

    def _inline(self, call: Call) -> Optional[list[Item]]:
        """The callee's items, for a compiled function, a self method or a non-``forward`` submodule
        method whose code we have (a trace inlines them all)."""
        if self.resolver is None or len(self.stack) > _MAX_INLINE:
            return None
        if call.kind not in ("function", "self_method", "submodule"):
            return None
        if call.kind == "submodule" and (not call.method or overload_base(call.method) == "forward"):
            return None
        if call.kind == "function" and call.target in self.keep:
            return None
        found = self.resolver(call, self)
        if found is None or found[0].qualified_name in self.stack:
            return None
        fn, unit, cls, prefix = found
        callee = FunctionTree(fn, unit, self.module, self.trace, self.resolver, self.root, self.stack,
                              bindings=self._bound(call, fn),
                              cls=cls, prefix=prefix, keep=self.keep)
        self.root.inlined.append(callee)
        return callee.items

    def _simple(self, calls: list[Call], weak: bool, dead: bool = False, maybe_dead: bool = False) -> list[Item]:
        items: list[Item] = []
        for c in sorted(calls, key=lambda c: (c.span.end, -c.span.start)):
            inlined = self._inline(c)
            items.extend(inlined if inlined is not None else [self._event(c, weak, dead, maybe_dead)])
        return items

    def _mark_loop_flags(self, loop: Stmt, node: LoopNode) -> None:
        """Find the ``if``s of a ``while`` body that only set its continue flag: the printer
        compiles ``break`` to ``if c: _4 = False else: _4 = True`` and the loop's last statement
        ``_2, ... = torch.__and__(..., _4), ...`` (``_2`` being the ``while`` test)."""
        names = self.grammar.fragments["name_use"]
        test = (loop.group("test") or "").strip() if "test" in loop.match.groupdict() else ""
        feeding: set[str] = {test}  # names the next test is computed from (within the body)
        changed = True
        while changed:
            changed = False
            for st in loop.body:
                if st.kind == "assign" and feeding & set(names.findall(st.group("targets") or "")):
                    found = set(names.findall(self.unit.text, *st.span_of("value"))) - feeding
                    if found:
                        feeding |= found
                        changed = True
        feeding.discard(test)
        if not feeding:
            return

        def sets(branch: list[Stmt]) -> Optional[dict[str, str]]:
            out: dict[str, str] = {}
            for st in branch:
                if st.kind != "assign":
                    return None
                targets = names.findall(st.group("targets") or "")
                value = self.reader.read(*st.span_of("value"))
                items = value.items if isinstance(value, Seq) and value.kind == "tuple" else [value]
                if len(items) != len(targets):
                    return None
                out.update((t, v.id if isinstance(v, Name) else "") for t, v in zip(targets, items))
            return out

        by_start = {n.stmt.span.start: n for n in self.ifs if n.stmt is not None}
        for st in loop.body:
            if st.kind != "if" or st.start not in by_start:
                continue
            then, orelse = sets(st.body), sets(st.orelse or [])
            if then is None or orelse is None:
                continue
            for flag in feeding:
                values = (then.get(flag), orelse.get(flag))
                if values == ("False", "True"):
                    by_start[st.start].loop_flag = ("then", node.index)
                elif values == ("True", "False"):
                    by_start[st.start].loop_flag = ("else", node.index)

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
                if k == "while":
                    self._mark_loop_flags(s, node)
                items.append(node)
            elif k == "with":
                items.extend(self._simple(header, False))
                items.extend(self._block(s.body))
            elif k == "assign":
                targets = self.grammar.fragments["name_use"].findall(s.group("targets") or "")
                weak = bool(targets) and all(t in self._weak_names for t in targets)
                items.extend(self._simple(self._calls_between(s.start, s.block_end), weak,
                                          s.start in self._dead, s.start in self._maybe_dead))
            elif k == "def":  # a nested def (a closure the printer emits): not run here
                continue
            else:
                items.extend(self._simple(self._calls_between(s.start, s.block_end), False))
        return items


