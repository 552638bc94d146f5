"""Pickle safety without unpickling: walk a pickle's opcodes, list the globals it names.

A pickle runs code when it is loaded: ``GLOBAL`` / ``STACK_GLOBAL`` / ``INST`` name a
callable (``os.system``), ``REDUCE`` / ``OBJ`` / ``NEWOBJ`` / ``BUILD`` call it.  This
module never loads one.  It reads the opcodes with :func:`pickletools.genops` (a parser
of the byte format that builds nothing) and keeps a symbolic stack: strings pushed and
memoized (``PUT``, ``BINPUT``, ``MEMOIZE``) are tracked, so a ``STACK_GLOBAL`` whose
module and name come from the memo (``BINGET``) is resolved like one whose strings were
just pushed.  A ``STACK_GLOBAL`` whose operands are not known strings, a stack that runs
dry, an unknown opcode or a truncated pickle make the pickle *unreadable* (CP332): its
globals cannot all be listed, so it is not called safe.  ``EXT1``/``EXT2``/``EXT4`` name
a global through the copyreg extension registry of whoever loads it, which codeparse
cannot see: they count as unknown globals.

What each global means is data: ``grammars/pickle-globals.toml`` lists the dangerous
ones (CP330, error), the ones torch writes (allowed, silent); anything else is unknown
(CP331, warning; past the table's ``listed`` per pickle, one CP333 counts the rest).
Nothing is imported or executed.
"""

from __future__ import annotations

import fnmatch
import functools
import io
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional

from ..contract.codes import diagnostic
from ..files.filekind import looks_like_pickle

__all__ = ["PickleScan", "scan_pickle", "scan_stream", "classify", "pickle_findings", "load_table", "MAX_OPS"]

MAX_OPS = 5_000_000  # opcodes walked per pickle before it is called unreadable
MAX_PICKLES = 16  # consecutive pickles walked in one stream (legacy torch.save writes 5)
_RENAMED = {"__builtin__": "builtins", "copy_reg": "copyreg", "exceptions": "builtins"}
_STRING_OPS = {"STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE",
               "BINUNICODE8"}
_GET_OPS = {"GET", "BINGET", "LONG_BINGET"}
_PUT_OPS = {"PUT", "BINPUT", "LONG_BINPUT"}


class _Mark:
    __slots__ = ()


_MARK = _Mark()


@dataclass
class PickleScan:
    """The globals one pickle names, in order of first appearance, and how the walk ended."""

    entry: str
    globals: list[str] = field(default_factory=list)
    offsets: dict[str, int] = field(default_factory=dict)  # global -> byte offset of first use
    ops: int = 0
    persistent_ids: int = 0
    error: Optional[str] = None
    end: int = 0  # offset after STOP

    def add(self, name: str, offset: int) -> None:
        if name not in self.offsets:
            self.offsets[name] = offset
            self.globals.append(name)


@functools.cache
def load_table() -> dict[str, Any]:
    """``grammars/pickle-globals.toml``, read once."""
    from ..grammar.engine import GrammarError
    from ..grammar.locations import grammar_dir

    path = grammar_dir() / "pickle-globals.toml"
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise GrammarError(f"{path}: cannot load: {exc}") from None


def _normal(module: str, name: str) -> str:
    top, dot, rest = module.partition(".")
    module = _RENAMED.get(top, top) + dot + rest
    return f"{module}.{name}"


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


@functools.lru_cache(maxsize=4096)
def classify(global_name: str) -> str:
    """``dangerous``, ``allowed`` or ``unknown`` for a ``module.name`` (the data table decides)."""
    if _globs("dangerous").match(global_name):
        return "dangerous"
    if _globs("allowed").match(global_name):
        return "allowed"
    return "unknown"


# The opcodes :func:`_walk_plain` reads: code -> (argument bytes, values popped, what it
# pushes: 0 nothing, 1 a value (None), 2 a mark), for those with a fixed-size argument and
# a fixed stack effect.  Every other opcode is read by the walk below.
_PLAIN_OPS: dict[int, tuple[int, int, int]] = {
    0x4B: (1, 0, 1), 0x4D: (2, 0, 1), 0x4A: (4, 0, 1),  # BININT1, BININT2, BININT
    0x29: (0, 0, 1), 0x5D: (0, 0, 1), 0x7D: (0, 0, 1),  # EMPTY_TUPLE, EMPTY_LIST, EMPTY_DICT
    0x4E: (0, 0, 1), 0x88: (0, 0, 1), 0x89: (0, 0, 1),  # NONE, NEWTRUE, NEWFALSE
    0x47: (8, 0, 1),  # BINFLOAT
    0x85: (0, 1, 1), 0x86: (0, 2, 1), 0x87: (0, 3, 1),  # TUPLE1, TUPLE2, TUPLE3
    0x52: (0, 2, 1), 0x81: (0, 2, 1), 0x62: (0, 2, 1),  # REDUCE, NEWOBJ, BUILD
    0x73: (0, 3, 1), 0x61: (0, 2, 1),  # SETITEM, APPEND
    0x28: (0, 0, 2),  # MARK
    0x80: (1, 0, 0), 0x95: (8, 0, 0),  # PROTO, FRAME
}
_UNTIL_MARK = frozenset((0x74, 0x6C, 0x64))  # TUPLE, LIST, DICT: the items above the mark -> one value
_UNTIL_MARK_INTO = frozenset((0x75, 0x65))  # SETITEMS, APPENDS: the items above the mark into the value below


class _NotPlain(Exception):
    pass


def _walk_plain(data: bytes, start: int, scan: PickleScan) -> bool:
    """:func:`scan_pickle`'s walk in one loop over ``data``, for the opcodes torch writes:
    fills ``scan`` as the pickletools walk does and returns True, or returns False (and
    leaves ``scan`` alone) at anything else (another opcode, malformed or truncated data,
    a stack or memo error), where that walk decides (and says why)."""
    stack: list[Any] = []
    memo: dict[int, Any] = {}
    found: dict[str, int] = {}
    plain = _PLAIN_OPS
    end = len(data)
    pos = start
    ops = 0
    persistent = 0
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
                scan.ops, scan.persistent_ids = ops, persistent
                for name, at in found.items():
                    scan.add(name, at)
                scan.error = f"more than {MAX_OPS} opcodes"
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
                value = ("global", _normal(module.decode("ascii"), attr.decode("ascii")))
                found.setdefault(value[1], offset)
                stack.append(value)
            elif op == 0x93:  # STACK_GLOBAL
                attr = stack.pop()
                module = stack.pop()
                if type(module) is not str or type(attr) is not str:
                    raise _NotPlain
                value = ("global", _normal(module, attr))
                found.setdefault(value[1], offset)
                stack.append(value)
            elif op == 0x2E:  # STOP
                break
            else:
                raise _NotPlain
    except Exception:  # noqa: BLE001 - malformed or unusual: the walk below decides, and says why
        return False
    scan.ops, scan.persistent_ids, scan.end = ops, persistent, pos
    for name, at in found.items():
        scan.add(name, at)
    return True


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

    def pop_mark() -> None:
        while stack:
            if stack.pop() is _MARK:
                return
        raise ValueError("no mark on the stack")

    stream = io.BytesIO(data)
    stream.seek(start)
    try:
        for op, arg, pos in pickletools.genops(stream):
            scan.ops += 1
            if scan.ops > MAX_OPS:
                raise ValueError(f"more than {MAX_OPS} opcodes")
            name = op.name
            offset = pos if pos is not None else 0
            value: Any = None
            if name == "GLOBAL" or name == "INST":
                module, _, attr = str(arg).partition(" ")
                value = ("global", _normal(module, attr))
                scan.add(value[1], offset)
            elif name == "STACK_GLOBAL":
                module, attr = pop(2)
                if not (isinstance(module, str) and isinstance(attr, str)):
                    raise ValueError(f"STACK_GLOBAL at byte {offset} takes operands that are not known strings")
                value = ("global", _normal(module, attr))
                scan.add(value[1], offset)
                stack.append(value)
                continue
            elif name in ("EXT1", "EXT2", "EXT4"):
                value = ("global", f"<copyreg extension {arg}>")
                scan.add(value[1], offset)
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
    except Exception as exc:  # noqa: BLE001 - any malformed pickle is one finding
        scan.error = f"{type(exc).__name__}: {str(exc)[:120]}" if not isinstance(exc, ValueError) else str(exc)[:160]
        return scan
    scan.error = "no STOP opcode (truncated)"
    return scan


def scan_stream(data: bytes, entry: str) -> list[PickleScan]:
    """Every pickle written one after another in ``data`` (as legacy ``torch.save`` does),
    up to :data:`MAX_PICKLES`; the walk ends at bytes that do not start a pickle."""
    scans: list[PickleScan] = []
    start = 0
    while start < len(data) and len(scans) < MAX_PICKLES:
        if scans and not (looks_like_pickle(data[start:start + 2]) or data[start:start + 1] in (b"(", b"]", b"}", b"c")):
            break
        scan = scan_pickle(data, entry if not scans else f"{entry}#{len(scans)}", start)
        scans.append(scan)
        if scan.error is not None or scan.end <= start:
            break
        start = scan.end
    return scans


def pickle_findings(path: str, scans: Iterable[PickleScan]) -> Iterator[dict]:
    """CP330 / CP331 / CP332 / CP333 diagnostics (plain dicts) for the scans of one input:
    every dangerous global, the first ``[unknown].listed`` unknown ones of each pickle, one
    CP333 that counts the rest."""
    table = load_table()
    listed = table["unknown"]["listed"]
    for scan in scans:
        unknown = 0
        first_more: Optional[str] = None  # the first unknown global past the first `listed`
        for name in scan.globals:
            verdict = classify(name) if not name.startswith("<") else "unknown"
            if verdict == "allowed":
                continue
            if verdict == "unknown":
                unknown += 1
                if unknown > listed:
                    first_more = first_more or name
                    continue
            row = table[verdict]
            finding = diagnostic(row["code"], path, None, entry=scan.entry, global_name=name,
                                 offset=scan.offsets[name])
            finding["severity"] = row["severity"]
            yield finding
        if first_more is not None:
            row = table["unknown_more"]
            finding = diagnostic(row["code"], path, None, entry=scan.entry, count=unknown - listed,
                                 offset=scan.offsets[first_more], listed=listed)
            finding["severity"] = row["severity"]
            yield finding
        if scan.error is not None:
            finding = diagnostic(table["unreadable"]["code"], path, None, entry=scan.entry, reason=scan.error)
            finding["severity"] = table["unreadable"]["severity"]
            yield finding
