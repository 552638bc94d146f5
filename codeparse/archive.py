"""Read saved TorchScript archives without torch and without trusting them.

An archive is a zip whose single top folder (any name) holds ``code/``; a
``torch.package`` keeps it under ``.data/ts_code/`` (``code/`` there, or one per
``<id>/``).  The suffix does not matter (``.pt``, ``.ptl``, ``.zip``, ``.jit``, renamed):
the bytes decide.  What is read, and how:

* the version record (``version`` or ``.data/version``), as an integer;
* every ``.py`` under a code folder, in stored order, parsed as one :class:`CodeFile`
  named ``archive!entry``;
* each code file's ``.debug_pkl`` (or the model.json era's ``debug/<name>.pkl``) with
  the restricted unpickler of :mod:`codeparse.debuginfo`;
* ``data.pkl`` is never unpickled: its opcodes are only *listed* (``pickletools``) to
  learn the root module's class name.  Tensor data is never opened.

Nothing is written to disk.  Limits (:class:`codeparse.models.Policy`) bound what is
inflated: the entry count is checked from the end-of-archive record, then counted
again by walking the central directory record by record (stopping at the limit),
before ``zipfile`` parses it (CP308), so an end record that says 3 cannot smuggle in
60,000 entries; each entry read is checked against its declared size (CP309), the
running total (CP310) and its compression ratio (CP311: every entry over
:data:`RATIO_SMALL` bytes by its own ratio, and every entry by the ratio of all
entries read so far once they pass :data:`RATIO_FLOOR` bytes), and is inflated in
chunks that stop at the declared size, so a lying header cannot make it grow.
Entries whose names are absolute or contain ``..`` are never read (CP312); entries
whose stored bytes overlap another entry (the "overlapping zip bomb") are never read
either (CP341).

An input that cannot be read at all raises :class:`codeparse.InputError` with its code
(CP304 not a zip, CP305 damaged, CP306 unsupported format such as the pre-zip
``PYTORCH1`` container, CP307 no code folder, CP308 too many entries).

The model.json seam (PyTorch 1.0-1.2 archives).  When the top folder holds
``model.json`` and a module ``codeparse.legacy`` provides
``parse_model_json_archive(entries, archive_path, grammar) -> (model, files)``, it is
called with ``entries``: the bounded bytes of ``model.json``, ``libs.py``,
``libs/*.py`` and the code files, by entry name, in stored order (read here, within
the limits).  Its ``files`` (``CodeFile`` per code file, ``archive!entry`` paths)
replace the plain parse; ``model.main.qualified_name``, when present, names the root
class.  If it raises, the finding is CP313 and the plain parse stands.  Without that
module the code files are parsed like any others.
"""

from __future__ import annotations

import importlib
import io
import os
import struct
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

from .codes import diagnostic

if TYPE_CHECKING:  # the models import pydantic: `is_archive_path` (every `parse` input) does without
    from .models import Archive, CodeFile, Policy

if TYPE_CHECKING:  # zipfile, zlib and pickletools are imported where used: `parse` starts faster
    import zipfile

__all__ = [
    "ARCHIVE_SUFFIXES",
    "ZipReader",
    "EntryRefused",
    "sniff",
    "open_archive",
    "read_archive",
    "reading_archive",
    "OpenedArchive",
    "archive_code_files",
]

ARCHIVE_SUFFIXES = (".pt", ".pth", ".ptl", ".zip", ".jit", ".pt1", ".torchscript", ".dat")
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
PYTORCH1_MAGIC = b"PYTORCH1"


def decode_text(data: bytes) -> str:
    """:func:`codeparse.api.decode_text` (the parser is imported when text is first read:
    recognising a file by its bytes, ``codeparse.filekind``, needs none of it)."""
    from .api import decode_text as decode

    return decode(data)


RATIO_FLOOR = 1 << 20  # bytes inflated in all before the archive's overall ratio is held to the limit
RATIO_SMALL = 4 << 10  # entries up to this size are held only to the overall ratio
_LOCAL_HEADER = 30  # bytes of a local file header before its name
_CHUNK = 1 << 16
_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_MAX_VERSION_BYTES = 64
_MAX_PICKLE_OPS = 200_000  # opcodes of data.pkl listed while looking for the root class
_PICKLE_HEAD = 1 << 16  # bytes of data.pkl inflated to find it (its first class comes first)


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


def _end_record(handle: io.BufferedReader) -> tuple[int, int, int]:
    """``(announced entries, central directory start, its size)``, located as ``zipfile``
    locates it (from the end record's position, so that data prepended to the zip moves
    it); ValueError if there is no end record."""
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    tail_size = min(size, 22 + 0xFFFF)
    handle.seek(size - tail_size)
    tail = handle.read(tail_size)
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) - at < 22:
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
        for name, count in counts.items():
            if count > 1:
                self.findings.append(diagnostic("CP320", path, None, entry=name, count=count))
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
            raise EntryRefused(diagnostic("CP313", self.path, None, entry=name,
                                          reason=_one_line(exc))) from None
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


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:120] if text else type(exc).__name__


def _refuse(path: str, code: str, **args: object) -> Exception:
    from .api import InputError

    finding = diagnostic(code, path, None, **args)
    error = InputError(path, finding["message"], code)
    error.finding = finding  # the coded finding, with its arguments, for `check`
    return error


def _open_zip(path: str, policy: Policy, data: Optional[bytes] = None,
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
        raise _refuse(path, "CP301", reason=reason)
    try:
        handle = io.BytesIO(data) if data is not None else open(path, "rb")
    except FileNotFoundError:
        raise _refuse(path, "CP301", reason="no such file") from None
    except IsADirectoryError:
        raise _refuse(path, "CP301", reason="is a directory") from None
    except OSError as exc:
        raise _refuse(path, "CP301", reason=exc.strerror or str(exc)) from None
    try:
        head = handle.read(8)
        if head.startswith(PYTORCH1_MAGIC):
            raise _refuse(path, "CP306", reason="a pre-zip `PYTORCH1` container (PyTorch 1.0 preview); "
                                                "it holds no TorchScript source")
        if head[:4] not in ZIP_MAGIC:
            raise _refuse(path, "CP304", reason="not a zip file (it does not start with `PK`)")
        try:
            count, start, size = _end_record(handle)
            shown_count: object = count
            if count <= policy.max_entries:  # the end record may lie: count what zipfile will parse
                walked = _walked_count(handle, start, size, policy.max_entries)
                if walked > policy.max_entries:
                    count, shown_count = walked, f"at least {walked}"
        except (ValueError, struct.error, OSError) as exc:
            raise _refuse(path, "CP305", reason=_one_line(exc)) from None
        if count > policy.max_entries:
            raise _refuse(path, "CP308", count=shown_count, limit=policy.max_entries)
        handle.seek(0)
        try:
            zf = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError, struct.error,
                NotImplementedError, UnicodeDecodeError) as exc:
            raise _refuse(path, "CP305", reason=_one_line(exc)) from None
    except BaseException:
        handle.close()
        raise
    return ZipReader(path, zf, policy), count


def _code_prefixes(reader: ZipReader) -> tuple[str, list[str]]:
    """The layout and the folders (``root/code/``, ``root/.data/ts_code/code/``...) holding code."""
    root = reader.root
    if root is None:
        return "zip", []
    plain = f"{root}/code/"
    package = f"{root}/.data/ts_code/"
    prefixes: list[str] = []
    seen: set[str] = set()
    layout = "zip"
    for name in reader.names:
        if name.startswith(plain):
            prefix = plain
        elif name.startswith(package):
            parts = name[len(package):].split("/")
            if parts[0] == "code":
                prefix = package + "code/"
            elif len(parts) > 2 and parts[1] == "code":
                prefix = f"{package}{parts[0]}/code/"
            else:
                continue
            layout = "torch.package"
        else:
            continue
        if prefix not in seen:
            seen.add(prefix)
            prefixes.append(prefix)
    if f"{root}/model.json" in reader:
        layout = "model.json"
    return layout, prefixes


def _version(reader: ZipReader) -> tuple[Optional[int], list[dict]]:
    root = reader.root
    for name in (f"{root}/version", f"{root}/.data/version"):
        if name in reader:
            try:
                raw = reader.read(name, _MAX_VERSION_BYTES)
            except EntryRefused as refused:
                return None, [refused.finding]
            try:
                return int(raw.decode("ascii").strip()), []
            except (UnicodeDecodeError, ValueError):
                return None, [diagnostic("CP313", reader.path, None, entry=name,
                                         reason="the version record is not a number")]
    return None, [diagnostic("CP319", reader.path, None)]


def _root_class(reader: ZipReader, root_name: str) -> Optional[str]:
    """The root module's class, from the first class ``data.pkl`` names (opcodes listed, never run)."""
    import pickletools

    root = reader.root
    candidates = [f"{root}/data.pkl"] + sorted(
        n for n in reader.names if n.startswith(f"{root}/.data/ts_code/") and n.endswith("/data.pkl")
    )
    for name in candidates:
        if name not in reader:
            continue
        data = reader.head(name, _PICKLE_HEAD)
        if data is None:
            return None
        strings: list[str] = []
        try:
            for index, (op, arg, _pos) in enumerate(pickletools.genops(io.BytesIO(data))):
                if index > _MAX_PICKLE_OPS:
                    break
                if op.name == "GLOBAL" and isinstance(arg, str):
                    module, _, cls = arg.partition(" ")
                    if module == root_name or module.startswith(root_name + "."):
                        return f"{module}.{cls}"
                elif op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8") and isinstance(arg, str):
                    strings = (strings + [arg])[-2:]
                elif op.name == "STACK_GLOBAL" and len(strings) == 2:
                    module, cls = strings
                    if module == root_name or module.startswith(root_name + "."):
                        return f"{module}.{cls}"
        except Exception:  # noqa: BLE001 - a damaged pickle only hides the root class
            return None
    return None


def _debug_entry(reader: ZipReader, name: str) -> Optional[str]:
    candidate = name + ".debug_pkl"
    if candidate in reader:
        return candidate
    root = reader.root
    if root and name.startswith(f"{root}/code/"):  # model.json era: debug/<name>.pkl
        stem = PurePosixPath(name).stem
        legacy = f"{root}/debug/{stem}.pkl"
        if legacy in reader:
            return legacy
    return None


# torch writes an empty code file for each TorchBind class an archive uses
# (`code/__torch__/torch/classes/quantized.py` in every quantized model): not an empty input.
_TORCHBIND_FOLDER = "/code/__torch__/torch/classes/"


def _placeholder_ok(code_file: CodeFile) -> CodeFile:
    """``code_file`` without CP109 when it is a TorchBind placeholder (see above)."""
    if _TORCHBIND_FOLDER not in code_file.path or not any(d.code == "CP109" for d in code_file.diagnostics):
        return code_file
    kept = [d for d in code_file.diagnostics if d.code != "CP109"]
    return code_file.model_copy(update={"diagnostics": kept})


def _placeholder_plain(code_file: dict) -> dict:
    """:func:`_placeholder_ok` of a file's plain data."""
    diagnostics = code_file["diagnostics"]
    if _TORCHBIND_FOLDER not in code_file["path"] or not any(d["code"] == "CP109" for d in diagnostics):
        return code_file
    return dict(code_file, diagnostics=[d for d in diagnostics if d["code"] != "CP109"])


def _legacy_hook() -> Optional[Callable[..., Any]]:
    try:
        legacy = importlib.import_module(".legacy", __package__)
    except ImportError:
        return None
    hook = getattr(legacy, "parse_model_json_archive", None)
    return hook if callable(hook) else None


def _model_json(reader: ZipReader, hook: Callable[..., Any], code: list[tuple[str, bytes]],
                findings: list[dict], grammar: Optional[str]) -> Optional[tuple[list[CodeFile], Optional[str]]]:
    """Hand a model.json archive to ``codeparse.legacy`` (the seam in the module docs).

    ``code`` holds the code entries already read; ``model.json`` and ``libs`` are read
    here.  Returns the files and the root class, or None when the hook failed (CP313).
    """
    root = reader.root
    entries: dict[str, bytes] = {}
    have = dict(code)
    for name in reader.names:
        wanted = (name in have or name == f"{root}/model.json" or name == f"{root}/libs.py"
                  or (name.endswith(".py") and name.startswith((f"{root}/libs/", f"{root}/code/"))))
        if not wanted:
            continue
        if name in have:
            entries[name] = have[name]
            continue
        try:
            entries[name] = reader.read(name)
        except EntryRefused as refused:
            findings.append(refused.finding)
    try:
        model, legacy_files = hook(entries, reader.path, grammar)
    except Exception as exc:  # noqa: BLE001 - their failure is one finding, not a crash
        findings.append(diagnostic("CP313", reader.path, None, entry=f"{root}/model.json", reason=_one_line(exc)))
        return None
    main = getattr(model, "main", None)
    return list(legacy_files), getattr(main, "qualified_name", None)


def _mobile_bytecode(reader: ZipReader) -> list[dict]:
    """A lite-interpreter archive's ``bytecode.pkl``: its version and operators, as one
    finding from ``codeparse.legacy`` (read there with a restricted unpickler)."""
    name = f"{reader.root}/bytecode.pkl"
    if name not in reader:
        return []
    try:
        legacy = importlib.import_module(".legacy", __package__)
        data = reader.read(name)
    except EntryRefused as refused:
        return [refused.finding]
    except ImportError:
        return []
    return [legacy.bytecode_diagnostic(data, reader.path, name)]


class OpenedArchive:
    """An archive open for reading, its code entries read (not parsed yet).

    Made by :func:`reading_archive`; the zip stays open while it is in use, so that
    debug info is read only when an origin is asked for (:meth:`origins`).
    ``findings`` holds the archive-level findings met so far (names, version, code
    entries refused, and once :attr:`files` is read, entries that are not code text).
    """

    def __init__(self, shown: str, reader: ZipReader, count: int, policy: Policy, cache: Any):
        self.path = shown
        self.reader = reader
        self.count = count
        self.policy = policy
        self.cache = cache
        self.layout = "zip"
        self.version: Optional[int] = None
        self.findings: list[dict] = []
        self.code: list[tuple[str, bytes]] = []  # (display path, bytes) of every code entry read
        self.grammar: Optional[str] = None
        self.root_name = ""
        self.legacy = False  # codeparse.legacy built the files (a model.json archive)
        self.legacy_root: Optional[str] = None
        self._files: Optional[list[dict]] = None
        self._entries: dict[str, tuple[int, str, bytes]] = {}  # display path -> (index, entry name, bytes)
        self._origins: dict[str, Optional[dict[int, tuple[str, int]]]] = {}
        self._debug_findings: dict[int, dict] = {}  # entry index -> finding
        # With keep_line_maps (read_archive's extras, for codeparse.export): every LineMap
        # and its text, by display path; a cache folder is then not used for origins.
        self.keep_line_maps = False
        self.line_maps: dict[str, tuple] = {}

    @property
    def files(self) -> list[dict]:
        """The code files as plain data (``CodeFile.model_dump(mode="json")``), parsed as one
        program on first use (:func:`codeparse.resolve.parse_program`)."""
        if self._files is None:
            from .resolve import parse_program

            files, parse_findings = parse_program(self.code, self.grammar, cache=self.cache, as_dict=True)
            self._files = [_placeholder_plain(cf) for cf in files]
            self.findings.extend(parse_findings)
        return self._files

    @property
    def traced(self) -> bool:
        """The archive holds ``traced_inputs.pkl``: saved from ``torch.jit.trace`` (torch >= 2.1)."""
        return any(n.rsplit("/", 1)[-1] == "traced_inputs.pkl" for n in self.reader.names)

    def root_class(self) -> Optional[str]:
        return self.legacy_root or _root_class(self.reader, self.root_name)

    def code_text(self, display: str) -> Optional[str]:
        """The text of one code file, as its spans index it (None for a model.json archive,
        whose files codeparse.legacy builds)."""
        found = None if self.legacy else self._entries.get(display)
        if found is None:
            return None
        from .api import decode_text

        return decode_text(found[2])

    def origins(self, display: str) -> Optional[Any]:
        """Code line -> original ``(file, line)`` for one code file (``.get(line)``), from its
        ``.debug_pkl``, read (and unpickled, or taken from the content cache) on the first
        call only."""
        if display in self._origins:
            return self._origins[display]
        self._origins[display] = None
        found = self._entries.get(display)
        if found is None:
            return None
        index, name, data = found
        debug = _debug_entry(self.reader, name)
        if debug is None:
            return None
        try:
            # Debug info is a few times the size of its code; the cap bounds what a
            # hostile pickle can build from memo references.
            raw = self.reader.read(debug, max(1 << 20, 16 * len(data)))
        except EntryRefused as refused:
            self._debug_findings[index] = refused.finding
            return None
        origins, problem = self._line_origins(display, name, data, raw)
        if problem is not None:
            code, args = problem
            self._debug_findings[index] = diagnostic(code, self.path, None, entry=debug, **args)
            return None
        self._origins[display] = origins
        return origins

    def _line_origins(self, display: str, name: str, data: bytes,
                      raw: bytes) -> tuple[Optional[Any], Optional[tuple[str, dict]]]:
        """The origins of one code file (a dict, or a :class:`~codeparse.debuginfo.LineOrigins`
        that maps each line on its first ask when nothing is written to disk), or the
        finding reading its debug info gave."""
        from .api import module_name_for
        from .debuginfo import DebugInfoError, ForbiddenGlobal, LineOrigins, PickleLimit, line_origins, read_debug_pkl

        cache = self.cache
        if self.keep_line_maps and cache is not None and cache.directory is not None:
            cache = None  # a cache folder stores the lines, not the map that export reads
        key = debug_key = None
        if cache is not None:
            import hashlib

            key = cache.key(data, None, module_name_for(name))
            # The limit decides whether a long source is read (CP315): part of the key.
            debug_key = hashlib.sha256(raw + f"\0{self.policy.max_debug_chars}".encode()).hexdigest()
            stored = cache.origins(key, debug_key)
            if isinstance(stored, dict):
                if "problem" in stored:
                    return None, (stored["problem"][0], stored["problem"][1])
                if "lines" in stored:
                    return {row[0]: (row[1], row[2]) for row in stored["lines"]}, None
                if "lazy" in stored:
                    if self.keep_line_maps:
                        self.line_maps[display] = stored["lazy"].parts
                    return stored["lazy"], None
        problem: Optional[tuple[str, dict]] = None
        origins: Optional[Any] = None
        lazy = cache is None or cache.directory is None
        try:
            line_map = read_debug_pkl(raw, max_rows=len(data) + 1, max_chars=self.policy.max_debug_chars)
            text = decode_text(data)
            origins = LineOrigins(text, line_map) if lazy else line_origins(text, line_map)
            if self.keep_line_maps:
                self.line_maps[display] = (line_map, text)
        except ForbiddenGlobal as exc:
            problem = ("CP314", {"global_name": exc.name})
        except PickleLimit as exc:
            problem = ("CP343", {"reason": str(exc)})
        except DebugInfoError as exc:
            problem = ("CP315", {"reason": str(exc)})
        if cache is not None:
            value = ({"problem": list(problem)} if problem is not None
                     else {"lazy": origins} if lazy  # in memory only: never written
                     else {"lines": [[line, f, n] for line, (f, n) in origins.items()]})
            cache.put_origins(key, debug_key, value)
        return origins, problem

    def debug_findings(self) -> list[dict]:
        """Findings about the debug info read so far, in stored order."""
        return [self._debug_findings[i] for i in sorted(self._debug_findings)]

    def every_origin(self) -> dict[str, Any]:
        """Every code file's origins (every ``.debug_pkl`` read, in stored order), each as
        :meth:`origins` gives it (``.get(line)``; lines are mapped when asked for)."""
        parsed = {cf["path"] for cf in self.files}
        out = {}
        for display in self._entries:
            if display in parsed:
                found = self.origins(display)
                if found is not None:
                    out[display] = found
        return out

    def all_origins(self) -> dict[str, dict[int, tuple[str, int]]]:
        """Every code file's origins as dicts (every ``.debug_pkl`` read), for the full :class:`Archive`."""
        return {display: found if isinstance(found, dict) else dict(found.items())
                for display, found in self.every_origin().items()}

    def tail_findings(self) -> list[dict]:
        """The findings read last: mobile bytecode and the pickle scan."""
        from .scan import archive_pickle_findings

        return _mobile_bytecode(self.reader) + archive_pickle_findings(self.reader, self.cache)


@contextmanager
def reading_archive(path: str | os.PathLike, policy: Optional[Policy] = None, grammar: Optional[str] = None,
                    data: Optional[bytes] = None, cache: Any = None,
                    opened: Optional[tuple] = None) -> Iterator[OpenedArchive]:
    """Open an archive within the limits and read its code entries (see the module docs);
    the zip is closed when the block ends.  Raises :class:`codeparse.InputError`.

    ``data``: the archive's bytes when it is not a file (``check -`` reads standard input);
    ``opened``: the zip already open (:func:`_open_zip`)."""
    from .checkdata import Limits
    from .grammar import load_semantics

    shown = os.fspath(path)
    policy = policy or Limits()
    reader, count = _open_zip(shown, policy, data, opened)
    try:
        opened = OpenedArchive(shown, reader, count, policy, cache)
        layout, prefixes = _code_prefixes(reader)
        opened.layout = layout
        if not prefixes and layout != "model.json":
            raise _refuse(shown, "CP307")
        findings = opened.findings
        findings.extend(reader.findings)
        opened.version, version_findings = _version(reader)
        findings.extend(version_findings)
        opened.root_name = load_semantics()["names"]["qualified_root"]
        code_names = [n for n in reader.names
                      if n.endswith(".py") and any(n.startswith(p) for p in prefixes)]
        entries: list[tuple[str, bytes]] = []
        for name in code_names:
            try:
                entries.append((name, reader.read(name)))
            except EntryRefused as refused:
                findings.append(refused.finding)
        hook = _legacy_hook() if layout == "model.json" else None
        legacy = _model_json(reader, hook, entries, findings, grammar) if hook is not None else None
        if legacy is not None:
            files, opened.legacy_root = legacy
            opened._files = [_placeholder_plain(cf.model_dump(mode="json")) for cf in files]
            opened.legacy = True
        opened.code = [(reader.display(n), d) for n, d in entries]
        opened.grammar = grammar
        for index, (name, entry_data) in enumerate(entries):
            opened._entries[reader.display(name)] = (index, name, entry_data)
        yield opened
    finally:
        reader._zf.close()
        fp = getattr(reader._zf, "fp", None)
        if fp is not None:
            fp.close()


def read_archive(path: str | os.PathLike, policy: Optional[Policy] = None,
                 grammar: Optional[str] = None, data: Optional[bytes] = None,
                 extras: Optional[dict] = None, cache: Any = None) -> Archive:
    """Read a saved TorchScript archive into an :class:`Archive` (see the module docs):
    every ``.debug_pkl`` of a parsed code file is read, for the source map.

    ``data``: the archive's bytes when it is not a file (``check -`` reads standard input);
    ``path`` is then only its name in findings.  ``extras``, when given, receives what
    :mod:`codeparse.export` needs beyond the model: ``offset_maps`` (entry -> ``(LineMap,
    text)``, the origin of any offset), ``traced`` (:attr:`OpenedArchive.traced`) and
    ``files`` (the code files as plain data, ``CodeFile.model_dump(mode="json")``).  ``cache``: a
    :class:`codeparse.cache.EntryCache` shared by several reads."""
    with reading_archive(path, policy, grammar, data, cache) as opened:
        opened.keep_line_maps = extras is not None
        return archive_of(opened, extras)


def archive_of(opened: OpenedArchive, extras: Optional[dict] = None) -> Archive:
    """The :class:`Archive` of an archive open for reading (:func:`read_archive`)."""
    from .resolve import resolve

    files = opened.files
    maps = opened.all_origins()
    findings = opened.findings + opened.debug_findings()
    root_class = opened.root_class()
    findings.extend(opened.tail_findings())
    archive = resolve(
        path=opened.path, layout=opened.layout, root=opened.reader.root, version=opened.version,
        entries=opened.count, files=files, maps=maps, root_class=root_class, findings=findings,
    )
    if extras is not None:
        extras["offset_maps"] = opened.line_maps
        extras["traced"] = opened.traced
        extras["files"] = files
        extras["text"] = opened.code_text
    return archive


def open_archive(path: str | os.PathLike, policy: Optional[Policy] = None) -> Archive:
    """Read a saved TorchScript archive without torch: the public entry point.

    Raises :class:`codeparse.InputError` (with ``.code``) when it cannot be read at all,
    and ``TypeError`` for a ``path`` that is not a ``str``/``os.PathLike`` or a ``policy``
    that is not a :class:`~codeparse.models.Policy`.
    """
    from .models import Policy

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"open_archive expects a path (str or os.PathLike), not {type(path).__name__}")
    if policy is not None and not isinstance(policy, Policy):
        raise TypeError(f"open_archive expects policy as a codeparse.Policy or None, not {type(policy).__name__}")
    return read_archive(path, policy)


def archive_code_files(path: str | os.PathLike, grammar: Optional[str] = None) -> Iterator[tuple[CodeFile, str]]:
    """``(CodeFile, text)`` for each code entry of an archive, in stored order (for ``parse``).

    Entries that cannot be read become a CodeFile with only their diagnostic.
    """
    from .api import InputError, parse_bytes
    from .models import CodeFile, Policy

    shown = os.fspath(path)
    reader, _ = _open_zip(shown, Policy())
    try:
        layout, prefixes = _code_prefixes(reader)
        if not prefixes:
            raise _refuse(shown, "CP307")
        if layout == "model.json":  # the seam: method files with classes from model.json
            hook = _legacy_hook()
            legacy = _model_json(reader, hook, [], [], grammar) if hook is not None else None
            legacy_files = legacy[0] if legacy is not None else None
            if legacy_files:
                prefix = reader.display("")
                for cf in legacy_files:  # `archive!entry`: the entry is what follows the archive path
                    entry = cf.path[len(prefix):] if cf.path.startswith(prefix) else cf.path
                    yield cf, decode_text(reader.read(entry)) if entry in reader else ""
                return
        for name in reader.names:
            if not (name.endswith(".py") and any(name.startswith(p) for p in prefixes)):
                continue
            display = reader.display(name)
            try:
                data = reader.read(name)
                yield _placeholder_ok(parse_bytes(data, display, grammar)), decode_text(data)
            except EntryRefused as refused:
                finding = dict(refused.finding, path=display)
                yield CodeFile(path=display, grammar=grammar or "unread", classes=[], functions=[],
                               diagnostics=[finding]), ""
            except InputError as exc:
                finding = diagnostic(exc.code, display, None, reason=exc.message)
                yield CodeFile(path=display, grammar=grammar or "unread", classes=[], functions=[],
                               diagnostics=[finding]), ""
    finally:
        reader._zf.close()
        fp = getattr(reader._zf, "fp", None)
        if fp is not None:
            fp.close()


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
