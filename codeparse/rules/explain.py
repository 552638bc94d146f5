"""``codeparse rule CODE``: what a finding code means, why it matters for trace and export,
how to fix it, and an example; ``docs/rules.md`` is the same text for every code.

The explanations are data (``grammars/rules.toml``); the code, name, severity and message
template come from :mod:`codeparse.contract.codes`.  A code without an entry gets its group's text.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from ..contract.codes import CODES

__all__ = ["explain", "render_text", "render_markdown", "render_json", "MARKDOWN_COMMAND"]

MARKDOWN_COMMAND = "codeparse rule --all --output-format markdown -o docs/rules.md"


@functools.cache
def _table() -> dict[str, Any]:
    from ..grammar.engine import load_data_table

    return load_data_table("rules.toml")


def explain(code: str) -> dict[str, str]:
    """Everything said about ``code`` (KeyError when it is no code)."""
    row = CODES[code.upper()]
    table = _table()
    entry = table.get(row.code, {})
    group = table["groups"].get(row.code[:3], "")
    return {
        "code": row.code,
        "name": row.name,
        "severity": row.severity,
        "message": row.template,
        "why": entry.get("why", group),
        "fix": entry.get("fix", "See the message."),
        "example": entry.get("example", ""),
        "anchor": row.code.lower(),
    }


def render_text(code: str) -> str:
    e = explain(code)
    lines = [f"{e['code']} {e['name']} ({e['severity']})", "", f"  message  {e['message']}", "",
             f"  why      {e['why']}", "", f"  fix      {e['fix']}"]
    if e["example"]:
        lines += ["", "  example"] + [f"    {line}" for line in e["example"].splitlines()]
    return "\n".join(lines) + "\n"


def render_markdown(codes: list[str]) -> str:
    out = ["# Finding codes", "",
           "Every code `codeparse` reports, one section each (`codeparse rule CODE` prints the same text).",
           f"This page is generated: `{MARKDOWN_COMMAND}`.", ""]
    for code in codes:
        e = explain(code)
        out += [f'<a id="{e["anchor"]}"></a>', "", f"## {e['code']}", "",
                f"`{e['name']}`, {e['severity']}: {e['message'].replace('|', '&#124;')}", "",
                f"**Why it matters.** {e['why']}", "", f"**How to fix.** {e['fix']}", ""]
        if e["example"]:
            out += ["Example:", "", "```", e["example"], "```", ""]
    return "\n".join(out)


def render_json(codes: list[str]) -> str:
    return json.dumps([explain(c) for c in codes], indent=2, ensure_ascii=False)
