"""One bounded unpickler for every pickle codeparse reads (``.debug_pkl``, ``bytecode.pkl``).

The standard C unpickler trusts its input in ways a CI gate cannot: a memo index of
``0x0fffffff`` makes it allocate a 2-gigaslot memo table (4 GB) for a 431-byte pickle.
:class:`BoundedUnpickler` is the pure-Python unpickler of the standard library with
its memo a dictionary (so an index allocates nothing) and these checks on top:

* memo indices (``PUT``, ``BINPUT``, ``LONG_BINPUT``) may not exceed the opcodes read
  so far: a pickle that stores value 0x0fffffff after 30 opcodes is refused;
* the objects built are counted (one per opcode, plus every element a list builder
  copies): past ``max_objects`` the load stops, so memo references cannot multiply
  work (a list of a million references copied a million times);
* ``LONG4`` integers (more than 255 bytes of digits) are refused: no line number or
  offset needs one, and a 5,000-digit integer cannot even be printed.

What the subclasses admit as globals is their own business (``find_class``); this
class only bounds the work.  Every refusal is a :class:`PickleLimit` with a one-line
reason.
"""

from __future__ import annotations

import io
import pickle
from struct import unpack
from typing import Any

__all__ = ["PickleLimit", "BoundedUnpickler", "JSON_SAFE", "safe_int"]

#: Largest integer a JSON reader keeps exactly (2**53 - 1); numbers read from an input
#: that reach an output must lie within it.
JSON_SAFE = (1 << 53) - 1


class PickleLimit(Exception):
    """A pickle exceeds a bound; ``str()`` is the reason (one line)."""


def safe_int(value: Any, low: int = 0, high: int = JSON_SAFE) -> bool:
    """Whether ``value`` is an ``int`` (not a bool) in ``[low, high]``."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


_Unpickler = pickle._Unpickler  # type: ignore[attr-defined]  # the pure-Python implementation
_Stop = pickle._Stop  # type: ignore[attr-defined]
_Unframer = pickle._Unframer  # type: ignore[attr-defined]


class BoundedUnpickler(_Unpickler):
    """Pure-Python unpickling of ``data`` within ``max_objects`` objects (see the module docs)."""

    def __init__(self, data: bytes, max_objects: int):
        super().__init__(io.BytesIO(data))
        self.max_objects = max_objects
        self.built = 0

    def count(self, n: int) -> None:
        """Add ``n`` objects built; raise :class:`PickleLimit` past the bound."""
        self.built += n
        if self.built > self.max_objects:
            raise PickleLimit(f"more than {self.max_objects} objects built")

    def load(self) -> Any:  # noqa: D102 - pickle API; the standard loop with a count
        self._unframer = _Unframer(self._file_read, self._file_readline)
        self.read = self._unframer.read
        self.readinto = self._unframer.readinto
        self.readline = self._unframer.readline
        self.metastack = []
        self.stack = []
        self.append = self.stack.append
        self.proto = 0
        read = self.read
        dispatch = self.dispatch
        try:
            while True:
                key = read(1)
                if not key:
                    raise EOFError
                self.built += 1
                if self.built > self.max_objects:
                    raise PickleLimit(f"more than {self.max_objects} objects built")
                dispatch[key[0]](self)
        except _Stop as stop:
            return stop.value

    def _memo_put(self, index: int) -> None:
        if index < 0 or index > self.built:
            raise PickleLimit(f"memo index {index} after {self.built} opcodes")
        self.memo[index] = self.stack[-1]

    def _put(self) -> None:
        self._memo_put(int(self.readline()[:-1]))

    def _binput(self) -> None:
        self._memo_put(self.read(1)[0])

    def _long_binput(self) -> None:
        self._memo_put(unpack("<I", self.read(4))[0])

    def _long4(self) -> None:
        raise PickleLimit("an integer of more than 255 bytes")

    dispatch = dict(_Unpickler.dispatch)
    dispatch[pickle.PUT[0]] = _put
    dispatch[pickle.BINPUT[0]] = _binput
    dispatch[pickle.LONG_BINPUT[0]] = _long_binput
    dispatch[pickle.LONG4[0]] = _long4
