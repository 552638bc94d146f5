"""Model files that are not TorchScript, and the pickles of every model file.

``check`` and ``codeparse scan`` call :func:`scan_input` for what
:mod:`codeparse.files.filekind` recognises: a ``torch.save`` checkpoint (CP323), a plain
pickle (CP324), a ``.pt2`` from ``torch.export.save`` (CP325; the ``torch.save`` zips
nested in it are opened too), a Git LFS pointer (CP322).  Every pickle found is walked
by :mod:`codeparse.pickles.picklescan` (CP330-CP332); nothing is unpickled.  For TorchScript
archives :func:`archive_pickle_findings` walks ``data.pkl``, ``constants.pkl``,
``bytecode.pkl``, ``extra/`` pickles and any other ``.pkl`` entry (``.debug_pkl`` is
read by :mod:`codeparse.archive.debuginfo` with its own allow-list, CP314).

Entries are read through :class:`codeparse.files.zipread.ZipReader`, within the policy's
limits; tensor data (``data/<n>``, ``data/weights/``) is never read.
"""

from __future__ import annotations

import io
import os
from typing import Any, Iterable, Iterator, Optional

from ..contract.codes import diagnostic
from ..contract.records import Checked, finding as _finding
from ..files.filekind import FileKind, is_pickle, is_tar, looks_like_pickle, parse_lfs_pointer
from .picklescan import (MAX_PICKLES, PickleScan, pickle_findings, scan_pickle, scan_stream,
                         verdict)

__all__ = ["scan_input", "scan_only", "archive_pickle_findings", "archive_pickle_scans", "pickle_reports"]

_NESTED_DEPTH = 2  # zips inside zips opened (a .pt2 holds torch.save zips)
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def _pickle_entry(reader: Any, name: str) -> bool:
    """An entry a loader may unpickle: any name ending in ``.pkl`` (torch matches entry names
    without regard to case), and pickles under ``extra/``; never ``.debug_pkl`` (read by
    :mod:`codeparse.debuginfo`) nor tensor data and code."""
    root = reader.root or ""
    inner = name[len(root) + 1:] if root and name.startswith(root + "/") else name
    lower, inner = name.lower(), inner.lower()
    if lower.endswith(".debug_pkl"):
        return False
    if lower.endswith(".pkl"):
        return True
    if inner.startswith(("data/", "code/")):
        return False
    if inner.startswith("extra/"):
        head = reader.head(name, 2)
        return head is not None and looks_like_pickle(head)
    return False


def torchscript_reader(reader: Any) -> bool:
    """Whether ``torch.load`` hands the zip to ``torch.jit.load`` (its ``constants.pkl``, under
    the folder of the first entry, as torch's reader names the archive): its pickles are
    then read by TorchScript's own unpickler, never by Python's."""
    root = _torch_root(reader)
    return bool(root) and f"{root}/constants.pkl" in reader


def _torch_root(reader: Any) -> str:
    first = reader.first_name() if hasattr(reader, "first_name") else (reader.names[0] if reader.names else "")
    return first.split("/", 1)[0] if "/" in first else ""


def _read_by_python(reader: Any, name: str) -> bool:
    """Whether Python's unpickler reads the entry: ``torch.load`` reads ``<root>/data.pkl``
    (found without regard to case) of a zip it does not hand to ``torch.jit.load``; every
    other pickle of a zip is read only by TorchScript's unpickler.  Unsure: Python's."""
    root = _torch_root(reader)
    if not root:
        return True
    return name.lower() == f"{root}/data.pkl".lower() and not torchscript_reader(reader)


def _nested_zip(reader: Any, name: str) -> bool:
    if name.endswith((".py", ".pkl", ".debug_pkl", ".json")) or "/data/weights/" in name or "/data/constants/" in name:
        return False
    head = reader.head(name, 4)
    return head is not None and head in _ZIP_MAGIC


def _scan_stream(data: bytes, entry: str, cache: Any) -> list[PickleScan]:
    """:func:`scan_stream`, through the content cache (:mod:`codeparse.text.cache`) when given:
    the scan of a pickle depends on its bytes (and the tables in the cache's fingerprint)."""
    if cache is None:
        return _chained(data, scan_stream(data, entry))
    key = cache.blob_key("pickle-scan", data)
    stored = cache.blob(key)
    if isinstance(stored, list):
        try:
            return [PickleScan(**dict(s, entry=entry)) for s in stored]
        except TypeError:
            pass  # another layout: scanned again below
    scans = _chained(data, scan_stream(data, entry))
    cache.put_blob(key, [s.plain() for s in scans])
    return scans


def archive_pickle_scans(reader: Any, depth: int = 0, prefix: str = "",
                         cache: Any = None) -> tuple[list[PickleScan], list[dict]]:
    """Scans of every pickle of an open zip (and of the zips nested in it); and findings
    for entries that could not be read.  ``cache``: a :class:`codeparse.text.cache.EntryCache`."""
    import zipfile

    from ..files.zipread import EntryRefused, ZipReader

    scans: list[PickleScan] = []
    refused: list[dict] = []
    for name in reader.names:
        shown = prefix + name
        if _pickle_entry(reader, name):
            try:
                data = reader.read(name)
            except EntryRefused as exc:
                refused.append(exc.finding)
                continue
            found = _scan_stream(data, shown, cache)
            for scan in found:
                scan.jit = not _read_by_python(reader, name)
            scans.extend(found)
        elif depth < _NESTED_DEPTH and _nested_zip(reader, name):
            try:
                data = reader.read(name)
                zf = zipfile.ZipFile(io.BytesIO(data))
            except EntryRefused as exc:
                refused.append(exc.finding)
                continue
            except Exception:  # noqa: BLE001 - not a zip after all: nothing to scan
                continue
            nested = ZipReader(reader.path, zf, reader.policy)
            nested.total = reader.total  # one budget for everything inflated from the file
            inner, more = archive_pickle_scans(nested, depth + 1, shown + "!", cache)
            reader.total = nested.total
            scans.extend(inner)
            refused.extend(more)
    return scans, refused


def archive_pickle_findings(reader: Any, cache: Any = None) -> list[dict]:
    """The pickle findings (CP330-CP338) for the pickles of a TorchScript archive (see the module docs)."""
    scans, refused = archive_pickle_scans(reader, cache=cache)
    return refused + list(pickle_findings(reader.path, scans, torchscript_reader(reader), _allowed(reader.policy)))


def _allowed(policy: Any) -> frozenset[str]:
    """The globals a trusted configuration allows (``allow-globals``)."""
    return frozenset(getattr(policy, "allow_globals", None) or ())


def pickle_reports(scans: Iterable[PickleScan], torchscript: bool = False,
                   allowed: frozenset[str] = frozenset()) -> list[dict]:
    """Each scan as a ``PickleReport`` (plain data, its ``model_dump(mode="json")``):
    ``dangerous`` the known gadgets, ``unknown`` every other global that is not silent."""
    out = []
    for s in scans:
        kinds = {g: verdict(s, g, torchscript, allowed) for g in s.globals}
        out.append({"entry": s.entry, "globals": list(s.globals), "opcodes": s.ops,
                    "dangerous": [g for g in s.globals if kinds[g] == "dangerous"],
                    "unknown": [g for g in s.globals if kinds[g] not in ("dangerous", "silent")],
                    "error": s.error})
    return out


def _content(scans: list[PickleScan]) -> str:
    names = {g for s in scans for g in s.globals}
    if any(g.startswith(("torch.nn.modules.", "torch.ao.nn.")) for g in names):
        return "pickled module"
    if any(not g.startswith(("torch.", "collections.", "builtins.", "__torch__.")) for g in names):
        return "pickled objects"
    return "state dict or tensors"


def scan_input(path: str, kind: FileKind, policy: Any, data: Optional[bytes] = None) -> Checked:
    """What a checkpoint, plain pickle, ``.pt2`` or LFS pointer holds (never raises for bad input)."""
    from ..contract.errors import InputError
    from ..files.zipread import open_zip

    def whole(code: str, **args: Any) -> dict:
        return diagnostic(code, path, None, **args)

    if kind.kind == "torchscript":  # `codeparse scan`: the archive's pickles, not its code
        try:
            reader, _count = open_zip(path, policy, data)
        except InputError as exc:
            finding = getattr(exc, "finding", None) or whole(exc.code, reason=exc.message)
            return Checked("archive", False, findings=[_finding(finding)])
        try:
            scans, refused = archive_pickle_scans(reader)
            torchscript = torchscript_reader(reader)
            out = [*reader.findings, *refused, *pickle_findings(path, scans, torchscript, _allowed(policy))]
        finally:
            reader._zf.close()
        return Checked("archive", True, pickles=pickle_reports(scans, torchscript, _allowed(policy)),
                       findings=[_finding(f) for f in out])
    if kind.kind == "lfs_pointer":
        raw = data if data is not None else _head(path, 1024)
        oid, size = parse_lfs_pointer(raw)
        return Checked("lfs_pointer", True, findings=[_finding(whole("CP322", oid=oid, size=size))])
    findings: list[dict] = []
    scans: list[PickleScan] = []
    torchscript = False
    if kind.kind == "pickle" or kind.detail in ("legacy", "legacy tar"):
        raw = data if data is not None else _bounded(path, policy)
        shown = os.path.basename(path) if path != "-" else "-"
        if raw is None:
            findings.append(whole("CP309", entry=shown, size=os.path.getsize(path),
                                  limit=policy.max_entry_bytes))
        else:
            if is_tar(raw):  # torch.load tries the legacy tar format first
                found, problems = tar_scans(raw, shown)
                scans.extend(found)
                findings.extend(whole("CP332", entry=entry, reason=reason) for entry, reason in problems)
            if is_pickle(raw):
                scans.extend(stream_scans(raw, shown))
    else:
        try:
            reader, _count = open_zip(path, policy, data)
        except InputError as exc:
            finding = getattr(exc, "finding", None) or whole(exc.code, reason=exc.message)
            return Checked(kind.kind, False, findings=[_finding(finding)])
        try:
            findings.extend(reader.findings)
            scans, refused = archive_pickle_scans(reader)
            torchscript = torchscript_reader(reader)
            findings.extend(refused)
        finally:
            reader._zf.close()
    code = {"checkpoint": "CP323", "pickle": "CP324", "pt2": "CP325"}[kind.kind]
    content = _content(scans) if kind.kind == "checkpoint" else ("torch.export.save" if kind.kind == "pt2" else "")
    if kind.kind == "checkpoint" and kind.detail in ("legacy", "legacy tar"):
        content += ", legacy format" if kind.detail == "legacy" else ", legacy tar format"
    summary = whole(code, content=content, pickles=len(scans), globals=len({g for s in scans for g in s.globals}))
    out = [summary, *findings, *pickle_findings(path, scans, torchscript, _allowed(policy))]
    return Checked(kind.kind, True, pickles=pickle_reports(scans, torchscript, _allowed(policy)),
                   findings=[_finding(f) for f in out])


def scan_only(path: str, policy: Any, data: Optional[bytes] = None) -> Checked:
    """``codeparse scan``: the pickle checks alone, for any input (CP304 when it is no model file)."""
    from ..files.filekind import recognize, recognize_bytes

    try:
        kind = recognize_bytes(data, policy.max_entries) if data is not None else recognize(path, policy.max_entries)
    except OSError as exc:
        finding = diagnostic("CP301", path, None, reason=exc.strerror or str(exc))
        return Checked("other", False, findings=[_finding(finding)])
    if kind.kind == "other":
        finding = diagnostic("CP304", path, None, reason="not a model file that holds pickles")
        return Checked("other", False, findings=[_finding(finding)])
    return scan_input(path, kind, policy, data)


def stream_scans(raw: bytes, entry: str, count: int = MAX_PICKLES) -> list[PickleScan]:
    """The pickles of a file that is no zip, as loaders read it: ``pickle.loads`` reads the
    first; ``torch.load`` reads it as the legacy stream (magic number, protocol, sys_info,
    the object, the storage keys) when the first pickle gives the magic number, which it
    may spell in many ways (any integer opcode, any text ``int()`` reads, a call).  So the
    bytes after each pickle are walked as the next one, whatever the first held, up to
    ``count`` pickles in a row (the legacy stream reads five; the raw storage bytes follow).

    Where the next pickle starts depends on the reader: one that can peek (a file opened
    by path) goes on after ``STOP``; one that cannot (``io.BytesIO``, an unbuffered file)
    after the last ``FRAME`` it read, which may end past ``STOP``.  Every such start is
    walked; more than :data:`MAX_STARTS` pickles in all fail closed (CP338)."""
    scans: list[PickleScan] = []
    level = [0]
    for depth in range(count):
        following: list[int] = []
        for start in level:
            if len(scans) >= MAX_STARTS:
                capped = PickleScan(entry=f"{entry}#{depth}", error=f"more than {MAX_STARTS} pickles to walk "
                                    "(frames that end past their pickle's STOP)", failure="cap")
                return [*scans, capped]
            shown = entry if depth == 0 else f"{entry}#{depth}"
            if start != level[0]:  # a start only a reader that cannot peek takes
                shown += f"@{start}"
            scan = scan_pickle(raw, shown, start)
            _check_frames(raw, [scan], [start])
            scans.append(scan)
            if scan.error is not None or scan.end <= start:
                continue
            following.extend(n for n in next_starts(raw, start, scan.end) if n < len(raw) and n not in following)
        if not following:
            break
        level = following
    return scans


MAX_STARTS = 4 * MAX_PICKLES  # pickles one stream may have walked (each read from every start a reader may take)


def _frame_bytes(raw: bytes, start: int, end: int, past: bool) -> bool:
    """Whether ``raw[start:end]`` has a byte that may be a ``FRAME`` whose length ends in
    the data (``past``: past ``end``): only then is an opcode walk of the frames needed."""
    at = raw.find(b"\x95", start, end)
    while at >= 0:
        frame_end = at + 9 + int.from_bytes(raw[at + 1:at + 9], "little")
        if frame_end <= len(raw) and (frame_end > end or not past):
            return True
        at = raw.find(b"\x95", at + 1, end)
    return False


def _frames(raw: bytes, start: int, end: int) -> Iterator[tuple[int, int, int]]:
    """``(opcode start, opcode end, frame end or -1)`` for each opcode of ``raw[start:end]``."""
    import pickletools

    previous: Optional[tuple[int, int]] = None
    for op, arg, pos in pickletools.genops(raw[start:end]):
        if previous is not None:
            yield previous[0], start + pos, previous[1]
        previous = (start + pos, start + pos + 9 + arg if op.name == "FRAME" else -1)
    if previous is not None:
        yield previous[0], end, previous[1]


def next_starts(raw: bytes, start: int, end: int) -> list[int]:
    """Where a loader reads the pickle after the one in ``raw[start:end]``: after its
    ``STOP`` (``end``), and the end of every ``FRAME`` in it that ends past ``STOP`` (a
    reader that cannot peek has read the frame whole, and goes on from its end)."""
    out = [end]
    if not _frame_bytes(raw, start, end, past=True):
        return out
    try:
        for _at, _after, frame_end in _frames(raw, start, end):
            if frame_end > end and frame_end not in out:
                out.append(frame_end)
    except Exception:  # noqa: BLE001 - the walk read it to STOP; only the frames are wanted here
        pass
    return out


def frame_problem(raw: bytes, start: int, end: int) -> Optional[str]:
    """Why the pickle in ``raw[start:end]`` reads differently by reader, or None: a frame
    that ends inside an opcode, or a frame begun inside another.  A reader that cannot
    peek (``torch.load``'s ``io.BytesIO`` of ``data.pkl``) reads such an opcode's argument
    afresh from after the frame, where a linear walk (and ``pickle.loads``) reads on."""
    if not _frame_bytes(raw, start, end, past=False):
        return None
    current = -1
    try:
        for at, after, frame_end in _frames(raw, start, end):
            if at < current < after:
                return f"the frame that ends at byte {current} ends inside the opcode at byte {at}"
            if frame_end >= 0:
                if at < current:
                    return f"a frame begins at byte {at}, inside the frame that ends at byte {current}"
                current = frame_end
    except Exception:  # noqa: BLE001 - the walk read it to STOP already
        return None
    return None


def _check_frames(raw: bytes, scans: list[PickleScan], starts: Iterable[int]) -> list[PickleScan]:
    """``scans`` (each walked from its start in ``raw``), a walk whose frames read
    differently by reader marked as failed (CP332)."""
    for scan, start in zip(scans, starts):
        if scan.error is None:
            problem = frame_problem(raw, start, scan.end)
            if problem is not None:
                scan.error, scan.failure = problem, "walk"
    return scans


def _chained(raw: bytes, scans: list[PickleScan]) -> list[PickleScan]:
    """:func:`_check_frames` of the pickles :func:`scan_stream` walked one after another."""
    return _check_frames(raw, scans, [0, *(s.end for s in scans[:-1])])


MAX_TAR_MEMBERS = 10_000


def tar_scans(raw: bytes, entry: str) -> tuple[list[PickleScan], list[tuple[str, str]]]:
    """The pickles torch's legacy tar format reads (``torch/serialization.py``, ``legacy_load``):
    the ``pickle`` member, and the counts and records of ``storages`` and ``tensors``; and
    ``(entry, reason)`` for what cannot be walked (storage bytes between the records: walked
    only when the count is a literal 0).  Every member of those names is read (tar keeps
    several of one name; torch reads the last)."""
    import tarfile

    scans: list[PickleScan] = []
    problems: list[tuple[str, str]] = []
    try:
        tar = tarfile.open(fileobj=io.BytesIO(raw), mode="r:")
        members = []
        for member in tar:
            members.append(member)
            if len(members) > MAX_TAR_MEMBERS:
                return scans, [(entry, f"more than {MAX_TAR_MEMBERS} tar members")]
    except (tarfile.TarError, OSError, ValueError, EOFError) as exc:
        return scans, [(entry, f"the tar cannot be listed: {exc}")]
    for member in members:
        if member.name not in ("pickle", "storages", "tensors"):
            continue
        shown = f"{entry}!{member.name}"
        if member.issym() or member.islnk():  # torch extracts the link and reads what it names
            kind = "a symbolic" if member.issym() else "a hard"
            problems.append((shown, f"the member is {kind} link to {member.linkname!r}: torch.load reads "
                                    "the file it names, which the scan does not follow"))
            continue
        if member.isdir() or member.isdev():
            problems.append((shown, "the member is not a regular file"))
            continue
        try:
            handle = tar.extractfile(member)
            data = handle.read() if handle is not None else b""
        except (tarfile.TarError, OSError, ValueError, EOFError, KeyError) as exc:
            problems.append((shown, f"the member cannot be read: {exc}"))
            continue
        if member.name == "pickle":
            scans.extend(_chained(data, scan_stream(data, shown, 1)))
            continue
        count = scan_pickle(data, shown)
        _check_frames(data, [count], [0])
        scans.append(count)
        if count.error is not None:
            continue
        if _literal_int(data[:count.end]) != 0:
            problems.append((shown, "records with storage bytes between them are not walked"))
            continue
        if member.name == "storages":  # the storage views, read from an unbuffered file
            for n, start in enumerate(s for s in next_starts(data, 0, count.end) if s < len(data)):
                views = data[start:]
                scans.extend(_chained(views, scan_stream(views, f"{shown}#1" + (f"@{start}" if n else ""), 1)))
    return scans, problems


def _literal_int(data: bytes) -> Optional[int]:
    """The int a pickle made only of PROTO, one integer opcode and STOP gives, else None."""
    import pickletools

    values = []
    try:
        for op, arg, _pos in pickletools.genops(data):
            if op.name in ("PROTO", "FRAME", "STOP"):
                continue
            if op.name not in ("BININT", "BININT1", "BININT2", "INT", "LONG", "LONG1"):
                return None
            values.append(arg)
    except Exception:  # noqa: BLE001 - not a plain integer pickle
        return None
    return values[0] if len(values) == 1 and isinstance(values[0], int) else None


def _head(path: str, size: int) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(size)


def _bounded(path: str, policy: Any) -> Optional[bytes]:
    if os.path.getsize(path) > policy.max_entry_bytes:
        return None
    with open(path, "rb") as handle:
        return handle.read(policy.max_entry_bytes + 1)
