"""Sources: the values a visit of an expression gives, and how they combine.

A visit (:mod:`~codeparse.infer.conditions`) gives sources and pins: a source is
``(ref, mark, natural kind, type)`` (``ref`` the source's name: a parameter, a path from
``self``, a runtime reader, an operand's text; ``mark`` the marking operator nearest the
condition above it, None if none), a pin ``(ref, type)``: a type that a literal compared
with the source decides.  Results combine by union; an outer mark replaces the marks
beneath it, except a runtime source's.  Kinds rank by ``PRIORITY``: a source reaching a
condition by two ways is listed with the higher one.

Inside one function's visits a result is one int (:class:`SourceBits`): each distinct
source (less its mark) and each pin gets a slot of three bits, one per mark (none,
``tensor_value``, ``tensor_shape``; a pin uses the first), so a union is ``|``, a
containment ``a & b == a`` and re-marking a few int operations.  The sets (a pair of
frozensets, :func:`union`, :func:`remark`) are what the visits give to other parts (a
callee's summary, :mod:`~codeparse.infer.callees`).
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
    largest = max(parts, key=lambda r: len(r[0]))
    for r in parts:
        if r is not largest and not (r[0] <= largest[0] and r[1] <= largest[1]):
            return (frozenset().union(*(r[0] for r in parts)), frozenset().union(*(r[1] for r in parts)))
    return largest  # it holds the others


def remark(found: frozenset, mark: Optional[str]) -> frozenset:
    """Rule 8 of the conditions: a mark above replaces the marks beneath it (runtime sources keep theirs)."""
    if not mark:
        return found
    return frozenset((ref, mark if nat != "runtime" else m, nat, typ) for ref, m, nat, typ in found)


_CLASS = {None: 0, "tensor_value": 1, "tensor_shape": 2}  # a mark's bit in a slot
_MARKS = (None, "tensor_value", "tensor_shape")


class SourceBits:
    """The slots of the sources and pins one function's visits give, and the operations on
    their results as ints: slot ``i`` holds bits ``3i`` (no mark, or a pin), ``3i + 1``
    (marked ``tensor_value``) and ``3i + 2`` (marked ``tensor_shape``).  Slots are given
    in the order the visits first make a source; they live as long as the function's
    inference (one parse), never across parses."""

    def __init__(self) -> None:
        self.slots: dict = {}  # (ref, natural kind, type) of a source, (ref, type) of a pin -> slot
        self.keys: list = []  # slot -> its key
        self.kept = 0  # the bits re-marking leaves as they are: runtime sources' and pins'
        self.pins = 0  # the bits of pins
        self.firsts = 0  # every slot's first bit

    def _slot(self, key: tuple, kept: bool) -> int:
        slot = self.slots[key] = len(self.keys)
        self.keys.append(key)
        first = 1 << (3 * slot)
        self.firsts |= first
        if kept:
            self.kept |= first * 7
        return slot

    def source(self, ref: str, mark: Optional[str], natural: str, typ: Optional[str]) -> int:
        """The bit of one source."""
        key = (ref, natural, typ)
        slot = self.slots.get(key)
        if slot is None:  # a new slot (_slot, inline: most sources are met once)
            keys = self.keys
            slot = self.slots[key] = len(keys)
            keys.append(key)
            first = 1 << (3 * slot)
            self.firsts |= first
            if natural == "runtime":
                self.kept |= first * 7
        return 1 << (3 * slot + _CLASS[mark])

    def pin(self, ref: str, typ: str) -> int:
        """The bit of one pin."""
        key = (ref, typ)
        slot = self.slots.get(key)
        if slot is None:
            slot = self._slot(key, True)
            self.pins |= 1 << (3 * slot)
        return 1 << (3 * slot)

    def value_marked(self, ref: str, natural: str, typ: Optional[str]) -> int:
        """The bits of a source marked by each of ``VALUE_MARKS``."""
        return self.source(ref, None, natural, typ) * 6

    def remark(self, bits: int, mark: Optional[str]) -> int:
        """:func:`remark` of ``bits``: each source not kept moves to the bit of ``mark``."""
        if not mark:
            return bits
        kept = bits & self.kept
        moved = bits ^ kept
        if not moved:
            return bits
        return kept | (((moved | moved >> 1 | moved >> 2) & self.firsts) << _CLASS[mark])

    def sets(self, bits: int) -> tuple[frozenset, frozenset]:
        """The (sources, pins) of ``bits``."""
        if not bits:
            return EMPTY
        found, pins = self.listed(bits)
        return frozenset(found), frozenset(pins)

    def listed(self, bits: int) -> tuple[list, list]:
        """The sources and the pins of ``bits``, each in the order of their slots."""
        keys = self.keys
        found = []
        pins = []
        pin_bits = self.pins
        while bits:
            low = bits & -bits
            bits ^= low
            at = low.bit_length() - 1
            key = keys[at // 3]
            if low & pin_bits:
                pins.append(key)
            else:
                ref, natural, typ = key
                found.append((ref, _MARKS[at % 3], natural, typ))
        return found, pins

    def of_sets(self, result: tuple) -> int:
        """The bits of a (sources, pins)."""
        bits = 0
        source, pin = self.source, self.pin
        for ref, mark, natural, typ in result[0]:
            bits |= source(ref, mark, natural, typ)
        for ref, typ in result[1]:
            bits |= pin(ref, typ)
        return bits
