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
``fork`` does not exist the inputs are read in this process, without the bounds (and with
the workers' collector settings: :func:`collecting_as_workers`).  The
parent's objects are frozen out of the garbage collector while workers run (``gc.freeze``):
a worker's collections then never walk the heap it inherited (a caller with torch loaded
holds a few hundred thousand objects), which would cost CPU time and copy its pages.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import time
from collections import deque
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Sequence

__all__ = ["BudgetExceeded", "Terminated", "cpu_count", "run_bounded", "available", "collecting_as_workers",
           "input_done", "WORKER_THRESHOLDS"]


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
    return hasattr(os, "fork")


def _death_signal() -> Optional[Callable[[int, int], Any]]:
    """Linux's ``prctl`` (from the C library, through ``ctypes``), found in the parent before
    it forks: each worker then calls it without importing ``ctypes`` and opening the
    library itself.  None where there is none."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _die_with_parent(parent: int, prctl: Optional[Callable[[int, int], Any]]) -> None:
    """Ask the kernel to SIGKILL this process when its parent ends (``prctl``, Linux), and
    stop at once if the parent is already gone."""
    if prctl is not None:
        try:
            prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:
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


# The workers' collection thresholds (``gc.set_threshold``): young garbage collected per
# 100,000 new objects.  The command line's own process runs with them too (codeparse.cli.run).
WORKER_THRESHOLDS = (100_000, 50, 100)


_frozen_here = 0  # blocks of _heap_frozen entered and not left, in this process
_freezing = False  # the outermost of them froze the heap (and unfreezes it on leaving)


@contextmanager
def _heap_frozen() -> Iterator[None]:
    """The objects that exist on entry frozen out of the collector (``gc.freeze``) until
    the block is left; a caller that froze its own objects keeps them so.  Inside another
    such block nothing is asked: counting the frozen objects (``gc.get_freeze_count``)
    walks all of them, some ten milliseconds with torch's loaded."""
    global _frozen_here, _freezing
    freeze = _frozen_here == 0 and gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
        _freezing = True
    _frozen_here += 1
    try:
        yield
    finally:
        _frozen_here -= 1
        if freeze:
            _freezing = False
            gc.unfreeze()


def input_done() -> None:
    """After one input read in this process (no worker): what it leaves alive (its report,
    the entries it added to the content cache) frozen out of the collector like the heap
    before it, so that the collections the next inputs set off do not walk it again (over
    a run of many archives the young generation of live data grows to a few hundred
    thousand objects).  Only inside a :func:`_heap_frozen` block that froze: leaving it
    hands them back to the collector.  The readers release what they build (the
    program's inference, the unpicklers' memos), so little garbage is frozen with them.
    A worker does not: what it would leave frozen lives until the run ends, under its
    memory bound (and freezing measured no faster there)."""
    if _freezing:
        gc.freeze()


@contextmanager
def collecting_as_workers() -> Iterator[None]:
    """The garbage collector as a worker runs it, for inputs read in this process (where
    there is no ``fork``) and the reports built from them: the objects that exist on entry
    frozen out of collections (a caller with torch loaded holds a few hundred thousand,
    which every full collection would walk again) and young garbage collected per 100,000
    new objects; the caller's thresholds and frozen objects as they were on leaving."""
    thresholds = gc.get_threshold()
    with _heap_frozen():
        gc.set_threshold(*WORKER_THRESHOLDS)
        try:
            yield
        finally:
            gc.set_threshold(*thresholds)


class _Pipe:
    """One direction of a worker's channel: pickled messages, each after its length
    (8 bytes).  A message is read whole once it starts (the sender is our own worker code)."""

    __slots__ = ("fd",)

    def __init__(self, fd: int):
        self.fd = fd

    def send(self, obj: Any) -> None:
        import pickle  # here: the CLI imports this module on paths that start no worker

        data = pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
        view = memoryview(len(data).to_bytes(8, "little") + data)
        while view:
            view = view[os.write(self.fd, view):]

    def recv(self) -> Any:
        import pickle

        size = int.from_bytes(self._read(8), "little")
        return pickle.loads(self._read(size))

    def _read(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = os.read(self.fd, min(left, 1 << 20))
            if not chunk:
                raise EOFError("the other end closed")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:  # once: a closed number may already name another file
            try:
                os.close(fd)
            except OSError:
                pass


def _worker(tasks: _Pipe, results: _Pipe, parent: int, work: Callable[..., Any], max_memory: int,
            prctl: Optional[Callable[[int, int], Any]]) -> None:
    _die_with_parent(parent, prctl)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; it kills us
    _limit_memory(max_memory)
    # Reading an input makes objects by the hundred thousand that live until its report is
    # sent; the default threshold (700 new objects) walks them again and again, some tenth
    # of a check's time.  Young garbage is still collected, per 100,000 new objects.
    gc.set_threshold(*WORKER_THRESHOLDS)
    while True:
        try:
            task = tasks.recv()
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
            results.send((index, result))
        except MemoryError:
            results.send((index, BudgetExceeded(f"more than {max_memory} MB of memory (--max-memory)")))


class _Worker:
    """A forked worker process and the parent's ends of its two pipes."""

    __slots__ = ("pid", "tasks", "results", "status")

    def __init__(self, work: Callable[..., Any], max_memory: int, parent: int, inherited: list[int],
                 prctl: Optional[Callable[[int, int], Any]] = None):
        task_r, task_w = os.pipe()
        result_r, result_w = os.pipe()
        for stream in (sys.stdout, sys.stderr):  # nothing buffered is written twice
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        pid = os.fork()
        if pid == 0:  # the worker: it never returns from here
            code = 1
            try:
                for fd in (task_w, result_r, *inherited):  # the parent's ends, and other workers'
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                try:  # the input is never read from the parent's standard input here
                    sys.stdin.close()
                    sys.stdin = open(os.devnull)
                except (AttributeError, OSError, ValueError):
                    pass
                _worker(_Pipe(task_r), _Pipe(result_w), parent, work, max_memory, prctl)
                code = 0
            except BaseException:  # noqa: BLE001 - a worker ends with a status, never a traceback
                code = 1
            finally:
                for stream in (sys.stdout, sys.stderr):
                    try:
                        stream.flush()
                    except (AttributeError, OSError, ValueError):
                        pass
                os._exit(code)
        os.close(task_r)
        os.close(result_w)
        self.pid = pid
        self.tasks = _Pipe(task_w)
        self.results = _Pipe(result_r)
        self.status: Optional[int] = None  # exit code once reaped (negative: the signal)

    def fds(self) -> tuple[int, int]:
        return self.tasks.fd, self.results.fd

    def reap(self, kill: bool) -> None:
        """End the worker (``SIGKILL`` when ``kill``, else wait for it) and close its pipes."""
        if self.status is None:
            if kill:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                _, status = os.waitpid(self.pid, 0)
                self.status = os.waitstatus_to_exitcode(status)
            except ChildProcessError:
                self.status = 0
        self.tasks.close()
        self.results.close()


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

    Workers are plain ``os.fork`` children talking over two pipes each (pickled messages):
    no ``multiprocessing`` to import (some 15 ms, most of a small check's start) and no
    bootstrap of its own in each worker.
    """
    import pickle  # noqa: F401 - before the first fork: the workers inherit it, none imports it again
    import select

    prctl = _death_signal()
    jobs = max(1, min(jobs, cpu_count(), len(tasks)))
    parent = os.getpid()
    results: dict[int, Any] = {}
    pending = deque(range(len(tasks)))
    idle: list[_Worker] = []
    busy: dict[int, tuple[_Worker, int, float]] = {}  # result fd -> (worker, index, deadline)
    everyone: list[_Worker] = []
    emitted = 0

    def start() -> _Worker:
        inherited = [fd for w in everyone for fd in w.fds() if fd >= 0]
        worker = _Worker(work, max_memory, parent, inherited, prctl)
        everyone.append(worker)
        return worker

    def stop(worker: _Worker) -> None:
        worker.reap(kill=True)

    def died(worker: _Worker) -> str:
        code = worker.status
        how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        return f"its worker process ended ({how}), likely over {max_memory} MB of memory (--max-memory)"

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
    with _heap_frozen():  # the heap the workers inherit: out of their collections (see the module docs)
        try:
            while pending or busy:
                while pending and (idle or len(busy) < jobs):
                    fresh = not idle
                    worker = idle.pop() if idle else start()
                    index = pending.popleft()
                    try:
                        worker.tasks.send((index, tasks[index]))
                    except OSError:
                        stop(worker)
                        if not fresh:  # an idle worker that is gone: a fresh one takes the task
                            pending.appendleft(index)
                        else:  # it died reading this task (its memory bound): the task's verdict
                            results[index] = over_budget(index, died(worker))
                        continue
                    busy[worker.results.fd] = (worker, index, time.monotonic() + timeout)
                if not busy:  # the last tasks were settled without a worker reading them
                    continue
                nearest = min(deadline for _, _, deadline in busy.values())
                poll = select.poll()
                for fd in busy:
                    poll.register(fd, select.POLLIN)
                wait_ms = max(0.0, nearest - time.monotonic()) * 1000
                ready = {fd for fd, _event in poll.poll(int(wait_ms) + 1)}
                for fd in ready:
                    worker, index, _deadline = busy.pop(fd)
                    try:
                        got_index, result = worker.results.recv()
                    except (EOFError, OSError):
                        worker.reap(kill=False)
                        results[index] = over_budget(index, died(worker))
                        continue
                    if isinstance(result, BudgetExceeded):
                        result = over_budget(got_index, str(result))
                    results[got_index] = result
                    idle.append(worker)
                now = time.monotonic()
                for fd, (worker, index, deadline) in list(busy.items()):
                    if now >= deadline and fd not in ready:
                        del busy[fd]
                        stop(worker)
                        results[index] = over_budget(index, f"more than {timeout:g} s (--timeout-per-input)")
                emit()
        finally:
            for worker in idle:
                try:
                    worker.tasks.send(None)  # done: the worker ends by itself
                except OSError:
                    pass
            for worker in everyone:
                worker.reap(kill=worker not in idle)
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
    emit()
    return [results[i] for i in range(len(tasks))]
