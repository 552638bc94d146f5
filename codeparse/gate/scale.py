"""``check --dask``: the check mapped over archives with ``dask.bag``, past one machine.

Needs the ``scale`` extra (``dask``, ``distributed``, ``pyarrow``); nothing here is
imported on any other path.

* **Paths in.**  The inputs are expanded here (directories walked), cut into chunks
  in input order, and each chunk is one task: a worker opens and checks its own
  archives (:func:`codeparse.gate.run.check_input`, with the worker's own in-process
  cache, and the on-disk cache when ``--cache-dir`` names a folder every worker can
  reach).  No archive bytes travel; only paths go out and reports (or, for Parquet,
  counts) come back.  Every worker must import the same codeparse, and see the paths.
* **Scheduler.**  ``local`` starts ``LocalCluster(n_workers=2, threads_per_worker=1,
  host="127.0.0.1", dashboard_address=None)`` for the run; any other value is the
  address of a running scheduler (``tcp://host:8786``).  ``dashboard_address=None``
  turns the dashboard off, but distributed's scheduler always serves its other HTTP
  routes (health, metrics) and, left alone, binds them to port 8787; the local cluster
  binds them to a free port of 127.0.0.1 instead (``scheduler_kwargs``), so a run never
  takes 8787 from another cluster and listens on no outside address.
* **Baseline.**  Findings are matched against a baseline in input order over the
  whole run, as ``--jobs`` does (a baseline entry absorbs as many findings as it
  recorded, the first ones met): for a report, the client applies it; for Parquet, the
  workers first send back the fingerprints of their chunk's findings (the checked
  reports stay on the workers), the client shares the baseline out over the chunks in
  order, and each chunk writes its part with its share.
* **Output.**  Table, JSON, JSONL and SARIF are the same report as ``--jobs`` gives.
  Parquet (``--output-format parquet --output-file DIR``) is written by the workers
  themselves, one file per chunk, as a dataset of two tables (``DIR`` must be a folder
  every worker can write, a shared file system past one machine):

  ``DIR/findings/part-NNNNN.parquet``, one row per finding the policy selects:
  ``input`` (the archive or file checked), ``path`` (``archive!entry``), ``code``,
  ``name``, ``severity``, ``message``, ``line``, ``column``, ``end_line``,
  ``end_column`` (null without a position), ``origin_path``, ``origin_line`` (the
  original source line, null when unknown), ``args`` (the message arguments, a JSON
  object);

  ``DIR/inputs/part-NNNNN.parquet``, one row per input: ``input``, ``kind``
  (``archive`` or ``code``), ``readable``, ``files``, ``branches``, ``errors``,
  ``warnings``, ``infos`` (selected findings by severity) and ``failing`` (a finding
  at or above ``fail-on``).

  ``pyarrow.parquet.read_table(DIR + "/findings")`` reads the dataset back.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Optional, Sequence

from ..contract.check import InputReport, Policy, Report

__all__ = ["check_dask", "DatasetSummary", "LOCAL", "FINDING_COLUMNS", "INPUT_COLUMNS", "ScaleError"]

LOCAL = "local"
CHUNKS_PER_WORKER = 4  # tasks per worker: balance against per-task overhead
FINDING_COLUMNS = ("input", "path", "code", "name", "severity", "message", "line", "column", "end_line",
                   "end_column", "origin_path", "origin_line", "args")
INPUT_COLUMNS = ("input", "kind", "readable", "files", "branches", "errors", "warnings", "infos", "failing")


class ScaleError(RuntimeError):
    """Dask is missing, or the scheduler cannot be reached; the message is one line."""


def _chunks(items: list, count: int) -> list[list]:
    size = max(1, -(-len(items) // max(1, count)))
    return [items[i:i + size] for i in range(0, len(items), size)]


def _tables(reports: list[InputReport], policy: Policy) -> tuple[Any, Any]:
    import pyarrow as pa

    from .policy import fails

    rows: dict[str, list] = {c: [] for c in FINDING_COLUMNS}
    inputs: dict[str, list] = {c: [] for c in INPUT_COLUMNS}
    for report in reports:
        counts = {"error": 0, "warning": 0, "info": 0}
        for f in report.findings:
            counts[f.severity] += 1
            span, origin = f.span, f.origin
            for column, value in (
                ("input", report.path), ("path", f.path), ("code", f.code), ("name", f.name),
                ("severity", f.severity), ("message", f.message),
                ("line", span.line if span else None), ("column", span.column if span else None),
                ("end_line", span.end_line if span else None), ("end_column", span.end_column if span else None),
                ("origin_path", origin.path if origin else None), ("origin_line", origin.line if origin else None),
                ("args", json.dumps(f.args, sort_keys=True)),
            ):
                rows[column].append(value)
        for column, value in (
            ("input", report.path), ("kind", report.kind), ("readable", report.readable), ("files", report.files),
            ("branches", report.branches), ("errors", counts["error"]), ("warnings", counts["warning"]),
            ("infos", counts["info"]), ("failing", any(fails(f, policy) for f in report.findings)),
        ):
            inputs[column].append(value)
    ints = {"line", "column", "end_line", "end_column", "origin_line", "files", "branches", "errors", "warnings",
            "infos"}

    def schema(columns: Sequence[str]) -> Any:
        return pa.schema([(c, pa.int64() if c in ints else pa.bool_() if c in ("readable", "failing")
                           else pa.string()) for c in columns])

    return (pa.table(rows, schema=schema(FINDING_COLUMNS)), pa.table(inputs, schema=schema(INPUT_COLUMNS)))


def _check_chunk(item: tuple, policy_json: str, cache_dir: Optional[str], parquet: bool) -> Any:
    """One task on a worker: check the chunk's inputs.  For a report: the reports as
    checked (JSON text: plain data back to the client, which adjusts them as ``check``
    does); for Parquet: ``(index, reports)`` adjusted but for the baseline, kept on the
    worker for :func:`_write_chunk`."""
    from .run import _check_safely, adjust
    from ..contract.records import limits_of

    index, chunk = item
    policy = limits_of(Policy.model_validate_json(policy_json))
    reports = [_check_safely(path, policy, problem, None, False, cache_dir) for path, problem in chunk]
    if not parquet:
        return [json.dumps(r) for r in reports]
    return index, adjust(reports, policy.model_copy(update={"baseline": None}))


def _fingerprints(checked: tuple, root: Optional[str] = None) -> list[list[str]]:
    """The baseline fingerprints of a checked chunk's findings, in order (the findings a
    baseline can absorb: those of readable inputs)."""
    from .baseline import fingerprint

    return [list(fingerprint(f, root)) for r in checked[1] if r["readable"] for f in r["findings"]]


def _shares(baseline: Any, chunks: list[list[list[str]]]) -> list[list[list]]:
    """The baseline shared out over the chunks in input order: chunk by chunk, each
    fingerprint takes what is left of its count, as one run over all inputs would."""
    shares = []
    for keys in chunks:
        mine: dict[tuple, int] = {}
        for key in map(tuple, keys):
            if baseline.get(key, 0) > 0:
                baseline[key] -= 1
                mine[key] = mine.get(key, 0) + 1
        shares.append([[*key, n] for key, n in mine.items()])
    return shares


def _write_chunk(checked: tuple, share: Optional[list], policy_json: str, parquet_dir: str) -> list:
    """One task on a worker: apply the chunk's share of the baseline, write its Parquet
    part, and send back only what the exit code, the summary and the error stream need."""
    import pyarrow.parquet as pq
    from collections import Counter

    from .baseline import apply_baseline
    from .policy import fails
    from ..contract.records import Record

    index, plain = checked
    policy = Policy.model_validate_json(policy_json)
    if share is not None:
        remaining = Counter({tuple(row[:-1]): row[-1] for row in share})
        plain = [dict(r, findings=apply_baseline(r["findings"], remaining, policy.source_root))
                 if r["readable"] and r["findings"] else r for r in plain]
    reports = [Record(r) for r in plain]
    findings, inputs = _tables(reports, policy)
    for name, table in (("findings", findings), ("inputs", inputs)):
        folder = os.path.join(parquet_dir, name)
        os.makedirs(folder, exist_ok=True)
        pq.write_table(table, os.path.join(folder, f"part-{index:05d}.parquet"))
    return [json.dumps({"path": r.path, "readable": r.readable,
                        "reason": f"{r.findings[0].code} {r.findings[0].message}" if not r.readable and r.findings
                        else None,
                        "counts": [sum(1 for f in r.findings if f.severity == s) for s in ("error", "warning", "info")],
                        "failing": any(fails(f, policy) for f in r.findings)})
            for r in reports]


class DatasetSummary:
    """What a Parquet run tells the client: per input, readable or why not, counts, failing."""

    def __init__(self, rows: list[dict], folder: str):
        self.rows = rows
        self.folder = folder
        self.counts = {"error": 0, "warning": 0, "info": 0}
        for row in rows:
            for severity, n in zip(("error", "warning", "info"), row["counts"]):
                self.counts[severity] += n
        if any(not r["readable"] for r in rows):
            self.exit_code = 2
        else:
            self.exit_code = 1 if any(r["failing"] for r in rows) else 0


def check_dask(paths: Sequence[str | os.PathLike], policy: Policy, scheduler: str,
               cache_dir: Optional[str | os.PathLike] = None, parquet_dir: Optional[str | os.PathLike] = None,
               progress: Optional[Callable[[Any], None]] = None) -> Report | DatasetSummary:
    """Check inputs on a Dask cluster (see the module docs): the same :class:`Report` as
    ``check``, or with ``parquet_dir`` the dataset written and a :class:`DatasetSummary`.
    ``progress`` is called once per chunk of inputs done."""
    try:
        import dask
        import dask.bag as db
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise ScaleError(f"--dask needs the 'scale' extra (pip install 'codeparse[scale]'): {exc}") from None
    from .run import adjust, make_report_data
    from .inputs import expand_inputs
    from ..contract.records import limits_of, report_model

    inputs = expand_inputs((os.fspath(p) for p in paths), exclude=[*policy.exclude, *policy.extend_exclude])
    folder = os.fspath(cache_dir) if cache_dir is not None else None
    out_dir = os.path.abspath(os.fspath(parquet_dir)) if parquet_dir is not None else None
    if out_dir is not None:
        _clear_dataset(out_dir)
    cluster = None
    try:
        if scheduler == LOCAL:
            cluster = LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                   scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
            client = Client(cluster)
        else:
            client = Client(scheduler, timeout="20s")
    except (OSError, TimeoutError, ValueError) as exc:
        if cluster is not None:
            cluster.close()
        raise ScaleError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
    try:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        chunks = _chunks(inputs, workers * CHUNKS_PER_WORKER)
        bag = db.from_sequence(list(enumerate(chunks)), npartitions=max(1, len(chunks)))
        policy_json = policy.model_dump_json()
        checked = bag.map(_check_chunk, policy_json, folder, out_dir is not None)
        with dask.config.set(scheduler=client.get):
            if out_dir is None:
                results = checked.compute()
            elif policy.baseline is None:
                results = checked.map(_write_chunk, None, policy_json, out_dir).compute()
            else:
                from .baseline import load_baseline

                checked = client.persist(checked)  # the reports stay on the workers
                shares = _shares(load_baseline(policy.baseline), checked.map(_fingerprints, policy.source_root).compute())
                parts = db.from_sequence(shares, npartitions=max(1, len(chunks)))
                results = db.map(_write_chunk, checked, parts, policy_json, out_dir).compute()
        if progress is not None:
            for _ in results:
                progress(None)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    if out_dir is not None:
        return DatasetSummary([json.loads(text) for part in results for text in part], out_dir)
    reports = [json.loads(text) for part in results for text in part]
    limits = limits_of(policy)
    return report_model(make_report_data(adjust(reports, limits), limits))


def _clear_dataset(folder: str) -> None:
    """Remove the parts of an earlier run (only ``part-*.parquet`` in our two tables)."""
    for name in ("findings", "inputs"):
        sub = os.path.join(folder, name)
        if os.path.isdir(sub):
            for entry in os.listdir(sub):
                if entry.startswith("part-") and entry.endswith(".parquet"):
                    os.unlink(os.path.join(sub, entry))
