"""``check``: read archives and code files, collect coded findings, apply the policy.

The policy (:class:`codeparse.models.Policy`) comes from ``[tool.codeparse]`` in the
nearest ``pyproject.toml`` (searched upward from the working directory), then from
the command line, which wins::

    [tool.codeparse]
    select = ["CP1", "CP201", "CP3"]   # codes or prefixes reported; empty or absent: all
    ignore = ["CP205"]                 # never reported (wins over select)
    fail-on = "warning"                # error (default) | warning | info | never
    max-entries = 50000                # archive limits (see codeparse.archive)
    max-entry-bytes = 67108864
    max-total-bytes = 536870912
    max-ratio = 200

Severities: every finding has the severity of its row in :mod:`codeparse.codes`.  A
branch on tensor values (CP201) is a *warning*: by default (``fail-on = "error"``)
it is reported and the check still passes; ``fail-on = "warning"`` makes it fail.
Parse errors, unresolved references and archive limits are errors.

Exit code of a :class:`Report`: 2 if an input could not be read at all, else 1 if a
selected finding is at or above ``fail_on``, else 0.  Inputs are checked
independently, so ``jobs > 1`` (processes) gives the same report as one process.
"""

from __future__ import annotations

import os
import tomllib
from itertools import repeat
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

from .codes import CODES, diagnostic
from .models import Finding, InputReport, Policy, Report

__all__ = [
    "PolicyError",
    "SEVERITY_RANK",
    "load_policy",
    "policy_with",
    "selected",
    "expand_inputs",
    "check_input",
    "check",
    "CHECK_CODE_SUFFIXES",
]

SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
CHECK_CODE_SUFFIXES = (".code",)
_KEYS = {
    "select": "select", "ignore": "ignore", "fail-on": "fail_on", "fail_on": "fail_on",
    "max-entries": "max_entries", "max_entries": "max_entries",
    "max-entry-bytes": "max_entry_bytes", "max_entry_bytes": "max_entry_bytes",
    "max-total-bytes": "max_total_bytes", "max_total_bytes": "max_total_bytes",
    "max-ratio": "max_ratio", "max_ratio": "max_ratio",
}


class PolicyError(ValueError):
    """``[tool.codeparse]`` or an option is wrong; the message is one line."""


def find_pyproject(start: Optional[Path] = None) -> Optional[Path]:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_policy(pyproject: Optional[str | os.PathLike] = None, start: Optional[Path] = None) -> Policy:
    """The policy of ``[tool.codeparse]`` in ``pyproject`` (default: the nearest one upward)."""
    path = Path(pyproject) if pyproject is not None else find_pyproject(start)
    if path is None:
        return Policy()
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"{path}: not valid TOML: {exc}") from None
    table = data.get("tool", {}).get("codeparse", {})
    if not isinstance(table, dict):
        raise PolicyError(f"{path}: [tool.codeparse] is not a table")
    values: dict[str, Any] = {}
    for key, value in table.items():
        field = _KEYS.get(key)
        if field is None:
            known = ", ".join(sorted(k for k in _KEYS if "_" not in k))
            raise PolicyError(f"{path}: [tool.codeparse] has an unknown key {key!r}; known: {known}")
        values[field] = value
    return policy_with(Policy(), where=str(path), **values)


def _codes(values: Iterable[str], where: str) -> list[str]:
    out = []
    for raw in values:
        code = str(raw).strip().upper()
        if not code:
            continue
        if not any(c.startswith(code) for c in CODES):
            raise PolicyError(f"{where}: {raw!r} matches no finding code (see docs/findings.md)")
        out.append(code)
    return out


def policy_with(policy: Policy, where: str = "command line", **changes: Any) -> Policy:
    """``policy`` with the given fields replaced (None leaves a field alone), checked."""
    data = policy.model_dump()
    for key, value in changes.items():
        if value is None:
            continue
        if key in ("select", "ignore"):
            if isinstance(value, str):
                value = [v for v in value.split(",")]
            if not isinstance(value, (list, tuple)):
                raise PolicyError(f"{where}: {key} must be a list of codes")
            value = _codes(value, where)
        elif key == "fail_on":
            if value not in ("error", "warning", "info", "never"):
                raise PolicyError(f"{where}: fail-on must be error, warning, info or never, not {value!r}")
        elif key.startswith("max_"):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise PolicyError(f"{where}: {key.replace('_', '-')} must be a positive integer")
        else:
            raise PolicyError(f"{where}: unknown policy field {key!r}")
        data[key] = value
    return Policy.model_validate(data)


def selected(code: str, policy: Policy) -> bool:
    """Whether the policy reports ``code`` (ignore wins over select)."""
    if any(code.startswith(p) for p in policy.ignore):
        return False
    return not policy.select or any(code.startswith(p) for p in policy.select)


def fails(finding: Finding, policy: Policy) -> bool:
    return policy.fail_on != "never" and SEVERITY_RANK[finding.severity] >= SEVERITY_RANK[policy.fail_on]


# ------------------------------------------------------------------------- inputs


def _holds_code(path: Path) -> bool:
    """For archives met in a directory walk: a zip with a TorchScript code folder."""
    import zipfile

    from .archive import _entry_count, sniff

    try:
        kind = sniff(path)
        if kind == "pytorch1":
            return True
        if kind != "zip":
            return False
        with open(path, "rb") as handle:
            if _entry_count(handle) > Policy().max_entries:
                return True  # the check reports it (CP308) without parsing the directory
        with zipfile.ZipFile(path) as zf:
            return any("/code/" in n or "/.data/ts_code/" in n for n in zf.namelist())
    except Exception:  # noqa: BLE001 - damaged in any way: let the check report why
        return True


def expand_inputs(paths: Iterable[str]) -> list[tuple[str, Optional[str]]]:
    """``(path, problem)`` for every input: directories are walked recursively (sorted)
    for archives (by suffix, and holding TorchScript code) and ``.code`` files."""
    from .archive import ARCHIVE_SUFFIXES

    out: list[tuple[str, Optional[str]]] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = []
            for f in sorted(p.rglob("*")):
                if not f.is_file():
                    continue
                suffix = f.suffix.lower()
                if suffix in CHECK_CODE_SUFFIXES or (suffix in ARCHIVE_SUFFIXES and _holds_code(f)):
                    found.append((str(f), None))
            if not found:
                out.append((raw, "directory holds no archives or .code files"))
            out.extend(found)
        elif p.exists():
            out.append((raw, None))
        else:
            out.append((raw, "no such file or directory"))
    return out


def _whole(code: str, path: str, **args: Any) -> Finding:
    return Finding.model_validate(diagnostic(code, path, None, **args))


def check_input(path: str, policy: Policy, problem: Optional[str] = None) -> InputReport:
    """Check one archive or code file (never raises for bad input)."""
    from .api import InputError, parse_file
    from .archive import is_archive_path, read_archive
    from .resolve import condition_finding, to_finding

    if problem is not None:
        return InputReport(path=path, kind="code", readable=False,
                           findings=_filter([_whole("CP301", path, reason=problem)], policy, force=True))
    if is_archive_path(path):
        try:
            archive = read_archive(path, policy)
        except InputError as exc:
            finding = getattr(exc, "finding", None) or diagnostic(exc.code, path, None, reason=exc.message)
            return InputReport(path=path, kind="archive", readable=False,
                               findings=_filter([Finding.model_validate(finding)], policy, force=True))
        live = sum(1 for b in archive.branches if b.reachable)
        return InputReport(path=path, kind="archive", readable=True, files=len(archive.files), branches=live,
                           findings=_filter(archive.findings, policy))
    try:
        code_file = parse_file(path)
    except InputError as exc:
        return InputReport(path=path, kind="code", readable=False,
                           findings=_filter([_whole(exc.code, path, reason=exc.message)], policy, force=True))
    findings = [to_finding(d.model_dump()) for d in code_file.diagnostics]
    functions = [m for c in code_file.classes for m in c.methods] + list(code_file.functions)
    ifs = []
    for fn in functions:
        for if_ in fn.ifs:
            ifs.append(condition_finding(path, fn.qualified_name, if_))
    findings.extend(ifs)
    findings.sort(key=lambda f: f.span.start if f.span else -1)
    return InputReport(path=path, kind="code", readable=True, files=1, branches=len(ifs),
                       findings=_filter(findings, policy))


def _filter(findings: Iterable[Finding], policy: Policy, force: bool = False) -> list[Finding]:
    """The findings the policy selects; ``force`` keeps the reason an input is unreadable."""
    return [f for f in findings if force or selected(f.code, policy)]


def _check_safely(path: str, policy: Policy, problem: Optional[str]) -> InputReport:
    try:
        return check_input(path, policy, problem)
    except RecursionError:
        reason = "nested too deeply to read"
    except MemoryError:
        reason = "out of memory while reading"
    except Exception as exc:  # noqa: BLE001 - one input never stops the others, never a traceback
        reason = f"internal error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return InputReport(path=path, kind="code", readable=False,
                       findings=[_whole("CP301", path, reason=reason)])


def check(paths: Sequence[str | os.PathLike], policy: Optional[Policy] = None, jobs: int = 1,
          progress: Optional[Callable[[InputReport], None]] = None) -> Report:
    """Check archives, code files and directories of them; see the module docs.

    ``policy`` defaults to the nearest ``pyproject.toml``'s ``[tool.codeparse]``.
    ``jobs`` > 1 checks inputs in that many processes (same results, same order).
    ``progress`` is called once per input, in input order, as results arrive.
    """
    if policy is None:
        policy = load_policy()
    inputs = expand_inputs(os.fspath(p) for p in paths)
    reports: list[InputReport] = []
    if jobs > 1 and len(inputs) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=min(jobs, len(inputs))) as pool:
            results = pool.map(_check_safely, [p for p, _ in inputs], repeat(policy),
                               [problem for _, problem in inputs], chunksize=1)
            for report in results:
                reports.append(report)
                if progress is not None:
                    progress(report)
    else:
        for path, problem in inputs:
            report = _check_safely(path, policy, problem)
            reports.append(report)
            if progress is not None:
                progress(report)
    return make_report(reports, policy)


def make_report(reports: list[InputReport], policy: Policy) -> Report:
    counts = {"error": 0, "warning": 0, "info": 0}
    failing = False
    for report in reports:
        for finding in report.findings:
            counts[finding.severity] += 1
            failing = failing or fails(finding, policy)
    if any(not r.readable for r in reports):
        code = 2
    else:
        code = 1 if failing else 0
    return Report(inputs=reports, policy=policy, counts=counts, exit_code=code)
