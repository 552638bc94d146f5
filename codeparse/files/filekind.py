"""What a model file is, from its bytes (never from its name).

=================  ===========================================================================
kind               recognised by
=================  ===========================================================================
``torchscript``    a zip whose top folder holds ``code/``, ``.data/ts_code/``, ``model.json``
                   or ``bytecode.pkl`` (``torch.jit.save``, lite interpreter, torch.package),
                   or the pre-zip ``PYTORCH1`` container; any file name (``renamed.bin``)
``pt2``            a zip whose top folder holds ``archive_format`` or ``models/*.json`` with
                   ``data/`` (``torch.export.save``, AOTInductor packages)
``checkpoint``     a zip whose top folder holds ``data.pkl`` and no code (``torch.save``), or
                   the legacy ``torch.save`` stream (a pickle of torch's magic number first)
``pickle``         any other protocol 2-5 pickle (``\\x80`` then the protocol byte)
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

__all__ = ["FileKind", "recognize", "recognize_bytes", "MODEL_SUFFIXES", "LFS_MAGIC", "parse_lfs_pointer"]

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
    if any(n.startswith(("code/", ".data/ts_code/")) for n in inner) or inner & {"model.json", "bytecode.pkl"}:
        if keep:
            return FileKind("torchscript", root, opened=(handle, zf))
        zf.close()
        return FileKind("torchscript", root)
    zf.close()
    if "archive_format" in inner or any(n.startswith("models/") and n.endswith(".json") for n in inner):
        return FileKind("pt2", root)
    if "data.pkl" in inner:
        return FileKind("checkpoint", root, "zip")
    return FileKind("other", root, "zip")


def recognize_bytes(data: bytes, max_entries: int = 50_000) -> FileKind:
    """The kind of a file held in memory (standard input)."""
    return _recognize(data[:16], lambda: io.BytesIO(data), max_entries)


def recognize(path: str | os.PathLike, max_entries: int = 50_000, keep: bool = False) -> FileKind:
    """The kind of the file at ``path``; OSError when it cannot be opened.

    ``keep``: a TorchScript zip stays open, read once (``opened``: the caller closes it)."""
    handle = open(path, "rb")
    try:
        head = handle.read(64)
        handle.seek(0)
        found = _recognize(head, lambda: handle, max_entries, keep)
    except BaseException:
        handle.close()
        raise
    if found.opened is None:
        handle.close()
    return found


def _recognize(head: bytes, opener, max_entries: int, keep: bool = False) -> FileKind:
    from .zipread import PYTORCH1_MAGIC, ZIP_MAGIC
    from .filekind import looks_like_pickle

    if head[:4] in ZIP_MAGIC:
        return _zip_kind(opener(), max_entries, keep)
    if head.startswith(PYTORCH1_MAGIC):
        return FileKind("torchscript", detail="PYTORCH1")
    if head.startswith(LFS_MAGIC):
        return FileKind("lfs_pointer")
    if looks_like_pickle(head):
        if _legacy_checkpoint(head):
            return FileKind("checkpoint", detail="legacy")
        return FileKind("pickle")
    return FileKind("other")


def looks_like_pickle(head: bytes) -> bool:
    """A protocol 2-5 pickle starts with ``PROTO``; protocol 0/1 ones are not guessed."""
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5
