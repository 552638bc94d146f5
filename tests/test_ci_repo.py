"""`codeparse check` on a repository of model files as a project keeps them
(fixtures/repo, made by fixtures/generate_repo.py with real torch): what a CI user reads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codeparse.cli import main

ROOT = Path(__file__).resolve().parent.parent
REPO = ROOT / "fixtures" / "repo"
CONFIGS = ["configs/train.yaml", "configs/model.json", "configs/sweep.toml", "train.py"]


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    """A copy of fixtures/repo as the working directory (the project root)."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy)
    monkeypatch.chdir(copy)
    return copy


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def reports(capsys, *args) -> tuple[int, dict[str, list[dict]]]:
    code, out, _ = run(capsys, "check", *args, "--output-format", "jsonl")
    found = {}
    for line in out.splitlines():
        item = json.loads(line)
        found[item["path"]] = item["findings"]
    return code, found


# ------------------------------------------------------- files named on the command line


def test_named_config_files_are_skipped_with_a_note_as_a_walk_skips_them(capsys, repo):
    code, out, err = run(capsys, "check", *CONFIGS)
    assert code == 0 and "CP101" not in out
    assert all(f"{name}: neither a model file nor TorchScript text; skipped" in err for name in CONFIGS)
    code, found = reports(capsys, *CONFIGS, "checkpoints/state_dict.pt", "models/classifier.script.pt")
    assert code == 0 and list(found) == ["checkpoints/state_dict.pt", "models/classifier.script.pt"]


def test_a_named_torchscript_text_is_checked_and_the_pre_commit_hook_stays_silent(capsys, repo):
    code_text = ROOT / "fixtures" / "archive_code" / "custom_model.script" / "__torch__.py"
    code, out, err = run(capsys, "check", code_text, "train.py", "--output-format", "jsonl")
    assert [(json.loads(line)["path"], json.loads(line)["kind"]) for line in out.splitlines()] \
        == [(str(code_text), "code")] and code == 0
    assert err == "codeparse: note: train.py: neither a model file nor TorchScript text; skipped\n"
    # the pre-commit hook passes every file: decided as a walk decides, without notes
    code, out, err = run(capsys, "check", "--skip-other", *CONFIGS, "-q")
    assert (code, out, err) == (0, "", "")


# ------------------------------------------------------------------ clean files are silent

CLEAN = ["checkpoints/state_dict.pt", "data/vocab.pkl", str(ROOT / "fixtures" / "files" / "exported.pt2")]


def test_clean_files_are_silent_in_table_concise_and_github(capsys, repo):
    code, out, err = run(capsys, "check", *CLEAN)
    assert (code, out, err) == (0, "3 input(s): 0 error(s), 0 warning(s), 3 info; fail on error; exit 0\n", "")
    for fmt in ("concise", "github"):
        assert run(capsys, "check", *CLEAN, "--output-format", fmt) == (0, "", "")
    # what each file is stays in JSON and in --statistics
    code, found = reports(capsys, *CLEAN)
    assert [[f["code"] for f in findings] for findings in found.values()] == [["CP323"], ["CP324"], ["CP325"]]
    code, out, _ = run(capsys, "check", *CLEAN, "--statistics")
    assert [line.split()[:2] for line in out.splitlines()] == [["1", "CP323"], ["1", "CP324"], ["1", "CP325"]]
    # a file with a finding beside its kind still shows that finding, and only that
    code, out, _ = run(capsys, "check", "misc/evil.pkl", "--output-format", "concise")
    assert code == 1 and [line.split()[1] for line in out.splitlines()] == ["CP330"]


# ----------------------------------------------------------------- short names in messages


def test_messages_name_types_short_and_json_keeps_the_full_names(capsys, repo):
    code, found = reports(capsys, "models/classifier.script.pt", "models/encoder.script.pt", "--include-library")
    findings = [f for fs in found.values() for f in fs]
    assert len(findings) > 100 and not [f["message"] for f in findings if "__torch__" in f["args"].get("sources", "")]
    assert not [f["message"] for f in findings if "___torch_mangle" in f["message"]]
    branch = next(f for f in found["models/classifier.script.pt"] if f["code"] == "CP201")
    assert "depends on self.block (BasicBlock), self.stem (Conv2d), x (Tensor), self.block.bn (BatchNorm2d)" \
        in branch["message"]
    full = {s["ref"]: s["type"] for s in branch["sources"]}
    assert full["self.block"] == "__torch__.BasicBlock"
    assert full["self.stem"].startswith("__torch__.torch.nn.modules.conv.") and full["self.stem"].endswith(".Conv2d")


# ------------------------------------------------------------------------------- baselines


def test_a_baseline_keys_findings_by_path_code_and_content(capsys, repo):
    code, _, err = run(capsys, "check", ".", "--write-baseline", "baseline.json")
    rows = json.loads((repo / "baseline.json").read_text())["findings"]
    assert code == 0 and all(set(r) == {"path", "code", "fingerprint", "content", "count"} for r in rows)
    evil = next(r for r in rows if r["path"] == "misc/evil.pkl" and r["code"] == "CP330")
    assert evil["content"] == "posix.system" and evil["count"] == 1
    whole = sorted(r["content"] for r in rows if r["path"] == "checkpoints/whole_model.pt" and "__main__" in r["content"])
    assert whole == ["data.pkl | __main__.BasicBlock", "data.pkl | __main__.TinyResNet"]  # the pickle entry and global
    assert run(capsys, "check", ".", "--baseline", "baseline.json", "-q")[:2] == (0, "")
    assert run(capsys, "check", "./misc/evil.pkl", "--baseline", "baseline.json", "-q")[:2] == (0, "")
    # a copy of the flagged pickle under another path is a new finding
    (repo / "new").mkdir()
    shutil.copy(repo / "misc" / "evil.pkl", repo / "new" / "evil.pkl")
    code, found = reports(capsys, ".", "--baseline", "baseline.json")
    assert code == 1 and [f["code"] for f in found["new/evil.pkl"]] == ["CP324", "CP330"]
    assert found["misc/evil.pkl"] == []
    shutil.rmtree(repo / "new")
    # an unrelated file of the same name does not bring back the unchanged file's findings
    (repo / "data" / "cache").mkdir()
    shutil.copy(repo / "data" / "vocab.pkl", repo / "data" / "cache" / "vocab.pkl")
    code, found = reports(capsys, ".", "--baseline", "baseline.json")
    assert code == 0 and found["data/vocab.pkl"] == [] and [f["code"] for f in found["data/cache/vocab.pkl"]] == ["CP324"]
    assert all(found[p] == [] for p in found if p != "data/cache/vocab.pkl")
    # SARIF carries the same fingerprint
    code, out, _ = run(capsys, "check", "misc/evil.pkl", "--output-format", "sarif")
    result = next(r for r in json.loads(out)["runs"][0]["results"] if r["ruleId"] == "CP330")
    assert result["partialFingerprints"] == {"codeparseContent/v1": evil["fingerprint"]}


def test_a_baseline_of_the_old_format_is_refused_with_the_way_out(capsys, repo):
    (repo / "old.json").write_text(json.dumps({"version": 1, "tool": "codeparse", "findings": []}))
    code, _, err = run(capsys, "check", "misc/evil.pkl", "--baseline", "old.json")
    assert code == 2 and "write it again with --write-baseline" in err


# ------------------------------------------------------------ what CI users read is theirs


def _uris(result: dict) -> list[str]:
    places = [*result["locations"], *result.get("relatedLocations", [])]
    return [p["physicalLocation"]["artifactLocation"]["uri"] for p in places]


def test_sarif_and_github_locations_are_files_of_the_repository(capsys, repo):
    for extra in ([], ["--include-library"]):
        code, out, _ = run(capsys, "check", ".", "--output-format", "sarif", *extra)
        results = json.loads(out)["runs"][0]["results"]
        uris = [u for r in results for u in _uris(r)]
        assert uris and all("!" not in u and (repo / u).is_file() for u in uris), uris
        library = [r for r in results if r.get("properties", {}).get("library")]
        assert (len(library) > 100) == bool(extra), len(library)
    code, out, _ = run(capsys, "check", ".", "--output-format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    own = {(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]): r for r in results}
    # the model's source is in the repository: its line; else the archive, the inner place in the message
    mine = own[("CP201", "train.py")]
    assert mine["locations"][0]["physicalLocation"]["region"]["startLine"] == 39
    hub = own[("CP201", "models/encoder.script.pt")]
    assert "region" not in hub["locations"][0]["physicalLocation"]
    assert hub["message"]["text"].endswith("(at encoder.script/code/__torch__.py:15:5; source hubmodels/encoder.py:17)")
    code, out, _ = run(capsys, "check", ".", "--output-format", "github")
    files = [line.split("file=", 1)[1].split(",", 1)[0] for line in out.splitlines() if "file=" in line]
    assert files and all((repo / f).is_file() for f in files), files
    assert "::warning file=models/encoder.script.pt,title=CP201" in out


def test_string_origins_inside_library_files_count_as_library_code(capsys, repo):
    code, found = reports(capsys, "models/classifier.script.pt", "--include-library")
    string = [f for f in found["models/classifier.script.pt"] if f["origin"] and f["origin"]["path"] == "<string>"]
    assert string and all(f["library"] and "/__torch__/torch/" in f["path"] for f in string)
    code, out, _ = run(capsys, "check", "models/classifier.script.pt", "--output-format", "concise")
    assert [line.split()[1] for line in out.splitlines()[:-1]] == ["CP201"]


# ------------------------------------------------------------------------------- CI logs


def test_tables_in_a_log_keep_every_line_whole_and_unpadded(capsys, repo, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # a log is no terminal, whatever its width says
    code, out, _ = run(capsys, "check", ".")
    lines = out.splitlines()
    assert code == 1 and lines and not [line for line in lines if line != line.rstrip()]
    _, found = reports(capsys, ".")
    shown = [f for fs in found.values() for f in fs if not f["library"] and f["code"] not in ("CP323", "CP324")]
    assert len(shown) >= 7 and all(any(f["message"] in line for line in lines) for f in shown)
    code, out, _ = run(capsys, "diff", "models/classifier.script.pt", "models/classifier.trace.pt")
    lines = out.splitlines()
    assert lines and not [line for line in lines if line != line.rstrip()]
    assert any("x.mean() > 0" in line or "torch.mean" in line for line in lines), out


# --------------------------------------------------------------------- report of a pair


def test_report_of_an_unrelated_pair_exits_as_diff_does(capsys, repo, tmp_path):
    for trace, expected in (("models/encoder.script.pt", 1), ("models/classifier.trace.pt", 0)):
        assert run(capsys, "diff", "models/classifier.script.pt", trace)[0] == expected
        code, out, _ = run(capsys, "report", "--script", "models/classifier.script.pt", "--trace", trace,
                           "-o", tmp_path / "pair.html")
        assert (code, out) == (expected, f"wrote {tmp_path / 'pair.html'}\n")


# ------------------------------------------------------------------------ missing extras

BLOCKER = """import sys

BLOCKED = {blocked!r}


class _Blocker:  # an install without these modules
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _Blocker())
"""


def _without(tmp_path: Path, blocked: set[str], *args: str) -> subprocess.CompletedProcess:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=blocked))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True)


def test_a_missing_extra_is_one_line_naming_it_and_exits_2(tmp_path):
    for blocked in ({"markupsafe"}, {"jinja2", "markupsafe", "pygments"}):
        done = _without(tmp_path, blocked, "-m", "codeparse", "report", "models/classifier.script.pt",
                        "-o", str(tmp_path / "page.html"))
        lines = done.stderr.splitlines()
        assert done.returncode == 2 and len(lines) == 1 and "internal error" not in done.stderr, done.stderr
        assert "needs the 'report' extra, which is not installed" in lines[0]
        assert lines[0].endswith("install it with: pip install 'codeparse[report]'")
    # the library: an ImportError that says the same
    done = _without(tmp_path, {"torch"}, "-c", "import codeparse\ntry:\n    codeparse.from_module(object())\n"
                    "except ImportError as exc:\n    print(type(exc).__name__, exc)")
    assert done.stdout == ("MissingExtra codeparse.from_module needs the 'torch' extra, which is not installed "
                           "(no module named 'torch'); install it with: pip install 'codeparse[torch]'\n")
    # checking needs no extra
    assert _without(tmp_path, {"torch", "jinja2", "markupsafe", "pygments"}, "-m", "codeparse", "check",
                    "models/classifier.script.pt", "-q").returncode == 0
