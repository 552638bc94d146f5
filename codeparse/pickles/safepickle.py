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
import re
from struct import Struct, error as StructError, unpack
from typing import Any, Callable, Collection, Mapping

__all__ = ["PickleLimit", "BoundedUnpickler", "Opaque", "OpaqueUnpickler", "JSON_SAFE", "safe_int", "NotPlain",
           "load_plain"]

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
        finally:  # what it built, dropped with it (a find_class closure it memoized holds it: a cycle)
            self.memo = {}
            self.stack = []
            self.metastack = []
            self.append = None

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


class Opaque:
    """Stands for any object a pickle would have built from a class: never imported."""

    qualified = "?"

    def __init__(self, *args: Any):
        self.args = args
        self.state: Any = None

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __repr__(self) -> str:
        return f"<{self.qualified}>"


class OpaqueUnpickler(BoundedUnpickler):
    """Builds tuples, lists, dicts, strings and numbers; every global becomes an :class:`Opaque`.

    ``find_class`` never imports anything (each global it names becomes an empty
    subclass of :class:`Opaque`, made once per name, at most ``max_globals``), and
    persistent ids (tensor storages) become opaque too, so reading a hostile pickle runs
    no code.  Memo indices, objects built and integers are bounded as for every
    :class:`BoundedUnpickler`.
    """

    def __init__(self, data: bytes, max_objects: int, max_globals: int):
        super().__init__(data, max_objects)
        self.max_globals = max_globals
        self._classes: dict[tuple[str, str], type] = {}

    def find_class(self, module: str, name: str):  # noqa: D102 - pickle API
        key = (module, name)
        found = self._classes.get(key)
        if found is None:
            if len(self._classes) >= self.max_globals:
                raise PickleLimit(f"more than {self.max_globals} distinct globals")
            found = self._classes[key] = type("Opaque", (Opaque,), {"qualified": f"{module}.{name}"})
        return found

    def persistent_load(self, pid: Any) -> Opaque:  # noqa: D102 - pickle API
        return Opaque(pid)


class NotPlain(Exception):
    """:func:`load_plain` met what it leaves to :class:`BoundedUnpickler`, which decides."""


_U32 = Struct("<I").unpack_from
_BININT1_RUN = re.compile(b"(?:K.)+", re.DOTALL)  # consecutive BININT1 opcodes (2 bytes each)
_I32 = Struct("<i").unpack_from


def load_plain(data: bytes, max_objects: int, allowed: Mapping[tuple[str, str], Callable[..., Any]],
               list_builders: Collection[Callable[..., Any]] = ()) -> Any:
    """The value of a pickle of plain data (tuples, lists, strings, numbers, ``None``,
    booleans, and calls of the ``allowed`` globals), read in one loop over ``data``.

    The fast path of a :class:`BoundedUnpickler` subclass whose ``find_class`` admits
    ``allowed``: the same value, and only when the unpickler would stay within its
    bounds.  Every opcode takes at least one byte, so ``len(data)`` bounds the opcodes:
    the opcodes plus the elements of every list an allowed builder in ``list_builders``
    returns are held to ``max_objects`` by ``len(data)`` plus those elements, checked
    once at the start and at each such call (not once per opcode).  A memo index may
    not exceed the entries the memo holds (``PUT`` writes them in order), so it never
    exceeds the opcodes read.  An admitted global must be called: one left in the value
    (a tuple holding it, a pickle that ends before its ``REDUCE``) is the unpickler's to
    give, since its ``find_class`` may return another object for the name.  Anything else
    (another opcode or global, frames, a bound that might be exceeded, truncated or
    malformed data) raises :class:`NotPlain`, and
    the caller reads ``data`` again with the unpickler, which gives the value, the
    finding or the error: refusing here is always safe, so each check may be stricter
    than the unpickler's, never looser.

    The opcodes ``torch`` writes for source ranges come first in the dispatch, in the
    order of their frequency; an integer followed by ``TUPLE3`` (a range or a row) is
    read as one step.  About ten times faster than the unpickler: no file object, no
    method call per opcode.
    """
    end = len(data)
    if end > max_objects:  # the opcodes might exceed the bound: the unpickler counts them
        raise NotPlain
    memo: dict[int, Any] = {}
    metastack: list[list] = []
    stack: list[Any] = []
    push = stack.append
    pop = stack.pop
    callables = {id(f) for f in allowed.values()}
    counted = {id(f) for f in list_builders}
    extra = 0  # list elements copied by counted builders
    uncalled = 0  # admitted globals pushed (by GLOBAL or a memo GET) and not yet called
    u32 = _U32
    pos = 0
    try:
        while True:
            op = data[pos]
            pos += 1
            if op == 0x4D or op == 0x4B:  # BININT2, BININT1 (an IndexError past the end)
                if op == 0x4D:
                    value = data[pos] | data[pos + 1] << 8
                    pos += 2
                else:
                    value = data[pos]
                    pos += 1
                following = data[pos]
                if following == 0x87:  # TUPLE3 of the two before and this one
                    pos += 1
                    second = pop()
                    stack[-1] = (stack[-1], second, value)
                elif following == 0x4B and op == 0x4B and data[pos + 2] == 0x4B:
                    # A run of BININT1 (the elements of a list): its bytes in one step.
                    push(value)
                    run = _BININT1_RUN.match(data, pos).end()
                    stack.extend(data[pos + 1:run:2])
                    pos = run
                else:
                    push(value)
            elif op == 0x87:  # TUPLE3
                third = pop()
                second = pop()
                stack[-1] = (stack[-1], second, third)
            elif op == 0x6A:  # LONG_BINGET
                value = memo[u32(data, pos)[0]]
                pos += 4
                if id(value) in callables:
                    uncalled += 1
                push(value)
            elif op == 0x71:  # BINPUT
                index = data[pos]
                pos += 1
                if index > len(memo):
                    raise NotPlain
                memo[index] = stack[-1]
            elif op == 0x58 or op == 0x8C:  # BINUNICODE, SHORT_BINUNICODE
                if op == 0x58:
                    size = u32(data, pos)[0]
                    pos += 4
                else:
                    size = data[pos]
                    pos += 1
                if pos + size > end:
                    raise NotPlain
                push(str(data[pos:pos + size], "utf-8", "surrogatepass"))
                pos += size
            elif op == 0x68:  # BINGET
                value = memo[data[pos]]
                pos += 1
                if id(value) in callables:
                    uncalled += 1
                push(value)
            elif op == 0x72:  # LONG_BINPUT
                index = u32(data, pos)[0]
                pos += 4
                if index > len(memo):
                    raise NotPlain
                memo[index] = stack[-1]
            elif op == 0x94:  # MEMOIZE
                memo[len(memo)] = stack[-1]
            elif op == 0x28:  # MARK
                metastack.append(stack)
                stack = []
                push = stack.append
                pop = stack.pop
            elif op == 0x74:  # TUPLE
                items = stack
                stack = metastack.pop()
                push = stack.append
                pop = stack.pop
                push(tuple(items))
            elif op == 0x85:  # TUPLE1
                stack[-1] = (stack[-1],)
            elif op == 0x86:  # TUPLE2
                second = pop()
                stack[-1] = (stack[-1], second)
            elif op == 0x29:  # EMPTY_TUPLE
                push(())
            elif op == 0x5D:  # EMPTY_LIST
                push([])
            elif op == 0x65 or op == 0x61:  # APPENDS, APPEND
                if op == 0x65:
                    items = stack
                    stack = metastack.pop()
                    push = stack.append
                    pop = stack.pop
                else:
                    items = [pop()]
                target = stack[-1]
                if type(target) is not list:
                    raise NotPlain
                target.extend(items)
            elif op == 0x4A:  # BININT
                push(_I32(data, pos)[0])
                pos += 4
            elif op == 0x8A:  # LONG1
                size = data[pos]
                if pos + 1 + size > end:
                    raise NotPlain
                push(int.from_bytes(data[pos + 1:pos + 1 + size], "little", signed=True))
                pos += 1 + size
            elif op == 0x4E:  # NONE
                push(None)
            elif op == 0x88 or op == 0x89:  # NEWTRUE, NEWFALSE
                push(op == 0x88)
            elif op == 0x63:  # GLOBAL: "module\nname\n", admitted or left to find_class
                first = data.index(b"\n", pos)
                second = data.index(b"\n", first + 1)
                key = (data[pos:first].decode("utf-8"), data[first + 1:second].decode("utf-8"))
                pos = second + 1
                if key not in allowed:
                    raise NotPlain
                uncalled += 1
                push(allowed[key])
            elif op == 0x52:  # REDUCE, of an admitted global only
                args = pop()
                func = stack[-1]
                if type(args) is not tuple or id(func) not in callables:
                    raise NotPlain
                value = func(*args)
                uncalled -= 1
                if id(func) in counted:
                    extra += len(value)
                    if end + extra > max_objects:
                        raise NotPlain
                stack[-1] = value
            elif op == 0x80:  # PROTO
                if data[pos] > pickle.HIGHEST_PROTOCOL:
                    raise NotPlain
                pos += 1
            elif op == 0x2E:  # STOP
                if uncalled:  # a global kept as a value: the unpickler's object is its own
                    raise NotPlain
                return pop()
            else:
                raise NotPlain
    except (IndexError, KeyError, ValueError, TypeError, StructError, UnicodeDecodeError):
        raise NotPlain from None
