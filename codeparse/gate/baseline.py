"""Baselines: adopt codeparse in a repository that already has findings, and fail only on new ones.

``codeparse check models/ --write-baseline codeparse-baseline.json`` records every finding
reported now; ``--baseline codeparse-baseline.json`` (or ``baseline = "..."`` in
``[tool.codeparse]``) drops those again, and reports only what is new.

A finding is recorded as what it is: ``(path, code, fingerprint)``.  ``path`` is the file's
path relative to the project root (the source root: ``--source-root``, default the working
directory), without the archive entry; ``fingerprint`` is a digest of the finding's content
(:func:`content`): the global's name and the pickle entry for a pickle finding, the
function and condition text for a branch, never the message text (which may be reworded)
nor a byte offset or line (which move when a file is saved again).  An archive's top
folder is left out of its entries, so saving the model again under the same path keeps its
findings matched; a copy under another path is another file, and its findings are new.
Identical keys are counted: a baseline entry absorbs as many findings as it recorded.
SARIF results carry the same fingerprint (``partialFingerprints``).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Optional

from ..text.cache import sha256

__all__ = ["content", "digest", "fingerprint", "project_path", "write_baseline", "load_baseline", "apply_baseline",
           "BaselineError", "FINGERPRINT_KEY"]

VERSION = 2
# The name of the fingerprint in SARIF's partialFingerprints.
FINGERPRINT_KEY = "codeparseContent/v1"
_STABLE_ARGS = ("global_name", "name", "operator", "ref", "reason")


class BaselineError(ValueError):
    """The baseline file cannot be read; the message is one line."""


def _inner(entry: str) -> str:
    """An archive entry (or a pickle's entry) without the archive's top folder."""
    return entry.split("/", 1)[1] if "/" in entry else ""


def _record(finding: Any) -> Any:
    if isinstance(finding, dict):
        from ..contract.records import Record

        return Record(finding)
    return finding


def content(finding: Any) -> str:
    """What a finding is about, as text: the entry inside an archive (without its top
    folder), then the pickle entry and global it names, or the function and condition of a
    branch, or else the original source line or the finding's stable arguments."""
    finding = _record(finding)
    args = finding.args or {}
    parts = [_inner(finding.path.split("!", 1)[1]) if "!" in finding.path else ""]
    if "global_name" in args:
        parts += [_inner(str(args.get("entry", ""))), str(args["global_name"])]
    elif "condition" in args:
        parts += [str(args.get("function", "")), str(args["condition"])]
    elif finding.origin is not None:
        parts.append(f"{Path(finding.origin.path).name}:{finding.origin.line}")
    else:
        parts += [f"{k}={args[k]}" for k in _STABLE_ARGS if k in args]
    return " | ".join(p for p in parts if p)


def digest(finding: Any) -> str:
    """The content fingerprint: 16 hex digits of SHA-256 over the code and :func:`content`."""
    finding = _record(finding)
    return sha256(f"{finding.code}\0{content(finding)}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


def project_path(path: str, root: Optional[str | os.PathLike] = None) -> str:
    """The file of a finding's path (before ``!``), relative to ``root`` (default: the
    working directory) with ``/`` separators; a file outside it keeps its absolute path."""
    file = path.split("!", 1)[0]
    if file == "-":
        return file
    base = os.path.abspath(root if root is not None else os.getcwd())
    full = os.path.abspath(file)
    relative = os.path.relpath(full, base) if os.path.splitdrive(full)[0] == os.path.splitdrive(base)[0] else full
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        relative = full
    return relative.replace(os.sep, "/")


def fingerprint(finding: Any, root: Optional[str | os.PathLike] = None) -> tuple[str, str, str]:
    """What a finding (a model, or plain data) is recorded as: ``(path, code, digest)``."""
    finding = _record(finding)
    return (project_path(finding.path, root), finding.code, digest(finding))


def write_baseline(report: Any, path: str, root: Optional[str | os.PathLike] = None) -> int:
    """Record every finding of ``report``; returns how many."""
    counts: Counter = Counter()
    described: dict[tuple, str] = {}
    for item in report.inputs:
        for f in item.findings:
            key = fingerprint(f, root)
            counts[key] += 1
            described[key] = content(f)
    rows = [{"path": p, "code": c, "fingerprint": d, "content": described[(p, c, d)], "count": n}
            for (p, c, d), n in sorted(counts.items())]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({"version": VERSION, "tool": "codeparse", "findings": rows}, indent=1,
                                     ensure_ascii=False) + "\n", encoding="utf-8")
    return sum(counts.values())


def load_baseline(path: str) -> Counter:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("version") != VERSION:
            raise BaselineError(f"{path}: a baseline of format {data.get('version')!r}, this codeparse reads "
                                f"{VERSION}; write it again with --write-baseline")
        return Counter({(r["path"], r["code"], r["fingerprint"]): int(r.get("count", 1)) for r in data["findings"]})
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the baseline: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        if isinstance(exc, BaselineError):
            raise
        raise BaselineError(f"{path}: not a codeparse baseline ({type(exc).__name__}: {exc})") from None


def apply_baseline(findings: Iterable[Any], remaining: Counter, root: Optional[str | os.PathLike] = None) -> list[Any]:
    """The findings not absorbed by ``remaining`` (which is used up as they are matched)."""
    kept = []
    for finding in findings:
        key = fingerprint(finding, root)
        if remaining.get(key, 0) > 0:
            remaining[key] -= 1
            continue
        kept.append(finding)
    return kept
