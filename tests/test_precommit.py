"""The pre-commit hook, run by pre-commit itself (`pre-commit try-repo`) from a local clone of
this repository tagged with the package version, in a test repository holding ordinary model
files.  pre-commit installs the hook into its own virtualenv, as users get it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FILES = ROOT / "fixtures" / "files"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def try_repo(repo: Path, clone: Path, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "PIP_NO_COMPILE": "1", "PIP_PREFER_BINARY": "1"}  # install faster; same code installed
    env.pop("PYTHONPATH", None)  # the hook runs the clone pre-commit installed, nothing else
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(clone), "codeparse-check",
                           "--ref", f"v{VERSION}", "--all-files", "--color", "never"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def test_hook_passes_ordinary_models_and_fails_on_a_malicious_pickle(tmp_path):
    clone = tmp_path / "codeparse"
    git(tmp_path, "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone))
    git(clone, "tag", f"v{VERSION}")
    hook = (clone / ".pre-commit-hooks.yaml").read_text()
    assert "types: [file]" in hook and "files:" not in hook
    repo = tmp_path / "project"
    (repo / "models").mkdir(parents=True)
    git(repo, "init", "--quiet")
    shutil.copy(FILES / "state_dict.pt", repo / "models" / "checkpoint.pt")
    shutil.copy(FILES / "quantized.script.pt", repo / "models" / "quantized.pt")
    shutil.copy(ROOT / "fixtures" / "archives" / "custom_model.script.pt", repo / "models" / "model.pt")
    (repo / "README.md").write_text("# a project with models\n")
    (repo / "train.py").write_text("print('training')\n")
    git(repo, "add", ".")
    home = tmp_path / "pre-commit-home"
    ok = try_repo(repo, clone, home)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "codeparse check (model files)" in ok.stdout and "Passed" in ok.stdout
    shutil.copy(FILES / "malicious.script.pt", repo / "models" / "downloaded.pt")
    git(repo, "add", ".")
    bad = try_repo(repo, clone, home)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout
    assert "models/downloaded.pt:1:1: CP330 pickle renamed/data.pkl names posix.system" in bad.stdout
