"""The gate against files built to pass it, checked against the real loaders.

``fixtures/canaries/`` (written by ``scripts/make_canaries.py``) holds files that make a
loader write into its working directory when they are loaded, one per way of hiding
code from a scanner, and the clean twins torch and pickle write for ordinary files.
The loaders (``pickle.loads``, ``torch.load(weights_only=False)``, ``torch.jit.load``)
are run here again on every file, each in its own process with a timeout, so that the
manifest cannot go stale; then every file a loader ran must fail ``codeparse check``
(named, and met in a directory walk) with a safety finding, and every clean twin pass.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CANARIES = ROOT / "fixtures" / "canaries"
sys.path.insert(0, str(ROOT / "scripts"))

import make_canaries  # noqa: E402

from codeparse.gate.run import check_data  # noqa: E402

MANIFEST = json.loads((CANARIES / "manifest.json").read_text())
FILES = MANIFEST["files"]
HOSTILE = sorted(n for n, e in FILES.items() if e["hostile"])
CLEAN = sorted(n for n, e in FILES.items() if not e["hostile"])
# What fails the gate for a hostile file: the pickle and container findings.
SAFETY = ("CP320", "CP330", "CP331", "CP332", "CP333", "CP334", "CP335", "CP336", "CP337", "CP338", "CP339",
          "CP341", "CP343", "CP345", "CP346", "CP347")

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def live() -> dict[str, dict[str, bool]]:
    """Which loaders make each canary appear, run now."""
    fired = make_canaries.run_loaders([CANARIES / n for n in sorted(FILES)])
    return {Path(path).name: loaders for path, loaders in fired.items()}


def _walked(tmp_path: Path, name: str) -> dict:
    folder = tmp_path / "repo"
    folder.mkdir()
    shutil.copy(CANARIES / name, folder / name)
    return check_data([str(folder)])


def _codes(report: dict) -> list[str]:
    return [f["code"] for item in report["inputs"] for f in item["findings"]]


def test_the_manifest_is_what_the_loaders_do_now(live):
    assert {n: e["fires"] for n, e in FILES.items()} == live


def test_every_class_of_bypass_has_files_a_loader_runs(live):
    fired = {FILES[n]["class"] for n, loaders in live.items() if any(loaders.values())}
    assert fired == set(MANIFEST["classes"]) - {"padding"}
    assert sum(1 for n in HOSTILE if any(live[n].values())) >= 40
    assert not any(any(live[n].values()) for n in CLEAN)


@pytest.mark.parametrize("name", HOSTILE)
def test_every_hostile_file_fails_the_gate(name, tmp_path):
    named = check_data([str(CANARIES / name)])
    walked = _walked(tmp_path, name)
    assert named["exit_code"] != 0, named
    assert walked["exit_code"] != 0, walked
    assert any(code in SAFETY for code in _codes(walked)), _codes(walked)


@pytest.mark.parametrize("name", CLEAN)
def test_every_clean_twin_passes(name, tmp_path):
    named = check_data([str(CANARIES / name)])
    walked = _walked(tmp_path, name)
    assert named["exit_code"] == 0, named
    assert walked["exit_code"] == 0, walked
    assert walked["inputs"][0]["kind"] != "other"


def test_padding_past_the_walk_cap_fails_the_gate(tmp_path):
    from codeparse.pickles.picklescan import MAX_OPS

    path = tmp_path / "padded.pkl"
    path.write_bytes(make_canaries.padded(MAX_OPS))
    assert make_canaries.run_loaders([path])[str(path)]["pickle"]
    report = check_data([str(path)])
    assert report["exit_code"] != 0 and "CP338" in _codes(report)


def test_the_hostile_fixtures_are_what_the_generator_writes():
    """Byte for byte; the clean twins are torch's output, which depends on the process that
    wrote it (TorchScript's name-mangling counter), so they are compared by name."""
    built = make_canaries.build()
    assert sorted(built) == sorted(FILES)
    for name in HOSTILE:
        assert (CANARIES / name).read_bytes() == built[name]["bytes"], name


def test_a_mutation_and_composition_loop_finds_no_file_a_loader_runs_and_the_gate_passes():
    """``scripts/fuzz_gate.py`` with a small budget and a fixed seed (deterministic); run it
    with ``--budget 20000 --torch`` for a long search."""
    import fuzz_gate

    result = fuzz_gate.fuzz(400, seed=0)
    assert result["passed_gate"] > 10  # mutants the gate passes do reach the loaders
    assert result["bypasses"] == {}
