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
from typing import Any, Iterable, Optional

from ..contract.codes import diagnostic
from ..contract.records import Checked, finding as _finding
from ..files.filekind import FileKind, looks_like_pickle, parse_lfs_pointer
from .picklescan import PickleScan, pickle_findings, scan_stream

__all__ = ["scan_input", "scan_only", "archive_pickle_findings", "archive_pickle_scans", "pickle_reports"]

_NESTED_DEPTH = 2  # zips inside zips opened (a .pt2 holds torch.save zips)
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def _pickle_entry(reader: Any, name: str) -> bool:
    root = reader.root or ""
    inner = name[len(root) + 1:] if root and name.startswith(root + "/") else name
    if name.endswith(".debug_pkl") or (inner.startswith(("data/", "code/")) and not name.endswith(".pkl")):
        return False
    if name.endswith(".pkl"):
        return True
    if inner.startswith("extra/"):
        head = reader.head(name, 2)
        return head is not None and looks_like_pickle(head)
    return False


def _nested_zip(reader: Any, name: str) -> bool:
    if name.endswith((".py", ".pkl", ".debug_pkl", ".json")) or "/data/weights/" in name or "/data/constants/" in name:
        return False
    head = reader.head(name, 4)
    return head is not None and head in _ZIP_MAGIC


def _scan_stream(data: bytes, entry: str, cache: Any) -> list[PickleScan]:
    """:func:`scan_stream`, through the content cache (:mod:`codeparse.text.cache`) when given:
    the scan of a pickle depends on its bytes (and the tables in the cache's fingerprint)."""
    if cache is None:
        return scan_stream(data, entry)
    import dataclasses

    key = cache.blob_key("pickle-scan", data)
    stored = cache.blob(key)
    if isinstance(stored, list):
        try:
            return [PickleScan(**dict(s, entry=entry)) for s in stored]
        except TypeError:
            pass  # another layout: scanned again below
    scans = scan_stream(data, entry)
    cache.put_blob(key, [dataclasses.asdict(s) for s in scans])
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
            scans.extend(_scan_stream(data, shown, cache))
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
    """CP330-CP332 for the pickles of a TorchScript archive (see the module docs)."""
    scans, refused = archive_pickle_scans(reader, cache=cache)
    return refused + list(pickle_findings(reader.path, scans))


def pickle_reports(scans: Iterable[PickleScan]) -> list[dict]:
    """Each scan as a ``PickleReport`` (plain data, its ``model_dump(mode="json")``)."""
    from .picklescan import classify

    return [{"entry": s.entry, "globals": list(s.globals), "opcodes": s.ops,
             "dangerous": [g for g in s.globals if classify(g) == "dangerous"],
             "unknown": [g for g in s.globals if g.startswith("<") or classify(g) == "unknown"],
             "error": s.error} for s in scans]


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
            out = [*reader.findings, *refused, *pickle_findings(path, scans)]
        finally:
            reader._zf.close()
        return Checked("archive", True, pickles=pickle_reports(scans), findings=[_finding(f) for f in out])
    if kind.kind == "lfs_pointer":
        raw = data if data is not None else _head(path, 1024)
        oid, size = parse_lfs_pointer(raw)
        return Checked("lfs_pointer", True, findings=[_finding(whole("CP322", oid=oid, size=size))])
    findings: list[dict] = []
    scans: list[PickleScan] = []
    if kind.kind == "pickle" or kind.detail == "legacy":
        raw = data if data is not None else _bounded(path, policy)
        if raw is None:
            findings.append(whole("CP309", entry=os.path.basename(path), size=os.path.getsize(path),
                                  limit=policy.max_entry_bytes))
        else:
            scans = scan_stream(raw, os.path.basename(path) if path != "-" else "-")
    else:
        try:
            reader, _count = open_zip(path, policy, data)
        except InputError as exc:
            finding = getattr(exc, "finding", None) or whole(exc.code, reason=exc.message)
            return Checked(kind.kind, False, findings=[_finding(finding)])
        try:
            findings.extend(reader.findings)
            scans, refused = archive_pickle_scans(reader)
            findings.extend(refused)
        finally:
            reader._zf.close()
    code = {"checkpoint": "CP323", "pickle": "CP324", "pt2": "CP325"}[kind.kind]
    content = _content(scans) if kind.kind == "checkpoint" else ("torch.export.save" if kind.kind == "pt2" else "")
    if kind.kind == "checkpoint" and kind.detail == "legacy":
        content += ", legacy format"
    summary = whole(code, content=content, pickles=len(scans), globals=len({g for s in scans for g in s.globals}))
    out = [summary, *findings, *pickle_findings(path, scans)]
    return Checked(kind.kind, True, pickles=pickle_reports(scans), findings=[_finding(f) for f in out])


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


def _head(path: str, size: int) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(size)


def _bounded(path: str, policy: Any) -> Optional[bytes]:
    if os.path.getsize(path) > policy.max_entry_bytes:
        return None
    with open(path, "rb") as handle:
        return handle.read(policy.max_entry_bytes + 1)
