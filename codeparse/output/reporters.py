"""Line-oriented reporters of a check :class:`~codeparse.contract.check.Report`: ``concise``,
``github`` and ``--statistics``, and the place a finding is shown at.

Where a finding points (:func:`location`): the original Python source line recorded in
the archive's ``.debug_pkl`` when that file lies under the source root (default: the
working directory) and exists there, as a path relative to it; otherwise the archive
entry (``model.pt!model/code/__torch__.py``) and its line and column; a finding about a
whole file points at line 1, column 1 of that file.  SARIF uses the same rule
(:mod:`codeparse.sarif`).

``github`` and SARIF name files of the repository only (:func:`repository_place`): a
finding inside an archive whose source is not under the source root points at the archive
file, and its message says where inside (``(at model/code/__torch__.py:15:5)``).

``concise``: ``path:line:col: CODE message``, one finding per line.
``github``: GitHub Actions workflow commands, ``::error file=…,line=…,col=…,title=CODE::message``
(``info`` findings become ``notice``), escaped as the runner expects (``%``, CR, LF in the
message; also ``:`` and ``,`` in properties).

Every string from the input passes :func:`codeparse.output.escaping.for_text` in ``concise``.
Findings in torch's own library code (``Finding.library``) are summarised in one line
unless ``include_library``.  A clean file is silent: the info finding that only says what
it is (CP323-CP325) is not printed (JSON, SARIF and ``--statistics`` keep it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Optional, TextIO

from ..contract.codes import FILE_KIND_CODES
from .escaping import for_text

__all__ = ["Location", "location", "Place", "repository_place", "repository_file", "shown", "render_concise",
           "render_github", "render_statistics", "statistics", "library_summary", "summarised", "github_escape_data",
           "github_escape_property"]

_GITHUB_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


class Location(NamedTuple):
    path: str
    line: int
    column: int
    end_line: Optional[int]
    end_column: Optional[int]
    from_origin: bool  # True: the original source file, relative to the source root


def _under(path: str, root: Path) -> Optional[str]:
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = candidate.resolve()
        relative = resolved.relative_to(root.resolve())
    except (OSError, ValueError, RuntimeError):
        return None
    return relative.as_posix() if resolved.is_file() else None


def location(finding: Any, source_root: Optional[str | os.PathLike] = None, memo: Optional[dict] = None) -> Location:
    """Where to show ``finding`` (see the module docs).  ``memo``: a dict kept over the
    findings of one report, so that each original file is looked up once, not once per
    finding (findings share a few files)."""
    root = Path(source_root) if source_root is not None else Path.cwd()
    if finding.origin is not None:
        key = (finding.origin.path, root)
        if memo is not None and key in memo:
            relative = memo[key]
        else:
            relative = _under(finding.origin.path, root)
            if memo is not None:
                memo[key] = relative
        if relative is not None:
            return Location(relative, max(finding.origin.line, 1), 1, None, None, True)
    span = finding.span
    if span is None:
        return Location(finding.path, 1, 1, None, None, False)
    return Location(finding.path, span.line, span.column, span.end_line, span.end_column, False)


_DECIDING = frozenset({"CP401", "CP402", "CP405"})


def summarised(finding: Any) -> bool:
    """In torch's library code and summarised in text output: every library finding but an
    export blocker reached on every call (an error CP401/CP402/CP405), which decides a
    ``blocked`` verdict and so is always shown."""
    if not getattr(finding, "library", False):
        return False
    return not (finding.code in _DECIDING and finding.severity == "error")


def shown(findings: Iterable[Any], include_library: bool) -> list[Any]:
    """The findings a line format prints: not a clean file's kind (CP323-CP325), and
    summarised library findings only with ``include_library``."""
    return [f for f in findings if f.code not in FILE_KIND_CODES and (include_library or not summarised(f))]


class Place(NamedTuple):
    """Where GitHub and SARIF show a finding: a file of the repository (``line`` None: the
    whole file), and what the message adds about the place inside an archive."""

    path: str
    line: Optional[int]
    column: Optional[int]
    end_column: Optional[int]
    note: str
    from_origin: bool


def repository_place(finding: Any, source_root: Optional[str | os.PathLike] = None,
                     memo: Optional[dict] = None) -> Place:
    """A place that is a file of the repository: the original source line when the
    model's source lies under the source root (the archive entry goes to the note), else
    the archive file itself, the entry and its line and column in the note (with the
    original source named, if one is recorded); a file's own finding is the file."""
    where = location(finding, source_root, memo)
    span = finding.span
    entry = f"{finding.path}:{span.line}" if span is not None else finding.path
    if where.from_origin:
        return Place(where.path, where.line, 1, None, f" (in {entry})", True)
    if "!" not in finding.path:
        end = where.end_column if where.end_line is not None and where.end_line == where.line else None
        return Place(where.path, where.line, where.column, end, "", False)
    archive, inner = finding.path.split("!", 1)
    note = f"{inner}:{span.line}:{span.column}" if span is not None else inner
    if finding.origin is not None:
        note += f"; source {finding.origin.path}:{finding.origin.line}"
    return Place(archive, None, None, None, f" (at {note})", False)


def repository_file(path: str, source_root: Optional[str | os.PathLike] = None,
                    memo: Optional[dict] = None) -> Optional[str]:
    """``path`` relative to the source root when it is a file there (an archive entry,
    ``<string>`` or a file elsewhere: None)."""
    if "!" in path:
        return None
    root = Path(source_root) if source_root is not None else Path.cwd()
    key = (path, root)
    if memo is not None and key in memo:
        return memo[key]
    found = _under(path, root)
    if memo is not None:
        memo[key] = found
    return found


def _shown(report: Any, include_library: bool) -> Iterable[Any]:
    for item in report.inputs:
        yield from shown(item.findings, include_library)


def library_summary(report: Any) -> Optional[str]:
    """One line for the findings in torch's library code, or None when there are none."""
    hidden = [f for item in report.inputs for f in item.findings if summarised(f)]
    if not hidden:
        return None
    codes: dict[str, int] = {}
    for f in hidden:
        codes[f.code] = codes.get(f.code, 0) + 1
    listed = ", ".join(f"{code} ×{n}" for code, n in sorted(codes.items()))
    return f"{len(hidden)} finding(s) in torch's own library code not shown ({listed}); --include-library shows them"


def render_concise(report: Any, out: TextIO, source_root: Optional[str] = None, include_library: bool = False,
                   quiet: bool = False) -> None:
    memo: dict = {}
    for finding in _shown(report, include_library):
        where = location(finding, source_root, memo)
        out.write(f"{for_text(where.path)}:{where.line}:{where.column}: {finding.code} {for_text(finding.message)}\n")
    if not quiet:
        summary = library_summary(report) if not include_library else None
        if summary:
            out.write(summary + "\n")


def github_escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_escape_property(text: str) -> str:
    return github_escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(report: Any, out: TextIO, source_root: Optional[str] = None, include_library: bool = False,
                  quiet: bool = False) -> None:
    memo: dict = {}
    for finding in _shown(report, include_library):
        where = repository_place(finding, source_root, memo)
        props = [f"file={github_escape_property(where.path)}"]
        if where.line is not None:
            props += [f"line={where.line}", f"col={where.column}"]
        if where.end_column:
            props.append(f"endColumn={where.end_column}")
        props.append(f"title={github_escape_property(finding.code + ' ' + finding.name)}")
        message = finding.message + where.note
        out.write(f"::{_GITHUB_LEVEL[finding.severity]} {','.join(props)}::{github_escape_data(message)}\n")
    if not quiet:
        summary = library_summary(report) if not include_library else None
        if summary:
            out.write(f"::notice title=codeparse::{github_escape_data(summary)}\n")


def statistics(report: Any) -> list[dict[str, Any]]:
    """Selected findings counted per code, most frequent first."""
    from ..contract.codes import CODES

    counts: dict[str, int] = {}
    for item in report.inputs:
        for f in item.findings:
            counts[f.code] = counts.get(f.code, 0) + 1
    rows = [{"code": code, "name": CODES[code].name if code in CODES else "", "count": n,
             "severity": CODES[code].severity if code in CODES else ""} for code, n in counts.items()]
    return sorted(rows, key=lambda r: (-r["count"], r["code"]))


def render_statistics(report: Any, out: TextIO) -> None:
    for row in statistics(report):
        out.write(f"{row['count']:>7}  {row['code']}  {row['severity']:<8} {row['name']}\n")
