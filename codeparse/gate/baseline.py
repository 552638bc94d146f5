"""Baselines: adopt codeparse in a repository that already has findings, and fail only on new ones.

``codeparse check models/ --write-baseline codeparse-baseline.json`` records every finding
reported now; ``--baseline codeparse-baseline.json`` (or ``baseline = "..."`` in
``[tool.codeparse]``) drops those again, and reports only what is new.

A finding's fingerprint is ``(code, entry, function, anchor)``: the archive entry without
the archive's top folder (``code/__torch__.py``: re-saving the model under another name
changes the folder, not the code), the function holding it, and the resolved condition
(``torch.eq(self.branch_testing, True)``) or else the original source ``file:line`` or else
the finding's stable arguments (``os.system`` for a pickle global).  Never the message
text, which may be reworded.  Identical fingerprints are counted: a baseline entry
absorbs as many findings as it recorded.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

__all__ = ["fingerprint", "write_baseline", "load_baseline", "apply_baseline", "BaselineError"]

VERSION = 1
_STABLE_ARGS = ("global_name", "entry", "name", "operator", "ref", "reason")


class BaselineError(ValueError):
    """The baseline file cannot be read; the message is one line."""


def _entry(path: str) -> str:
    if "!" not in path:
        return Path(path).name
    entry = path.split("!", 1)[1]
    return entry.split("/", 1)[1] if "/" in entry else entry


def fingerprint(finding: Any) -> tuple[str, str, str, str]:
    """What a finding (a model, or plain data) is recorded as in a baseline."""
    if isinstance(finding, dict):
        from ..contract.records import Record

        finding = Record(finding)
    args = finding.args or {}
    if "condition" in args:
        anchor = args["condition"]
    elif finding.origin is not None:
        anchor = f"{Path(finding.origin.path).name}:{finding.origin.line}"
    else:
        anchor = " ".join(f"{k}={args[k]}" for k in _STABLE_ARGS if k in args)
    return (finding.code, _entry(finding.path), args.get("function", ""), anchor)


def write_baseline(report: Any, path: str) -> int:
    """Record every finding of ``report``; returns how many."""
    counts = Counter(fingerprint(f) for item in report.inputs for f in item.findings)
    rows = [{"code": c, "entry": e, "function": fn, "anchor": a, "count": n}
            for (c, e, fn, a), n in sorted(counts.items())]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({"version": VERSION, "tool": "codeparse", "findings": rows}, indent=1)
                          + "\n", encoding="utf-8")
    return sum(counts.values())


def load_baseline(path: str) -> Counter:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        rows = data["findings"]
        return Counter({(r["code"], r["entry"], r["function"], r["anchor"]): int(r.get("count", 1)) for r in rows})
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the baseline: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise BaselineError(f"{path}: not a codeparse baseline ({type(exc).__name__}: {exc})") from None


def apply_baseline(findings: Iterable[Any], remaining: Counter) -> list[Any]:
    """The findings not absorbed by ``remaining`` (which is used up as they are matched)."""
    kept = []
    for finding in findings:
        key = fingerprint(finding)
        if remaining.get(key, 0) > 0:
            remaining[key] -= 1
            continue
        kept.append(finding)
    return kept
