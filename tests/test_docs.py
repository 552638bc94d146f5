"""The documentation site: it builds with `mkdocs build --strict`, its generated examples are
what the commands print, and the README stays a front page whose links lead somewhere."""

from __future__ import annotations

import os
import re
from html import unescape
import subprocess
import sys
from pathlib import Path

import pytest

from codeparse.cli.app import main
from codeparse.contract.codes import CODES
from codeparse.rules.explain import explain, render_text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import docs_examples  # noqa: E402
import docs_site  # noqa: E402

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_site_builds_strictly(tmp_path):
    """Broken links, pages missing from the nav, unknown anchors and unresolved API names
    are warnings, and --strict makes every warning fail the build."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    site = tmp_path / "site"
    for page in ["index.html", "ci/index.html", "export/index.html", "diff/index.html",
                 "security/index.html", "how-it-works/index.html", "benchmarks/index.html",
                 "reference/cli/index.html", "reference/api/index.html", "reference/schema/index.html"]:
        assert (site / page).is_file(), page
    for code in CODES:
        assert (site / "reference" / "rules" / code.lower() / "index.html").is_file(), code
    for code in ["CP102", "CP308", "CP401"]:  # each message's placeholders are shown as text
        html = unescape((site / "reference" / "rules" / code.lower() / "index.html").read_text(encoding="utf-8"))
        for placeholder in re.findall(r"\{\w+\}", explain(code)["message"]):
            assert placeholder in html, (code, placeholder)
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for command in ["parse", "check", "diff", "report", "rule", "schema"]:
        assert f"codeparse {command}" in cli, command
    assert "--target" in cli and "--output-format" in cli
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert "Parse TorchScript" in api or "parse_text" in api


def test_one_rule_page_per_code_as_codeparse_rule_prints_it(capsys):
    pages = docs_site.rule_pages()
    assert set(pages) == {f"reference/rules/{c.lower()}.md" for c in CODES} | {"reference/rules/index.md"}
    for code in CODES:
        page = pages[f"reference/rules/{code.lower()}.md"]
        assert main(["rule", code]) == 0
        printed = capsys.readouterr().out
        assert printed == render_text(code)
        rule = explain(code)
        for field in ("name", "severity", "example"):
            assert rule[field] in page, (code, field)
        for field in ("why", "fix"):
            assert docs_site._text(rule[field]) in page, (code, field)
        assert all(rule[field] in printed for field in ("name", "severity", "why", "fix")), code
        assert "\n".join(f"    {line}" for line in rule["example"].splitlines()) in printed, code
        assert docs_site._text(rule["message"]).replace("|", "&#124;") in page, code
        assert rule["message"] in printed, code
        assert f"[`{code}`]({code.lower()}.md)" in pages["reference/rules/index.md"]


def test_api_reference_documents_every_public_name():
    import codeparse

    page = docs_site.api_page()
    for name in codeparse.__all__:
        if name != "__version__":
            assert re.search(rf"^::: [\w.]+\.{name}$", page, flags=re.M), name


def test_schema_page_is_what_codeparse_schema_prints(capsys):
    files = docs_site.schema_files()
    for model, _ in docs_site.SCHEMAS:
        assert main(["schema", "--model", model]) == 0
        assert files[f"reference/schema/{model}.json"] == capsys.readouterr().out


@pytest.fixture(scope="module")
def examples():
    return docs_examples.load()


def test_every_example_shows_what_its_command_prints(examples, capfd, monkeypatch):
    """Each block of docs/examples.toml, run again in this process as the console script runs
    it (cli.main, from the checkout's root, a terminal 100 columns wide)."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", str(docs_examples.COLUMNS))

    def run(args: list[str]) -> tuple[int, str]:
        capfd.readouterr()
        code = main(args)
        out, err = capfd.readouterr()
        return code, out + err

    assert len(examples) >= 5
    found = docs_examples.problems(examples, docs_examples.rendered(examples, run))
    assert found == [], "run `python scripts/docs_examples.py`:\n" + "\n".join(found)


def test_keep_shows_the_cut_lines():
    example = docs_examples.Example("x", "README.md", "codeparse x", ((2, 3),))
    assert docs_examples.block(example, 1, "a\nb\nc\nd\n") == "$ codeparse x\n…\nb\nc\n…\n[exit 1]\n"


def test_readme_is_a_front_page():
    assert len(README.encode("utf-8")) <= 12 * 1024
    for title in ["codeparse parse", "codeparse check", "check --target export", "codeparse diff",
                  "codeparse report", "Security model"]:
        assert re.search(rf"^## .*{re.escape(title)}", README, flags=re.M), title
    ids = {e.id for e in docs_examples.load() if e.page == "README.md"}
    assert {"readme-parse", "readme-check", "readme-export", "readme-diff", "readme-report"} <= ids


def test_readme_links_lead_to_files_of_the_repository():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if "://" not in link]
    assert len(local) >= 10
    for link in local:
        assert (ROOT / link).exists(), link


def test_readme_export_figures_are_the_export_guide_figures():
    guide = (ROOT / "docs" / "export.md").read_text(encoding="utf-8")
    recall = re.search(r"\*\*recall\*\* \| (\d+) / (\d+) =", guide)
    precision = re.search(r"\*\*precision\*\* \| (\d+) / (\d+) =", guide)
    assert recall and precision
    assert f"({recall[1]} of {recall[2]})" in README
    assert f"({precision[1]} of {precision[2]})" in README


def test_readme_links_the_pictures_of_the_built_site():
    """scripts/docs_screenshots.py writes them; each a PNG under 200 KB."""
    for name in ["site-rule.png", "site-export.png", "report.png"]:
        assert f"](docs/{name})" in README, name
        data = (ROOT / "docs" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) <= 200 * 1024, name


# Console blocks run by a test of their own (a shell pipeline), by page: a text each holds.
RUN_ELSEWHERE = {"docs/getting-started.md": ["/tmp/bad.code"]}  # tests/test_readme.py


def test_no_console_output_is_typed_by_hand():
    """Every console block of README.md and the pages is written by scripts/docs_examples.py
    (a marker before it), or is one `$ codeparse ...` command that tests/test_readme.py runs
    and compares, or is listed in RUN_ELSEWHERE."""
    typed = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        page = str(doc.relative_to(ROOT))
        text = doc.read_text(encoding="utf-8")
        for before, block in re.findall(r"^([^\n]*)\n```console\n(.*?)```", text, flags=re.S | re.M):
            first = block.partition("\n")[0]
            if before.startswith("<!-- example "):
                continue
            if first.startswith("$ codeparse ") and not any(c in first for c in "|;>#"):
                continue
            if any(needle in block for needle in RUN_ELSEWHERE.get(page, [])):
                continue
            typed.append(f"{page}: {first}")
    assert typed == []
