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

from ..parse.expressions import CallExpr, ExpressionReader, Name
from .events import RAISE, UNUSED_STUB, Event, IfNode, LoopNode, _events_in

__all__ = ["must_tell", "may_tell", "raises", "tracing_value", "classify_run", "telling_labels"]

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


def _value(node, text: str) -> Optional[object]:
    """True/False/None(-the-value) when known inside a trace; ``...`` when unknown."""
    if isinstance(node, Name):
        return {"True": True, "False": False, "None": None}.get(node.id, ...)
    if not isinstance(node, CallExpr):
        return ...
    name = _callee_name(node, text)
    if name in TRACING_TRUE and not node.args:
        return True
    if name in TRACING_FALSE and not node.args:
        return False
    if name in _NOT | _BOOL and len(node.args) == 1:
        v = _value(node.args[0], text)
        return v if v is ... else (not v if name in _NOT else bool(v))
    if name in _EQ | _NE | _IS | _ISNOT and len(node.args) == 2:
        a, b = (_value(x, text) for x in node.args)
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
    if other_must and chosen_must:
        return "neither", "no_evidence"
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
