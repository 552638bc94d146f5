"""SARIF 2.1.0 output for code-scanning UIs: a :class:`Report` in, a JSON-ready dict out.

One run; the tool's rules are the rows of :mod:`codeparse.codes` that the report
uses (id = code, name = snake_case name, default level from the severity).  Each
finding is one result with ``level`` error / warning / note (info).  A finding in
code text has a physical location with a region (1-based lines and columns, end
column exclusive, as in :class:`codeparse.models.Span`); a finding about a whole
file or archive has only the artifact.  Archive entries are named
``archive!entry``.  When debug info maps the line back to the original Python
source, that place is a ``relatedLocations`` entry ("original source").

The tests validate this output against the OASIS schema
(``tests/data/sarif-schema-2.1.0.json``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from .codes import CODES
from .models import Finding, Report

__all__ = ["SARIF_SCHEMA", "SARIF_VERSION", "to_sarif"]

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
_HELP = "https://github.com/codeparse/codeparse/blob/main/docs/findings.md"


def _uri(path: str) -> str:
    return quote(path.replace("\\", "/"), safe="/!:._-~@+")


def _location(finding: Finding) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(finding.path)}}
    if finding.span is not None:
        s = finding.span
        physical["region"] = {
            "startLine": s.line,
            "startColumn": s.column,
            "endLine": max(s.end_line, s.line),
            "endColumn": max(s.end_column, 1),
            "charOffset": s.start,
            "charLength": max(s.end - s.start, 0),
        }
    return {"physicalLocation": physical}


def _result(finding: Finding, rule_index: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": _LEVEL[finding.severity],
        "message": {"text": finding.message},
        "locations": [_location(finding)],
    }
    if finding.args:
        result["properties"] = {"args": dict(finding.args)}
    if finding.sources:
        result.setdefault("properties", {})["sources"] = [s.model_dump(mode="json") for s in finding.sources]
    related = []
    if finding.origin is not None:
        related.append({
            "id": 1,
            "message": {"text": "original source"},
            "physicalLocation": {
                "artifactLocation": {"uri": _uri(finding.origin.path)},
                "region": {"startLine": max(finding.origin.line, 1)},
            },
        })
    for r in finding.related:
        related.append({
            "id": len(related) + 1,
            "message": {"text": "decides it"},
            "physicalLocation": {
                "artifactLocation": {"uri": _uri(r.path)},
                "region": {"startLine": max(r.line, 1)},
            },
        })
    if related:
        result["relatedLocations"] = related
    return result


def to_sarif(report: Report, version: str = "unknown") -> dict[str, Any]:
    """The SARIF 2.1.0 log of a report (a dict, ready for ``json.dumps``)."""
    used = sorted({f.code for r in report.inputs for f in r.findings})
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
            "helpUri": f"{_HELP}#{code.lower()}",
        })
    results = [_result(f, index[f.code]) for r in report.inputs for f in r.findings]
    artifacts = [{"location": {"uri": _uri(r.path)}} for r in report.inputs]
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": {
                "name": "codeparse",
                "version": version,
                "informationUri": _HELP,
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
