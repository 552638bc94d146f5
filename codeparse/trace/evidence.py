"""What the path through a script function says about each ``if``: the rules of evidence.

The alignment (:mod:`codeparse.trace.align`) gives, for every time the path passes an ``if``,
the branch it took and the trace events matched inside.  These rules turn that into an
answer that is right or abstains with a reason (``IfDiff.reason``, a closed list):

* a branch is *chosen without evidence* only when every path through the other branch
  would have left a telling event (:func:`must_tell`), not when the chosen one merely lacks
  any: an optional inner ``if`` with an empty ``else`` tells nothing;
* a raise in one branch says the other ran (the trace finished), except the stub an
  ``@torch.jit.unused`` method compiles to (``annotated to be ignored``), which the trace
  never saw: Python ran the real method;
* a condition on ``torch.jit.is_tracing()``, torchvision's ``_is_tracing()`` or
  ``torch._C._get_tracing_state()`` is true inside a trace, ``torch.jit.is_scripting()`` false,
  through ``not``, ``==``/``!=`` with a bool and ``is``/``is not None``
  (:func:`tracing_value`): reason ``tracing_predicate``;
* equal costs with the ``if`` forced each way are a ``tie``, and branches making the same
  calls are ``indistinguishable``: both answer ``ambiguous``.
"""

from __future__ import annotations

from typing import Iterable, Optional

from ..parse.expressions import Attr, CallExpr, Const, ExpressionReader, Name
from .events import RAISE, UNUSED_STUB, Event, IfNode, LoopNode, _events_in, literal_value

__all__ = ["must_tell", "may_tell", "raises", "tracing_value", "classify_run", "telling_labels", "LiteralCheck"]

# Callee names (last dotted part) whose value inside a trace is known.
TRACING_TRUE = frozenset({"is_tracing", "_is_tracing", "_get_tracing_state"})
TRACING_FALSE = frozenset({"is_scripting"})
_NOT = frozenset({"__not__"})
_EQ, _NE = frozenset({"eq", "__eq__"}), frozenset({"ne", "__ne__"})
_IS, _ISNOT = frozenset({"__is__"}), frozenset({"__isnot__"})
_BOOL = frozenset({"bool"})


def must_tell(items: list) -> bool:
    """Whether every path through ``items`` passes a telling event (loops may run zero times)."""
    for item in items:
        if isinstance(item, Event):
            if item.telling:
                return True
        elif isinstance(item, IfNode):
            if must_tell(item.then) and must_tell(item.orelse):
                return True
    return False


def may_tell(items: list) -> bool:
    """Whether some path through ``items`` passes a telling event."""
    return any(e.telling for e in _events_in(items))


def telling_labels(items: list) -> list[str]:
    return [e.label for e in _events_in(items) if not e.weak]


def raises(block: list, text_of) -> bool:
    """Whether a branch raises unconditionally (a raise among its direct items) for real: the
    stub of an ``@torch.jit.unused`` method is no raise a trace could have avoided."""
    return any(isinstance(item, Event) and item.label == RAISE and UNUSED_STUB not in text_of(item)
               for item in block)


def _callee_name(node: CallExpr, text: str) -> str:
    return text[node.func.start:node.func.end].rsplit(".", 1)[-1]


def _value(node, text: str, bindings: Optional[dict] = None) -> Optional[object]:
    """True/False/None(-the-value) when known inside a trace; ``...`` when unknown.  With
    ``bindings`` (a parameter -> the literal its call site passes), literals and those
    parameters have their values, and nothing is a tracing predicate."""
    if bindings is not None:
        if isinstance(node, Name) and node.id in bindings:
            return bindings[node.id]
        if isinstance(node, (Name, Const)):
            return literal_value(node, text)
    if isinstance(node, Name):
        return {"True": True, "False": False, "None": None}.get(node.id, ...)
    if not isinstance(node, CallExpr):
        return ...
    name = _callee_name(node, text)
    if bindings is not None and name not in _NOT | _BOOL | _EQ | _NE | _IS | _ISNOT:
        return ...
    if name in TRACING_TRUE and not node.args:
        return True
    if name in TRACING_FALSE and not node.args:
        return False
    if name in _NOT | _BOOL and len(node.args) == 1:
        v = _value(node.args[0], text, bindings)
        return v if v is ... else (not v if name in _NOT else bool(v))
    if name in _EQ | _NE | _IS | _ISNOT and len(node.args) == 2:
        a, b = (_value(x, text, bindings) for x in node.args)
        if a is ... or b is ...:
            return ...
        if name in _IS | _ISNOT:
            same = (a is None) == (b is None) if (a is None or b is None) else ...
            if same is ...:
                return ...
            return same if name in _IS else not same
        return (a == b) if name in _EQ else (a != b)
    return ...


def tracing_value(condition: str, grammar) -> Optional[bool]:
    """The value of a condition inside a trace when it rests on tracing predicates only."""
    if not any(name in condition for name in TRACING_TRUE | TRACING_FALSE):
        return None
    node = ExpressionReader(condition, grammar).read(0, len(condition))
    v = _value(node, condition)
    if v is ... or v is None:
        return None if v is ... else False
    return bool(v)


def bound_value(condition: str, grammar, bindings: dict) -> Optional[bool]:
    """The value of a condition that rests on literals and parameters bound to literals only."""
    if not bindings or not any(name in condition for name in bindings):
        return None
    node = ExpressionReader(condition, grammar).read(0, len(condition))
    v = _value(node, condition, bindings)
    return v if isinstance(v, bool) else None


def classify_run(node: IfNode, branch: str, matched: bool) -> tuple[str, str]:
    """One run of an ``if``: the branch the path took there and whether trace events matched in it."""
    if matched:
        return branch, "present"
    chosen = node.then if branch == "then" else node.orelse
    other = node.orelse if branch == "then" else node.then
    other_must, chosen_must = must_tell(other), must_tell(chosen)
    if other_must and not chosen_must:
        return branch, "absent"
    if chosen_must and not other_must:
        return ("else" if branch == "then" else "then"), "absent"
    if other_must and chosen_must:  # the path reached the `if`: one branch ran, whatever the trace lacks
        return "unknown", "no_evidence"
    if may_tell(chosen) or may_tell(other):
        return "ambiguous", "no_evidence"
    return "unknown", "no_evidence"


def loop_bodies(items: Iterable) -> Iterable[LoopNode]:
    for item in items:
        if isinstance(item, LoopNode):
            yield item
            yield from loop_bodies(item.body)
        elif isinstance(item, IfNode):
            yield from loop_bodies(item.then)
            yield from loop_bodies(item.orelse)


_CONSTANTS = "CONSTANTS"


def _number(node) -> Optional[object]:
    """The value of a number literal (``2``, ``0.5``, ``-1``), else None."""
    if not isinstance(node, Const) or node.kind != "number":
        return None
    for convert in (int, float):
        try:
            return convert(node.text)
        except ValueError:
            continue
    return None


def _arguments(node: CallExpr) -> list[tuple[object, object]]:
    """``(position or keyword, argument)`` of a call."""
    return [*enumerate(node.args), *node.keywords]


class LiteralCheck:
    """Whether a script event may stand for a trace event, given their literals.

    A trace holds the Python numbers it met as tensor constants (``torch.mul(x, CONSTANTS.c0)``);
    from an archive their stored values are known (:mod:`codeparse.archive.constants`).  A number
    literal of the script at the same argument that differs from the stored value refuses the
    match: ``x * 3`` did not make a trace's ``mul`` by ``tensor(2)``.  A value not known (``.code``
    text, a constant left unread, anything but a number literal in the script) never refuses.
    """

    def __init__(self, trace_values: list[dict], script_literals: dict[int, dict]):
        self.trace_values = trace_values  # per trace event: argument -> stored value
        self.script_literals = script_literals  # per script event index: argument -> literal value

    @classmethod
    def build(cls, trace_trees: list, trace_events: list[Event], script_trees: list,
              constants: dict) -> Optional["LiteralCheck"]:
        """The check for one aligned pair, or None when no trace event has a known constant."""
        if not constants:
            return None
        trace_values: list[dict] = []
        for event in trace_events:
            values: dict = {}
            node = trace_trees[0].reader.read(event.call.span.start, event.call.span.end) \
                if event.call.kind == "operator" else None
            if isinstance(node, CallExpr):
                for key, arg in _arguments(node):
                    if isinstance(arg, Attr) and isinstance(arg.value, Name) and arg.value.id == _CONSTANTS:
                        found = constants.get(arg.attr)
                        if found is not None and found.scalar is not None and not isinstance(found.scalar, bool):
                            values[key] = found.scalar
            trace_values.append(values)
        if not any(trace_values):
            return None
        literals: dict[int, dict] = {}
        for tree in script_trees:
            for event in tree.events:
                if event.call.kind != "operator":
                    continue
                node = tree.reader.read(event.call.span.start, event.call.span.end)
                if isinstance(node, CallExpr):
                    found = {key: v for key, arg in _arguments(node) if (v := _number(arg)) is not None}
                    if found:
                        literals[event.index] = found
        return cls(trace_values, literals)

    def __call__(self, event: Event, trace_index: int) -> bool:
        values = self.trace_values[trace_index]
        if not values:
            return True
        literals = self.script_literals.get(event.index)
        if not literals:
            return True
        return all(literals[key] == value for key, value in values.items() if key in literals)
