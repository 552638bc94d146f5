"""Output that fits the ecosystem: formats and switches of every printing command,
`codeparse rule` and docs/rules.md, SARIF locations and helpUri, policy keys, baselines,
library findings summarised."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
import zipfile
from pathlib import Path

import jsonschema
import pydantic
import pytest

from codeparse.gate.run import check
from codeparse.cli.app import main
from codeparse.contract.codes import CODES
from codeparse.contract.check import Policy, Report
from codeparse.rules.explain import MARKDOWN_COMMAND, render_markdown

ROOT = Path(__file__).resolve().parent.parent
CUSTOM = ROOT / "fixtures" / "archives" / "custom_model.script.pt"
FILES = ROOT / "fixtures" / "files"
SCHEMA = json.loads((Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json").read_text())
CONCISE = re.compile(r"^(?P<path>\S[^:]*):(?P<line>\d+):(?P<col>\d+): (?P<code>CP\d{3}) (?P<message>.+)$")
# GitHub Actions workflow commands: ::level key=value,...::data (docs.github.com, workflow-commands)
GITHUB = re.compile(r"^::(?P<level>error|warning|notice)(?: (?P<props>[^:]*))?::(?P<data>[^\r\n]*)$")
PROP = re.compile(r"^(file|line|col|endLine|endColumn|title)=([^,:]*)$")


@pytest.fixture
def in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------- formats


def test_concise_lines_parse(capsys, in_root):
    code, out, _ = run(capsys, "check", CUSTOM, FILES, "--output-format", "concise", "--include-library")
    lines = out.splitlines()
    parsed = [CONCISE.match(line) for line in lines]
    assert all(parsed), [l for l, m in zip(lines, parsed) if not m]
    places = {(m["path"], m["code"]) for m in parsed}
    assert ("fixtures/models.py", "CP201") in places  # the origin file, relative to the working directory
    assert (str(FILES / "malicious_memo.pkl"), "CP330") in places  # a whole-file finding: line 1, col 1
    assert code == 1


def test_concise_summarises_library_findings(capsys, in_root):
    _, out, _ = run(capsys, "check", CUSTOM, "--output-format", "concise")
    *findings, summary = out.splitlines()
    assert all(CONCISE.match(l) for l in findings) and len(findings) == 3
    assert summary == ("16 finding(s) in torch's own library code not shown (CP202 ×1, CP203 ×2, CP205 ×13); "
                       "--include-library shows them")


def test_github_annotations_follow_the_workflow_command_format(capsys, in_root, tmp_path):
    report = check([str(CUSTOM), str(FILES / "malicious_memo.pkl")], Policy())
    data = json.loads(report.model_dump_json())
    data["inputs"][0]["findings"][0]["message"] = "100% wrong,\nnext line: [x]\r"  # hostile text
    from codeparse.output.reporters import render_github
    import io

    buf = io.StringIO()
    render_github(Report.model_validate(data), buf, source_root=str(ROOT))
    lines = buf.getvalue().splitlines()
    for line in lines:
        m = GITHUB.match(line)
        assert m, line
        if m["props"]:
            assert all(PROP.match(p) for p in m["props"].split(",")), line
    first = GITHUB.match(lines[0])
    assert first["data"].startswith("100%25 wrong,%0Anext line: [x]%0D")
    assert "file=fixtures/models.py" in first["props"] and first["level"] == "warning"
    levels = {GITHUB.match(l)["level"] for l in lines}
    assert levels == {"warning", "notice", "error"}
    code, out, _ = run(capsys, "check", FILES / "malicious_memo.pkl", "--output-format", "github")
    # a plain pickle's kind (CP324, info) is silent: only the global it calls is annotated
    assert out.startswith("::error file=") and "::notice" not in out and code == 1


def test_output_file_and_format_alias(capsys, tmp_path, in_root):
    target = tmp_path / "out" / "report.sarif"
    code, out, _ = run(capsys, "check", CUSTOM, "--format", "sarif", "-o", target)
    assert out == "" and code == 0
    via_alias = json.loads(target.read_text())
    run(capsys, "check", CUSTOM, "--output-format", "sarif", "--output-file", target)
    assert json.loads(target.read_text()) == via_alias


@pytest.mark.parametrize("args, fmt", [
    (["parse", ROOT / "fixtures" / "text" / "params" / "script.code"], "json"),
    (["diff", ROOT / "fixtures" / "text" / "custom_model" / "script.code",
      ROOT / "fixtures" / "text" / "custom_model" / "trace.code"], "json"),
    (["ops", ROOT / "fixtures" / "text" / "params" / "script.code", "--source", "table"], "json"),
    (["which", "torch.add", "--source", "table"], "json"),
    (["grammars"], "json"),
    (["scan", FILES / "state_dict.pt"], "jsonl"),
    (["check", CUSTOM], "jsonl"),
])
def test_every_printing_command_takes_output_format_and_file(capsys, tmp_path, args, fmt):
    target = tmp_path / "out.txt"
    code1, out, _ = run(capsys, *args, "--output-format", fmt)
    code2, nothing, _ = run(capsys, *args, "--format", fmt, "-o", target)
    assert nothing == "" and target.read_text() == out and code1 == code2
    [json.loads(line) for line in out.splitlines()] if fmt == "jsonl" else json.loads(out)


def test_capture_takes_output_options(capsys):
    main(["capture", "--help"])
    help_text = capsys.readouterr().out
    assert "--output-format, --format" in help_text and "--output-file" in help_text


def test_exit_zero_statistics_quiet(capsys, in_root):
    code, out, _ = run(capsys, "check", FILES, "--exit-zero", "--quiet")
    assert code == 0 and "input(s):" not in out and "no findings" not in out and "CP330" in out
    code, out, _ = run(capsys, "check", FILES, "--statistics")
    assert code == 1
    rows = [line.split() for line in out.splitlines()]
    assert ["2", "CP330", "error", "pickle_dangerous_global"] in rows and ["4", "CP323", "info", "torch_checkpoint"] in rows
    code, out, _ = run(capsys, "check", FILES, "--statistics", "--output-format", "json")
    assert {"code": "CP322", "name": "lfs_pointer", "count": 1, "severity": "warning"} in json.loads(out)


# ------------------------------------------------------------------------ rules


def test_rule_command_explains_a_code(capsys):
    code, out, _ = run(capsys, "rule", "cp201")
    assert code == 0 and out.startswith("CP201 tensor_value_branch (warning)\n")
    assert "why" in out and "torch.where" in out and "example" in out
    assert run(capsys, "rule", "CP999")[0] == 2
    code, out, _ = run(capsys, "rule", "--all", "--output-format", "json")
    assert [e["code"] for e in json.loads(out)] == list(CODES)


def test_docs_rules_md_is_the_rule_text_with_one_anchor_per_code():
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert text == render_markdown(list(CODES)), f"docs/rules.md is stale: run `{MARKDOWN_COMMAND}`"
    anchors = re.findall(r'<a id="(cp\d{3})"></a>', text)
    assert anchors == [c.lower() for c in CODES]
    explained = tomllib.loads((ROOT / "grammars" / "rules.toml").read_text(encoding="utf-8"))
    missing = set(CODES) - set(explained)
    assert not missing, f"add why/fix/example for {sorted(missing)} to grammars/rules.toml, then run `{MARKDOWN_COMMAND}`"


def test_sarif_help_uri_anchors_exist_and_use_the_documentation_url(capsys, in_root):
    docs = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Documentation"]
    code, out, _ = run(capsys, "check", CUSTOM, FILES, "--format", "sarif", "--include-library")
    log = json.loads(out)
    anchors = set(re.findall(r'<a id="(cp\d{3})"></a>', (ROOT / "docs" / "rules.md").read_text()))
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert len(rules) >= 8
    for rule in rules:
        assert rule["helpUri"] == f"{docs}docs/rules.md#{rule['id'].lower()}"
        assert rule["id"].lower() in anchors


def test_sarif_points_at_repository_files(capsys, tmp_path, monkeypatch):
    validator = jsonschema.Draft4Validator(SCHEMA)
    monkeypatch.chdir(ROOT)
    _, out, _ = run(capsys, "check", CUSTOM, FILES / "malicious.script.pt", "--format", "sarif", "--select", "CP201,CP330")
    log = json.loads(out)
    assert not list(validator.iter_errors(log))
    by_rule = {r["ruleId"]: r for r in log["runs"][0]["results"]}
    cp201 = by_rule["CP201"]
    assert cp201["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "fixtures/models.py"
    assert cp201["locations"][0]["physicalLocation"]["region"]["startLine"] == 65
    assert cp201["message"]["text"].endswith("custom_model.script.pt!custom_model.script/code/__torch__.py:22)")
    assert "relatedLocations" not in cp201  # an archive entry is no file of the repository
    assert by_rule["CP330"]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
        "fixtures/files/malicious.script.pt")
    # a source root the original file does not lie under: the archive file is the location
    _, out, _ = run(capsys, "check", CUSTOM, "--format", "sarif", "--select", "CP201", "--source-root", tmp_path)
    log = json.loads(out)
    assert not list(validator.iter_errors(log))
    [result] = log["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"] == {"artifactLocation": {"uri": str(CUSTOM)}}
    assert result["message"]["text"].endswith("(at custom_model.script/code/__torch__.py:22:5; source fixtures/models.py:65)")


# ------------------------------------------------------------ policy and baseline


def test_library_findings_are_flagged_summarised_and_still_count(capsys, in_root):
    report = check([str(CUSTOM)], Policy())
    library = [f for f in report.inputs[0].findings if f.library]
    assert len(library) == 16 and all("/__torch__/torch/" in f.path for f in library)
    assert all(not f.library for f in report.inputs[0].findings if "/__torch__/torch/" not in f.path)
    code, out, _ = run(capsys, "check", CUSTOM)
    assert "16 finding(s) in torch's own library code not shown" in out and "batchnorm" not in out
    code, out, _ = run(capsys, "check", CUSTOM, "--include-library", "--output-format", "concise")
    assert "batchnorm.py" in out and len(out.splitlines()) == 19
    assert run(capsys, "check", CUSTOM, "--select", "CP203", "--fail-on", "info")[0] == 1  # library only: still fails
    for extra, shown in (([], 0), (["--include-library"], 16)):  # SARIF keeps them out unless asked
        _, out, _ = run(capsys, "check", CUSTOM, "--format", "sarif", *extra)
        assert sum(1 for r in json.loads(out)["runs"][0]["results"] if r.get("properties", {}).get("library")) == shown


def test_policy_validates_codes_in_python():
    with pytest.raises(pydantic.ValidationError, match="matches no finding code"):
        Policy(select=["CP9"])
    assert Policy(select=["cp2"]).select == ["CP2"]


def test_exclude_extend_exclude_and_per_file_ignores(tmp_path, capsys):
    tree = tmp_path / "repo"
    (tree / "models").mkdir(parents=True)
    (tree / "vendor").mkdir()
    (tree / ".venv").mkdir()
    shutil.copy(CUSTOM, tree / "models" / "m.pt")
    shutil.copy(FILES / "malicious_memo.pkl", tree / "vendor" / "evil.pkl")
    shutil.copy(FILES / "malicious_memo.pkl", tree / ".venv" / "evil.pkl")  # never walked
    names = lambda r: sorted(Path(i.path).relative_to(tree).as_posix() for i in r.inputs)  # noqa: E731
    assert names(check([str(tree)], Policy())) == ["models/m.pt", "vendor/evil.pkl"]
    assert names(check([str(tree)], Policy(extend_exclude=["vendor"]))) == ["models/m.pt"]
    assert names(check([str(tree)], Policy(exclude=["*.pkl"]))) == ["models/m.pt"]
    # entries and origin paths
    report = check([str(tree / "models" / "m.pt")], Policy(exclude=["code/__torch__/torch/*"]))
    assert not any(f.library for f in report.inputs[0].findings) and len(report.inputs[0].findings) == 3
    report = check([str(tree / "models" / "m.pt")], Policy(extend_exclude=["fixtures/models.py"]))
    assert {f.code for f in report.inputs[0].findings} == {"CP202", "CP203", "CP205"}
    report = check([str(tree)], Policy(per_file_ignores={"vendor/*": ["CP33"], "*/models.py": ["CP201"]}))
    assert {f.code for i in report.inputs for f in i.findings} == {"CP202", "CP203", "CP204", "CP205", "CP324"}
    # the same keys from pyproject.toml, kebab-case, and their CLI mirrors
    (tree / "pyproject.toml").write_text('[tool.codeparse]\nextend-exclude = ["vendor"]\n'
                                         'per-file-ignores = { "*/models.py" = ["CP201"] }\n')
    code, out, _ = run(capsys, "check", tree, "--config", tree / "pyproject.toml", "--format", "jsonl")
    assert [Path(json.loads(l)["path"]).name for l in out.splitlines()] == ["m.pt"]
    assert "CP201" not in out and code == 0
    code, out, _ = run(capsys, "check", tree, "--extend-exclude", "models", "--format", "jsonl")
    assert [Path(json.loads(l)["path"]).name for l in out.splitlines()] == ["evil.pkl"] and code == 1


def _renamed(src: Path, dst: Path, root: str) -> None:
    """The same archive saved under another top folder (what re-saving under a new name does)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        old = zin.namelist()[0].split("/")[0]
        for info in zin.infolist():
            zout.writestr(root + info.filename[len(old):], zin.read(info))


def test_baseline_adoption(tmp_path, capsys):
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(CUSTOM, models / "a.pt")
    shutil.copy(FILES / "malicious_memo.pkl", models / "old.pkl")
    baseline = tmp_path / "codeparse-baseline.json"
    code, out, err = run(capsys, "check", models, "--write-baseline", baseline)
    assert code == 0 and "wrote 21 finding(s)" in err
    rows = json.loads(baseline.read_text())["findings"]
    assert all(set(r) == {"path", "code", "fingerprint", "content", "count"} for r in rows)
    branch = rows[[r["code"] for r in rows].index("CP201")]
    assert branch["path"] == (models / "a.pt").as_posix()  # outside the project root: the whole path
    assert branch["content"].startswith("code/__torch__.py | __torch__.CustomModel.forward | ") and branch["count"] == 1
    code, out, _ = run(capsys, "check", models, "--baseline", baseline, "--format", "jsonl")
    assert code == 0 and all(json.loads(l)["findings"] == [] for l in out.splitlines())
    # saved again at the same path under another top folder: still the same findings
    (models / "a.pt").unlink()
    _renamed(CUSTOM, models / "a.pt", "renamed_model")
    # a new file is reported, the baselined ones are not
    shutil.copy(FILES / "malicious.script.pt", models / "new.pt")
    code, out, _ = run(capsys, "check", models, "--baseline", baseline, "--format", "jsonl")
    found = {Path(json.loads(l)["path"]).name: [f["code"] for f in json.loads(l)["findings"]] for l in out.splitlines()}
    assert found == {"a.pt": [], "old.pkl": [], "new.pt": ["CP330"]} and code == 1
    (tmp_path / "pyproject.toml").write_text('[tool.codeparse]\nbaseline = "codeparse-baseline.json"\n')
    code, out, _ = run(capsys, "check", models / "a.pt", "--config", tmp_path / "pyproject.toml", "-q")
    assert code == 0 and out == ""
    baseline.write_text("not json")
    code, _, err = run(capsys, "check", models, "--baseline", baseline)
    assert code == 2 and "not a codeparse baseline" in err
