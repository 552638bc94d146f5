"""README.md and the docs pages stay true: their commands, shown output, code tables and
examples are checked (tests/test_docs.py checks the generated examples and builds the site)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from codeparse.cli.app import main
from codeparse.contract.codes import CODES

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
GETTING_STARTED = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
# A console block right after this marker is written by scripts/docs_examples.py and
# checked by tests/test_docs.py (it may be shortened), not here.
GENERATED = "<!-- example "


def blocks(lang: str, text: str = README) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def run(args: list[str], **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "codeparse", *args], capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, **env},
    )


def test_ci_runs_exactly_the_readme_test_command():
    setup = blocks("sh")
    assert len(setup) == 2, "README gives exactly two setup commands"
    test_command = setup[1].strip()
    assert test_command.endswith("bash scripts/run_tests.sh")
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # The script installs chromium when it is missing, then runs the whole suite.
    script = (ROOT / "scripts" / "run_tests.sh").read_text(encoding="utf-8")
    assert "apt-get install -y -qq --no-install-recommends chromium" in script
    assert script.rstrip().endswith('python -m pytest -q tests/ "$@"')


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def run_here(args: list[str], capfd, monkeypatch) -> tuple[int, str]:
    """``codeparse args`` run in this process as the console script runs it (``cli.main``),
    from the checkout's root with a terminal 100 columns wide: the exit code and standard
    output followed by standard error (file-descriptor level, so that output written by C
    code counts too).  One process for every shown command: a process each paid the
    start-up, and torch's import for every command that needs it, again each time."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "100")
    capfd.readouterr()
    code = main(args)
    out, err = capfd.readouterr()
    return code, out + err


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_shown_codeparse_command_prints_what_is_shown(doc, capfd, monkeypatch):
    """Each console block that is one `$ codeparse ...` command is run again here
    (terminal width 100, paths of this checkout shown as `.`): same output, same exit.
    (`python -m codeparse` as a process is tested in tests/test_cli.py.)"""
    text = doc.read_text(encoding="utf-8")
    checked = 0
    for match in re.finditer(r"^([^\n]*)\n```console\n(.*?)```", text, flags=re.S | re.M):
        before, block = match.groups()
        first, _, shown = block.partition("\n")
        if before.startswith(GENERATED):
            continue
        if not first.startswith("$ codeparse ") or any(c in first for c in "|;>#"):
            continue
        lines = shown.rstrip().splitlines()
        expected_exit = 0
        if lines and lines[-1].startswith("[exit "):
            expected_exit = int(lines.pop()[6:-1])
        code, output = run_here(shlex.split(first[len("$ codeparse "):]), capfd, monkeypatch)
        actual = output.replace(str(ROOT), ".").rstrip()
        assert "\n".join(line.rstrip() for line in actual.splitlines()) == "\n".join(lines), first
        assert code == expected_exit, first
        checked += 1
    if doc.name in ("ci.md", "export.md", "diff.md"):
        assert checked >= 3, doc


def test_bad_input_output_is_real(tmp_path):
    block = next(b for b in blocks("console", GETTING_STARTED) if "/tmp/bad.code" in b)
    lines = block.rstrip().splitlines()
    bad = tmp_path / "bad.code"
    bad.write_text("def forward(self,\n    x: Tensor) -> Tensor:\n  y = = x\n  return x\n")
    result = run(["parse", str(bad), "--format", "jsonl"])
    assert result.returncode == 1 and lines[-1] == "exit 1"
    shown = "\n".join(lines[2:-1]).replace("/tmp/bad.code", str(bad))
    assert result.stderr.rstrip() == shown


def test_library_example_prints_what_it_says():
    code = blocks("python", GETTING_STARTED)[0]
    expected = [line[2:] for line in code.splitlines() if line.startswith("# ")]
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "docs/getting-started.md", "exec"), {})
    finally:
        os.chdir(cwd)
    assert out.getvalue().splitlines() == expected


def test_code_tables_in_the_pages_name_each_code_as_the_code_table_does():
    """A hand-written table row naming a code, its name and severity (docs/ci.md lists the
    archive codes with their exit status) says what codeparse/contract/codes.py says."""
    rows = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        rows += [(doc.name, *row) for row in re.findall(r"^\| `(CP\d{3})` \| `(\w+)` \| (\w+) \|", text, flags=re.M)]
    assert len(rows) >= 20
    for page, code, name, severity in rows:
        assert code in CODES, (page, code)
        assert (name, severity) == (CODES[code].name, CODES[code].severity), (page, code)


def test_benchmark_figures_match_the_recorded_run():
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    recorded = [l for l in (ROOT / "bench" / "results.md").read_text().splitlines() if l.startswith("| ")]
    assert recorded
    for line in recorded:
        assert line in page, line


def test_benchmark_depth_limit_fixtures_are_the_deep_models():
    """bench/bench_parse.py reads its targets on ordinary code, setting apart the cases of
    fixtures/models_deep.py (read here by their ``CASES`` keys, without importing torch); the
    set it names is exactly those cases, and each of them has files in the corpus."""
    import ast

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_parse
    finally:
        sys.path.remove(str(ROOT / "bench"))
    tree = ast.parse((ROOT / "fixtures" / "models_deep.py").read_text(encoding="utf-8"))
    cases = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                 and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["CASES"])
    assert sorted(key.value for key in cases.keys) == sorted(bench_parse.STRESS_CASES)
    files = bench_parse.corpus()
    stress = [f for f in files if bench_parse.is_stress(f)]
    parts = {f.relative_to(ROOT / "fixtures").parts[1].split(".")[0] for f in stress}
    assert parts == set(bench_parse.STRESS_CASES)
    assert 0 < len(stress) < len(files) // 10
