"""MkDocs hook: the site's reference pages, generated at build time from the code.

    mkdocs build --strict          (mkdocs.yml names this file under ``hooks:``)

Nothing here is copied by hand into ``docs/``; every build writes these pages again:

* ``reference/rules/index.md`` and ``reference/rules/cpNNN.md``: one page per finding code,
  the text ``codeparse rule CODE`` prints (``grammars/rules.toml`` and the code table),
  with a table of every code on the index page;
* ``reference/cli.md``: every command's options, from the click commands (mkdocs-click);
* ``reference/api.md``: the public names (``codeparse.__all__``), each documented from its
  docstring by mkdocstrings at the module where it is defined, found by importing it;
* ``reference/schema.md`` and ``reference/schema/*.json``: the JSON Schema of each output
  model as ``codeparse schema --model NAME`` prints it.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The models whose JSON Schema the contract page shows, with what writes each.
SCHEMAS = [
    ("CodeFile", "`codeparse parse --format json` (an array of them) and `--format jsonl` (one a line)"),
    ("Report", "`codeparse check --output-format json`"),
    ("InputReport", "`codeparse check --output-format jsonl` (one a line)"),
    ("DiffReport", "`codeparse diff --format json`"),
]

# The sections of the API page: a public name goes to the first section whose test it passes.
API_SECTIONS = [
    ("Functions", lambda obj: callable(obj) and not isinstance(obj, type)),
    ("Errors", lambda obj: isinstance(obj, type) and issubclass(obj, Exception)),
    ("Models", lambda obj: isinstance(obj, type)),
]


def rule_pages() -> dict[str, str]:
    """``reference/rules/...`` path -> markdown: an index and one page per code."""
    from codeparse.rules.explain import explain

    codes = _codes()
    pages = {}
    rows = ["| code | name | severity | message |", "|---|---|---|---|"]
    for code, entry in codes.items():
        rule = explain(code)
        rows.append(f"| [`{code}`]({code.lower()}.md) | `{entry.name}` | {entry.severity} | "
                    f"{_cell(rule['message'])} |")
        pages[f"reference/rules/{code.lower()}.md"] = rule_page(rule)
    pages["reference/rules/index.md"] = "\n".join([
        "# Finding codes", "",
        "Every code codeparse reports: a stable code, a snake_case name, a severity and a message "
        "template whose arguments each finding keeps in `args`. Each code has its own page, the text "
        "`codeparse rule CODE` prints (why it matters for trace and export, how to fix it, an "
        "example). The codes are grouped by number: CP1xx reading text, CP2xx conditions for a "
        "trace and trace versus script, CP3xx archives, model files, pickles and limits, CP4xx "
        "`--target export`.", "",
        "This page and the pages of the codes are generated when the site is built, from "
        "`grammars/rules.toml` and the code table; `docs/rules.md` in the repository (the target "
        "of SARIF's `helpUri`) is the same text on one page.", "",
        *rows, "",
    ])
    return pages


def rule_page(rule: dict[str, str]) -> str:
    """One code's page: the fields ``codeparse rule CODE`` prints, as markdown."""
    lines = [
        f"# {rule['code']} `{rule['name']}`", "",
        f"**{rule['severity']}** · [all codes](index.md) · "
        f"`codeparse rule {rule['code']}` prints this page's text", "",
        "**Message.** " + _text(rule["message"]).replace("|", "&#124;"), "",
        "## Why it matters", "", _text(rule["why"]), "",
        "## How to fix", "", _text(rule["fix"]), "",
    ]
    if rule["example"]:
        lines += ["## Example", "", "```", rule["example"], "```", ""]
    return "\n".join(lines)


def cli_page() -> str:
    """The CLI reference: mkdocs-click over the click group, wherever it is defined."""
    module, name = _cli_group()
    return "\n".join([
        "# Command line", "",
        "Every command and option, generated from the click commands when the site is built. "
        "Exit codes, everywhere: 0 clean, 1 findings at or above the failing severity (or "
        "diagnostics), 2 an input that cannot be read or a usage error; never a traceback.", "",
        "::: mkdocs-click",
        f"    :module: {module}",
        f"    :command: {name}",
        "    :prog_name: codeparse",
        "    :depth: 1",
        "    :style: table",
        "    :list_subcommands: false",
        "",
    ])


def api_page() -> str:
    """The Python API reference: one mkdocstrings block per name of ``codeparse.__all__``."""
    import codeparse

    sections: dict[str, list[str]] = {title: [] for title, _ in API_SECTIONS}
    for name in codeparse.__all__:
        obj = getattr(codeparse, name)
        module = getattr(obj, "__module__", None)
        if module is None or not (callable(obj) or isinstance(obj, type)):
            continue  # __version__
        title = next(t for t, test in API_SECTIONS if test(obj))
        sections[title].append(f"::: {module}.{obj.__qualname__}\n    options:\n"
                               f"      show_root_heading: true\n      show_root_full_path: false\n"
                               f"      heading_level: 3\n")
    lines = [
        "# Python API", "",
        "The public names of `codeparse` (`codeparse.__all__`), documented from their docstrings "
        "when the site is built. `import codeparse` loads each name on first use, so the package "
        "starts fast; the path under each heading is the module that defines it. Every model is "
        "a frozen pydantic model; [JSON contract](json.md) has their fields and the JSON Schema.",
        "",
        f"`codeparse.__version__` is `{codeparse.__version__}`.", "",
    ]
    for title, blocks in sections.items():
        if blocks:
            lines += [f"## {title}", "", *blocks]
    return "\n".join(lines)


def schema_files() -> dict[str, str]:
    """``reference/schema/NAME.json`` -> the schema, and ``reference/schema.md`` showing them."""
    files, lines = {}, [
        "# JSON Schema", "",
        "The JSON Schema of each output, as `codeparse schema --model NAME` prints it, generated "
        "when the site is built. Load output back with the models (`CodeFile.model_validate_json`); "
        "unknown fields are rejected (`extra=\"forbid\"`). [JSON contract](json.md) explains the "
        "fields.", "",
    ]
    for model, where in SCHEMAS:
        text = _schema(model)
        files[f"reference/schema/{model}.json"] = text
        lines += [f"## {model}", "", f"Written by {where}. [Download](schema/{model}.json).", "",
                  f'??? note "`codeparse schema --model {model}`"', "",
                  "    ```json", *("    " + line if line else "" for line in text.splitlines()),
                  "    ```", ""]
    files["reference/schema.md"] = "\n".join(lines)
    return files


def generated() -> dict[str, str]:
    """Every generated file of the site: path under ``docs/`` -> text."""
    return {**rule_pages(), "reference/cli.md": cli_page(), "reference/api.md": api_page(),
            **schema_files()}


# ------------------------------------------------------------------------ mkdocs hook


def on_files(files, config):
    from mkdocs.structure.files import File

    for path, text in generated().items():
        files.append(File.generated(config, path, content=text))
    return files


def on_page_content(html, page, config, files):
    """Tidy what the generators write: docstrings' Sphinx roles (``:class:`X```) shown as
    code, and the default mkdocs-click prints for an option without one (``Sentinel.UNSET``,
    click's marker for "no default") left empty."""
    if page.file.src_uri == "reference/api.md":
        html = _ROLE.sub(r"\g<code>", html)
    if page.file.src_uri == "reference/cli.md":
        html = html.replace("<code>Sentinel.UNSET</code>", "")
    return html


# ------------------------------------------------------------------------ helpers

_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):(?P<code><code>)~?")


def _codes():
    from codeparse.contract.codes import CODES

    return CODES


def _cli_main():
    """The console script's function, as ``[project.scripts]`` names it (``module:function``)."""
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    module, _, function = scripts["codeparse"].partition(":")
    return getattr(importlib.import_module(module), function)


def _cli_group():
    """(module, attribute) of the click group the CLI reference documents: the console
    script's group with every command registered (``codeparse.cli.reference.cli``; the
    console script's module registers most commands only when one is asked for, and
    mkdocs-click reads a group's ``commands`` whole)."""
    import click

    module, name = "codeparse.cli.reference", "cli"
    group = getattr(importlib.import_module(module), name)
    console = sys.modules[_cli_main().__module__]
    if not isinstance(group, click.Group) or not any(obj is group for obj in vars(console).values()):
        raise RuntimeError(f"{module}.{name} is not the click group of {console.__name__}")
    return module, name


def _schema(model: str) -> str:
    import io
    from contextlib import redirect_stdout

    main = _cli_main()
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["schema", "--model", model])
    if code != 0:
        raise RuntimeError(f"codeparse schema --model {model} exited {code}")
    json.loads(out.getvalue())
    return out.getvalue()


def _cell(text: str) -> str:
    return _text(text).replace("|", "\\|").replace("\n", " ")


def _text(text: str) -> str:
    """Markdown for a text from the rule table: a brace outside a code span is written as
    its character reference, so that a message's ``{placeholder}`` stays text (the
    attr_list extension would read a trailing ``{...}`` as attributes and drop it)."""
    parts = text.split("`")
    return "`".join(p if i % 2 else p.replace("{", "&#123;") for i, p in enumerate(parts))
