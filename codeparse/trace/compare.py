"""Script versus trace: which branch the trace froze, what it lost, unrolled and baked in.

A trace records the operators and submodule calls that ran for one example input, in
the order they ran; the script keeps the program.  So the trace is (nearly) one *path*
through the script, printed as a flat list.  This module recovers that path.

The model
---------
*Events.*  Every call of a function is an event, labelled as a reader names it
(``self.layer1.forward``, ``aten::conv2d``; :func:`codeparse.output.render.short_call`; a trace's
``forward1``, ``forward2``, the names it gives a submodule's second and later calls, read
as ``forward``), placed
in evaluation order: a call is evaluated when its arguments are, so calls are ordered
by the *end* of their span (``(layer1).forward((conv).forward(x, ), )`` runs ``conv``
first).  The trace of a function is its event list.

*The script is a regular expression over events.*  A block is a sequence; an ``if`` is
an alternation of its two branches (its condition's calls come before it); a
``for``/``while`` loop is a repetition of its body (zero or more passes; the header's
calls come first).  It is built as a small automaton: events are edges, branches and
loop passes are epsilon edges tagged with the ``if`` and branch or the loop.

*Alignment.*  We look for the path through the automaton and an alignment of its
events with the trace's events that costs least (a weighted edit distance between
a regular expression and a string; Myers & Miller 1989).  Matching two events with the
same label is free (or a trace operator with one it stands for, :data:`TRACE_EQUIVALENTS`:
``aten::_convolution`` runs under ``aten::conv2d``); weak events, below, never match.  A trace event left unmatched costs :data:`TRACE_EXTRA` (the
trace is almost a subsequence of the path: only inlined functions add events).  A
script event left unmatched costs what its absence means (:data:`SCRIPT_MISSING`):
a submodule call is nearly always kept by the tracer (expensive to drop), an operator
may be dead code that the trace optimised away (cheap), and the *weak* events are
cheapest: operators that only compute an ``if``/``while`` test (the trace has no
``if``, so their value is dead), and operators on Python scalars
(:data:`SCALAR_OPERATORS`), which a trace never records.  Costs are integers;
the dynamic program runs column by column over the trace, with a Dijkstra closure over
the epsilon and skip edges within a column (all costs are non-negative, so loops with
no cost never spin), in O(n · E log E) for n trace events and E automaton edges.

*Reading the path.*  Each ``if`` the path passes through records the branch it took
and the trace events matched inside it; each loop records its passes.  Per ``if``:

* ``then``/``else`` with reason ``raises``: the other branch raises (``ops.prim.RaiseException``
  among its statements), and the trace ran to its end;
* ``unknown``/``indistinguishable``: both branches have the same non-weak event
  labels (both empty included), so no trace can tell them apart;
* ``neither``/``not_run``: the path never reaches the ``if`` (an enclosing branch was
  not taken, an enclosing loop ran zero times);
* ``then``/``else`` with reason ``present``: the chosen branch matched trace events
  (they are the evidence);
* ``then``/``else`` with reason ``absent``: nothing of the chosen branch is in the
  trace, but the other branch has calls a trace would show (submodule calls,
  non-weak operators) and the trace lacks them (they are listed as ``missing``);
* ``unknown``/``no_evidence``: neither branch has such calls, or both have and the trace has
  none (the path reached the ``if``: one branch ran);
* ``mixed``: different answers in different passes of an enclosing loop;
* ``kept``: the trace function has an ``if`` with the same resolved condition (the code
  is scripted inside the trace, as the tutorial's ``WrapRNN`` does); loops likewise;
* ``then``/``else`` with reason ``constant``: the branches differ only in a literal, and the
  trace archive's stored constant matches this branch's (:class:`~codeparse.trace.evidence.LiteralCheck`);
* ``unknown``/``loop_passes``: an ``if`` in a loop whose passes the trace does not all show,
  whose other branch may have run in the passes it does not show (:func:`_uncounted_passes`);
* ``unknown``/``not_described``: an unconditional call of the script that the trace lacks
  altogether lies near: the text does not describe the run there (:func:`_not_described`);
* ``neither``/``not_called``: the ``if`` belongs to a submodule the trace never calls
  (:func:`_not_called`).
* ``then``/``else`` with reason ``call_argument``: the condition reads parameters of an inlined
  function that its call site passes as literals (``padding_idx=None``), which no statement of
  the body assigns (:func:`~codeparse.trace.evidence.bound_value`).

A *lost call* is a submodule call of the script that the path never matches and
that appears nowhere in the trace.  An
*unrolled loop* is a loop whose body the path repeats; its ``iterations`` count the
passes (null when the body has nothing a trace shows).  A *baked constant* is an
argument of a matched operator pair that is computed in the script (names, calls) and
a literal or a ``CONSTANTS.cN`` tensor in the trace.

Compiled functions and self methods the script calls (``__torch__.torch.nn.functional.relu``,
``(self)._conv_forward``) are inlined into the script's events when the input holds their
code, as the tracer inlines them; their ``if``s follow the function's own in the report
(``function`` names the callee, ``path`` its file), each with the runs of every call site.

Submodules: when both inputs carry class code (archives or directories of archive
code), each submodule call matched between the two texts is followed into the
receiver's class on each side (found through the declared attribute types), and
those functions are compared in turn; module paths (``self.layer1.0``) name them.
Nothing here imports torch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable, Optional, Union

from ..contract.check import SourceLocation
from ..contract.diff import BakedConstant, DiffCall, DiffReport, IfDiff, LostCall, ModuleDiff, UnrolledLoop
from ..contract.errors import InputError
from ..contract.text import Call, ClassDef, Function, diagnostic_model
from ..parse.expressions import Attr, CallExpr, Const, ExpressionReader, Index, Name, Seq
from .align import TRACE_EXTRA, _align, _Automaton
from .events import (
    _LITERAL_NAMES,
    _MAX_INLINE_PATH,
    SCALAR_OPERATORS,
    SCRIPT_MISSING,
    TRACE_EQUIVALENTS,
    Event,
    FunctionTree,
    IfNode,
    LoopNode,
    _events_in,
)
from .evidence import LiteralCheck, bound_value, classify_run, must_tell, raises, telling_labels, tracing_value
from .sides import Side, Unit, load_side, overload_base, side_from_texts

__all__ = [
    "diff",
    "diff_paths",
    "diff_functions",
    "load_side",
    "side_from_texts",
    "Side",
    "FunctionTree",
    "TRACE_EXTRA",
    "SCRIPT_MISSING",
    "SCALAR_OPERATORS",
    "TRACE_EQUIVALENTS",
]

_CONSTANT_ATTR = "CONSTANTS"
MISMATCH_SHARE = 0.30  # below this share of the trace's calls matched, the inputs do not belong together
TIE_CHECK_LIMIT = 16  # ifs per function re-aligned with the branch forced (each is two more alignments)
TIE_CHECK_WORK = 300_000  # ... within this many (trace events x automaton states) in all


# ------------------------------------------------------------------------ report


@dataclass
class _Exec:
    branch: str
    matched: list[tuple[Event, int]] = field(default_factory=list)
    loop: Optional["_LoopExec"] = None  # the innermost loop run it happened in
    pass_number: int = 0  # which pass of that loop run (1-based)

    @property
    def followed(self) -> bool:
        """Whether another pass of the innermost loop came after this run."""
        return self.loop is not None and self.pass_number < self.loop.passes


@dataclass
class _LoopExec:
    passes: int = 0
    matched: list[tuple[Event, int]] = field(default_factory=list)


@dataclass
class FunctionDiff:
    """Everything found comparing one script function with one trace function."""

    module: ModuleDiff
    ifs: list[IfDiff]
    lost_calls: list[LostCall]
    unrolled_loops: list[UnrolledLoop]
    baked_constants: list[BakedConstant]
    matched: list[tuple[Event, Call]]
    trace_events: int = 0
    shown_events: int = 0  # the trace events the script text could show (see `_shown`)


def _dcall(event: Event, trace_call: Optional[Call]) -> DiffCall:
    return DiffCall(
        call=event.label, kind=event.call.kind, script_line=event.call.span.line,
        trace_line=trace_call.span.line if trace_call is not None else None,
    )


def _telling_labels(items: list) -> list[str]:
    return [e.label for e in _events_in(items) if not e.weak]


def _is_literal(node) -> bool:
    if isinstance(node, Const):
        return True
    if isinstance(node, Name):
        return node.id in _LITERAL_NAMES
    if isinstance(node, Seq):
        return all(_is_literal(x) for x in node.items)
    return False


def _is_tensor_constant(node) -> bool:
    return isinstance(node, Attr) and isinstance(node.value, Name) and node.value.id == _CONSTANT_ATTR


def _computed(node) -> bool:
    if isinstance(node, (Name,)):
        return node.id not in _LITERAL_NAMES
    if isinstance(node, (CallExpr, Attr, Index)):
        return True
    if isinstance(node, Seq):
        return any(_computed(x) for x in node.items)
    return False


def _call_tree(tree: FunctionTree, call: Call):
    reader = ExpressionReader(tree.unit.text, tree.grammar)
    node = reader.read(call.span.start, call.span.end)
    return node if isinstance(node, CallExpr) else None


def _baked(s_tree: FunctionTree, t_tree: FunctionTree, pairs: list[tuple[Event, Call]]) -> list[BakedConstant]:
    out: list[BakedConstant] = []
    s_text, t_text = s_tree.unit.text, t_tree.unit.text
    for event, t_call in pairs:
        if event.call.kind != "operator" or t_call.kind != "operator":
            continue
        s_node, t_node = _call_tree(s_tree, event.call), _call_tree(t_tree, t_call)
        if s_node is None or t_node is None:
            continue
        args = [(str(k), a, b) for k, (a, b) in enumerate(zip(s_node.args, t_node.args))]
        t_kw = dict(t_node.keywords)
        args += [(k, v, t_kw[k]) for k, v in s_node.keywords if k in t_kw]
        for key, s_arg, t_arg in args:
            if not _computed(s_arg):
                continue
            if _is_literal(t_arg):
                kind = "literal"
            elif _is_tensor_constant(t_arg):
                kind = "tensor_constant"
            else:
                continue
            out.append(BakedConstant(
                module=s_tree.module, function=s_tree.fn.qualified_name, path=s_tree.unit.code_file.path,
                operator=event.label, argument=key, script=s_text[s_arg.start:s_arg.end],
                trace=t_text[t_arg.start:t_arg.end], kind=kind,
                script_line=event.call.span.line, trace_line=t_call.span.line,
            ))
    return out


def trace_tree(t_fn: Function, t_unit: Unit, module: str) -> FunctionTree:
    return FunctionTree(t_fn, t_unit, module, trace=True)


def kept_functions(t_tree: FunctionTree) -> frozenset:
    """Compiled functions the trace still calls by name (scripted code inside the trace)."""
    return frozenset(e.label for e in t_tree.events if e.call.kind == "function")


class _Reader:
    """Reads the path of one alignment: the runs of each ``if`` and loop, the matched pairs."""

    def __init__(self, steps, t_events):
        self.if_execs: dict[int, list[_Exec]] = {}
        self.loop_execs: dict[int, list[_LoopExec]] = {}
        self.matched: list[tuple[Event, Call]] = []
        self.matched_ids: set[int] = set()
        self.trace_only: list[DiffCall] = []
        open_ifs: list[tuple[int, _Exec]] = []
        open_loops: list[tuple[int, _LoopExec]] = []
        for step in steps:
            edge = step.edge
            if edge is None:
                t = t_events[step.trace]
                self.trace_only.append(DiffCall(call=t.label, kind=t.call.kind, trace_line=t.call.span.line))
                continue
            if edge.event is not None:
                if step.trace is None:
                    continue
                pair = (edge.event, step.trace)
                self.matched.append((edge.event, t_events[step.trace].call))
                self.matched_ids.add(edge.event.index)
                for _, ex in open_ifs:
                    ex.matched.append(pair)
                for _, lx in open_loops:
                    lx.matched.append(pair)
                continue
            tag = edge.tag
            if tag is None:
                continue
            if tag[0] == "if":
                lx_open = open_loops[-1][1] if open_loops else None
                ex = _Exec(tag[2], loop=lx_open, pass_number=lx_open.passes if lx_open else 0)
                self.if_execs.setdefault(tag[1], []).append(ex)
                open_ifs.append((tag[1], ex))
            elif tag[0] == "join":
                open_ifs.pop()
            elif tag[0] == "enter":
                lx = _LoopExec()
                self.loop_execs.setdefault(tag[1], []).append(lx)
                open_loops.append((tag[1], lx))
            elif tag[0] == "iter":
                open_loops[-1][1].passes += 1
            elif tag[0] == "exit":
                open_loops.pop()


def diff_functions(s_tree: FunctionTree, t_fn: Function, t_unit: Unit, *,
                   t_tree: Optional[FunctionTree] = None, script: Optional[Side] = None,
                   constants: Optional[dict] = None) -> FunctionDiff:
    """Align one script function with one trace function and read the path (``constants``: the
    trace archive's stored constants, :func:`codeparse.archive.constants.read_constants`)."""
    t_tree = t_tree or trace_tree(t_fn, t_unit, s_tree.module)
    t_events = _flat(t_tree.items)
    labels = [e.label for e in t_events]
    static = static_branches(s_tree)
    auto = _Automaton(s_tree.items, static)
    check = LiteralCheck.build([t_tree], t_events, [s_tree] + s_tree.inlined, constants or {})
    cost, steps = _align(auto, labels, compatible=check)
    path_read = _Reader(steps, t_events)
    if_execs, loop_execs = path_read.if_execs, path_read.loop_execs
    matched, matched_ids = path_read.matched, path_read.matched_ids

    def tcall(index: int) -> Call:
        return t_events[index].call

    origins = script.origins if script is not None else {}
    fn_name, path = s_tree.fn.qualified_name, s_tree.unit.code_file.path
    kept_ifs = _kept(
        [(n.index, n.stmt.condition.resolved) for n in s_tree.ifs if n.stmt is not None],
        [n.stmt.condition.resolved for n in t_tree.ifs if n.stmt is not None],
    )
    kept_loops = _kept(
        [(n.index, n.loop.iter) for n in s_tree.loops if n.loop is not None],
        [n.loop.iter for n in t_tree.loops if n.loop is not None],
    )
    size = max(1, len(labels) * len(auto.edges))
    forced_budget = [min(TIE_CHECK_LIMIT, TIE_CHECK_WORK // (2 * size))]

    def forced_costs(nodes: list[IfNode], literals: bool = True) -> Optional[dict[str, int]]:
        """Cost of the whole alignment with every copy of the ``if`` forced to each branch (with
        ``literals=False``, as if no constant's value were known; None when none is)."""
        if forced_budget[0] <= 0 or (not literals and check is None):
            return None
        forced_budget[0] -= 1
        out = {}
        for branch in ("then", "else"):
            c, _ = _align(_Automaton(s_tree.items, {**static, **{n.index: branch for n in nodes}}), labels, False,
                          check if literals else None)
            out[branch] = c
        return out if all(v >= 0 for v in out.values()) else None

    trace_labels = set(labels)
    ifs: list[IfDiff] = []
    answer_of: dict[int, int] = {}  # if index (every inlined copy) -> position in `ifs`
    for node in s_tree.ifs:
        if node.stmt is not None:
            answer_of[node.index] = len(ifs)
            ifs.append(_if_diff([node], if_execs.get(node.index, []), s_tree, tcall, origins,
                                node.index in kept_ifs, forced_costs))
    # ifs of inlined callees: one entry per callee `if`, its runs gathered over every call site
    sites: dict[tuple[str, int], list[tuple[FunctionTree, IfNode]]] = {}
    for callee in s_tree.inlined:
        for node in callee.ifs:
            if node.stmt is not None:
                sites.setdefault((callee.fn.qualified_name, node.stmt.span.start), []).append((callee, node))
    for group in sites.values():
        callee = group[0][0]
        runs = [ex for _, n in group for ex in if_execs.get(n.index, [])]
        for _, n in group:
            answer_of[n.index] = len(ifs)
        ifs.append(_if_diff([n for _, n in group], runs, callee, tcall, origins, False, forced_costs,
                            inlined=True, node_trees=[c for c, _ in group]))
    ifs = _uncounted_passes(s_tree.items, ifs, answer_of, loop_execs, s_tree)
    ifs = _not_described(s_tree, ifs, answer_of, matched_ids, trace_labels)
    ifs = _unsure_skips(s_tree.items, ifs, answer_of, if_execs, loop_execs)
    # compiled functions the trace calls by name: their ifs still run, as TorchScript
    if script is not None:
        seen_kept: set[str] = set()
        for event in s_tree.events + [e for c in s_tree.inlined for e in c.events]:
            name = event.label
            if event.call.kind != "function" or name not in s_tree.keep or name in seen_kept:
                continue
            seen_kept.add(name)
            found = script.function(name)
            if found is None:
                continue
            fn, unit = found
            kept_tree = FunctionTree(fn, unit, s_tree.module, cls=None)
            for node in kept_tree.ifs:
                if node.stmt is not None:
                    ifs.append(_if_diff([node], [], kept_tree, tcall, origins, True, None))
    inside: dict[int, str] = {}  # innermost if wins: deepest last
    for node in sorted((n for n in s_tree.ifs if n.stmt is not None), key=lambda n: n.stmt.depth):
        for branch, block in (("then", node.then), ("else", node.orelse)):
            for e in _events_in(block):
                inside[e.index] = f"{branch} of if at line {node.stmt.span.line}"

    lost = [
        LostCall(module=s_tree.module, function=fn_name, path=path, call=e.label, receiver=e.call.receiver,
                 method=e.call.method, line=e.call.span.line, inside=inside.get(e.index),
                 origin=_origin(origins, path, e.call.span.line))
        for e in s_tree.events
        if e.call.kind == "submodule" and not e.opaque and e.index not in matched_ids and e.label not in trace_labels
    ]
    loops: list[UnrolledLoop] = []
    for node in s_tree.loops:
        if node.loop is None:
            continue
        execs = loop_execs.get(node.index, [])
        body_telling = any(e.telling for e in _events_in(node.body))
        passes = [lx.passes for lx in execs]
        any_match = any(lx.matched for lx in execs)
        kept = node.index in kept_loops
        iterations = sum(passes) if (any_match or body_telling) and not kept else None
        first = execs[0].matched if execs else []
        per_pass = len(first) // max(passes[0], 1) if passes and passes[0] else 0
        loops.append(UnrolledLoop(
            module=s_tree.module, function=fn_name, path=path, line=node.loop.span.line,
            loop=s_tree.unit.text[node.loop.span.start:node.loop.span.end].rstrip(":"),
            kind=node.loop.kind, iterations=iterations, executions=passes,
            evidence=[] if kept else [_dcall(e, tcall(t)) for e, t in first[:per_pass]], kept=kept,
            origin=_origin(origins, path, node.loop.span.line),
        ))
    baked = _baked(s_tree, t_tree, matched)
    module = ModuleDiff(
        module=s_tree.module, script_function=fn_name, trace_function=t_fn.qualified_name,
        script_path=path, trace_path=t_unit.code_file.path, cost=cost, matched=len(matched),
        trace_only=path_read.trace_only,
    )
    return FunctionDiff(module, ifs, lost, loops, baked, matched, len(t_events),
                        _shown(s_tree, t_events, matched_ids))


def _shown(tree: FunctionTree, t_events: list[Event], matched_ids: set[int]) -> int:
    """How many trace events the script text could show.

    Where the script calls code whose body the input lacks (compiled functions and self methods
    of a bare ``.code`` text), the trace holds that body's operators inlined: they are no sign of
    another model.  Then only what both texts show counts: the trace's submodule calls and its
    operators of a kind the script text names somewhere.  Otherwise every trace event counts.
    """
    script_events = tree.events + [e for callee in tree.inlined for e in callee.events]
    if not any(e.call.kind in ("function", "self_method", "method") and e.index not in matched_ids
               for e in script_events):
        return len(t_events)
    names = set().union(*(e.keys or {e.label} for e in script_events))
    return sum(1 for t in t_events if t.call.kind == "submodule" or t.label in names)


_SURE = ("then", "else", "mixed", "kept")
# Answers that rest on the path (not on the text alone, as a tracing predicate or a raise does).
_FROM_PATH = ("present", "absent", "mixed", "not_run", "inlined")


def _ifs_in(items: list) -> Iterable[IfNode]:
    for item in items:
        if isinstance(item, IfNode):
            yield item
            yield from _ifs_in(item.then)
            yield from _ifs_in(item.orelse)
        elif isinstance(item, LoopNode):
            yield from _ifs_in(item.body)


def _not_described(tree: FunctionTree, ifs: list[IfDiff], answer_of: dict[int, int], matched_ids: set[int],
                   trace_labels: set[str]) -> list[IfDiff]:
    """Where the script text does not describe the traced run, the ifs there abstain.

    An operator or submodule call the function makes unconditionally (in its own top-level
    block) that the trace lacks altogether (no trace event it matches) says the run did not
    follow this text there: the compiler folded a test the trace ran the other way
    (``torch.jit.is_scripting()``), or the trace is of other code.  Every ``if`` between the
    nearest top-level calls the path matched on either side of it abstains (``unknown``,
    ``not_described``), whatever the alignment made of that stretch.
    """
    own = {e.index for e in tree.events}
    items = tree.items
    anchors = [k for k, item in enumerate(items) if isinstance(item, Event) and item.index in matched_ids]
    out = list(ifs)
    for k, item in enumerate(items):
        if not (isinstance(item, Event) and item.index in own and item.telling and item.index not in matched_ids
                and not item.keys & trace_labels):
            continue
        lo = max((a for a in anchors if a < k), default=-1)
        hi = min((a for a in anchors if a > k), default=len(items))
        for node in _ifs_in(items[lo + 1:hi]):
            pos = answer_of.get(node.index)
            if pos is not None and out[pos].reason in _FROM_PATH:
                out[pos] = out[pos].model_copy(update={
                    "taken": "unknown", "reason": "not_described", "executions": [], "passes": []})
    return out


def _literal_passes(node: LoopNode, tree: FunctionTree) -> Optional[int]:
    """The pass count a ``for`` loop's header fixes, ``range(N)`` with a literal ``N``; else None."""
    loop = node.loop
    if loop is None or loop.kind != "for":
        return None
    text = loop.iter
    call = ExpressionReader(text, tree.grammar).read(0, len(text))
    if not (isinstance(call, CallExpr) and text[call.func.start:call.func.end] == "range"
            and len(call.args) == 1 and not call.keywords and isinstance(call.args[0], Const)):
        return None
    try:
        return int(call.args[0].text)
    except ValueError:
        return None


def _uncounted_passes(items: list, ifs: list[IfDiff], answer_of: dict[int, int], loop_execs: dict,
                      tree: FunctionTree) -> list[IfDiff]:
    """An ``if`` in a loop whose passes the trace does not all show answers for the passes it shows.

    A pass through a body with a silent path (no telling event on it) leaves nothing in a trace,
    so the path may have made fewer passes than the run did, unless the header fixes the count
    (``range(3)``) and the path made that many.  In such a loop an ``if`` whose other branch can
    be silent may have taken it in the passes the trace does not show: its answer abstains
    (``unknown``, ``loop_passes``), keeping the per-pass answers of the passes it does show.
    """
    out = list(ifs)

    def walk(block: list, uncounted: bool) -> None:
        for item in block:
            if isinstance(item, IfNode):
                pos = answer_of.get(item.index)
                answer = out[pos] if pos is not None else None
                if uncounted and answer is not None and answer.reason in ("present", "absent", "mixed"):
                    silent = {"then": not must_tell(item.orelse), "else": not must_tell(item.then),
                              "mixed": not (must_tell(item.then) and must_tell(item.orelse))}.get(answer.taken, False)
                    if silent:
                        out[pos] = answer.model_copy(update={"taken": "unknown", "reason": "loop_passes",
                                                             "executions": []})
                walk(item.then, uncounted)
                walk(item.orelse, uncounted)
            elif isinstance(item, LoopNode):
                runs = loop_execs.get(item.index, [])
                fixed = _literal_passes(item, tree)
                counted = must_tell(item.body) or (fixed is not None and all(lx.passes == fixed for lx in runs))
                walk(item.body, uncounted or not counted)

    walk(items, False)
    return out


def _unsure_skips(items: list, ifs: list[IfDiff], answer_of: dict[int, int], if_execs: dict,
                  loop_execs: dict) -> list[IfDiff]:
    """What the path says about reaching an ``if`` is only as sure as what led there.

    An ``if`` the path never reached is ``neither`` only when what kept the path away is sure:
    an enclosing ``if`` answered ``then``/``else``/``mixed``/``kept``, or an enclosing loop every
    pass of which would show in a trace ran zero times.  An ``if`` the path reached behind an abstention
    keeps its answer only with evidence of its own (matched calls: ``present``); an answer from
    absence, a raise or a tracing predicate assumed it ran, so it abstains too.
    """
    out = list(ifs)

    def walk(block: list, doubt: bool) -> None:
        for item in block:
            if isinstance(item, IfNode):
                pos = answer_of.get(item.index)
                ran = bool(if_execs.get(item.index))
                answer = out[pos] if pos is not None else None
                if answer is not None and doubt:
                    if (not ran and answer.taken == "neither" and answer.reason in ("not_run", "inlined")) or (
                            ran and answer.taken in ("then", "else")
                            and answer.reason in ("absent", "raises", "tracing_predicate", "call_argument")):
                        out[pos] = answer = answer.model_copy(update={
                            "taken": "unknown", "reason": "no_evidence", "executions": [], "passes": []})
                if not ran:
                    mine = doubt
                else:
                    mine = answer is None or answer.taken not in _SURE
                walk(item.then, mine)
                walk(item.orelse, mine)
            elif isinstance(item, LoopNode):
                runs = loop_execs.get(item.index, [])
                counted = must_tell(item.body)  # every pass would show in a trace
                walk(item.body, doubt or (not any(lx.passes for lx in runs) and not counted))

    walk(items, False)
    return out


def _origin(origins: dict, path: str, line: int) -> Optional[SourceLocation]:
    found = origins.get(path, {}).get(line)
    return found


def _kept(script: list[tuple[int, str]], trace: list[str]) -> set[int]:
    """Script ifs (loops) that the trace keeps: same resolved condition (iteration), in order."""
    kept, pos = set(), 0
    for index, text in script:
        try:
            found = trace.index(text, pos)
        except ValueError:
            continue
        kept.add(index)
        pos = found + 1
    return kept


def _flat(items: list) -> list[Event]:
    """The trace's events in order (a trace rarely has control flow; if it does, in text order)."""
    return sorted(_events_in(items), key=lambda e: (e.call.span.end, -e.call.span.start))


def _static_branch(node: IfNode, tree: FunctionTree) -> Optional[tuple[str, str]]:
    """The branch an ``if`` takes in any finished trace, known without the path: a tracing
    predicate's value, or the branch that does not raise (a trace that finished never raised;
    the stub of an ``@torch.jit.unused`` method is no raise)."""
    stmt = node.stmt
    predicate = tracing_value(stmt.condition.resolved or stmt.condition.text, tree.grammar)
    # by name, and only where the condition reads runtime state: a user's own helper named
    # `_is_tracing` with real logic in its body is user code (codeparse/infer/conditions.py)
    if predicate is not None and stmt.condition.kind == "runtime":
        return ("then" if predicate else "else"), "tracing_predicate"
    # a condition on parameters that the (inlined) function's call site binds to literals
    bound = bound_value(stmt.condition.resolved or stmt.condition.text, tree.grammar, tree.bindings)
    if bound is not None:
        return ("then" if bound else "else"), "call_argument"
    text = tree.unit.text

    def text_of(event: Event) -> str:
        """The raise call's text, with the definition of a message bound to a temporary."""
        own = text[event.call.span.start:event.call.span.end]
        call = tree.reader.read(event.call.span.start, event.call.span.end)
        if isinstance(call, CallExpr) and call.args and isinstance(call.args[0], Name):
            fn_text = text[tree.fn.span.start:tree.fn.span.end]
            where = fn_text.find(f"{call.args[0].id} = ")
            if where >= 0:
                own += fn_text[where:fn_text.find("\n", where)]
        return own

    raising = [b for b, block in (("then", node.then), ("else", node.orelse)) if raises(block, text_of)]
    if len(raising) == 1:
        return ("else" if raising[0] == "then" else "then"), "raises"
    return None


def static_branches(tree: FunctionTree) -> dict[int, str]:
    """:func:`_static_branch` of every ``if`` of a tree and its inlined callees, by index: the
    alignment is forced through them, so what they guard is read from the right branch."""
    out = {}
    for t in [tree] + tree.inlined:
        for node in t.ifs:
            if node.stmt is not None:
                found = _static_branch(node, t)
                if found is not None:
                    out[node.index] = found[0]
    return out


def _if_diff(nodes: list[IfNode], execs: list[_Exec], tree: FunctionTree, tcall, origins: dict,
             kept: bool, forced_costs, inlined: bool = False,
             node_trees: Optional[list[FunctionTree]] = None) -> IfDiff:
    """The answer for one ``if`` (``nodes``: its copies, one per inlined call site, in the callee
    trees ``node_trees``)."""
    node = nodes[0]
    stmt = node.stmt
    path = tree.unit.code_file.path
    base = dict(
        module=tree.module, function=tree.fn.qualified_name, path=path, line=stmt.span.line, depth=stmt.depth,
        condition=stmt.condition.text, resolved=stmt.condition.resolved, kind=stmt.condition.kind,
        executions=[ex.branch for ex in execs], runs=len(execs), origin=_origin(origins, path, stmt.span.line),
    )

    def answer(taken: str, reason: str, evidence=(), missing=(), costs=None, **over) -> IfDiff:
        return IfDiff(taken=taken, reason=reason, evidence=list(evidence), missing=list(missing),
                      costs=costs, **{**base, **over})

    if kept:
        return answer("kept", "kept", executions=[], runs=0)
    evidence = [_dcall(e, tcall(t)) for ex in execs for e, t in ex.matched]
    if not execs:
        missing = [_dcall(e, None) for e in _events_in(node.then + node.orelse) if e.telling]
        return answer("neither", "inlined" if inlined else "not_run", missing=missing)
    static = _static_branch(node, tree)
    if static is not None and node_trees and any(_static_branch(n, t) != static for n, t in zip(nodes, node_trees)):
        static = None  # call sites that bind its parameters differently
    if static is not None:
        taken, reason = static
        if reason == "call_argument" and all(ex.matched for ex in execs):
            reason = "present"  # the calls of the branch the arguments choose are in the trace
        return answer(taken, reason, evidence, executions=[taken] * len(execs))
    if telling_labels(node.then) == telling_labels(node.orelse) and node.loop_flag is None:
        if not telling_labels(node.then):
            return answer("unknown", "no_evidence", executions=[])
        costs = forced_costs(nodes) if forced_costs is not None and len(execs) == 1 else None
        if costs is not None and costs["then"] == costs["else"]:
            return answer("ambiguous", "tie", costs=costs, executions=[])
        if costs is not None and len(execs) == 1:
            # the stored constants decide when they refuse every way through one branch only: the
            # cheaper branch costs what it costs without them, the other more
            plain = forced_costs(nodes, literals=False)
            taken = "then" if costs["then"] < costs["else"] else "else"
            other = "else" if taken == "then" else "then"
            if (plain is not None and costs[taken] == plain[taken] and costs[other] > plain[other]
                    and execs[0].branch == taken and execs[0].matched):
                return answer(taken, "constant", evidence, costs=costs, executions=[taken])
        return answer("ambiguous", "indistinguishable", costs=costs, executions=[])
    if node.loop_flag is not None and not any(ex.matched for ex in execs):
        return _loop_flag_answer(node, execs, answer)
    results = [classify_run(node, ex.branch, bool(ex.matched)) for ex in execs]
    takens = {r[0] for r in results}
    if len(takens) == 1:
        taken, reason = results[0]
    elif takens <= {"then", "else"}:
        taken, reason = "mixed", "mixed"
    else:
        taken, reason = "ambiguous", "mixed" if takens & {"then", "else"} else results[0][1]
    executions = [r[0] for r in results] if all(r[0] in ("then", "else") for r in results) else []
    branches = {"then": node.then, "else": node.orelse}
    not_taken = [b for b in ("then", "else") if b not in takens]
    missing = [
        _dcall(e, None) for b in not_taken for e in _events_in(branches[b]) if e.telling
    ] if taken in ("then", "else") else []
    costs = None
    # an answer from absence alone is re-checked with the `if` forced each way (matched calls of
    # the taken branch are evidence enough; identical branches were checked above)
    if taken in ("then", "else") and reason == "absent" and len(execs) == 1 and forced_costs is not None:
        costs = forced_costs(nodes)
        if costs is not None and costs["then"] == costs["else"]:
            return answer("ambiguous", "tie", evidence, missing, costs, executions=[])
    return answer(taken, reason, evidence, missing, costs, executions=executions,
                  passes=[r[0] if r[0] in ("then", "else") else "unknown" for r in results])


def _loop_flag_answer(node: IfNode, execs: list[_Exec], answer) -> IfDiff:
    """An ``if`` that only sets its loop's continue flag (``break``): every run followed by
    another pass kept the loop going; the last run cannot tell (the loop may have ended anyway)."""
    stop = node.loop_flag[0]
    go = "else" if stop == "then" else "then"
    passes = [go if ex.followed else "unknown" for ex in execs]
    if "unknown" not in passes:
        return answer(go, "present", executions=[go] * len(execs), passes=passes)
    return answer("ambiguous", "no_evidence", executions=[], passes=passes)


# --------------------------------------------------------------------- recursion


def _resolve(side: Side, cls: ClassDef, receiver: str) -> Optional[ClassDef]:
    parts = receiver.split(".")
    if not parts or parts[0] != "self":
        return None
    current: Optional[ClassDef] = cls
    for attr in parts[1:_MAX_INLINE_PATH]:
        if current is None:
            return None
        current = side.attribute_class(current, attr)
    return current


def _resolver(side: Side):
    """Finds the code of a compiled function, a self method, or a submodule's non-``forward``
    method called from a tree: ``(function, unit, class, receiver prefix)``."""
    by_name = {fn.name: (fn, unit) for fn, unit in side.functions}

    def resolve(call: Call, tree: FunctionTree) -> Optional[tuple]:
        cls = tree.cls
        if call.kind == "function" and call.target:
            found = side.function(call.target)
            return (found[0], found[1], None, tree.prefix) if found is not None else None
        if call.kind == "self_method" and call.method:
            if cls is not None:
                method = side.method_of(cls, call.method)
                if method is None:
                    return None
                return method, side.classes[cls.qualified_name][1], cls, tree.prefix
            found = by_name.get(call.method)  # method texts side by side (script.<method>.code)
            return (found[0], found[1], None, tree.prefix) if found is not None else None
        if call.kind == "submodule" and call.receiver and call.method and cls is not None:
            sub = _resolve(side, cls, call.receiver)
            method = side.method_of(sub, call.method) if sub is not None else None
            if method is None:
                return None
            return method, side.classes[sub.qualified_name][1], sub, tree.prefix + call.receiver[len("self"):]
        return None

    return resolve


def _join(module: str, receiver: str) -> str:
    return module + receiver[len("self"):]


def _mismatch(result: FunctionDiff, script: Side, trace: Side) -> list:
    """CP224 when too few of the root trace function's calls match the script."""
    events = result.shown_events
    if events == 0 or len(result.matched) >= MISMATCH_SHARE * events:
        return []
    percent = round(100 * len(result.matched) / events)
    return [diagnostic_model("CP224", trace.path, None, matched=len(result.matched), events=events,
                             percent=percent, script=script.path)]


MAX_NOT_CALLED = 256  # functions of submodules never called whose ifs are reported


def _not_called(script: Side, uncalled: list[tuple[str, ClassDef, LostCall]], resolver) -> list[IfDiff]:
    """The ifs of submodules the trace never calls: ``neither``, ``not_called``.

    A tracer records every submodule call it runs, so a submodule call of the script that the
    trace makes nowhere (a lost call) did not run, and nothing in that submodule's method ran
    either: its ifs (and those of the functions and submodules it calls in turn) were certainly
    not reached.
    """
    out: list[IfDiff] = []
    queue = list(uncalled)
    seen: set[tuple[str, str]] = set()
    while queue and len(seen) < MAX_NOT_CALLED:
        module, cls, lost = queue.pop(0)
        sub = _resolve(script, cls, lost.receiver) if lost.receiver else None
        method = script.method_of(sub, lost.method or "forward") if sub is not None else None
        path = _join(module, lost.receiver) if lost.receiver else module
        if method is None or (path, method.qualified_name) in seen:
            continue
        seen.add((path, method.qualified_name))
        unit = script.classes[sub.qualified_name][1]
        tree = FunctionTree(method, unit, path, resolver=resolver, cls=sub)
        reported: set[tuple[str, int]] = set()  # an inlined callee's if once, whatever its call sites
        for t in [tree] + tree.inlined:
            for node in t.ifs:
                if node.stmt is not None and (t.fn.qualified_name, node.stmt.span.start) not in reported:
                    reported.add((t.fn.qualified_name, node.stmt.span.start))
                    answer = _if_diff([node], [], t, None, script.origins, False, None)
                    out.append(answer.model_copy(update={"reason": "not_called"}))
        for e in tree.events + [e for callee in tree.inlined for e in callee.events]:
            if e.call.kind == "submodule" and not e.opaque and e.call.receiver:
                queue.append((path, sub, LostCall(
                    module=path, function=method.qualified_name, path=unit.code_file.path, call=e.label,
                    receiver=e.call.receiver, method=e.call.method, line=e.call.span.line)))
    return out


def summarize(report_ifs: list[IfDiff], lost: list, loops: list, baked: list) -> dict[str, int]:
    taken = [i.taken for i in report_ifs]
    return {
        "ifs": len(taken),
        "kept": taken.count("kept"),
        "frozen": sum(t in ("then", "else") for t in taken),
        "ambiguous": sum(t in ("ambiguous", "unknown") for t in taken),
        "not_run": taken.count("neither"),
        "mixed": taken.count("mixed"),
        "lost_calls": len(lost),
        "unrolled_loops": sum(1 for lp in loops if not lp.kept and lp.iterations),
        "baked_constants": len(baked),
        # ifs that abstain because the script text does not describe the traced run there
        "not_described": sum(i.reason == "not_described" for i in report_ifs),
    }


def diff(script: Union[Side, str, "os.PathLike[str]"], trace: Union[Side, str, "os.PathLike[str]"],
         method: str = "forward", recurse: bool = True) -> DiffReport:
    """Compare the script and the trace of the same module (see the module docstring).

    Each side is a :class:`Side` or a path (``.code`` file, directory of code, archive).
    Inputs that cannot be read raise :class:`codeparse.InputError`.
    """
    if not isinstance(script, Side):
        script = load_side(os.fspath(script))
    if not isinstance(trace, Side):
        trace = load_side(os.fspath(trace))
    t_top = trace.top(method)
    if t_top is None:
        raise InputError(trace.path, f"no function {method!r} (or any function) in the trace input")
    s_top = script.top(method, like=t_top[0])
    if s_top is None:
        raise InputError(script.path, f"no function {method!r} (or an overload of it) in the script input")
    results: list[FunctionDiff] = []
    uncalled: list[tuple[str, ClassDef, LostCall]] = []  # (module, its script class, a call it never made)
    queue = [("self", s_top, t_top)]
    seen: set[tuple[str, str]] = set()
    resolver = _resolver(script)
    while queue:
        module, (s_fn, s_unit, s_cls), (t_fn, t_unit, t_cls) = queue.pop(0)
        if (module, s_fn.name) in seen:
            continue
        seen.add((module, s_fn.name))
        t_tree = trace_tree(t_fn, t_unit, module)
        tree = FunctionTree(s_fn, s_unit, module, resolver=resolver, cls=s_cls, keep=kept_functions(t_tree))
        result = diff_functions(tree, t_fn, t_unit, t_tree=t_tree, script=script, constants=trace.constants)
        results.append(result)
        if recurse and s_cls is not None:
            uncalled.extend((module, s_cls, lost) for lost in result.lost_calls)
        if not recurse or s_cls is None or t_cls is None:
            continue
        for event, t_call in result.matched:
            call = event.call
            if call.kind != "submodule" or not call.receiver or not call.method:
                continue
            s_sub = _resolve(script, s_cls, call.receiver)
            t_sub = _resolve(trace, t_cls, t_call.receiver or call.receiver)
            if s_sub is None or t_sub is None:
                continue
            t_m = trace.method_of(t_sub, t_call.method or call.method)
            if t_m is None and t_call.method:  # `forward1`: the trace's name for a second call
                t_m = trace.method_of(t_sub, overload_base(t_call.method.rstrip("0123456789")) or "forward")
            s_m = script.method_of(s_sub, call.method)
            if s_m is None or t_m is None:
                continue
            queue.append((
                _join(module, call.receiver),
                (s_m, script.classes[s_sub.qualified_name][1], s_sub),
                (t_m, trace.classes[t_sub.qualified_name][1], t_sub),
            ))
    ifs = [i for r in results for i in r.ifs]
    if not _mismatch(results[0], script, trace):
        ifs += _not_called(script, uncalled, resolver)
    lost = [c for r in results for c in r.lost_calls]
    loops = [lp for r in results for lp in r.unrolled_loops]
    baked = [b for r in results for b in r.baked_constants]
    diagnostics = [d for side in (script, trace) for u in side.units for d in u.code_file.diagnostics]
    diagnostics += _mismatch(results[0], script, trace)
    return DiffReport(
        script=script.path, trace=trace.path, ifs=ifs, lost_calls=lost, unrolled_loops=loops,
        baked_constants=baked, modules=[r.module for r in results], diagnostics=diagnostics,
        summary=summarize(ifs, lost, loops, baked),
    )


def diff_paths(script_path: str, trace_path: str, method: str = "forward") -> DiffReport:
    """:func:`diff` of two inputs given by path (``.code`` files, directories, archives)."""
    return diff(load_side(script_path), load_side(trace_path), method)
