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
    """One (sources, pins) of several; most parts are empty, one part is its own union, and
    so is a part that holds the others."""
    parts = [r for r in results if r[0] or r[1]]
    if not parts:
        return EMPTY
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        return union2(parts[0], parts[1])
    largest = max(parts, key=_size)
    for r in parts:
        if r is not largest and not (r[0] <= largest[0] and r[1] <= largest[1]):
            return (frozenset().union(*(r[0] for r in parts)), frozenset().union(*(r[1] for r in parts)))
    return largest  # it holds the others (see union2)


def _size(result: tuple) -> int:
    return len(result[0])


def union2(a: tuple, b: tuple) -> tuple[frozenset, frozenset]:
    """union([a, b]); the larger part itself when it holds the other (a value carried round
    a loop holds what each step adds to it once its cycle has settled)."""
    if not (a[0] or a[1]):
        return b if (b[0] or b[1]) else EMPTY
    if not (b[0] or b[1]):
        return a
    if len(a[0]) <= len(b[0]):
        if a[0] <= b[0] and a[1] <= b[1]:
            return b
    elif b[0] <= a[0] and b[1] <= a[1]:
        return a
    return (a[0] | b[0] if b[0] else a[0], a[1] | b[1] if b[1] else a[1])


def remark(found: frozenset, mark: Optional[str]) -> frozenset:
    """Rule 8 of the conditions: a mark above replaces the marks beneath it (runtime sources keep theirs)."""
    if not mark:
        return found
    return frozenset((ref, mark if nat != "runtime" else m, nat, typ) for ref, m, nat, typ in found)



def rule2_sources(refs) -> frozenset:
    """The sources rule 2 of the conditions makes of operands read as ``refs`` (an operand's
    text read by a marking operator: natural kind ``unknown``, type ``Tensor``), with every
    mark a mark above them may give (rule 8)."""
    return frozenset((ref, mark, "unknown", "Tensor") for ref in refs for mark in VALUE_MARKS)


def without(result: tuple, sources: frozenset) -> tuple:
    """``result`` less ``sources``."""
    found = result[0]
    if not sources or found.isdisjoint(sources):
        return result
    return found - sources, result[1]
