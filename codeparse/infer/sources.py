"""Sources: the values a visit of an expression gives, and how they combine.

A visit (:mod:`~codeparse.infer.conditions`) gives a pair (sources, pins): ``sources`` a
set of ``(ref, mark, natural kind, type)`` (``ref`` the source's name: a parameter, a path
from ``self``, a runtime reader, an operand's text; ``mark`` the marking operator nearest
the condition above it, None if none), ``pins`` a set of ``(ref, type)`` that a literal
compared with the source decides.  Pairs combine by union (most are empty, and one part
is its own union, so no new set is built then); an outer mark replaces the marks beneath
it, except a runtime source's.  Kinds rank by ``PRIORITY``: a source reaching a
condition by two ways is listed with the higher one.
"""

from __future__ import annotations

from typing import Optional

PRIORITY = ("tensor_value", "tensor_shape", "argument", "attribute", "runtime", "unknown", "constant")
RANK = {k: i for i, k in enumerate(PRIORITY)}
VALUE_MARKS = ("tensor_value", "tensor_shape")
EMPTY: tuple[frozenset, frozenset] = (frozenset(), frozenset())


def union(results: list) -> tuple[frozenset, frozenset]:
    """One (sources, pins) of several; most parts are empty, and one part is its own union."""
    parts = [r for r in results if r[0] or r[1]]
    if not parts:
        return EMPTY
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        return union2(parts[0], parts[1])
    return (frozenset().union(*(r[0] for r in parts)), frozenset().union(*(r[1] for r in parts)))


def union2(a: tuple, b: tuple) -> tuple[frozenset, frozenset]:
    """union([a, b])."""
    if not (a[0] or a[1]):
        return b if (b[0] or b[1]) else EMPTY
    if not (b[0] or b[1]):
        return a
    return (a[0] | b[0] if b[0] else a[0], a[1] | b[1] if b[1] else a[1])


def remark(found: frozenset, mark: Optional[str]) -> frozenset:
    """Rule 8 of the conditions: a mark above replaces the marks beneath it (runtime sources keep theirs)."""
    if not mark:
        return found
    return frozenset((ref, mark if nat != "runtime" else m, nat, typ) for ref, m, nat, typ in found)



def named_part(result: tuple) -> tuple:
    """``result`` less every source rule 2 of the conditions may have made (an operand's
    text read by a marking operator: natural kind ``unknown``, type ``Tensor``; a mark above
    and a call mapping it onto its caller keep both), whatever else made them."""
    found = result[0]
    for source in found:
        if source[2] == "unknown" and source[3] == "Tensor":
            return frozenset(s for s in found if s[2] != "unknown" or s[3] != "Tensor"), result[1]
    return result
