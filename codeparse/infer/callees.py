"""Callees: calls followed into the bodies of the functions they reach.

Takes a call in one function and the functions whose bodies are available (the same
text, or any file of an archive, through :class:`CalleeRegistry`).  Gives the callee a
call reaches (a function by its qualified name; a method of ``self``, of a declared
submodule or of a typed value of the program) and the sources the call depends on: the
callee's summary (what its return values depend on, computed once per function on first
use) mapped onto the call, its parameters replaced by the visits of the call's
arguments, ``self`` paths by the receiver's path.  A call back into a function whose
summary is being computed adds nothing (the recursion is cut there); more than a few
summaries nested are computed bottom-up (the depth limit of
:mod:`~codeparse.infer.memo`).  Without a body, a call depends on its receiver and
arguments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from ..parse.expressions import Attr, CallExpr, Expr
from .memo import DepthLimit, TooDeep
from .names import Names
from .sources import remark, union

if TYPE_CHECKING:
    from .conditions import Inference
    from .valuetypes import ValueTypes

_DEEP_CALLS = 8  # nested summaries before the callees are summarized bottom-up

# Following calls into available bodies; off only to measure what it costs
# (bench/bench_verdicts.py): without it a call depends on its receiver and arguments.
FOLLOW_CALLS = True


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
                raise TooDeep(self._compute, ("summary", id(self)))
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
                result = union(parts)[0]
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


class Calls:
    """The calls of one function: which callee each reaches, and its sources mapped onto
    the call.  ``visit`` gives the (sources, pins) of an argument at its use (the
    conditions' visit, which in turn reaches calls)."""

    def __init__(self, names: Names, types: ValueTypes, visit: Callable[[Expr, Any], tuple]):
        self.facts = names.facts
        self.sem = names.sem
        self.expr_path = names.expr_path
        self.declared = names.declared
        self.callee_target = names.callee_target
        self.local_receiver = names.local_receiver
        self.expr_type = types.expr_type
        self.visit = visit

    def callee_of(self, node: CallExpr) -> Optional[Callee]:
        """The callee of a call whose body is available, if any."""
        lookup = self.facts.functions
        if lookup is None or not FOLLOW_CALLS:
            return None
        func = node.func
        if isinstance(func, Attr):
            receiver = self.local_receiver(func)
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

    def follow(self, callee: Callee, node: CallExpr, receiver: Optional[Expr], scopes):
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
                found, pins = self.visit(bound[ref], scopes)
                parts.append((remark(found, m), pins))
            elif nat == "argument" and ref in names:
                continue  # a default: a literal
            elif nat == "attribute" and receiver is not None and (ref == "self" or ref.startswith("self.")):
                if receiver_path:
                    parts.append((frozenset({(receiver_path + ref[len("self"):], m, "attribute", typ)}), frozenset()))
                else:
                    found, pins = self.visit(receiver, scopes)
                    parts.append((remark(found, m), pins))
            else:
                parts.append((frozenset({(ref, m, nat, typ)}), frozenset()))
        return union(parts)
