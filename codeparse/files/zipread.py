"""A bounded zip reader: the central directory checked before any entry is read (entry count,
sizes, compression ratio, overlapping entries), and the magic numbers that tell a zip or a
legacy archive.  Knows nothing of TorchScript."""

from __future__ import annotations

import io
import os
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ..contract.codes import diagnostic

if TYPE_CHECKING:  # the models import pydantic: `is_archive_path` (every `parse` input) does without
    from ..contract.check import Policy
if TYPE_CHECKING:  # zipfile, zlib and pickletools are imported where used: `parse` starts faster
    import zipfile

__all__ = ["ARCHIVE_SUFFIXES", "ZipReader", "EntryRefused", "sniff"]


ARCHIVE_SUFFIXES = (".pt", ".pth", ".ptl", ".zip", ".jit", ".pt1", ".torchscript", ".dat")

ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")

PYTORCH1_MAGIC = b"PYTORCH1"

RATIO_FLOOR = 1 << 20  # bytes inflated in all before the archive's overall ratio is held to the limit

RATIO_SMALL = 4 << 10  # entries up to this size are held only to the overall ratio

_LOCAL_HEADER = 30  # bytes of a local file header before its name

_CHUNK = 1 << 16

_EOCD = b"PK\x05\x06"

_EOCD64_LOCATOR = b"PK\x06\x07"


class EntryRefused(Exception):
    """An entry was not read; ``finding`` says why (a dict from :func:`diagnostic`)."""

    def __init__(self, finding: dict):
        super().__init__(finding["message"])
        self.finding = finding


def sniff(path: str | os.PathLike) -> str:
    """``zip``, ``pytorch1`` or ``other`` from the first bytes of a file."""
    with open(path, "rb") as handle:
        head = handle.read(8)
    if head.startswith(PYTORCH1_MAGIC):
        return "pytorch1"
    if head[:4] in ZIP_MAGIC:
        return "zip"
    return "other"


def _entry_count(handle: io.BufferedReader, limit: Optional[int] = None) -> int:
    """Entries the end-of-archive record announces (ZIP64 aware); ValueError if absent.

    With ``limit``, the central directory is also walked (up to ``limit + 1`` records)
    and the larger count returned, so that an end record that lies cannot pass."""
    count, start, size = _end_record(handle)
    if limit is not None and count <= limit:
        count = max(count, _walked_count(handle, start, size, limit))
    return count


def _tail(handle: io.BufferedReader) -> tuple[int, int, bytes, int]:
    """``(file size, tail size, the tail, where the last end record starts in it)``: the last
    64 KiB and 22 bytes hold the end-of-archive record and its comment; ``at`` is -1 when no
    whole end record is there."""
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    tail_size = min(size, 22 + 0xFFFF)
    handle.seek(size - tail_size)
    tail = handle.read(tail_size)
    at = tail.rfind(_EOCD)
    if len(tail) - at < 22:
        at = -1
    return size, tail_size, tail, at


def _end_record(handle: io.BufferedReader) -> tuple[int, int, int]:
    """``(announced entries, central directory start, its size)``, located as ``zipfile``
    locates it (from the end record's position, so that data prepended to the zip moves
    it); ValueError if there is no end record."""
    size, tail_size, tail, at = _tail(handle)
    if at < 0:
        raise ValueError("no end-of-archive record (truncated?)")
    _sig, _disk, _cd_disk, _here, total, cd_size, _cd_off, _comment = struct.unpack("<4sHHHHIIH", tail[at:at + 22])
    location = size - tail_size + at
    if at >= 20 and tail[at - 20:at - 16] == _EOCD64_LOCATOR:
        _sig, _disk, offset, _disks = struct.unpack("<4sIQI", tail[at - 20:at])
        if offset + 56 > size:
            raise ValueError("the ZIP64 end-of-archive record points past the end (truncated?)")
        handle.seek(offset)
        record = handle.read(56)
        if record[:4] != b"PK\x06\x06":
            raise ValueError("no ZIP64 end-of-archive record")
        total, cd_size = struct.unpack("<QQ", record[32:48])
        location -= 56 + 20
    return total, location - cd_size, cd_size


_CENTRAL = b"PK\x01\x02"


def _ambiguity(handle: io.BufferedReader) -> Optional[str]:
    """Why readers may see different entries in the zip, or None.  ``zipfile`` (and this
    reader) takes the central directory that ends where the end record starts; torch's
    reader (miniz, ``caffe2/serialize/inline_container.cc``) takes the one at the offset
    the end record stores: they must be the same.  And the bytes after the central
    directory hold one end record (with its ZIP64 records), not another one in the comment."""
    size, tail_size, tail, at = _tail(handle)
    if at < 0:
        return None  # no end record: the caller says the zip is damaged
    cd_size, cd_offset = struct.unpack("<II", tail[at + 12:at + 20])
    location = size - tail_size + at
    if at >= 20 and tail[at - 20:at - 16] == _EOCD64_LOCATOR:
        _sig, _disk, offset, _disks = struct.unpack("<4sIQI", tail[at - 20:at])
        handle.seek(offset)
        record = handle.read(56)
        if record[:4] != b"PK\x06\x06":
            return None
        cd_size, cd_offset = struct.unpack("<QQ", record[40:56])
        location = offset
    if cd_offset + cd_size != location:
        return (f"the end record says the central directory starts at byte {cd_offset}, but the one that ends "
                f"where it starts begins at byte {location - cd_size}")
    if tail[max(0, location - (size - tail_size)):].count(_EOCD) > 1:
        return "more than one end-of-archive record follows the central directory"
    return None


def _walked_count(handle: io.BufferedReader, start: int, size: int, limit: int) -> int:
    """Central directory records in ``[start, start + size)``, counted one by one as
    ``zipfile`` will parse them, stopping after ``limit + 1``: the count that holds,
    whatever the end record says."""
    if start < 0:
        return 0
    handle.seek(start)
    count = 0
    walked = 0
    while walked < size and count <= limit:
        head = handle.read(46)
        if len(head) < 46 or head[:4] != _CENTRAL:
            break  # zipfile reports the damage (CP305)
        name, extra, comment = struct.unpack("<HHH", head[28:34])
        skip = name + extra + comment
        handle.seek(skip, os.SEEK_CUR)
        walked += 46 + skip
        count += 1
    return count


def _unsafe(name: str) -> Optional[str]:
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "is an absolute path"
    if ".." in name.replace("\\", "/").split("/"):
        return "contains '..'"
    return None


class ZipReader:
    """Bounded, read-only access to the entries of one zip.

    ``names`` lists the safe entry names in stored order (first occurrence of a
    duplicate); ``read`` inflates one of them within the limits or raises
    :class:`EntryRefused`.  Findings about names are collected in ``findings``.
    """

    def __init__(self, path: str, zf: zipfile.ZipFile, policy: Policy):
        self.path = path
        self.policy = policy
        self._zf = zf
        self.findings: list[dict] = []
        self.total = 0
        self._infos: dict[str, zipfile.ZipInfo] = {}
        counts: dict[str, int] = {}
        for info in zf.infolist():
            counts[info.filename] = counts.get(info.filename, 0) + 1
            if info.filename in self._infos:
                continue
            reason = _unsafe(info.filename)
            if reason:
                self.findings.append(diagnostic("CP312", path, None, entry=info.filename, reason=reason))
                continue
            self._infos[info.filename] = info
        folded: dict[str, str] = {}
        for name, count in counts.items():
            if count > 1:
                self.findings.append(diagnostic("CP320", path, None, entry=name, count=count))
            other = folded.setdefault(name.lower(), name)
            if other != name:  # torch's reader finds either for the other's name
                self.findings.append(diagnostic("CP346", path, None, entry=other, other=name))
        self._first = zf.infolist()[0].filename if zf.infolist() else ""
        for name, other in _overlaps(zf):
            for refused in (name, other):
                self._infos.pop(refused, None)
            self.findings.append(diagnostic("CP341", path, None, entry=name, other=other))
        self.stored = 0  # stored bytes of the entries read, for the overall ratio
        self.names: list[str] = list(self._infos)
        tops = {n.split("/", 1)[0] for n in self.names if "/" in n}
        self.root: Optional[str] = tops.pop() if len(tops) == 1 else None

    def __contains__(self, name: str) -> bool:
        return name in self._infos

    def first_name(self) -> str:
        """The first entry of the central directory: torch's reader names the archive after its folder."""
        return self._first

    def display(self, name: str) -> str:
        """``archive!entry``, the path of an entry in findings and CodeFiles."""
        return f"{self.path}!{name}"

    def size(self, name: str) -> int:
        return self._infos[name].file_size

    def head(self, name: str, size: int) -> Optional[bytes]:
        """The first ``size`` inflated bytes of an entry (no limits needed), or None if unreadable."""
        import zipfile
        import zlib

        info = self._infos[name]
        found = self._stored_head(info, size)
        if found is not None:
            return found
        try:
            with self._zf.open(info) as stream:
                return stream.read(size)
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, RuntimeError, NotImplementedError,
                ValueError, struct.error):
            return None

    def _stored_head(self, info: Any, size: int) -> Optional[bytes]:
        """:meth:`head` of a stored (uncompressed, unencrypted) entry read straight from the
        file: the bytes ``zipfile`` gives, with its checks (the local header's signature and
        name, the CRC when the read reaches the end of the entry), without building a
        stream per entry (a TorchScript archive stores every entry, and each one is looked
        at for a nested zip).  None where ``zipfile`` decides (anything else, any doubt)."""
        import zipfile
        import zlib

        fp = self._zf.fp
        if (info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x61 or fp is None or size <= 0
                or info.file_size != info.compress_size):
            return None
        try:
            fp.seek(info.header_offset)
            header = fp.read(_LOCAL_HEADER)
            if len(header) != _LOCAL_HEADER or header[:4] != b"PK\x03\x04":
                return None
            flags, name_size, extra_size = struct.unpack("<H", header[6:8])[0], *struct.unpack("<HH", header[26:30])
            name = fp.read(name_size)
            encoding = "utf-8" if flags & 0x800 else (getattr(self._zf, "metadata_encoding", None) or "cp437")
            if len(name) != name_size or name.decode(encoding) != info.orig_filename:
                return None
            fp.seek(extra_size, os.SEEK_CUR)
            want = min(max(size, zipfile.ZipExtFile.MIN_READ_SIZE), info.compress_size)
            data = fp.read(want)
        except (OSError, ValueError, UnicodeDecodeError, struct.error):
            return None
        if len(data) != want:
            return None  # truncated: zipfile says how
        if want == info.compress_size and zlib.crc32(data) != info.CRC:
            return None  # the whole entry was read: zipfile checks its CRC
        if len(data) < size and want < info.compress_size:
            return None
        return data[:size]

    def read(self, name: str, limit: Optional[int] = None) -> bytes:
        """The inflated bytes of entry ``name``, within the limits."""
        import zipfile
        import zlib

        policy = self.policy
        info = self._infos[name]
        size = info.file_size
        cap = policy.max_entry_bytes if limit is None else min(limit, policy.max_entry_bytes)
        if size > cap:
            raise EntryRefused(diagnostic("CP309", self.path, None, entry=name, size=size, limit=cap))
        stored = max(info.compress_size, 1)
        inflated, stored_all = self.total + size, self.stored + stored
        if ((size > RATIO_SMALL and size > policy.max_ratio * stored)
                or (inflated > RATIO_FLOOR and inflated > policy.max_ratio * stored_all)):
            ratio = max(size // stored, inflated // stored_all)
            raise EntryRefused(diagnostic("CP311", self.path, None, entry=name, ratio=ratio, limit=policy.max_ratio))
        if self.total + size > policy.max_total_bytes:
            raise EntryRefused(diagnostic("CP310", self.path, None, entry=name, size=self.total + size,
                                          limit=policy.max_total_bytes))
        chunks: list[bytes] = []
        got = 0
        try:
            with self._zf.open(info) as stream:
                while True:
                    chunk = stream.read(_CHUNK)
                    if not chunk:
                        break
                    got += len(chunk)
                    if got > size:  # cannot happen with zipfile, which stops at the declared size
                        raise EntryRefused(diagnostic("CP309", self.path, None, entry=name, size=got, limit=size))
                    chunks.append(chunk)
        except EntryRefused:
            raise
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, RuntimeError, NotImplementedError,
                ValueError, struct.error) as exc:
            if "File name in directory" in str(exc):  # torch's reader goes by the central name alone
                raise EntryRefused(diagnostic("CP345", self.path, None, reason=f"entry {name}: the local "
                                              "header names another file than the central directory")) from None
            raise EntryRefused(diagnostic("CP313", self.path, None, entry=name,
                                          reason=one_line(exc))) from None
        self.total += got
        self.stored += stored
        return b"".join(chunks)


def _overlaps(zf: "zipfile.ZipFile") -> list[tuple[str, str]]:
    """Pairs of entries whose stored bytes overlap (each entry takes at least its local
    header and its compressed data), and entries that run into the central directory."""
    spans = sorted((info.header_offset, info.header_offset + _LOCAL_HEADER + info.compress_size, info.filename)
                   for info in zf.infolist())
    out: list[tuple[str, str]] = []
    reach, holder = -1, ""
    for start, end, name in spans:
        if start < reach:
            out.append((name, holder))
        if end > reach:
            reach, holder = end, name
    start_dir = getattr(zf, "start_dir", None)
    if start_dir is not None:
        out.extend((name, "the central directory") for _start, end, name in spans if end > start_dir)
    return out


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:120] if text else type(exc).__name__


def refuse(path: str, code: str, **args: object) -> Exception:
    from ..contract.errors import InputError

    finding = diagnostic(code, path, None, **args)
    error = InputError(path, finding["message"], code)
    error.finding = finding  # the coded finding, with its arguments, for `check`
    return error


def open_zip(path: str, policy: Policy, data: Optional[bytes] = None,
              opened: Optional[tuple] = None) -> tuple[ZipReader, int]:
    """Open ``path`` (or ``data``, its bytes, e.g. standard input) as a zip within the
    entry-count limit; raise InputError otherwise.  ``opened``: the ``(file, ZipFile)``
    that recognising the file within the same limit made (``FileKind.opened``), read on
    instead of opening the file again."""
    import zipfile

    from .walk import not_regular

    if opened is not None:
        handle, zf = opened
        try:
            count = _end_record(handle)[0]  # as below: the count announced (the walk was done)
        except (ValueError, struct.error, OSError):
            count = policy.max_entries + 1
        if count <= policy.max_entries and zf.fp is not None:
            return ZipReader(path, zf, policy), count
        zf.close()
        handle.close()

    reason = not_regular(path) if data is None else None
    if reason is not None:  # opening a FIFO blocks, a device never ends
        raise refuse(path, "CP301", reason=reason)
    try:
        handle = io.BytesIO(data) if data is not None else open(path, "rb")
    except FileNotFoundError:
        raise refuse(path, "CP301", reason="no such file") from None
    except IsADirectoryError:
        raise refuse(path, "CP301", reason="is a directory") from None
    except OSError as exc:
        raise refuse(path, "CP301", reason=exc.strerror or str(exc)) from None
    try:
        head = handle.read(8)
        if head.startswith(PYTORCH1_MAGIC):
            raise refuse(path, "CP306", reason="a pre-zip `PYTORCH1` container (PyTorch 1.0 preview); "
                                                "it holds no TorchScript source")
        if head[:4] not in ZIP_MAGIC:
            raise refuse(path, "CP304", reason="not a zip file (it does not start with `PK`)")
        try:
            count, start, size = _end_record(handle)
            shown_count: object = count
            if count <= policy.max_entries:  # the end record may lie: count what zipfile will parse
                walked = _walked_count(handle, start, size, policy.max_entries)
                if walked > policy.max_entries:
                    count, shown_count = walked, f"at least {walked}"
        except (ValueError, struct.error, OSError) as exc:
            raise refuse(path, "CP305", reason=one_line(exc)) from None
        if count > policy.max_entries:
            raise refuse(path, "CP308", count=shown_count, limit=policy.max_entries)
        ambiguous = _ambiguity(handle)
        if ambiguous is not None:
            raise refuse(path, "CP345", reason=ambiguous)
        handle.seek(0)
        try:
            zf = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError, struct.error,
                NotImplementedError, UnicodeDecodeError) as exc:
            raise refuse(path, "CP305", reason=one_line(exc)) from None
    except BaseException:
        handle.close()
        raise
    return ZipReader(path, zf, policy), count


def is_archive_path(path: str) -> bool:
    """Whether an input is to be read as an archive: a zip or PYTORCH1 container by its
    bytes, or any file with an archive suffix (which then must be a zip: CP304)."""
    p = Path(path)
    try:
        if not p.is_file():
            return False
        return p.suffix.lower() in ARCHIVE_SUFFIXES or sniff(path) in ("zip", "pytorch1")
    except OSError:
        return False
