"""Resolved text: a condition as printed, its temporaries and locals replaced by what
they stand for.

Takes an expression of one function and its :class:`~codeparse.infer.names.Names`.  Gives
the expression's text with each name replaced: by its path from ``self`` when it stands
for one (``layer1`` -> ``self.layer1``), else by the resolved text of its single
definition, recursively (``_2 = torch.eq(x, 1)`` makes ``bool(_2)`` read
``bool(torch.eq(x, 1))``); a name defined more than once, by a tuple element, or by
something the reader could not read stays a name.  How: each name's replacement is built
once per depth and shared (a temporary used twice by each of 22 others costs 22
replacements, not 4 million); a cycle of names and a depth of ``MAX_RESOLVE_DEPTH`` stop
the replacing; one replacement longer than ``_MAX_RESOLVED`` characters stays a name,
and the whole is cut there with a marker.
"""

from __future__ import annotations

from typing import Optional

from ..parse.expressions import Expr, Name, Opaque
from .names import MAX_RESOLVE_DEPTH, Names

_MAX_RESOLVED = 2000  # characters of a resolved condition before it stops expanding
_CUT = "…"  # ends a resolved condition cut at _MAX_RESOLVED characters


class Resolver:
    """The resolved text of one function's expressions, each name's replacement memoized."""

    def __init__(self, names: Names):
        self.text = names.text
        self.name_path = names.name_path
        self.single_def = names.single_def
        self.value_of = names.value_of
        self._names = names.names
        self._replacements: dict[tuple[str, int], Optional[str]] = {}  # (name, depth) -> resolved text

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
        if n.end - n.start != len(n.id):  # a parenthesised name: `(layer1)`
            inner = self._replacement(Name(n.id, n.start + 1, n.end - 1), depth, active)
            return f"({inner})" if inner is not None else None
        if depth >= MAX_RESOLVE_DEPTH or n.id in active:
            return None
        key = (n.id, depth)
        out = self._replacements.get(key, False)
        if out is False:
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

