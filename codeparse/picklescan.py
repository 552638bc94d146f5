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
(CP331, warning).  Nothing is imported or executed.
"""

from __future__ import annotations

import fnmatch
import functools
import io
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional

from .codes import diagnostic

__all__ = ["PickleScan", "scan_pickle", "scan_stream", "classify", "pickle_findings", "load_table",
           "looks_like_pickle", "MAX_OPS"]

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
    from .grammar import GrammarError, grammar_dir

    path = grammar_dir() / "pickle-globals.toml"
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise GrammarError(f"{path}: cannot load: {exc}") from None


def _normal(module: str, name: str) -> str:
    top, dot, rest = module.partition(".")
    module = _RENAMED.get(top, top) + dot + rest
    return f"{module}.{name}"


@functools.cache
def _globs(verdict: str) -> Any:
    """The table's globs of one class as one compiled pattern: one match per global, not
    one per glob (a pickle naming 100,000 distinct globals is classified in linear time)."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in load_table()[verdict]["globals"]))


@functools.lru_cache(maxsize=4096)
def classify(global_name: str) -> str:
    """``dangerous``, ``allowed`` or ``unknown`` for a ``module.name`` (the data table decides)."""
    if _globs("dangerous").match(global_name):
        return "dangerous"
    if _globs("allowed").match(global_name):
        return "allowed"
    return "unknown"


def looks_like_pickle(head: bytes) -> bool:
    """A protocol 2-5 pickle starts with ``PROTO``; protocol 0/1 ones are not guessed."""
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def scan_pickle(data: bytes, entry: str, start: int = 0) -> PickleScan:
    """Walk one pickle of ``data`` from ``start`` to its ``STOP``; never raises."""
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
    """CP330 / CP331 / CP332 diagnostics (plain dicts) for the scans of one input."""
    table = load_table()
    for scan in scans:
        for name in scan.globals:
            verdict = classify(name) if not name.startswith("<") else "unknown"
            if verdict == "allowed":
                continue
            row = table[verdict]
            finding = diagnostic(row["code"], path, None, entry=scan.entry, global_name=name,
                                 offset=scan.offsets[name])
            finding["severity"] = row["severity"]
            yield finding
        if scan.error is not None:
            finding = diagnostic(table["unreadable"]["code"], path, None, entry=scan.entry, reason=scan.error)
            finding["severity"] = table["unreadable"]["severity"]
            yield finding
