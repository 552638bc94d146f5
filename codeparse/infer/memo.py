"""Memoized visits: each entry computed once, cycles settled, depth bounded.

Takes entries, each a key and how to compute it (a visit of a name's use, of a definition,
of an enclosing test, of a function's summary), whose results are ints (sets of bits,
:class:`~codeparse.infer.sources.SourceBits`).  Gives each entry's result, computed once
per key however many paths reach it.  How: the entries form a graph (an entry reads the
entries its computation reaches), walked depth-first with Tarjan's low-link bookkeeping
(:class:`Memo`, one per function).  An entry read while its component is still open (a
cycle of definitions: a loop-carried value, a local reassigned in both branches of ifs)
gives its result so far; when the component closes, its entries are computed again
against each other's results until none changes (a fixpoint: results only grow; the
rounds start from what the walk gave, less what rule 2 may have added), then memoized
together; an entry none of whose open reads changed since it was last computed
is passed over in a round (each entry records the open entries it read), and of the two
settlings (named sources first, then rule 2 applied, see :meth:`Memo._close`) the second
computes again only the entries that held rule 2 back (each against the named results
settled, so that no entry's rule-2 test sees what the rule made in another: the answers
do not depend on the entry a walk met first) and what reads them.  So every entry is
computed once, plus a few rounds per cycle.

Recursion depth: when a visit nests deeper than ``DEEP`` memo entries (all functions
together) or a few function summaries, it is abandoned where it stopped and resumed from
there (:func:`drive`): the entry it was about to enter is computed first, on a fresh
stack, and memoized; then the abandoned visit runs again and finds it done.  The first
time a walk stops so, each function it went through reads ahead (``Memo.warm``: its
definitions' trees, the types of names bound to paths) on the drive's shallow stack: deep
in the stack every new frame may cost the interpreter a fresh block of memory, so work
done once per link is cheaper there.  A chain of
thousands of temporaries, tests or functions so costs a few shallow visits per ``DEEP``
links, in any order of entries.  A cycle longer than the depth limit (a loop whose carried
values pass through more entries than that) cannot be cut this way: the limit is raised
for it, up to ``DEEPEST_CYCLE``; a cycle longer still raises :class:`DepthLimit` (the
condition is ``unknown``, CP113), never an internal error.  The walks that came round
the cycle tell how many entries it nests at least (each resumed walk nested past the
limit), so the limit is raised past that at once, and a cycle known to be longer than
``DEEPEST_CYCLE`` raises :class:`DepthLimit` without another walk.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional


DEEP = 80  # memo entries on the stack (all functions together) before a visit is resumed deeper
_MAX_ROUNDS = 64  # rounds of a cycle's fixpoint (results only grow; a few rounds settle it)
# A cycle's named sources settle from what its walk gave (see Memo._settle_named); off
# (from nothing) only to check that both give the same (tests/test_inference_memo.py).
WARM_START = True
EMPTY = 0  # the result of an entry read before it gave any (results are ints: sources.SourceBits)

nesting = [0]  # memo entries being computed, in every Memo of the process


class TooDeep(Exception):
    """A depth-first visit went too deep: ``resume`` computes (and memoizes) the entry it
    was about to enter, on a fresh stack; ``key`` names that entry (see drive)."""

    def __init__(self, resume: Callable[[], Any], key: Any):
        super().__init__("depth limit")
        self.resume = resume
        self.key = key


class _AroundCycle(Exception):
    """A walk entered an entry that is being resumed below it: a cycle longer than the
    depth limit (see drive).  ``key`` names that entry, ``nested`` the entries the walk
    had nested when it met it."""

    def __init__(self, key: Any, nested: int):
        super().__init__("around a cycle")
        self.key = key
        self.nested = nested


class DepthLimit(Exception):
    """A chain of definitions that resuming cannot cut (a cycle longer than the depth
    limit): the condition is ``unknown`` (CP113)."""


driving = [False]  # a drive is running (inner visits let TooDeep through to it)
_live: set = set()  # Memos that entered entries during the current drive
_MAX_RESUMES = 1_000_000  # resumed entries per drive (each is memoized, so each is met once)
_resumed: set = set()  # keys of the entries being resumed (see drive)
_walk: list = [None]  # the key of the entry the current walk resumes (None: the visit itself)
depth = [DEEP]  # the depth limit in force (raised while a long cycle settles, see drive)
DEEPEST_CYCLE = 5120  # the most memo entries one cycle may nest (about 6 interpreter frames each)


def drive(thunk: Callable[[], Any]) -> Any:
    """``thunk()``; where a visit stops at the depth limit, compute the entry it stopped
    at first (itself resumable the same way), then run the visit again.

    Every resumed entry is memoized when it completes (it is the root of its own walk,
    so its component closes), so each is resumed once and the abandoned visit goes
    further each time.  Resumed entries form a stack, each reached from the one below;
    a walk that enters an entry lower on that stack has come round a cycle longer than
    the depth limit, which no resumption cuts (nothing on it completes before the whole
    cycle does): the limit is raised fourfold (and the interpreter's recursion limit
    with it), again while it stays below the entries the cycle is known to nest
    (:func:`_cycle_at_least`), and the visit starts again, until the cycle fits, up to
    ``DEEPEST_CYCLE`` entries; past that, :class:`DepthLimit`."""
    if driving[0]:
        return thunk()
    driving[0] = True
    try:
        try:
            return thunk()
        except (TooDeep, _AroundCycle) as stop:
            stopped = [stop.with_traceback(None)]  # (not the abandoned frames)
        return _resume(thunk, stopped.pop())
    finally:
        driving[0] = False
        _reset_live()


def _resume(thunk: Callable[[], Any], stop: Exception) -> Any:
    """The rest of :func:`drive` once ``thunk()`` stopped at the depth limit (``stop``)."""
    todo: list = [(thunk, None)]
    recursion = sys.getrecursionlimit()
    try:
        while True:
            if stop is not None:
                stopped = [memo for memo in _live if memo.warm is not None]
                _reset_live()
                for memo in stopped:  # the walk goes deep: read ahead on a shallow stack
                    warm, memo.warm = memo.warm, None
                    warm()
                if isinstance(stop, _AroundCycle) or stop.key in _resumed:
                    least = _cycle_at_least(todo, stop)
                    if depth[0] >= DEEPEST_CYCLE or least > DEEPEST_CYCLE:
                        raise DepthLimit() from None
                    limit = depth[0] * 4
                    while limit < least:  # a limit the cycle is known to pass fails again
                        limit *= 4
                    depth[0] = min(limit, DEEPEST_CYCLE)
                    sys.setrecursionlimit(max(recursion, 8 * depth[0] + 1000))
                    todo = [(thunk, None)]  # start again, in longer strides
                    _resumed.clear()
                else:
                    if len(todo) > _MAX_RESUMES:
                        raise DepthLimit() from None
                    _resumed.add(stop.key)
                    todo.append((stop.resume, stop.key))
                stop = None
            _walk[0] = todo[-1][1]
            try:
                result = todo[-1][0]()
            except (TooDeep, _AroundCycle) as stopped_at:
                stop = stopped_at.with_traceback(None)
                continue
            _resumed.discard(todo.pop()[1])
            if not todo:
                return result
    finally:
        depth[0] = DEEP
        _walk[0] = None
        _resumed.clear()
        sys.setrecursionlimit(recursion)


def _cycle_at_least(todo: list, stop: Exception) -> int:
    """The fewest memo entries the cycle a walk came round (``stop``) nests: each walk
    resumed from the entry met again (``stop.key``) up to this one nested past the depth
    limit before it stopped, and this one nested ``stop.nested``.  (0 when ``stop`` is a
    walk meeting its own resumed entry again.)"""
    if not isinstance(stop, _AroundCycle):
        return 0
    keys = [key for _, key in todo]
    if stop.key not in keys:
        return 0
    strides = sum(1 for key in keys[keys.index(stop.key) + 1:] if key[0] != "summary")
    return strides * depth[0] + stop.nested


def _reset_live() -> None:
    """Forget the open memo entries of every Memo a visit abandoned."""
    for memo in _live:
        memo.reset()
    _live.clear()


class Memo:
    """The memo entries of one function: results of closed components, and Tarjan's
    bookkeeping for the open ones.  ``named_only`` is set while a cycle settles its
    named sources first (the visits read it; see _close)."""

    def __init__(self) -> None:
        self.results: dict = {}
        # Tarjan's strongly connected components over memo entries (see memo).
        self._index: dict = {}  # entry -> preorder number, while on the component stack
        self._tstack: list = []  # entries of components not yet closed
        self._provisional: dict = {}  # entry -> result so far, while its component is open
        self._computers: dict = {}  # entry -> how to compute it, once it stays open (cycles)
        self._reread: set = set()  # entries read while open (a cycle goes through them)
        # While a component settles: the entries its rounds are computing (innermost last),
        # and per entry the open entries its last computation read (entries first met in
        # it count as its reads).
        self._running: list = []
        self._reads: dict = {}
        self._count = 0
        self._low = 0
        self.named_only = False  # rule 2's operand sources held back (a cycle settling)
        self.held_back = False  # a visit held rule 2 back (set by the visits while named_only)
        self._settled = True  # whether the last _settle reached a fixpoint within _MAX_ROUNDS
        self.rule2_made = 0  # the sources rule 2 made here, with each value mark (see _settle_named)
        # What a walk deep through these entries would compute first deep in the stack,
        # computed ahead by drive the first time such a walk stops (see drive).
        self.warm: Optional[Callable[[], None]] = None

    def memo(self, key, compute, *args):
        """``compute(*args)``, once per ``key``: memo entries are the nodes of a graph (an entry
        reads the entries its computation reaches), walked depth-first with Tarjan's
        low-link bookkeeping.  An entry read while its component is still open (a cycle of
        definitions: a loop-carried value, a local reassigned in both branches of ifs)
        gives its result so far; when the component closes, its entries are computed
        again against each other's results until none changes (a fixpoint: results only
        grow), then memoized together.  So every entry is computed once, plus a few rounds
        per cycle, whatever the number of paths through it.

        Keys, each kind its own shape (cheap to hash): ``(name, scopes)`` a use of a name
        (``(name, scopes, loops)`` one that loops carry a value into), ``name`` its
        definitions together, ``id(definition)`` one definition, ``("test", scope, scopes)``
        an enclosing test, ``("before", ...)`` a use that only some definitions reach,
        ``("sets", path, ...)`` the sets of an attribute of ``self`` a read reaches."""
        found = self.results.get(key)
        if found is not None:
            return found
        return self.enter(key, compute, args)

    def enter(self, key, compute, args):
        """:meth:`memo` for a key not memoized (its callers looked)."""
        index = self._index
        number = index.get(key)
        if number is not None:  # open: a cycle goes through it
            if number < self._low:
                self._low = number
            self._reread.add(key)
            if self._running:
                self._reads.setdefault(self._running[-1], set()).add(key)
            return self._provisional.get(key, EMPTY)
        if nesting[0] > depth[0]:
            raise TooDeep(lambda: self.memo(key, compute, *args), (id(self), key))
        if _resumed:
            whole = (id(self), key)
            if whole in _resumed and whole != _walk[0]:
                raise _AroundCycle(whole, nesting[0])
        stack = self._tstack
        if not stack:
            _live.add(self)
        number = self._count
        self._count = number + 1
        index[key] = number
        stack.append(key)
        outer_low = self._low
        self._low = number
        nesting[0] += 1
        try:
            result = compute(*args)
        finally:
            nesting[0] -= 1
        low = self._low
        if low >= number:
            if stack[-1] is key and key not in self._reread:  # no cycle through it: done
                stack.pop()
                del index[key]
                self.results[key] = result
            else:
                # How to compute an entry is kept only while its component is open
                # (_settle computes the members again).
                self._computers[key] = (compute, args)
                result = self._close(key, result)
        else:
            self._computers[key] = (compute, args)
            self._provisional[key] = result
            if self._running:  # the entry a settling round computes read it open
                self._reads.setdefault(self._running[-1], set()).add(key)
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
            # around the cycle.  So the named sources settle first (their least fixpoint,
            # see _settle_named); then the rule applies to those settled results.
            saved = self._low, self.named_only
            self.named_only = True
            held = self._settle_named(at, root, result)
            self.named_only = saved[1]
            if not self.named_only:
                # Only an entry that held rule 2 back (or reads one that changes) can differ.
                self._settle(at, held)
            self._low = saved[0]
            members = stack[at:]
            result = provisional[root]
        memo, index, computers, reread, reads = self.results, self._index, self._computers, self._reread, self._reads
        for key in members:
            found = provisional.pop(key, None)
            memo[key] = found if found is not None else (result if key == root else EMPTY)
            del index[key]
            del computers[key]
            reread.discard(key)
            reads.pop(key, None)
        del stack[at:]
        memo[root] = result
        return result

    def _settle_named(self, at: int, root, result) -> dict:
        """Settle the named sources of the open entries from ``at`` on (``named_only`` set):
        the least fixpoint of computing them without rule 2.

        The rounds start from what the walk that met the entries gave, less every source
        rule 2 made in this function's visits (``rule2_made``, noted by the visits), with
        either value mark: without rule 2 the computation is monotone, and those results lie below
        that fixpoint (each was computed from results read empty or as the walk gave them,
        and what rule 2 adds to a result is such sources only), so rounds from there reach
        the fixpoint rounds from nothing reach, in fewer rounds (the walk was a first one).
        Should that not settle within the rounds allowed, it settles again from nothing."""
        provisional = self._provisional
        members = self._tstack[at:]
        if WARM_START:
            provisional[root] = result
            kept = ~self.rule2_made
            for key in members:
                provisional[key] &= kept
            held = self._settle(at)
            if self._settled:
                return held
        for key in self._tstack[at:]:
            provisional[key] = EMPTY
        return self._settle(at)

    def _settle(self, at: int, held: Optional[dict] = None) -> dict:
        """Compute the open entries from ``at`` on again until no result changes; gives,
        per entry computed, whether its last computation held rule 2 back (see held_back).

        An entry none of whose open reads changed since it was last computed here would
        give the same result again: it is passed over (the results, and the rounds, are
        those of computing every entry every round).  With ``held`` (what a settling with
        ``named_only`` gave), the entries it computed that did not hold rule 2 back count
        as computed already: with rule 2 applied they give what they gave; the ones that
        held it back are computed once each against the named results before the rounds,
        and results only grow (what rule 2 made stays: its test saw no other rule-2
        source)."""
        stack, provisional, computers, reads = self._tstack, self._provisional, self._computers, self._reads
        running = self._running
        # entry -> the step it was last computed at, in this settling
        computed: dict = {} if held is None else {key: 0 for key, h in held.items() if not h}
        changed_at: dict = {}  # entry -> the step its result last changed at
        holding: dict = {}  # entry -> whether its last computation held rule 2 back
        step = 0
        if held is not None:
            # Rule 2's test reads named sources only: every entry that held the rule back
            # is computed first against the named results settled, all of them before any
            # result changes (none sees what the rule made elsewhere, so which entry a walk
            # met first decides nothing); then what the rule made spreads round the cycle,
            # each result joined with what it had.
            fresh = {}
            for key in reversed(stack[at:]):
                if held.get(key):
                    step += 1
                    compute, args = computers[key]
                    reads.pop(key, None)
                    computed[key] = step
                    running.append(key)
                    try:
                        fresh[key] = compute(*args)
                    finally:
                        running.pop()
            step += 1
            for key, value in fresh.items():
                value |= provisional.get(key, EMPTY)
                if value != provisional.get(key):
                    provisional[key] = value
                    changed_at[key] = step
        for _ in range(_MAX_ROUNDS):
            changed = False
            for key in reversed(stack[at:]):  # deepest first; entries first met here join
                step += 1
                last = computed.get(key)
                if last is not None:
                    for read in reads.get(key, ()):
                        if changed_at.get(read, -1) > last:
                            break
                    else:
                        continue
                compute, args = computers[key]
                reads.pop(key, None)
                computed[key] = step
                running.append(key)
                outer, self.held_back = self.held_back, False
                try:
                    value = compute(*args)
                finally:
                    running.pop()
                    holding[key] = self.held_back
                    self.held_back = outer or self.held_back
                if held is not None:
                    value |= provisional.get(key, EMPTY)
                if value != provisional.get(key):
                    provisional[key] = value
                    changed_at[key] = step
                    changed = True
            if not changed:
                self._settled = True
                break
        else:
            self._settled = False
        return holding

    def reset(self) -> None:
        """Forget the open components (a visit abandoned at the depth limit, see drive)."""
        self.named_only = False
        self._low = 0
        if not self._index:  # every component closed: nothing open to forget
            return
        self._index.clear()
        self._tstack.clear()
        self._provisional.clear()
        self._computers.clear()
        self._reread.clear()
        self._running.clear()
        self._reads.clear()

