"""`codeparse report` without a browser: the command, the page's self-containment,
escaping, lazy imports.  What a person sees is tested in test_report_browser.py."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from codeparse.cli.app import main
from codeparse.report.page import build_report

ROOT = Path(__file__).resolve().parent.parent
ARCHIVE = ROOT / "fixtures" / "archives" / "custom_model.script.pt"
SCRIPT = ROOT / "fixtures" / "text" / "custom_model" / "script.code"
TRACE = ROOT / "fixtures" / "text" / "custom_model" / "trace.code"


def test_report_command_writes_one_self_contained_page(tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["report", str(ARCHIVE), "-o", str(out)]) == 0
    assert capsys.readouterr().out == f"wrote {out}\n"
    same = tmp_path / "same.html"  # --output-file, as every command spells it
    assert main(["report", str(ARCHIVE), "--output-file", str(same)]) == 0
    assert same.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")
    capsys.readouterr()
    # `-o -` is standard output, as for `check` (it wrote a file named `-`).
    piped = subprocess.run([sys.executable, "-m", "codeparse", "report", str(ARCHIVE), "-o", "-"], cwd=tmp_path,
                           capture_output=True, check=False)
    assert piped.returncode == 0 and not (tmp_path / "-").exists()
    assert piped.stdout.decode("utf-8") == out.read_text(encoding="utf-8")
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>")
    # Nothing is fetched: no external URL in any attribute, and a policy that forbids it.
    assert "default-src 'none'" in html
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:|//)""", html)
    assert "@import" not in html and "url(" not in html
    # Summary facts read off the archive.
    assert "TorchScript archive (zip)" in html
    assert "PyTorch 1.5 – 2.x (version record 3, grammar torchscript-v2)" in html
    assert "__torch__.CustomModel" in html
    # One lazily rendered code view per code file (11 entries), each waiting unparsed.
    assert html.count('<script type="text/x-codeparse-view" id="tpl-a0f') == 11
    assert html.count('<details class="file"') == 11


def test_report_of_a_pair_and_of_code_files(tmp_path):
    out = tmp_path / "pair.html"
    assert main(["report", str(SCRIPT), "--script", str(SCRIPT), "--trace", str(TRACE), "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert 'class="pair"' in html
    assert html.count("frozen (then)") >= 2 and "frozen (else)" in html
    assert html.count('class="line lost"') == 3


def test_usage_errors_and_unreadable_inputs(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "--script", str(SCRIPT), "-o", str(out)]) == 2
    assert "--script and --trace go together" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing.pt"), "-o", str(out)]) == 2
    assert "cannot be read: CP301 cannot read input: no such file or directory" in out.read_text(encoding="utf-8")


def test_input_text_reaches_html_only_escaped(tmp_path):
    code = tmp_path / "x.code"
    code.write_text('def forward(self,\n    s: str) -> str:\n  if torch.eq(s, "<script>alert(1)</script>&amp;"):\n'
                    '    _0 = s\n  else:\n    _0 = s\n  return _0\n', encoding="utf-8")
    html, status = build_report([str(code)])
    assert status == 0
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&amp;amp;" in html
    assert html.count("<script>") == 1  # the page's own script only
    assert html.count("</script>") == 2  # and the one code view: the input could not close it


def test_invisible_and_direction_changing_characters_are_shown_as_escapes(tmp_path):
    """A string constant with bidi overrides and isolates ("Trojan Source") and C0/C1
    controls: the code view and every other place the page shows it (the finding, the
    resolved condition) show the escapes, never the characters that reorder the text."""
    code = tmp_path / "trojan.code"
    hidden = "\u202e\u2066\u2069\u2028\x1b\x85"
    code.write_text('def forward(self,\n    x: Tensor) -> Tensor:\n'
                    f'  access = "user{hidden} // admin"\n'
                    '  if torch.eq(access, "admin"):\n    return x\n  return torch.neg(x)\n', encoding="utf-8")
    html, status = build_report([str(code)])
    assert status == 0
    assert not any(ch in html for ch in hidden)
    shown = "\\u202e\\u2066\\u2069\\u2028\\x1b\\x85"
    assert f'user<span class="ctrl" title="an invisible character">\\u202e</span>' in html  # the code view
    assert f"user{shown} // admin" in html  # the finding's message and the resolved condition
    assert 'class="ctrl"' in html and html.count("<script>") == 1


def test_parse_and_check_never_import_jinja2_or_pygments():
    code = (
        "import sys\n"
        "from codeparse.cli.app import main\n"
        f"main(['check', {str(ARCHIVE)!r}, '--format', 'json'])\n"
        f"main(['parse', {str(SCRIPT)!r}, '--format', 'json'])\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('jinja2', 'pygments', 'markupsafe', 'playwright')"
        " or m.startswith('codeparse.report'))\n"
        "sys.stderr.write(repr(bad))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.stderr == "[]"


def test_report_builds_no_models(tmp_path):
    """The report reads archives into check's plain data: its command imports no pydantic."""
    code = (
        "import sys\n"
        "from codeparse.cli.app import main\n"
        f"main(['report', {str(ARCHIVE)!r}, {str(SCRIPT)!r}, '-o', {str(tmp_path / 'r.html')!r}])\n"
        "sys.stderr.write(repr(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.stderr == "[]"
    assert 'class="code"' in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_highlighting_is_lossless_on_every_fixture_text():
    """The TorchScript lexer (rules in grammars/highlight.toml) gives every character a
    token: the lines put back together are the text, for every fixture."""
    import html

    from codeparse.report.highlight import TorchScriptLexer, highlight_html, highlight_lines

    texts = sorted((ROOT / "fixtures" / "text").glob("*/*.code"))
    assert len(texts) > 100
    for path in texts:
        text = path.read_text(encoding="utf-8")
        lines = highlight_lines(text)
        assert ["".join(t for _, t in line) for line in lines] == text.splitlines(), path
        # As HTML: the same text once its spans are taken out and it is unescaped.
        assert [html.unescape(re.sub(r"</?span[^>]*>", "", line)) for line in highlight_html(text)] == \
            text.splitlines(), path
    tokens = list(TorchScriptLexer().get_tokens_unprocessed('  if torch.eq(s, "a\\"b"):  # c\n'))
    assert [(str(t), v) for _, t, v in tokens if not v.isspace()] == [
        ("Token.Keyword", "if"), ("Token.Name", "torch"), ("Token.Punctuation", "."), ("Token.Name", "eq"),
        ("Token.Punctuation", "("), ("Token.Name", "s"), ("Token.Punctuation", ","),
        ("Token.Literal.String.Double", '"a\\"b"'), ("Token.Punctuation", ")"), ("Token.Punctuation", ":"),
        ("Token.Comment.Single", "# c"),
    ]


def test_each_input_shows_the_findings_check_gives():
    """The report tells inputs apart as `check` does (by their bytes) and lists the same
    findings for each: archives, code text, checkpoints, pickles, .pt2, LFS pointers."""
    import codeparse
    from codeparse.contract.check import Policy
    from codeparse.report.data import collect_input, input_paths
    from codeparse.report.highlight import highlight_html

    paths = [str(ROOT / "fixtures" / "files"), str(ARCHIVE), str(SCRIPT)]
    policy = Policy()
    expected = codeparse.check(paths, policy).inputs
    inputs = input_paths(paths)
    assert [p for p, _ in inputs] == [r.path for r in expected]
    kinds = set()
    for n, ((path, problem), want) in enumerate(zip(inputs, expected)):
        view = collect_input(f"a{n}", path, policy, highlight_html, problem)
        assert (view.kind, view.readable) == (want.kind, want.readable), path
        assert [(f.code, f.message, f.line) for f in view.findings if f.checked] == [
            (f.code, f.message, f.span.line if f.span else None) for f in want.findings], path
        kinds.add(view.kind)
    assert {"archive", "code", "checkpoint", "pickle", "pt2", "lfs_pointer"} <= kinds


def test_target_export_shows_the_verdict_and_loop_conditions(tmp_path):
    archive = ROOT / "fixtures" / "archives" / "export_while_value.script.pt"
    out = tmp_path / "export.html"
    assert main(["report", str(archive), "--target", "export", "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert '<span class="verdict v-blocked">blocked</span>' in html
    assert "blocked at <span class=\"origin\">fixtures/models_export.py:331</span>" in html
    assert '<span class="badge k-tensor_value">while · tensor value</span>' in html
    assert 'data-code="CP401"' in html and 'data-code="CP201"' not in html
    # Under the default target the same loop is a trace finding-free loop, and no verdict is shown.
    out2 = tmp_path / "trace.html"
    assert main(["report", str(archive), "-o", str(out2)]) == 0
    html2 = out2.read_text(encoding="utf-8")
    assert 'class="verdict' not in html2 and 'data-code="CP401"' not in html2


def test_unreached_ifs_are_listed_apart_from_what_check_reports():
    """check reports conditions that forward reaches; the report lists the others too,
    marked, so that "reachable only" has something to hide (ExportedMethods.describe)."""
    from codeparse.contract.check import Policy
    from codeparse.report.data import collect_input
    from codeparse.report.highlight import highlight_html

    view = collect_input("a0", str(ROOT / "fixtures" / "archives" / "exported_method.script.pt"), Policy(),
                         highlight_html)
    unreached = [f for f in view.findings if not f.reachable]
    assert [(f.code, f.line, f.checked) for f in unreached] == [("CP205", 13, False)]
    assert all(f.checked and f.reachable for f in view.findings if f not in unreached)
    assert sum(view.severities.values()) == len(view.findings) - 1


def test_index_of_several_inputs_lists_their_export_verdicts(tmp_path):
    blocked = ROOT / "fixtures" / "archives" / "export_while_value.script.pt"
    plain = ROOT / "fixtures" / "archives" / "export_plain.script.pt"
    html, status = build_report([str(blocked), str(plain)], policy=_policy(target="export"))
    assert status == 0
    index = html[html.index('<nav class="index"'):html.index("</nav>")]
    assert "<th>export verdict</th>" in index
    assert re.findall(r'class="verdict v-(\w+)"', index) == ["blocked", "exports"]


def _policy(**fields):
    from codeparse.contract.check import Policy

    return Policy(**fields)
