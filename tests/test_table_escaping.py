"""Every table renderer shows input text as written.

Each renderer (``check``, ``diff``, ``capture``, ``ops``, ``parse``) is fed the real
results of the fixture inputs, then the same results with hostile strings appended to
every text field, and its output is compared with the JSON text of the same model: every
string the renderer shows must appear exactly, after :func:`codeparse.output.escaping.for_text`
(controls shown as escapes, markup never interpreted).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Callable, Iterable

import pytest

from codeparse.trace.capture import CaptureReport
from codeparse.gate.run import check
from codeparse.cli.check import render_table as _render_table
from codeparse.cli.diff import render_capture_table, render_diff_table, render_ops_table
from codeparse.output.escaping import for_rich, for_text
from codeparse.contract.text import CodeFile
from codeparse.contract.diff import DiffReport, OperatorUse
from codeparse.contract.check import Policy, Report
from codeparse.infer.operators import inventory
from codeparse.output.render import render_code_table, short_calls
from codeparse.trace.compare import diff_paths
from codeparse.trace.sides import load_side

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
WIDE = 20_000  # no cell folds: each shown string stays on one line

# Markup-like text, bracketed types, controls, bidi overrides: each must print as written.
HOSTILE = [
    "depends on dim (Optional[int])",
    "torch.ne([h, w], _8)",
    '"[/bold]"',
    "[bold red]loud[/bold red] [link=https://example.com]x[/link]",
    "\x1b[2J\x1b[31mred",
    "two\nlines\r\tand a tab",
    "\u202eevil\u2066",
    "[/]",
    "\\[escaped] [",
]
# Fields whose values are closed sets (Literal) or numbers as strings: left as they are.
CLOSED = {"code", "name", "severity", "kind", "taken", "reason", "grammar", "category", "role",
          "node", "fail_on", "layout", "type", "source", "executions", "target", "verdict", "passes"}


def hostile(data: Any, counter: list[int] | None = None, key: str = "") -> Any:
    """``data`` (JSON) with a hostile string appended to every open text field."""
    counter = counter if counter is not None else [0]
    if isinstance(data, dict):
        return {k: hostile(v, counter, k) for k, v in data.items()}
    if isinstance(data, list):
        return [hostile(v, counter, key) for v in data]
    if isinstance(data, str) and key not in CLOSED:
        counter[0] += 1
        return f"{data} {HOSTILE[counter[0] % len(HOSTILE)]}"
    return data


def render_table(report: Report, out: io.StringIO, color: bool, width: int) -> None:
    """The check table with library findings listed one by one (they are summarised by default)."""
    _render_table(report, out, color=color, width=width, include_library=True)


def render(fn: Callable[..., None], *args: Any) -> str:
    out = io.StringIO()
    fn(*args, out, color=False, width=WIDE)
    return out.getvalue()


def assert_shown(output: str, strings: Iterable[str]) -> int:
    count = 0
    for s in strings:
        shown = for_text(s)
        assert shown in output, f"{s!r} is not shown as {shown!r}"
        count += 1
    assert "\x1b" not in output and "\u202e" not in output
    return count


# ----------------------------------------------------------------------- check


@pytest.fixture(scope="module")
def check_report() -> Report:
    return check([str(FIXTURES / "archives")], Policy())


def check_strings(report: Report) -> Iterable[str]:
    for item in report.inputs:
        yield item.path
        for f in item.findings:
            yield f.message
            yield f.path[len(item.path) + 1:] if f.path.startswith(item.path + "!") else f.path
            if f.origin is not None:
                yield f"{f.origin.path}:{f.origin.line}"


def test_check_table_shows_every_finding_of_the_fixture_archives(check_report):
    output = render(render_table, check_report)
    shown = assert_shown(output, check_strings(check_report))
    assert shown > 500
    assert "Optional[int]" in output or "[" in output  # bracketed text survives


def test_check_table_with_hostile_strings(check_report):
    data = hostile(json.loads(check_report.model_dump_json()))
    report = Report.model_validate(data)
    output = render(render_table, report)
    assert_shown(output, check_strings(report))
    assert "depends on dim (Optional[int])" in output and "torch.ne([h, w], _8)" in output
    assert '"[/bold]"' in output and "[bold red]loud[/bold red]" in output


def test_markup_literal_in_a_real_condition_message():
    """A string literal like "[/bold]" in a condition printed to crash the check table."""
    from codeparse.gate.run import make_report
    from codeparse.contract.check import InputReport

    report = check([str(FIXTURES / "archives" / "custom_model.script.pt")], Policy(select=["CP201"]))
    item = report.inputs[0]
    data = json.loads(item.model_dump_json())
    data["findings"][0]["message"] = 'branch on an argument: `torch.eq(mode, "[/bold]")` depends on mode (str)'
    out = render(render_table, make_report([InputReport.model_validate(data)], Policy()))
    assert 'torch.eq(mode, "[/bold]")' in out


# ------------------------------------------------------------------------ parse


def parse_strings(cf: CodeFile) -> Iterable[str]:
    yield cf.path
    for fn in [m for c in cf.classes for m in c.methods] + list(cf.functions):
        for if_ in fn.ifs:
            yield if_.condition.text
            yield if_.condition.resolved
            for s in if_.condition.sources:
                yield f"{s.ref} ({s.kind}, {s.type})"
            yield from (c for c in short_calls(if_.then_calls) if "more" not in c)


def parse_inputs() -> list[CodeFile]:
    from codeparse import parse_file

    paths = sorted((FIXTURES / "text").glob("*/script.code"))
    return [parse_file(p) for p in paths]


@pytest.fixture(scope="module")
def parsed() -> list[CodeFile]:
    return parse_inputs()


def test_parse_table_real_and_hostile(parsed):
    total = 0
    for cf in parsed:
        for variant in (cf, CodeFile.model_validate(hostile(json.loads(cf.model_dump_json())))):
            total += assert_shown(render(render_code_table, variant), parse_strings(variant))
    assert total > 400


# ------------------------------------------------------------------ diff, capture


@pytest.fixture(scope="module")
def diffs() -> list[DiffReport]:
    cases = sorted(p.name for p in (FIXTURES / "text").glob("known_*"))
    cases.append("custom_model")
    return [diff_paths(str(FIXTURES / "text" / c / "script.code"), str(FIXTURES / "text" / c / "trace.code"))
            for c in cases]


def diff_strings(report: DiffReport) -> Iterable[str]:
    yield report.script
    yield report.trace
    for i in report.ifs:
        yield i.resolved or i.condition  # the table shows the resolved condition
        yield i.module
    for c in report.lost_calls:
        yield c.call
        yield c.inside or "-"
    for lp in report.unrolled_loops:
        yield lp.loop
    for b in report.baked_constants:
        yield from (b.operator, b.argument, b.script, b.trace)


def test_diff_table_real_and_hostile(diffs):
    total = 0
    for report in diffs:
        for variant in (report, DiffReport.model_validate(hostile(json.loads(report.model_dump_json())))):
            total += assert_shown(render(render_diff_table, variant), diff_strings(variant))
    assert total > 100


def test_capture_table_hostile(diffs):
    data = {
        "module": "__main__.Model[/bold]",
        "script_error": {"message": "Expected a value of type 'List[int]' [/]\x1b[31m", "file": "m[1].py", "line": 3},
        "tracer_warnings": [{"category": "TracerWarning", "message": "Converting a tensor [h, w] to a Python boolean",
                             "file": "models.py", "line": 65}],
        "diff": json.loads(diffs[-1].model_dump_json()),
        "saved": ["out/[x]/script.pt"],
    }
    report = CaptureReport.model_validate(hostile(data))
    out = render(render_capture_table, report)
    strings = [report.module, report.script_error.message, report.tracer_warnings[0].message, *report.saved]
    assert_shown(out, [*strings, *diff_strings(report.diff)])


# -------------------------------------------------------------------------- ops


def test_ops_table_real_and_hostile():
    files = [u.code_file for u in load_side(str(FIXTURES / "archives" / "custom_model.script.pt")).units]
    uses, _ = inventory(files, "table")
    for variant in (uses, [OperatorUse.model_validate(hostile(json.loads(u.model_dump_json()))) for u in uses]):
        out = render(render_ops_table, variant)
        strings = [s for u in variant for s in (u.operator, *u.callees, *u.schemas, *u.locations[:3])]
        assert_shown(out, strings)


def test_for_rich_escapes_markup_and_controls():
    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, width=200, color_system=None).print(for_rich('x "[/bold]" [h, w]\x1b[0m'))
    assert buf.getvalue().rstrip("\n") == 'x "[/bold]" [h, w]\\x1b[0m'
