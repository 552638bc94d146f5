"""A budget per input: each input is read in a worker process, within a time and a memory bound.

``check`` hands its inputs to :func:`run_bounded`, which keeps at most ``jobs`` worker
processes (never more than the CPUs this process may use) and gives each input to one
of them:

* **time**: an input still running after ``Policy.timeout_per_input`` seconds (wall
  clock) has its worker killed; it gets a CP340 finding and the run goes on with a new
  worker for the next input;
* **memory**: each worker limits its address space to what it had when it started plus
  ``Policy.max_memory`` megabytes (``RLIMIT_AS``); an input that needs more fails with
  ``MemoryError`` (CP340) and the worker goes on, or, if the allocation failed in C
  code that cannot raise, the worker dies and the input gets CP340 all the same;
* partial results of an input over budget are dropped: its report is the finding alone,
  marked unreadable (exit 2), so a hostile input can never pass a gate by exhausting it;
* workers die with their parent: they ask the kernel for ``SIGKILL`` when the parent
  ends (``PR_SET_PDEATHSIG``, even if the parent is killed with ``SIGKILL``), and the
  parent kills them when it is interrupted (``SIGINT``, ``SIGTERM``) or fails.

Workers are forked (they start in a few milliseconds and see the parent's state); where
``fork`` does not exist the inputs are read in this process, without the bounds.  The
parent's objects are frozen out of the garbage collector while workers run (``gc.freeze``):
a worker's collections then never walk the heap it inherited (a caller with torch loaded
holds a few hundred thousand objects), which would cost CPU time and copy its pages.
"""

from __future__ import annotations

import gc
import os
import signal
import time
from collections import deque
from typing import Any, Callable, Optional, Sequence

__all__ = ["BudgetExceeded", "Terminated", "cpu_count", "run_bounded", "available"]


class BudgetExceeded(Exception):
    """Raised in a worker when the input it reads runs out of memory; ``str()`` is the reason."""


def cpu_count() -> int:
    """CPUs this process may run on (its affinity mask, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def available() -> bool:
    """Whether inputs can be read in bounded worker processes here (POSIX ``fork``)."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def _die_with_parent(parent: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent ends (Linux), and stop at once
    if the parent is already gone."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)


def _limit_memory(megabytes: int) -> None:
    """Cap this process's address space at its current size plus ``megabytes``."""
    try:
        import resource

        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[0])
        size = pages * os.sysconf("SC_PAGE_SIZE")
        cap = size + megabytes * (1 << 20)
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (OSError, ValueError, ImportError):
        pass  # no /proc or no rlimit: the time bound still holds


def _worker(conn: Any, parent: int, work: Callable[..., Any], max_memory: int) -> None:
    _die_with_parent(parent)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; it kills us
    _limit_memory(max_memory)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        index, args = task
        try:
            result: Any = work(*args)
        except MemoryError:
            result = BudgetExceeded(f"more than {max_memory} MB of memory (--max-memory)")
        except BaseException as exc:  # noqa: BLE001 - the parent decides what a failure means
            text = str(exc).splitlines()[0] if str(exc) else ""
            result = RuntimeError(f"{type(exc).__name__}: {text}")  # picklable, whatever it was
        try:
            conn.send((index, result))
        except MemoryError:
            conn.send((index, BudgetExceeded(f"more than {max_memory} MB of memory (--max-memory)")))


class Terminated(BaseException):
    """SIGTERM in the parent while inputs are read: the workers are killed, the caller
    cleans up (no half-written output file) and exits."""


def run_bounded(tasks: Sequence[tuple], work: Callable[..., Any], *, jobs: int, timeout: float, max_memory: int,
                over_budget: Callable[[int, str], Any], on_result: Optional[Callable[[int, Any], None]] = None,
                ) -> list[Any]:
    """``work(*args)`` for each ``args`` of ``tasks``, each in a worker within the budget.

    Returns the results in task order.  A task over budget (time, memory, or its worker
    died) gets ``over_budget(index, reason)`` instead.  A result that is an exception
    raised by ``work`` is returned as it is (the caller decides).  ``on_result(index,
    result)`` is called in task order as results arrive.
    """
    import multiprocessing
    from multiprocessing.connection import wait

    jobs = max(1, min(jobs, cpu_count(), len(tasks)))
    ctx = multiprocessing.get_context("fork")
    parent = os.getpid()
    results: dict[int, Any] = {}
    pending = deque(range(len(tasks)))
    idle: list[tuple[Any, Any]] = []  # (process, connection)
    busy: dict[Any, tuple[Any, int, float]] = {}  # connection -> (process, index, deadline)
    emitted = 0

    def start() -> tuple[Any, Any]:
        mine, theirs = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(theirs, parent, work, max_memory), daemon=True)
        proc.start()
        theirs.close()
        return proc, mine

    def stop(proc: Any, conn: Any) -> None:
        try:
            if proc.is_alive():
                proc.kill()
            proc.join(5)
        except (OSError, ValueError, AssertionError):
            pass
        try:
            conn.close()
        except OSError:
            pass

    def emit() -> None:
        nonlocal emitted
        while emitted in results:
            if on_result is not None:
                on_result(emitted, results[emitted])
            emitted += 1

    def terminate(_signum: int, _frame: Any) -> None:
        raise Terminated()

    previous = None
    try:
        previous = signal.signal(signal.SIGTERM, terminate)
    except ValueError:  # not the main thread: the workers still die with this process
        previous = None
    frozen = gc.get_freeze_count() == 0  # a caller that froze its own objects keeps them so
    if frozen:
        gc.freeze()  # the heap the workers inherit: out of their collections (see the module docs)
    try:
        while pending or busy:
            while pending and (idle or len(busy) < jobs):
                proc, conn = idle.pop() if idle else start()
                index = pending.popleft()
                try:
                    conn.send((index, tasks[index]))
                except (OSError, ValueError):  # the worker is gone: a fresh one takes the task
                    stop(proc, conn)
                    pending.appendleft(index)
                    continue
                busy[conn] = (proc, index, time.monotonic() + timeout)
            nearest = min(deadline for _, _, deadline in busy.values())
            ready = wait(list(busy), timeout=max(0.0, nearest - time.monotonic()))
            for conn in ready:
                proc, index, _deadline = busy.pop(conn)
                try:
                    got_index, result = conn.recv()
                except (EOFError, OSError):
                    proc.join(5)
                    code = proc.exitcode
                    how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
                    results[index] = over_budget(index, f"its worker process ended ({how}), "
                                                        f"likely over {max_memory} MB of memory (--max-memory)")
                    stop(proc, conn)
                    continue
                if isinstance(result, BudgetExceeded):
                    result = over_budget(got_index, str(result))
                results[got_index] = result
                idle.append((proc, conn))
            now = time.monotonic()
            for conn, (proc, index, deadline) in list(busy.items()):
                if now >= deadline and conn not in ready:
                    del busy[conn]
                    stop(proc, conn)
                    results[index] = over_budget(index, f"more than {timeout:g} s (--timeout-per-input)")
            emit()
    finally:
        for proc, conn in idle + [(p, c) for c, (p, _i, _d) in busy.items()]:
            stop(proc, conn)
        if frozen:
            gc.unfreeze()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    emit()
    return [results[i] for i in range(len(tasks))]
