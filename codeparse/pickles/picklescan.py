"""Pickle safety without unpickling: walk a pickle's opcodes, learn what loading it would do.

A pickle runs code when it is loaded: ``GLOBAL`` / ``STACK_GLOBAL`` / ``INST`` name a
callable (``os.system``), ``REDUCE`` / ``OBJ`` / ``INST`` call it, ``NEWOBJ`` instantiates
a class, ``BUILD`` gives an object its state.  This module never loads one.  It reads the
opcodes (in one loop for what torch writes, else with :func:`pickletools.genops`, a parser
of the byte format that builds nothing) and keeps a symbolic stack: strings pushed and
memoized are tracked, so a ``STACK_GLOBAL`` whose module and name come from the memo is
resolved like one whose strings were just pushed; tuples keep the globals they hold, so
that what each global is *used for* is known:

* ``called``: the callable of ``REDUCE``, ``INST``, ``OBJ``; an argument of a call (the
  callee may call it); the base class ``copyreg._reconstructor`` calls; an object ``BUILD``
  sets state on directly;
* ``instantiated``: the class of ``NEWOBJ`` / ``NEWOBJ_EX``, or the one handed to
  ``copyreg._reconstructor`` / ``copyreg.__newobj__`` (these helpers are then not counted
  as called themselves);
* ``referenced``: only stored (a function kept as a module attribute).

A name is judged as the loader resolves it (:func:`verdict`): a Python 2 name is mapped
as ``pickle`` maps it (``_compat_pickle``, for protocols 0-2), and a dotted name
(``torch.nn.modules.module`` + ``torch.os.system``, resolved attribute by attribute) is
never taken for the name it spells.  What a pickle cannot tell is never safe: a
``STACK_GLOBAL`` whose operands are computed at load time, an extension code
(``EXT1``..), the opcode cap, a malformed or truncated pickle each stop the walk with
their own kind (:attr:`PickleScan.failure`).

What each global means is data: ``grammars/pickle-weights-only.toml`` (torch's
``weights_only`` allowlist, generated) is silent, ``grammars/pickle-globals.toml`` lists
the known gadgets (CP330, always an error), the known data types (CP335, a warning) and,
for the pickles ``torch.jit.load`` reads with its own unpickler, the TorchScript names.
Nothing is imported or executed.
"""

from __future__ import annotations

import fnmatch
import functools
import io
import re
from typing import Any, Iterable, Iterator, Optional

from ..contract.codes import diagnostic
from ..files.filekind import is_pickle, looks_like_pickle

__all__ = ["PickleScan", "scan_pickle", "scan_stream", "classify", "verdict", "pickle_findings", "load_table", "is_pickle",
           "looks_like_pickle", "MAX_OPS", "CALLED", "INSTANTIATED", "REFERENCED"]

MAX_OPS = 5_000_000  # opcodes walked per pickle before the walk stops (CP338)
MAX_PICKLES = 5  # consecutive pickles walked in one stream: legacy torch.save reads 5
REFERENCED, INSTANTIATED, CALLED = 0, 1, 2
_STRING_OPS = {"STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE",
               "BINUNICODE8"}
_GET_OPS = {"GET", "BINGET", "LONG_BINGET"}
_PUT_OPS = {"PUT", "BINPUT", "LONG_BINPUT"}
# Helpers of the pickle protocol that instantiate the class they are given (copyreg.py).
_HELPERS = {"copyreg._reconstructor", "copyreg.__newobj__", "copyreg.__newobj_ex__"}


class _Mark:
    __slots__ = ()


_MARK = _Mark()


class _Unreadable(ValueError):
    """The walk stops: ``kind`` is ``name`` (a global it cannot name) or ``cap``."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


# A scan's fields after ``entry`` (the pickle's name), in order, each with its value when
# not given (``list``, ``dict``: a new one for each scan).
_DEFAULTS: dict[str, Any] = {
    "globals": list,  # the globals it names, in order of first appearance
    "offsets": dict,  # global -> byte offset of its first use
    "ops": 0,  # opcodes walked
    "persistent_ids": 0,  # persistent ids met (PERSID, BINPERSID)
    "error": None,  # why the walk stopped short of STOP
    "end": 0,  # offset after STOP
    "uses": dict,  # global -> REFERENCED / INSTANTIATED / CALLED
    "names": dict,  # global -> [module, name, raw module, raw name]: as the loader resolves it, as read
    "proto": 0,  # the protocol the loader reads it with: the last PROTO seen
    "failure": None,  # how the walk ended when error is set: walk, name or cap
    "jit": False,  # read by torch.jit.load's own unpickler only (set by the caller)
}


class PickleScan:
    """The globals one pickle names, in order of first appearance, what it does with each,
    and how the walk ended.

    Its fields are its ``__slots__``: ``entry`` and those of :data:`_DEFAULTS`, in that
    order, which ``__init__``, ``__eq__``, ``__repr__`` and :meth:`plain` read.  Two scans
    are equal when their fields are.  (A plain class, not a dataclass: creating a dataclass
    costs about a millisecond of every process that scans.)"""

    __slots__ = ("entry", *_DEFAULTS)

    def __init__(self, entry: str, **fields: Any):
        self.entry = entry
        for name, default in _DEFAULTS.items():
            if name in fields:
                setattr(self, name, fields.pop(name))
            else:
                setattr(self, name, default() if callable(default) else default)
        if fields:
            raise TypeError(f"PickleScan() got unexpected fields: {', '.join(fields)}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not PickleScan:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment] - mutable, compared by value

    def __repr__(self) -> str:
        return "PickleScan(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__) + ")"

    def add(self, shown: str, offset: int, module: str, name: str, raw_module: str, raw_name: str) -> None:
        """A global met at ``offset``: ``module``/``name`` as the loader resolves them (Python 2
        names mapped), ``raw_*`` as the pickle spells them."""
        if shown not in self.offsets:
            self.offsets[shown] = offset
            self.globals.append(shown)
            self.uses[shown] = REFERENCED
            self.names[shown] = [module, name, raw_module, raw_name]

    def use(self, shown: str, how: int) -> None:
        if self.uses.get(shown, REFERENCED) < how:
            self.uses[shown] = how

    def plain(self) -> dict[str, Any]:
        """Each field, its lists and dicts copied (and the lists a dict holds), which is all
        a scan holds: a deep copy of its fields."""
        out: dict[str, Any] = {}
        for name in self.__slots__:
            value = getattr(self, name)
            if isinstance(value, list):
                value = list(value)
            elif isinstance(value, dict):
                value = {k: list(v) if isinstance(v, list) else v for k, v in value.items()}
            out[name] = value
        return out


# What a walk finds: the fields :func:`_walk_plain` hands over once it has read the whole pickle.
_WALKED = tuple(name for name in PickleScan.__slots__ if name not in ("entry", "jit"))


@functools.cache
def load_table() -> dict[str, Any]:
    """``grammars/pickle-globals.toml`` with ``weights_only`` from ``pickle-weights-only.toml``, read once."""
    from ..grammar.engine import load_data_table

    out: dict[str, Any] = dict(load_data_table("pickle-globals.toml"))
    out["weights_only"] = load_data_table("pickle-weights-only.toml")
    return out


def _mapped(module: str, name: str) -> tuple[str, str]:
    import _compat_pickle

    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


class _Globs:
    """The table's globs of one class, matched as :func:`fnmatch.fnmatchcase` would: a glob
    with no wildcard is a name (a set lookup), one whose only wildcard is a final ``*`` a
    prefix (one ``str.startswith`` over all of them), and the others one compiled pattern.
    One match per global, not one per glob (a pickle naming 100,000 distinct globals is
    classified in linear time); compiling only the few real patterns keeps start-up cheap."""

    def __init__(self, globs: Iterable[str]):
        names, prefixes, patterns = set(), [], []
        for glob in globs:
            if not any(c in glob for c in "*?["):
                names.add(glob)
            elif glob.endswith("*") and not any(c in glob[:-1] for c in "*?["):
                prefixes.append(glob[:-1])
            else:
                patterns.append(f"(?:{fnmatch.translate(glob)})")
        self.names = frozenset(names)
        self.prefixes = tuple(prefixes)
        self.pattern = re.compile("|".join(patterns)) if patterns else None

    def match(self, name: str) -> bool:
        return (name in self.names or name.startswith(self.prefixes)
                or (self.pattern is not None and self.pattern.match(name) is not None))


@functools.cache
def _globs(verdict: str) -> _Globs:
    return _Globs(load_table()[verdict]["globals"])


@functools.cache
def _exact(section: str) -> frozenset[str]:
    table = load_table()
    return frozenset(table["weights_only"]["globals"] if section == "weights_only" else table[section]["globals"])


@functools.lru_cache(maxsize=4096)
def classify(global_name: str) -> str:
    """``dangerous`` (a known gadget, by the table's globs), ``allowed`` (torch's
    ``weights_only`` allowlist, exactly), ``data_type`` (a known data type, exactly) or
    ``unknown`` for a ``module.name``."""
    if _globs("dangerous").match(global_name):
        return "dangerous"
    if global_name in _exact("weights_only"):
        return "allowed"
    if global_name in _exact("data_types"):
        return "data_type"
    return "unknown"


def _dangerous(module: str, name: str) -> bool:
    """A known gadget under any name the loader may reach it by: the whole dotted path,
    and the module with each prefix of the attribute path."""
    parts = name.split(".")
    return any(_globs("dangerous").match(".".join([module, *parts[:n]])) for n in range(1, len(parts) + 1))


def verdict(scan: "PickleScan", shown: str, torchscript: bool = False,
            allowed: Iterable[str] = ()) -> str:
    """What a global of ``scan`` is: ``silent``, ``dangerous`` (CP330), ``called`` (CP334),
    ``data_type`` (CP335), ``instantiated`` (CP336) or ``referenced`` (CP331).

    ``torchscript``: the pickle is read by ``torch.jit.load``'s own unpickler, which resolves
    ``__torch__`` names to the archive's classes and admits the TorchScript pickler's helpers;
    ``allowed``: globals a trusted configuration allows (exact ``module.name``)."""
    module, name, raw_module, raw_name = scan.names.get(shown) or [*shown.rpartition(".")[::2]] * 2
    torchscript = torchscript or scan.jit
    if _dangerous(module, name) or _dangerous(raw_module, raw_name):
        return "dangerous"
    use = scan.uses.get(shown, CALLED)
    if "." not in name:
        full = f"{module}.{name}"
        if full in _exact("weights_only") or full in allowed:
            return "silent"
        if torchscript and (full in _exact("torchscript") or full.startswith("__torch__.")):
            return "silent"
        if use != CALLED and full in _exact("helpers"):
            return "silent"
        if full in _exact("data_types"):
            return "data_type"
    if use == CALLED:
        return "called"
    return "instantiated" if use == INSTANTIATED else "referenced"


# The opcodes :func:`_walk_plain` reads by this table: code -> (argument bytes, values
# popped, what it pushes: 0 nothing, 1 a value (None), 2 a mark), for those with a
# fixed-size argument and a fixed stack effect that do nothing with a global.  The
# others it reads are handled one by one below; anything else goes to the walk below.
_PLAIN_OPS: dict[int, tuple[int, int, int]] = {
    0x4B: (1, 0, 1), 0x4D: (2, 0, 1), 0x4A: (4, 0, 1),  # BININT1, BININT2, BININT
    0x5D: (0, 0, 1), 0x7D: (0, 0, 1),  # EMPTY_LIST, EMPTY_DICT
    0x4E: (0, 0, 1), 0x88: (0, 0, 1), 0x89: (0, 0, 1),  # NONE, NEWTRUE, NEWFALSE
    0x47: (8, 0, 1),  # BINFLOAT
    0x73: (0, 3, 1), 0x61: (0, 2, 1),  # SETITEM, APPEND
    0x30: (0, 1, 0),  # POP
    0x28: (0, 0, 2),  # MARK
    0x95: (8, 0, 0),  # FRAME
}
_UNTIL_MARK = frozenset((0x6C, 0x64))  # LIST, DICT: the items above the mark -> one value
_UNTIL_MARK_INTO = frozenset((0x75, 0x65))  # SETITEMS, APPENDS: the items above the mark into the value below


class _NotPlain(Exception):
    pass


class _Tuple(tuple):
    """A tuple on the symbolic stack: its first two items and the globals among its items."""

    __slots__ = ()


def _tuple(items: list) -> Any:
    """A tuple of the symbolic stack: None when it holds no global (nothing to follow)."""
    for v in items:
        if type(v) is tuple:
            break
    else:
        return None  # the common case, decided without building anything
    held = tuple(v[1] for v in items if type(v) is tuple and v[0] == "global")
    if not held:
        return None
    return _Tuple((items[0], items[1] if len(items) > 1 else None, held))


def _reduce(scan: PickleScan, fn: Any, args: Any) -> None:
    """REDUCE ``fn(*args)``: ``fn`` is called and so is every global among the arguments
    (the callee may call them), except the class the protocol's helpers instantiate."""
    held = list(args[2]) if type(args) is _Tuple else []
    if type(fn) is tuple and fn[0] == "global":
        if fn[1] in _exact("helpers") and type(args) is _Tuple:
            first = args[0]
            if type(first) is tuple and first[0] == "global":
                scan.use(first[1], INSTANTIATED)
                held.remove(first[1])
            base = args[1]
            if fn[1].endswith("_reconstructor") and type(base) is tuple and base[0] == "global":
                if base[1] == "builtins.object":  # object.__new__(cls): nothing else runs
                    held.remove(base[1])
        else:
            scan.use(fn[1], CALLED)
    for name in held:
        scan.use(name, CALLED)


def _newobj(scan: PickleScan, cls: Any, args: Any) -> None:
    if type(cls) is tuple and cls[0] == "global":
        scan.use(cls[1], INSTANTIATED)
    for name in args[2] if type(args) is _Tuple else ():
        scan.use(name, CALLED)


def _build(scan: PickleScan, inst: Any) -> None:
    if type(inst) is tuple and inst[0] == "global":  # state set on the global itself
        scan.use(inst[1], CALLED)


def _global(scan: PickleScan, module: Any, name: Any, offset: int) -> tuple:
    if type(module) is not str or type(name) is not str:
        raise _Unreadable("name", f"STACK_GLOBAL at byte {offset} takes operands that are not known strings")
    resolved = _mapped(module, name) if scan.proto < 3 else (module, name)
    if "." in resolved[1]:  # resolved attribute by attribute: shown as module:path, never as a name
        shown = f"{resolved[0]}:{resolved[1]}"
    else:
        shown = f"{resolved[0]}.{resolved[1]}"
    scan.add(shown, offset, resolved[0], resolved[1], module, name)
    return ("global", shown)


def _walk_plain(data: bytes, start: int, scan: PickleScan) -> bool:
    """:func:`scan_pickle`'s walk in one loop over ``data``, for the opcodes torch writes:
    fills ``scan`` as the pickletools walk does and returns True, or returns False (and
    leaves ``scan`` alone) at anything else (another opcode, malformed or truncated data,
    a stack or memo error), where that walk decides (and says why)."""
    stack: list[Any] = []
    memo: dict[int, Any] = {}
    plain = _PLAIN_OPS
    end = len(data)
    pos = start
    ops = 0
    persistent = 0
    mine = PickleScan(entry=scan.entry)
    try:
        while True:
            offset = pos
            op = data[pos]
            pos += 1
            ops += 1
            if ops > MAX_OPS:  # as the walk below ends: once this opcode and its argument are read
                import pickletools

                stream = io.BytesIO(data)
                stream.seek(offset)
                next(pickletools.genops(stream))
                mine.ops, mine.persistent_ids = ops, persistent
                mine.error, mine.failure = f"more than {MAX_OPS} opcodes", "cap"
                _copy(mine, scan)
                return True
            spec = plain.get(op)
            if spec is not None:
                size, popped, pushed = spec
                pos += size
                if pos > end or popped > len(stack):
                    raise _NotPlain
                if popped:
                    del stack[len(stack) - popped:]
                if pushed:
                    stack.append(None if pushed == 1 else _MARK)
            elif op == 0x68 or op == 0x6A or op == 0x71 or op == 0x72:  # BINGET, LONG_BINGET, BINPUT, LONG_BINPUT
                if op == 0x68 or op == 0x71:
                    key = data[pos]
                    pos += 1
                else:
                    if pos + 4 > end:
                        raise _NotPlain
                    key = int.from_bytes(data[pos:pos + 4], "little")
                    pos += 4
                if op < 0x71:
                    stack.append(memo[key])
                else:
                    memo[key] = stack[-1]
            elif op == 0x94:  # MEMOIZE
                memo[len(memo)] = stack[-1]
            elif op == 0x58 or op == 0x8C or op == 0x8D:  # BINUNICODE, SHORT_BINUNICODE, BINUNICODE8
                width = 4 if op == 0x58 else 1 if op == 0x8C else 8
                if pos + width > end:
                    raise _NotPlain
                size = int.from_bytes(data[pos:pos + width], "little")
                pos += width
                if pos + size > end:
                    raise _NotPlain
                stack.append(str(data[pos:pos + size], "utf-8", "surrogatepass"))
                pos += size
            elif op == 0x55 or op == 0x43:  # SHORT_BINSTRING (a str), SHORT_BINBYTES (not one)
                size = data[pos]
                pos += 1 + size
                if pos > end:
                    raise _NotPlain
                stack.append(str(data[pos - size:pos], "latin-1") if op == 0x55 else None)
            elif op == 0x52:  # REDUCE
                args = stack.pop()
                fn = stack.pop()
                if args is not None or (type(fn) is tuple and mine.uses.get(fn[1]) != CALLED):
                    _reduce(mine, fn, args)  # a global among the arguments, or one not yet known called
                stack.append(None)
            elif op == 0x81:  # NEWOBJ
                args = stack.pop()
                cls = stack.pop()
                if type(cls) is tuple or args is not None:
                    _newobj(mine, cls, args)
                stack.append(None)
            elif op == 0x62:  # BUILD
                stack.pop()
                if type(stack[-1]) is tuple:
                    _build(mine, stack[-1])
            elif op == 0x29 or op == 0x85 or op == 0x86 or op == 0x87:  # EMPTY_TUPLE, TUPLE1, TUPLE2, TUPLE3
                n = 0 if op == 0x29 else op - 0x84
                if n > len(stack):
                    raise _NotPlain
                items = stack[len(stack) - n:] if n else []
                if n:
                    del stack[len(stack) - n:]
                stack.append(_tuple(items))
            elif op == 0x74:  # TUPLE
                at = len(stack) - 1
                while stack[at] is not _MARK:
                    at -= 1
                items = stack[at + 1:]
                del stack[at:]
                stack.append(_tuple(items))
            elif op in _UNTIL_MARK or op in _UNTIL_MARK_INTO:
                while stack.pop() is not _MARK:
                    pass
                if op in _UNTIL_MARK_INTO:
                    stack.pop()
                stack.append(None)
            elif op == 0x51:  # BINPERSID
                stack.pop()
                stack.append(None)
                persistent += 1
            elif op == 0x63:  # GLOBAL "module\nname\n": plain ASCII names only
                first = data.index(b"\n", pos)
                second = data.index(b"\n", first + 1)
                module, attr = data[pos:first], data[first + 1:second]
                if not (module + attr).isascii() or b"\\" in module + attr or b" " in module + attr:
                    raise _NotPlain
                pos = second + 1
                stack.append(_global(mine, module.decode("ascii"), attr.decode("ascii"), offset))
            elif op == 0x93:  # STACK_GLOBAL
                attr = stack.pop()
                module = stack.pop()
                if type(module) is not str or type(attr) is not str:
                    raise _NotPlain
                stack.append(_global(mine, module, attr, offset))
            elif op == 0x80:  # PROTO: the protocol decides how names are mapped
                if pos >= end:
                    raise _NotPlain
                mine.proto = data[pos]
                pos += 1
            elif op == 0x2E:  # STOP
                break
            else:
                raise _NotPlain
    except Exception:  # noqa: BLE001 - malformed or unusual: the walk below decides, and says why
        return False
    mine.ops, mine.persistent_ids, mine.end = ops, persistent, pos
    _copy(mine, scan)
    return True


def _copy(source: PickleScan, target: PickleScan) -> None:
    for name in _WALKED:
        setattr(target, name, getattr(source, name))


def scan_pickle(data: bytes, entry: str, start: int = 0) -> PickleScan:
    """Walk one pickle of ``data`` from ``start`` to its ``STOP``; never raises.

    The opcodes torch writes are read in one loop (:func:`_walk_plain`); any other
    pickle, or one that is malformed, is walked with :mod:`pickletools`, which names
    the problem."""
    scan = PickleScan(entry=entry)
    if _walk_plain(data, start, scan):
        return scan
    return _walk(data, entry, start)


def _walk(data: bytes, entry: str, start: int) -> PickleScan:
    """The walk of :func:`scan_pickle` over :func:`pickletools.genops` (every opcode)."""
    import pickletools

    scan = PickleScan(entry=entry)
    stack: list[Any] = []
    memo: dict[int, Any] = {}

    def pop(n: int) -> list[Any]:
        if n > len(stack):
            raise ValueError("the stack runs dry")
        taken = stack[len(stack) - n:] if n else []
        del stack[len(stack) - n:]
        return taken

    def pop_mark() -> list[Any]:
        at = len(stack) - 1
        while at >= 0 and stack[at] is not _MARK:
            at -= 1
        if at < 0:
            raise ValueError("no mark on the stack")
        items = stack[at + 1:]
        del stack[at:]
        return items

    stream = io.BytesIO(data)
    stream.seek(start)
    try:
        for op, arg, pos in pickletools.genops(stream):
            scan.ops += 1
            if scan.ops > MAX_OPS:
                raise _Unreadable("cap", f"more than {MAX_OPS} opcodes")
            name = op.name
            offset = pos if pos is not None else 0
            value: Any = None
            if name == "PROTO":
                scan.proto = arg
            elif name == "GLOBAL":
                module, _, attr = str(arg).partition(" ")
                value = _global(scan, module, attr, offset)
            elif name == "INST":  # the class is called with the items above the mark
                module, _, attr = str(arg).partition(" ")
                called = _global(scan, module, attr, offset)
                items = pop_mark()
                _reduce(scan, called, _tuple(items))
                stack.append(None)
                continue
            elif name == "OBJ":  # the first item above the mark is called with the rest
                items = pop_mark()
                if not items:
                    raise ValueError("OBJ without a class")
                _reduce(scan, items[0], _tuple(items[1:]))
                stack.append(None)
                continue
            elif name == "REDUCE":
                fn, args = pop(2)
                _reduce(scan, fn, args)
                stack.append(None)
                continue
            elif name == "NEWOBJ":
                cls, args = pop(2)
                _newobj(scan, cls, args)
                stack.append(None)
                continue
            elif name == "NEWOBJ_EX":
                cls, args, kwargs = pop(3)
                _newobj(scan, cls, args)
                _newobj(scan, None, kwargs)
                stack.append(None)
                continue
            elif name == "BUILD":
                pop(1)
                if not stack:
                    raise ValueError("the stack runs dry")
                _build(scan, stack[-1])
                continue
            elif name == "STACK_GLOBAL":
                module, attr = pop(2)
                stack.append(_global(scan, module, attr, offset))
                continue
            elif name in ("EXT1", "EXT2", "EXT4"):
                raise _Unreadable("name", f"extension code {arg} at byte {offset} names a global through the "
                                          "loader's copyreg registry")
            elif name in ("TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "EMPTY_TUPLE"):
                items = pop_mark() if name == "TUPLE" else pop(0 if name == "EMPTY_TUPLE" else int(name[-1]))
                stack.append(_tuple(items))
                continue
            elif name in ("PERSID", "BINPERSID"):
                scan.persistent_ids += 1
            elif name in _STRING_OPS:
                value = arg if isinstance(arg, str) else None
            elif name in _GET_OPS:
                if arg not in memo:
                    raise ValueError(f"memo key {arg} read before it is written (byte {offset})")
                stack.append(memo[arg])
                continue
            elif name in _PUT_OPS:
                if not stack:
                    raise ValueError("PUT on an empty stack")
                memo[arg] = stack[-1]
                continue
            elif name == "MEMOIZE":
                if not stack:
                    raise ValueError("MEMOIZE on an empty stack")
                memo[len(memo)] = stack[-1]
                continue
            elif name == "DUP":
                if not stack:
                    raise ValueError("DUP on an empty stack")
                stack.append(stack[-1])
                continue
            elif name == "STOP":
                scan.end = stream.tell()
                return scan
            before = op.stack_before
            if any(s is pickletools.markobject for s in before):
                pop_mark()
                pop(next(i for i, s in enumerate(before) if s is pickletools.markobject))
            else:
                pop(len(before))
            for item in op.stack_after:
                stack.append(_MARK if item is pickletools.markobject else value)
    except _Unreadable as exc:
        scan.error, scan.failure = str(exc)[:160], exc.kind
        return scan
    except Exception as exc:  # noqa: BLE001 - any malformed pickle is one finding
        scan.error = f"{type(exc).__name__}: {str(exc)[:120]}" if not isinstance(exc, ValueError) else str(exc)[:160]
        scan.failure = "walk"
        return scan
    scan.error, scan.failure = "no STOP opcode (truncated)", "walk"
    return scan


def scan_stream(data: bytes, entry: str, count: int = MAX_PICKLES) -> list[PickleScan]:
    """The pickles written one after another in ``data``, as a loader reads them: up to
    ``count`` (legacy ``torch.save`` reads five: magic number, protocol, sys_info, the
    object, the storage keys), each from where the one before stopped; the walk ends at
    the end of the data or at a pickle it cannot walk (whatever its first byte: the
    loader reads it as a pickle)."""
    scans: list[PickleScan] = []
    start = 0
    while start < len(data) and len(scans) < count:
        scan = scan_pickle(data, entry if not scans else f"{entry}#{len(scans)}", start)
        scans.append(scan)
        if scan.error is not None or scan.end <= start:
            break
        start = scan.end
    return scans


# verdict -> the section of pickle-globals.toml with its code and severity
_SECTIONS = {"dangerous": "dangerous", "called": "called", "data_type": "data_types",
             "instantiated": "instantiated", "referenced": "unknown"}
# failure -> the section of the finding that says the pickle is not all known
_FAILURES = {"walk": "unreadable", "name": "unreadable_name", "cap": "walk_cap"}


def pickle_findings(path: str, scans: Iterable[PickleScan], torchscript: bool = False,
                    allowed: Iterable[str] = ()) -> Iterator[dict]:
    """The findings (plain dicts) for the scans of one input: every global that is not
    silent (:func:`verdict`), the first ``[unknown].listed`` of each kind other than CP330
    in each pickle and one CP333 that counts the rest, and the reason a walk stopped.
    ``torchscript`` and ``allowed``: as for :func:`verdict`."""
    table = load_table()
    listed = table["unknown"]["listed"]
    allowed = frozenset(allowed)
    for scan in scans:
        seen: dict[str, int] = {}
        more = 0
        first_more: Optional[str] = None  # the first global past the first `listed` of its kind
        for name in scan.globals:
            found = verdict(scan, name, torchscript, allowed)
            if found == "silent":
                continue
            if found != "dangerous":
                seen[found] = seen.get(found, 0) + 1
                if seen[found] > listed:
                    more += 1
                    first_more = first_more or name
                    continue
            row = table[_SECTIONS[found]]
            finding = diagnostic(row["code"], path, None, entry=scan.entry, global_name=name,
                                 offset=scan.offsets[name])
            finding["severity"] = row["severity"]
            yield finding
        if first_more is not None:
            row = table["unknown_more"]
            finding = diagnostic(row["code"], path, None, entry=scan.entry, count=more,
                                 offset=scan.offsets[first_more], listed=listed)
            finding["severity"] = row["severity"]
            yield finding
        if scan.error is not None:
            row = table[_FAILURES[scan.failure or "walk"]]
            finding = diagnostic(row["code"], path, None, entry=scan.entry, reason=scan.error)
            finding["severity"] = row["severity"]
            yield finding
