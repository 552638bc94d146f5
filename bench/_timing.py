"""Timing helpers shared by the benchmark scripts."""

from __future__ import annotations

import resource
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
