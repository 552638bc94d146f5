"""Alignment of a script's event automaton with a trace's events (weighted edit distance).

The script is a regular expression over events: a block is a sequence, an ``if`` an
alternation, a loop a repetition.  :func:`align` finds the path through it and the alignment
with the trace's events that costs least (Myers & Miller 1989): column by column over the
trace, with a Dijkstra closure over the epsilon and skip edges within a column.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Callable, Optional

from .events import TRACE_EQUIVALENTS, Event, IfNode, Item

__all__ = ["TRACE_EXTRA", "TRACE_EQUIVALENTS"]

# A trace event the script path does not explain (inlined compiled functions, mostly).
TRACE_EXTRA = 100


@dataclass
class _Edge:
    target: int
    event: Optional[Event]  # None: an epsilon edge
    tag: Optional[tuple] = None  # ("if", i, branch) / ("join", i) / ("enter", l) / ("iter", l) / ("exit", l)


class _Automaton:
    """``force`` maps an ``if`` (by index) to the only branch the path may take through it."""

    def __init__(self, items: list[Item], force: Optional[dict[int, str]] = None):
        self.force = force or {}
        self.edges: list[list[_Edge]] = [[]]
        self.start = 0
        self.final = self._build(items, 0)

    def _new(self) -> int:
        self.edges.append([])
        return len(self.edges) - 1

    def _eps(self, a: int, b: int, tag: Optional[tuple] = None) -> None:
        self.edges[a].append(_Edge(b, None, tag))

    def _build(self, items: list[Item], state: int) -> int:
        for item in items:
            if isinstance(item, Event):
                nxt = self._new()
                self.edges[state].append(_Edge(nxt, item))
                state = nxt
            elif isinstance(item, IfNode):
                join = self._new()
                for branch, block in (("then", item.then), ("else", item.orelse)):
                    if self.force.get(item.index, branch) != branch:
                        continue
                    entry = self._new()
                    self._eps(state, entry, ("if", item.index, branch))
                    self._eps(self._build(block, entry), join, ("join", item.index))
                state = join
            else:
                head, body, out = self._new(), self._new(), self._new()
                self._eps(state, head, ("enter", item.index))
                self._eps(head, body, ("iter", item.index))
                self._eps(self._build(item.body, body), head)
                self._eps(head, out, ("exit", item.index))
                state = out
        return state


@dataclass
class _Step:
    edge: Optional[_Edge]  # None for a trace event left unmatched
    trace: Optional[int]  # the trace event consumed (matched or unmatched)


def _align(auto: _Automaton, trace: list[str], steps_wanted: bool = True,
           compatible: Optional[Callable[[Event, int], bool]] = None) -> tuple[int, list[_Step]]:
    """The cheapest path and alignment; returns its cost and its steps in order (with
    ``steps_wanted=False`` only the cost).  ``compatible(event, i)``, when given, may refuse a
    match of a script event with trace event ``i`` that the labels allow (their literals differ)."""
    inf = float("inf")
    n_states = len(auto.edges)
    columns_back: list[list[Optional[tuple]]] = []
    prev: list[float] = []
    for i in range(len(trace) + 1):
        cost = [inf] * n_states
        back: list[Optional[tuple]] = [None] * n_states
        if i == 0:
            cost[auto.start] = 0
        else:
            label = trace[i - 1]
            for s in range(n_states):
                c = prev[s]
                if c == inf:
                    continue
                if c + TRACE_EXTRA < cost[s]:
                    cost[s], back[s] = c + TRACE_EXTRA, ("extra", s, None)
                for e in auto.edges[s]:
                    if (e.event is not None and not e.event.weak and label in e.event.keys and c < cost[e.target]
                            and (compatible is None or compatible(e.event, i - 1))):
                        cost[e.target], back[e.target] = c, ("match", s, e)
        heap = [(c, s) for s, c in enumerate(cost) if c != inf]
        heapq.heapify(heap)
        while heap:
            c, s = heapq.heappop(heap)
            if c > cost[s]:
                continue
            for e in auto.edges[s]:
                nc = c + (0 if e.event is None else e.event.cost)
                if nc < cost[e.target]:
                    cost[e.target], back[e.target] = nc, ("skip" if e.event else "eps", s, e)
                    heapq.heappush(heap, (nc, e.target))
        columns_back.append(back)
        prev = cost
    total = prev[auto.final]
    steps: list[_Step] = []
    if not steps_wanted or total == inf:
        return (int(total) if total != inf else -1), steps
    i, s = len(trace), auto.final
    while not (i == 0 and s == auto.start):
        how, src, edge = columns_back[i][s]
        if how == "extra":
            steps.append(_Step(None, i - 1))
            i -= 1
        elif how == "match":
            steps.append(_Step(edge, i - 1))
            i -= 1
        else:
            steps.append(_Step(edge, None))
        s = src
    steps.reverse()
    return int(total), steps


