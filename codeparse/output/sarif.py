"""SARIF 2.1.0 output for code-scanning UIs: a :class:`Report` in, a JSON-ready dict out.

One run; the tool's rules are the rows of :mod:`codeparse.contract.codes` that the report
uses (id = code, name = snake_case name, default level from the severity, ``helpUri``
= the ``Documentation`` URL of ``[project.urls]`` + ``docs/rules.md#cp201``).  Each
finding is one result with ``level`` error / warning / note (info).

Locations are files the repository has (:func:`codeparse.output.reporters.repository_place`):
the original Python source line from the archive's ``.debug_pkl``, relative to the source
root (``--source-root``, default the working directory) when it lies under it; otherwise
the archive file itself, without a region, the entry, its line and column (and the
original source, when recorded) said in the message; a ``.code`` file with a region
(1-based lines and columns, end column exclusive, as in :class:`codeparse.contract.text.Span`);
a finding about a whole file has only the artifact.  Related locations are kept only
where they are repository files.  Findings in torch's library code are left out unless
``include_library`` (then they carry ``properties.library``).  ``partialFingerprints``
holds the content fingerprint a baseline records (:func:`codeparse.gate.baseline.digest`).

The tests validate this output against the OASIS schema
(``tests/data/sarif-schema-2.1.0.json``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional
from urllib.parse import quote

from ..contract.codes import CODES

if TYPE_CHECKING:  # a report is read by attribute: a model, or plain data through checkdata.Record
    from ..contract.check import Finding, Report

__all__ = ["SARIF_SCHEMA", "SARIF_VERSION", "to_sarif"]

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
_DOCS_FALLBACK = "https://github.com/codeparse/codeparse/blob/main/"


def documentation_url() -> str:
    """``[project.urls] Documentation``: from a checkout's pyproject.toml, else the installed metadata."""
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        with open(pyproject, "rb") as handle:
            url = tomllib.load(handle)["project"]["urls"]["Documentation"]
        if url:
            return str(url)
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        pass
    try:
        from importlib.metadata import metadata

        for entry in metadata("codeparse").get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip().lower() == "documentation":
                return url.strip()
    except Exception:  # noqa: BLE001 - not installed: the fallback
        pass
    return _DOCS_FALLBACK


def rule_help_uri(code: str) -> str:
    base = documentation_url()
    return f"{base}{'' if base.endswith('/') else '/'}docs/rules.md#{code.lower()}"


def _uri(path: str) -> str:
    # The name's own bytes, percent-encoded (a name that is not UTF-8 holds lone surrogates).
    return quote(path.replace("\\", "/").encode("utf-8", "surrogateescape"), safe="/!:._-~@+")


def _region(line: int, column: int, end_line: Optional[int], end_column: Optional[int],
            span: Any = None) -> dict[str, Any]:
    region: dict[str, Any] = {"startLine": max(line, 1), "startColumn": max(column, 1)}
    if end_line is not None:
        region["endLine"] = max(end_line, line)
        region["endColumn"] = max(end_column or 1, 1)
    if span is not None:
        region["charOffset"] = span.start
        region["charLength"] = max(span.end - span.start, 0)
    return region


def _result(finding: Finding, rule_index: int, source_root: Optional[str], memo: Optional[dict] = None) -> dict[str, Any]:
    from ..gate.baseline import FINGERPRINT_KEY, digest
    from .reporters import repository_file, repository_place

    where = repository_place(finding, source_root, memo)
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(where.path)}}
    if where.from_origin:
        physical["region"] = _region(where.line, 1, None, None)
    elif where.line is not None and finding.span is not None:  # a code file of the repository
        s = finding.span
        physical["region"] = _region(s.line, s.column, s.end_line, s.end_column, s)
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": _LEVEL[finding.severity],
        "message": {"text": finding.message + where.note},
        "locations": [{"physicalLocation": physical}],
        "partialFingerprints": {FINGERPRINT_KEY: digest(finding)},
    }
    properties: dict[str, Any] = {}
    if finding.args:
        properties["args"] = dict(finding.args)
    if finding.sources:
        properties["sources"] = [s.model_dump(mode="json") for s in finding.sources]
    if finding.library:
        properties["library"] = True
    if properties:
        result["properties"] = properties
    related_locations = []
    for r in finding.related:
        file = repository_file(r.path, source_root, memo)
        if file is None:  # an archive entry or a file outside the repository: not a location
            continue
        related_locations.append({
            "id": len(related_locations) + 1,
            "message": {"text": "decides it"},
            "physicalLocation": {
                "artifactLocation": {"uri": _uri(file)},
                "region": {"startLine": max(r.line, 1)},
            },
        })
    if related_locations:
        result["relatedLocations"] = related_locations
    return result


def to_sarif(report: Report, version: str = "unknown", source_root: Optional[str] = None,
             include_library: bool = False) -> dict[str, Any]:
    """The SARIF 2.1.0 log of a report (a dict, ready for ``json.dumps``): findings in
    torch's library code only with ``include_library``."""
    findings = [f for r in report.inputs for f in r.findings if include_library or not f.library]
    used = sorted({f.code for f in findings})
    index = {code: i for i, code in enumerate(used)}
    rules = []
    for code in used:
        row = CODES[code]
        rules.append({
            "id": code,
            "name": row.name,
            "shortDescription": {"text": row.name.replace("_", " ")},
            "fullDescription": {"text": row.template},
            "defaultConfiguration": {"level": _LEVEL[row.severity]},
            "helpUri": rule_help_uri(code),
        })
    memo: dict = {}  # each original file looked up once (reporters.location)
    results = [_result(f, index[f.code], source_root, memo) for f in findings]
    artifacts = [{"location": {"uri": _uri(r.path)}} for r in report.inputs]
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": {
                "name": "codeparse",
                "version": version,
                "informationUri": documentation_url(),
                "rules": rules,
            }},
            "artifacts": artifacts,
            "results": results,
            **({"properties": {"export": {r.path: r.export.model_dump(mode="json") for r in report.inputs
                                          if r.export is not None}}}
               if any(r.export is not None for r in report.inputs) else {}),
            "invocations": [{
                "executionSuccessful": report.exit_code != 2,
                "exitCode": report.exit_code,
            }],
        }],
    }
