"""`check --dask` on a 2-worker LocalCluster, same findings as --jobs 2, Parquet out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeparse.cli.app import main
from codeparse.gate.scale import FINDING_COLUMNS, INPUT_COLUMNS

ROOT = Path(__file__).resolve().parent.parent
ARCHIVES = ROOT / "fixtures" / "archives"
PATHS = [str(ARCHIVES / n) for n in ("custom_model.script.pt", "params.script.pt", "nn_lstm.script.pt")]
# distributed warns when another cluster on the machine holds the default dashboard port.
pytestmark = pytest.mark.filterwarnings("ignore:Port .* is already in use:UserWarning")


@pytest.fixture(scope="module")
def cluster():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as c:
        yield c


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_dask_gives_the_same_report_as_jobs(cluster, capsys, tmp_path):
    jobs = run(capsys, "check", *PATHS, "--jobs", "2", "--format", "jsonl", "--config", "/dev/null")
    dask = run(capsys, "check", *PATHS, "--dask", cluster.scheduler_address, "--format", "jsonl",
               "--config", "/dev/null", "--cache-dir", str(tmp_path / "cache"))
    assert dask == jobs and jobs[0] == 0 and len(jobs[1].splitlines()) == len(PATHS)


def test_parquet_dataset(cluster, capsys, tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "dataset"
    code, text, _ = run(capsys, "check", *PATHS, "--dask", cluster.scheduler_address, "--output-format", "parquet",
                        "--output-file", str(out), "--config", "/dev/null")
    _, jsonl, _ = run(capsys, "check", *PATHS, "--format", "jsonl", "--config", "/dev/null")
    reports = [json.loads(line) for line in jsonl.splitlines()]
    assert code == 0 and text.startswith(f"wrote {out}/findings")
    findings = pq.read_table(out / "findings")
    inputs = pq.read_table(out / "inputs")
    assert tuple(findings.column_names) == FINDING_COLUMNS and tuple(inputs.column_names) == INPUT_COLUMNS
    rows = sorted(findings.to_pylist(), key=lambda r: (PATHS.index(r["input"]), r["path"], r["line"] or 0,
                                                      r["column"] or 0, r["code"]))
    expected = sorted(
        ({"input": r["path"], "path": f["path"], "code": f["code"], "name": f["name"], "severity": f["severity"],
          "message": f["message"],
          "line": f["span"]["line"] if f["span"] else None, "column": f["span"]["column"] if f["span"] else None,
          "end_line": f["span"]["end_line"] if f["span"] else None,
          "end_column": f["span"]["end_column"] if f["span"] else None,
          "origin_path": f["origin"]["path"] if f["origin"] else None,
          "origin_line": f["origin"]["line"] if f["origin"] else None,
          "args": json.dumps(f["args"], sort_keys=True)}
         for r in reports for f in r["findings"]),
        key=lambda r: (PATHS.index(r["input"]), r["path"], r["line"] or 0, r["column"] or 0, r["code"]))
    assert rows == expected and len(rows) > 20
    summary = {r["input"]: r for r in inputs.to_pylist()}
    assert summary[PATHS[0]]["files"] == 11 and summary[PATHS[0]]["warnings"] == 1
    assert [summary[p]["branches"] for p in PATHS] == [r["branches"] for r in reports]


def test_parquet_needs_dask_and_a_folder(capsys, tmp_path):
    code, _, err = run(capsys, "check", PATHS[0], "--output-format", "parquet", "--output-file", str(tmp_path))
    assert code == 2 and "needs --dask and --output-file" in err


def test_a_baseline_is_matched_over_the_whole_run_as_with_jobs(cluster, capsys, tmp_path):
    import shutil

    import pyarrow.parquet as pq

    # The same archive twice: the baseline recorded from one copy absorbs one copy's findings.
    copies = [str(shutil.copy(PATHS[0], tmp_path / name)) for name in ("a.pt", "b.pt")]
    baseline = tmp_path / "baseline.json"
    assert run(capsys, "check", copies[0], "--write-baseline", str(baseline), "--config", "/dev/null")[0] == 0
    common = ["--baseline", str(baseline), "--config", "/dev/null", "--select", "CP2"]
    jobs = run(capsys, "check", *copies, "--jobs", "2", "--format", "jsonl", *common)
    dask = run(capsys, "check", *copies, "--dask", cluster.scheduler_address, "--format", "jsonl", *common)
    reports = [json.loads(line) for line in jobs[1].splitlines()]
    alone = json.loads(run(capsys, "check", copies[1], "--format", "jsonl", *common[2:])[1])
    assert dask == jobs and [len(r["findings"]) for r in reports] == [0, len(alone["findings"])] != [0, 0]
    out = tmp_path / "dataset"
    code, _, _ = run(capsys, "check", *copies, "--dask", cluster.scheduler_address, "--output-format", "parquet",
                     "--output-file", str(out), *common)
    rows = pq.read_table(out / "findings").to_pylist()
    assert code == jobs[0] and sorted((r["input"], r["code"]) for r in rows) == sorted(
        (copies[1], f["code"]) for f in alone["findings"])


def test_the_local_cluster_serves_http_on_a_free_loopback_port(monkeypatch):
    import distributed

    from codeparse.contract.check import Policy
    from codeparse.gate.scale import ScaleError, check_dask

    seen = {}

    def fake(**kwargs):
        seen.update(kwargs)
        raise OSError("not started in this test")

    monkeypatch.setattr(distributed, "LocalCluster", fake)
    with pytest.raises(ScaleError):
        check_dask(PATHS[:1], Policy(), "local")
    assert seen["dashboard_address"] is None and seen["host"] == "127.0.0.1"
    assert seen["scheduler_kwargs"] == {"dashboard_address": "127.0.0.1:0"}
