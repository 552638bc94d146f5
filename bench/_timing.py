"""Timing helpers shared by the benchmark scripts."""

from __future__ import annotations

import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def best_of(rounds: int, fn) -> float:
    """The fastest of ``rounds`` calls of ``fn``, in seconds."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def cpu_time() -> float:
    """CPU time (user + system) of this process and of its child processes that have ended
    and been waited for (``check`` reads its inputs in worker processes), in seconds."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def cpu_best(rounds: int, fn) -> float:
    """The smallest CPU time of ``rounds`` calls of ``fn``, in seconds: this process's and
    that of the worker processes ``fn`` started and waited for (:func:`cpu_time`).

    CPU time, not wall time: the machine these figures come from is often shared.
    """
    best = float("inf")
    for _ in range(rounds):
        start = cpu_time()
        fn()
        best = min(best, cpu_time() - start)
    return best


def median_run(cmd: list[str], runs: int, cwd: Path) -> float:
    """The median wall time of ``runs`` runs of a command, in seconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# The start of every ``before_after`` child script: its arguments, the package under test
# first on the path, the corpus of bench_parse read.
CHILD_HEAD = r"""
import ast, gc, json, sys, time
root, data, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, root)
sys.path.insert(1, data + "/bench")
import codeparse
from bench_parse import corpus, read_dict
files = corpus()
texts = [f.read_text(encoding="utf-8") for f in files]
clock = time.process_time
"""


def _export(rev: str, dest: Path) -> None:
    """The package and grammars of git revision ``rev``, written below ``dest``."""
    data = subprocess.run(["git", "archive", rev, "codeparse", "grammars"], cwd=ROOT, check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")


def _run_child(child: str, root: Path, rounds: int) -> list[dict]:
    """The rounds a ``child`` script prints as JSON (its last line), run on the package at ``root``."""
    out = subprocess.run([sys.executable, "-c", child, str(root), str(ROOT), str(rounds)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)})
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def before_after(child: str, before: str, rounds: int, repeat: int) -> tuple[str, dict[str, list[dict]]]:
    """Run ``child`` (a script taking the package root, the checkout root and a round count,
    printing a JSON list of rounds) on git revision ``before`` and on this checkout, in
    ``repeat`` alternating processes per side.  Returns the short revision and each side's rounds."""
    rev = subprocess.run(["git", "rev-parse", "--short", before], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    found: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        _export(before, Path(tmp))
        for _ in range(repeat):
            for name, root in (("before", Path(tmp)), ("after", ROOT)):
                rounds_of = _run_child(child, root, rounds)
                found[name] += rounds_of
                print(f"{name}: {json.dumps(rounds_of)}", file=sys.stderr)
    return rev, found
