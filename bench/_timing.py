"""Timing helpers shared by the benchmark scripts."""

from __future__ import annotations

import statistics
import subprocess
import time
from pathlib import Path


def best_of(rounds: int, fn) -> float:
    """The fastest of ``rounds`` calls of ``fn``, in seconds."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def cpu_best(rounds: int, fn) -> float:
    """The smallest CPU time (this process, user + system) of ``rounds`` calls of ``fn``, in seconds.

    CPU time, not wall time: the machine these figures come from is often shared.
    """
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def median_run(cmd: list[str], runs: int, cwd: Path) -> float:
    """The median wall time of ``runs`` runs of a command, in seconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
        times.append(time.perf_counter() - start)
    return statistics.median(times)
