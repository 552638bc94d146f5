"""What a model file is, from its bytes (never from its name).

=================  ===========================================================================
kind               recognised by
=================  ===========================================================================
``torchscript``    a zip whose top folder holds ``code/``, ``.data/ts_code/``, ``model.json``
                   or ``bytecode.pkl`` (``torch.jit.save``, lite interpreter, torch.package),
                   or the pre-zip ``PYTORCH1`` container; any file name (``renamed.bin``)
``pt2``            a zip whose top folder holds ``archive_format`` or ``models/*.json`` with
                   ``data/`` (``torch.export.save``, AOTInductor packages)
``checkpoint``     a zip whose top folder holds ``data.pkl`` (any case: torch matches names
                   without it) and no code (``torch.save``), the legacy ``torch.save``
                   stream (a pickle of torch's magic number first), or a tar (the legacy
                   tar format: ``torch.load`` tries it first, whatever else the file is)
``pickle``         any other pickle: protocol 2-5 (``\\x80`` then the protocol byte), or any
                   start the unpickler accepts (protocol 0/1, ``\\x80\\x01``, any opcode first)
                   when a bounded walk of its opcodes reaches ``STOP``, or imports something
                   before it fails
``lfs_pointer``    a Git LFS pointer file (``version https://git-lfs.github.com/spec/v1``)
``other``          anything else (code text included: ``.code`` files are chosen by suffix)
=================  ===========================================================================

Only the first bytes and, for a zip, the entry names are read; the entry count is
checked against the policy's limit before the central directory is parsed (a zip over
the limit counts as ``torchscript``, so that ``check`` reports CP308 for it).
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from typing import Optional

__all__ = ["is_pickle", "FileKind", "recognize", "recognize_bytes", "MODEL_SUFFIXES", "LFS_MAGIC", "parse_lfs_pointer", "is_tar"]

LFS_MAGIC = b"version https://git-lfs.github.com/spec/v1"
# Suffixes that name model files: in a directory walk, such a file that is no model is
# listed (kind ``other``) rather than passed over in silence.
MODEL_SUFFIXES = (".pt", ".pth", ".ptl", ".pt2", ".zip", ".jit", ".pt1", ".torchscript", ".dat", ".bin",
                  ".ckpt", ".pkl", ".pickle", ".pk", ".model", ".mar", ".tar")
# torch.save's legacy (non-zip) stream starts with a pickle of this number (torch/serialization.py).
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LFS_LINE = re.compile(rb"^(oid sha256:(?P<oid>[0-9a-f]{64})|size (?P<size>\d+))$", re.M)


@dataclass(frozen=True)
class FileKind:
    """The kind of a file and what was learned on the way (``root``: the zip's top folder)."""

    kind: str
    root: Optional[str] = None
    detail: str = ""
    # recognize(..., keep=True) of a TorchScript zip: its open ``(file, zipfile.ZipFile)``,
    # for the caller to read on (codeparse.archive.torchscript) and close.
    opened: Optional[tuple] = field(default=None, compare=False, repr=False)


def parse_lfs_pointer(data: bytes) -> tuple[str, str]:
    """``(oid, size)`` of a Git LFS pointer (``?`` for a field that is missing)."""
    oid = size = "?"
    for match in _LFS_LINE.finditer(data[:1024]):
        if match.group("oid"):
            oid = "sha256:" + match.group("oid").decode("ascii")
        elif match.group("size"):
            size = match.group("size").decode("ascii")
    return oid, size


def _legacy_checkpoint(head: bytes) -> bool:
    # PROTO 2, then LONG1 of the 10-byte magic number: torch.save(_use_new_zipfile_serialization=False)
    magic = _LEGACY_MAGIC.to_bytes(10, "little")
    return head[2:4] == b"\x8a\x0a" and head[4:14] == magic


def is_tar(head: bytes) -> bool:
    """Whether ``tarfile`` (which ``torch.load`` tries first) reads a member header at the
    start: :meth:`tarfile.TarInfo.frombuf` itself decides (a checksum in octal text or
    base-256, ``0x80`` then big-endian bytes; every numeric field readable).  A first block
    of zeros opens an empty tar, from which torch finds no member: no tar here."""
    import tarfile

    block = head[:512]
    if len(block) < 512 or not block.strip(b"\0"):
        return False
    try:
        tarfile.TarInfo.frombuf(block, tarfile.ENCODING, "surrogateescape")
    except (tarfile.HeaderError, ValueError, OverflowError):
        return False
    return True


def _zip_kind(handle: io.BufferedIOBase, max_entries: int, keep: bool = False) -> FileKind:
    import struct
    import zipfile

    from .zipread import _entry_count

    try:
        if _entry_count(handle, max_entries) > max_entries:  # the central directory walked, not trusted
            return FileKind("torchscript", detail="too many entries to list")
        handle.seek(0)
        zf = zipfile.ZipFile(handle)
        names = zf.namelist()
    except (ValueError, OSError, EOFError, struct.error, zipfile.BadZipFile, zipfile.LargeZipFile,
            NotImplementedError, UnicodeDecodeError):
        return FileKind("torchscript", detail="damaged zip")  # check reports why (CP305)
    roots = {n.split("/", 1)[0] for n in names if "/" in n}
    root = next(iter(roots)) if len(roots) == 1 else None
    inner = {n.split("/", 1)[1] for n in names if "/" in n and (root is None or n.startswith(root + "/"))}
    lowered = {n.lower() for n in inner}
    if any(n.startswith(("code/", ".data/ts_code/")) for n in inner) or inner & {"model.json", "bytecode.pkl"}:
        if keep:
            return FileKind("torchscript", root, opened=(handle, zf))
        zf.close()
        return FileKind("torchscript", root)
    zf.close()
    if "archive_format" in inner or any(n.startswith("models/") and n.endswith(".json") for n in inner):
        return FileKind("pt2", root)
    if "data.pkl" in lowered:  # torch's reader finds `DATA.PKL` for data.pkl
        return FileKind("checkpoint", root, "zip")
    return FileKind("other", root, "zip")


def recognize_bytes(data: bytes, max_entries: int = 50_000) -> FileKind:
    """The kind of a file held in memory (standard input)."""
    return _recognize(data[:_HEAD + 1], lambda: io.BytesIO(data), max_entries)


def recognize(path: str | os.PathLike, max_entries: int = 50_000, keep: bool = False) -> FileKind:
    """The kind of the file at ``path``; OSError when it cannot be opened.

    ``keep``: a TorchScript zip stays open, read once (``opened``: the caller closes it)."""
    handle = open(path, "rb")
    try:
        head = handle.read(_HEAD + 1)  # one byte more: whether the file goes on past the head
        handle.seek(0)
        found = _recognize(head, lambda: handle, max_entries, keep)
    except BaseException:
        handle.close()
        raise
    if found.opened is None:
        handle.close()
    return found


_HEAD = 1 << 12  # bytes read to recognise a file (a tar header, the start of a protocol 0 pickle)


def _recognize(head: bytes, opener, max_entries: int, keep: bool = False) -> FileKind:
    """The kind a loader would read the file as, in the order torch.load tries them: a zip
    (by its first bytes), a tar, then the legacy stream or a pickle; an LFS pointer only
    when it is none of these."""
    from .zipread import PYTORCH1_MAGIC, ZIP_MAGIC

    if head[:4] in ZIP_MAGIC:
        return _zip_kind(opener(), max_entries, keep)
    if is_tar(head):
        return FileKind("checkpoint", detail="legacy tar")
    if head.startswith(PYTORCH1_MAGIC):
        return FileKind("torchscript", detail="PYTORCH1")
    if _legacy_checkpoint(head):
        return FileKind("checkpoint", detail="legacy")
    if head.startswith(LFS_MAGIC):
        return FileKind("lfs_pointer")
    if is_pickle(head):
        return FileKind("pickle")
    return FileKind("other")


def looks_like_pickle(head: bytes) -> bool:
    """A protocol 2-5 pickle starts with ``PROTO``; protocol 0/1 ones are recognised by a walk
    (:func:`is_pickle`)."""
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


# Opcodes that import or call (and so may run) something as soon as the unpickler reads
# them with the stack they need.
_IMPORTS = frozenset(("GLOBAL", "INST", "STACK_GLOBAL", "EXT1", "EXT2", "EXT4"))
_CALLS = frozenset(("REDUCE", "NEWOBJ", "NEWOBJ_EX", "OBJ", "BUILD"))
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def is_pickle(data: bytes, more: bool = False) -> bool:
    """Whether a loader would read ``data`` as a pickle and may run something from it: a
    protocol 2-5 header, or a walk of its first :data:`_HEAD` bytes from byte 0, opcode by
    opcode (:func:`pickletools.genops`, which builds nothing) with the stack and marks
    counted as the C unpickler keeps them, that reaches ``STOP``, or that meets an opcode
    importing something before the walk fails or the data ends, or that is cut by the
    bound (the file goes on).  Protocol 0 and 1 pickles need no header, and any opcode may
    come first (``N0``, ``C\\x00`` then ``POP``, ``\\x80\\x01``).  ``more``: the file goes
    on past ``data`` (as when ``data`` itself goes on past the bound)."""
    if looks_like_pickle(data[:2]):
        return True
    return _walk_start(data[:_HEAD], bool(more) or len(data) > _HEAD)


def _walk_start(data: bytes, cut: bool) -> bool:
    import pickle
    import pickletools

    mark = pickletools.markobject
    stack: list = []
    memo: set = set()
    ran = False
    try:
        for op, arg, _pos in pickletools.genops(data):
            name = op.name
            if name == "PROTO" and arg > pickle.HIGHEST_PROTOCOL:
                return ran
            before = op.stack_before
            if mark in before or (name == "POP" and stack and stack[-1] is mark):
                if mark not in stack:
                    return ran  # no MARK: the unpickler fails here
                at = len(stack) - 1 - stack[::-1].index(mark)
                above, below = len(stack) - at - 1, at
                if mark in before:
                    index = before.index(mark)
                    if below < index or above < len(before) - index - 2:
                        return ran
                    del stack[at - index:]
                else:
                    stack.pop()
            else:
                if len(stack) < len(before) or mark in stack[len(stack) - len(before):]:
                    return ran  # a stack underflow, or an operand that is a mark
                if before:
                    del stack[len(stack) - len(before):]
            if name in _IMPORTS:
                if name in ("GLOBAL", "INST"):
                    module, _, attr = str(arg).partition(" ")
                    ran = ran or bool(_IDENTIFIER.fullmatch(module) and _IDENTIFIER.fullmatch(attr))
                else:
                    ran = True
            elif name in _CALLS:
                ran = True
            if name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo.add(arg)
            elif name == "MEMOIZE":
                memo.add(len(memo))
            elif name in ("GET", "BINGET", "LONG_BINGET") and arg not in memo:
                return ran
            if name == "STOP":
                return True
            stack.extend(op.stack_after)
    except ValueError as exc:  # an unknown opcode, a bad argument or the end of the data
        ended = any(w in str(exc) for w in ("exhausted", "but only", "not enough data", "no newline found"))
        return ran or (ended and cut)
    except Exception:  # noqa: BLE001 - anything else genops raises: the unpickler fails there too
        return ran
    return ran or cut
