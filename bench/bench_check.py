"""Benchmark of `codeparse check` against `torch.jit.load` + walking the code.

    python bench/bench_check.py                 # writes bench/results-check.md
    python bench/bench_check.py --no-write      # only prints
    python bench/bench_check.py --no-dask       # without the --jobs / Dask table

The corpus is generated at bench time into ``bench/out/`` (git-ignored) by
``bench/make_corpus.py``: a scripted ``nn.Transformer(d_model=512)`` saved with its
weights (177 MB), and a directory of at least 40 archives of different models (torch.nn
containers, transformer stacks, recurrent nets, the fixture models), all made by the
installed torch.

Everything is CPU time (user + system), and every ratio is against the torch figure of
the same run:

* **in process**, imports excluded: ``codeparse.check(paths)`` against ``torch.jit.load``
  + the walk (best of ``--rounds`` rounds each).  ``check`` reads each input in a worker
  process (the per-input time and memory budget): the figure is this process's CPU time
  plus its workers'.  *Cold*: every round is a new ``check`` call, so the in-process cache
  starts empty each round and no ``--cache-dir`` is used.  *Warm*: ``check(paths,
  cache_dir=DIR)`` after one run has filled ``DIR``.  *No worker*: the same cold run
  with the inputs read in this process (the budget off), which shows what the workers
  cost;
* **process to process**: ``python -m codeparse check --format jsonl PATH...`` against
  ``python -c "import torch; [torch.jit.load + walk]"`` (median of ``--runs``; the CPU
  time of the child process, from ``getrusage``), the package's bytecode precompiled
  (``python -m compileall``, as the README's install does; torch's is, by its install):
  where writing bytecode is off (``PYTHONDONTWRITEBYTECODE``), every process would
  compile the package again;
* **peak memory** of ``check`` on the Transformer, in a fresh process: the peak of Python
  allocations while ``check`` runs (``tracemalloc``), and the maximum resident size of a
  ``codeparse check`` process;
* **one machine or a cluster**: wall time of ``check`` over the zoo with ``--jobs 1``,
  ``--jobs 2`` and ``--dask local`` (2 workers), cold, as processes.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_corpus  # noqa: E402 - bench/ is on sys.path
from _timing import cpu_best  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TORCH_WALK = (
    "import sys, warnings, torch\n"
    "warnings.simplefilter('ignore')\n"
    "for p in sys.argv[1:]:\n"
    "    m = torch.jit.load(p)\n"
    "    [s._c._get_method(n).code for _, s in m.named_modules() for n in s._c._method_names()]\n"
)
BIG_LIMITS = ["--max-entry-bytes", str(1 << 30), "--max-total-bytes", str(1 << 31)]
PEAK = (
    "import sys, tracemalloc, codeparse\n"
    "from codeparse.contract.check import Policy\n"
    "p = Policy(max_entry_bytes=1 << 30, max_total_bytes=1 << 31)\n"
    "import codeparse.gate.run, codeparse.archive.torchscript, codeparse.text.program, codeparse.text.cache  # imports excluded\n"
    "tracemalloc.start()\n"
    "codeparse.check(sys.argv[1:], p)\n"
    "print(tracemalloc.get_traced_memory()[1])\n"
)


def walk(module) -> int:
    return sum(len(s._c._get_method(n).code) for _, s in module.named_modules() for n in s._c._method_names())


# Runs a command and prints its CPU time and peak resident size.  A small process forks it:
# Linux counts a forked child's resident size from before its exec, so a child forked by
# this benchmark (torch and a 177 MB archive loaded) would report this process's size.
RUSAGE = (
    "import os, subprocess, sys\n"
    "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "_, status, ru = os.wait4(p.pid, 0)\n"
    "print(os.waitstatus_to_exitcode(status), ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024)\n"
)


def child_cpu(cmd: list[str], runs: int) -> tuple[float, int]:
    """Median CPU time (user + system) of ``runs`` runs of a command, and its largest max RSS (bytes)."""
    times, rss = [], 0
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", RUSAGE, *cmd], capture_output=True, text=True, cwd=ROOT,
                             check=True).stdout.split()
        code, cpu, peak_rss = int(out[0]), float(out[1]), int(out[2])
        if code not in (0, 1):
            raise SystemExit(f"{cmd[:4]}... exited {code}")
        times.append(cpu)
        rss = max(rss, peak_rss)
    return statistics.median(times), rss


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    code = subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT).returncode
    if code not in (0, 1):
        raise SystemExit(f"{cmd[3:8]}... exited {code}")
    return time.perf_counter() - start


def measure(paths: list[Path], runs: int, rounds: int, cache: Path) -> dict[str, float]:
    import torch

    import codeparse
    from codeparse.contract.check import Policy

    names = [str(p) for p in paths]
    policy = Policy(max_entry_bytes=1 << 30, max_total_bytes=1 << 31)
    codeparse.check(names, policy)  # warm-up: grammar compiled, modules imported
    cold = cpu_best(rounds, lambda: codeparse.check(names, policy))
    budget = importlib.import_module("codeparse.gate.budget")
    bounded = budget.available
    budget.available = lambda: False  # inputs read in this process: no worker, no budget
    try:
        no_worker = cpu_best(rounds, lambda: codeparse.check(names, policy))
    finally:
        budget.available = bounded
    shutil.rmtree(cache, ignore_errors=True)
    codeparse.check(names, policy, cache_dir=cache)  # fills the cache
    warm = cpu_best(rounds, lambda: codeparse.check(names, policy, cache_dir=cache))

    def torch_all():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for p in names:
                walk(torch.jit.load(p))

    torch_all()
    torch_in = cpu_best(rounds, torch_all)
    cli = [sys.executable, "-m", "codeparse", "check", "--format", "jsonl", "--config", os.devnull, *BIG_LIMITS]
    cp_proc, cp_rss = child_cpu(cli + names, runs)
    shutil.rmtree(cache, ignore_errors=True)
    subprocess.run(cli + ["--cache-dir", str(cache)] + names, stdout=subprocess.DEVNULL, cwd=ROOT, check=False)
    cp_proc_warm, _ = child_cpu(cli + ["--cache-dir", str(cache)] + names, runs)
    torch_proc, _ = child_cpu([sys.executable, "-c", TORCH_WALK, *names], runs)
    return {"cold": cold, "no_worker": no_worker, "warm": warm, "torch_in": torch_in, "cp_proc": cp_proc, "cp_proc_warm": cp_proc_warm,
            "torch_proc": torch_proc, "cp_rss": cp_rss}


# Where a cold check's time goes: (label, module, attribute) of the stages timed, nested
# stages listed after the stage that holds them.
STAGES = (
    ("parse: every entry read as one program", "codeparse.text.program", "parse_program"),
    ("  statement classifier (declarations pre-pass)", "codeparse.text.reader", "prepare_text"),
    ("  definitions walked", "codeparse.text.reader", "start_file"),
    ("  conditions, calls, references (inference)", "codeparse.text.reader", "finish_file"),
    ("program resolved: types, call graph, findings", "codeparse.text.program", "analyse"),
    ("debug info of files with findings (`.debug_pkl`)", "codeparse.archive.torchscript", "OpenedArchive.origins"),
    ("pickle scan of `data.pkl`, `constants.pkl`; bytecode", "codeparse.archive.torchscript", "OpenedArchive.tail_findings"),
    ("findings (plain data)", "codeparse.text.program", "to_finding"),
    ("`Report` models for the caller (`codeparse.check`)", "codeparse.contract.records", "report_model"),
)


def stages(paths: list[Path], rounds: int = 3) -> tuple[float, list[tuple[str, float]]]:
    """CPU time of a cold ``check`` in this process (no worker) and of each stage in it: the
    round of ``rounds`` with the smallest total."""
    import codeparse
    from codeparse.contract.check import Policy

    spent: dict[str, float] = {}
    undo = []

    def timed(label: str, fn):
        def run(*args, **kwargs):
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.process_time() - start
        return run

    for label, module_name, attr in STAGES:
        owner = importlib.import_module(module_name)
        *outer, name = attr.split(".")
        for part in outer:
            owner = getattr(owner, part)
        undo.append((owner, name, getattr(owner, name)))
        setattr(owner, name, timed(label, getattr(owner, name)))
    budget = importlib.import_module("codeparse.gate.budget")
    bounded = budget.available
    budget.available = lambda: False
    policy = Policy(max_entry_bytes=1 << 30, max_total_bytes=1 << 31)
    best: tuple[float, dict[str, float]] = (float("inf"), {})
    try:
        codeparse.check([str(p) for p in paths], policy)  # warm-up
        for _ in range(rounds):
            spent.clear()
            start = time.process_time()
            codeparse.check([str(p) for p in paths], policy)
            total = time.process_time() - start
            if total < best[0]:
                best = (total, dict(spent))
    finally:
        budget.available = bounded
        for owner, name, fn in reversed(undo):
            setattr(owner, name, fn)
    total, spent = best
    return total, [(label, spent.get(label, 0.0)) for label, _, _ in STAGES]


# A `codeparse check` process split: interpreter start, the imports of the command, the check itself
# (with one worker, the worker loads the grammar patterns and operator tables its input needs).
SPLIT = (
    "import resource, sys, time\n"
    "def cpu():\n"
    "    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime\n"
    "start = cpu()\n"
    "import importlib, io, contextlib\n"
    "import codeparse.cli.app, codeparse.cli.check\n"
    "checker = importlib.import_module('codeparse.gate.run')\n"
    "imported = cpu()\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    codeparse.cli.app.main(['check', '--format', 'jsonl', '--config', '/dev/null', *sys.argv[1:]])\n"
    "print(start, imported - start, cpu() - imported)\n"
)


def process_split(path: Path, runs: int = 5) -> tuple[float, float, float]:
    """CPU time of a check process on ``path``: before any import (the interpreter's start),
    the command's imports, the check (its worker included); each the median of ``runs``
    processes (one process's figures move by half on a shared machine)."""
    parts = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", SPLIT, *BIG_LIMITS, str(path)], capture_output=True, text=True,
                             cwd=ROOT, check=True)
        parts.append(tuple(map(float, out.stdout.split()[-3:])))
    start, imports, run = (statistics.median(column) for column in zip(*parts))
    return start, imports, run


def peak(path: Path) -> int:
    out = subprocess.run([sys.executable, "-c", PEAK, str(path)], capture_output=True, text=True, cwd=ROOT,
                         check=True)
    return int(out.stdout.strip().splitlines()[-1])


def scale_table(zoo: list[Path], tmp: Path) -> list[tuple[str, float]]:
    cli = [sys.executable, "-m", "codeparse", "check", "--format", "jsonl", "--config", os.devnull]
    names = [str(p) for p in zoo]
    rows = [("`--jobs 1`", wall(cli + names)), ("`--jobs 2`", wall(cli + ["--jobs", "2"] + names))]
    try:
        import distributed  # noqa: F401
    except ImportError:
        return rows
    rows.append(("`--dask local` (2 workers; cluster start included)", wall(cli + ["--dask", "local"] + names)))
    out = tmp / "dataset"
    parquet = [sys.executable, "-m", "codeparse", "check", "--config", os.devnull, "--dask", "local",
               "--output-format", "parquet", "--output-file", str(out)]
    rows.append(("`--dask local --output-format parquet`", wall(parquet + names)))
    return rows


def ratio(a: float, b: float) -> str:
    return f"**{a / b:.2f}×**" if b else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="process runs (median)")
    parser.add_argument("--rounds", type=int, default=3, help="in-process rounds (best)")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--no-dask", action="store_true", help="skip the --jobs / Dask table")
    args = parser.parse_args()

    import torch

    large, zoo = make_corpus.make(quiet=True)
    # Bytecode precompiled, as the README's install does (see the module docs).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "codeparse")], check=True,
                   stdout=subprocess.DEVNULL)
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="codeparse-bench-") as tmp_name:
        tmp = Path(tmp_name)
        big = measure([large], args.runs, args.rounds, tmp / "cache-big")
        many = measure(zoo, args.runs, args.rounds, tmp / "cache-zoo")
        peak_bytes = peak(large)
        profiles = [stages([large]), stages(zoo)]
        split = process_split(large)
        scale = [] if args.no_dask else scale_table(zoo, tmp)
    load_after = os.getloadavg()

    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    size = large.stat().st_size
    zoo_bytes = sum(p.stat().st_size for p in zoo)
    lines = [
        "# Benchmark: `codeparse check` against `torch.jit.load` + walking the code",
        "",
        f"`python bench/bench_check.py` on {when}; CPython {platform.python_version()}, torch {torch.__version__}, "
        f"{os.cpu_count()} cores, {platform.machine()}. Load average "
        f"{load[0]:.1f} before, {load_after[0]:.1f} after, on {os.cpu_count()} cores: all figures are CPU time "
        "(user + system), and every ratio is against torch in the same run. In process: best of "
        f"{args.rounds} rounds, imports excluded, the CPU time of `check`'s worker process included; "
        "no worker process: the inputs read in the calling process, without the per-input budget; process to "
        f"process: median of {args.runs} runs, the CPU time of the child and its workers, the package's bytecode "
        "precompiled (`python -m compileall`, as an install does). Cold: a new `check` "
        "call per round (its in-process cache starts empty), no `--cache-dir`. "
        "Warm: `--cache-dir` filled by one earlier run.",
        "",
        "| input | measure | codeparse check | torch.jit.load + walk | **torch / codeparse** | target |",
        "|---|---|---|---|---|---|",
    ]
    big_label = f"`nn.Transformer(d_model=512)` scripted, {size / 1e6:.0f} MB, 1 archive"
    zoo_label = f"zoo: {len(zoo)} archives of different models, {zoo_bytes / 1e6:.1f} MB"
    for label, m, target_in, target_proc, target_warm in (
        (big_label, big, "≥ 5×", "≥ 10×", "-"),
        (zoo_label, many, "≥ 2×", "-", "≥ 5×"),
    ):
        lines.append(f"| {label} | in process, cold | {m['cold'] * 1000:.0f} ms | {m['torch_in'] * 1000:.0f} ms | "
                     f"{ratio(m['torch_in'], m['cold'])} | {target_in} |")
        lines.append(f"| {label} | in process, cold, no worker process | {m['no_worker'] * 1000:.0f} ms | "
                     f"{m['torch_in'] * 1000:.0f} ms | {ratio(m['torch_in'], m['no_worker'])} | - |")
        lines.append(f"| {label} | in process, warm `--cache-dir` | {m['warm'] * 1000:.0f} ms | "
                     f"{m['torch_in'] * 1000:.0f} ms | {ratio(m['torch_in'], m['warm'])} | {target_warm} |")
        lines.append(f"| {label} | process to process, cold | {m['cp_proc'] * 1000:.0f} ms | "
                     f"{m['torch_proc'] * 1000:.0f} ms | {ratio(m['torch_proc'], m['cp_proc'])} | {target_proc} |")
        lines.append(f"| {label} | process to process, warm `--cache-dir` | {m['cp_proc_warm'] * 1000:.0f} ms | "
                     f"{m['torch_proc'] * 1000:.0f} ms | {ratio(m['torch_proc'], m['cp_proc_warm'])} | - |")
    lines += [
        "",
        f"Peak memory of `check` on the Transformer: **{peak_bytes / 1e6:.1f} MB** of Python allocations while it "
        f"runs (`tracemalloc`, imports excluded; target < 80 MB); the whole `codeparse check` process peaks at "
        f"{big['cp_rss'] / 1e6:.0f} MB resident (interpreter and imports included).",
        "",
        "Where the time of a cold check goes (`check` in process, no worker process, the best of 3 rounds, "
        "stages timed in place; "
        "indented stages are part of the stage above them):",
        "",
        "| stage | Transformer | share | zoo | share |",
        "|---|---|---|---|---|",
    ]
    (big_total, big_stages), (zoo_total, zoo_stages) = profiles
    for (label, big_t), (_, zoo_t) in zip(big_stages, zoo_stages):
        shown = "&nbsp;" * (len(label) - len(label.lstrip())) * 2 + label.strip()
        lines.append(f"| {shown} | {big_t * 1000:.0f} ms | {big_t / big_total:.0%} | {zoo_t * 1000:.0f} ms | "
                     f"{zoo_t / zoo_total:.0%} |")
    lines.append(f"| whole check | {big_total * 1000:.0f} ms | 100% | {zoo_total * 1000:.0f} ms | 100% |")
    lines += [
        "",
        f"A `codeparse check` process on the Transformer, in CPU time: {split[0] * 1000:.0f} ms to start the "
        f"interpreter, {split[1] * 1000:.0f} ms of imports, {split[2] * 1000:.0f} ms for the check itself (its "
        "worker process, which loads the grammar patterns and operator tables the input needs, and the JSON "
        "output included).",
    ]
    if scale:
        lines += [
            "",
            f"One machine or a cluster: wall time of `codeparse check --format jsonl` over the zoo ({len(zoo)} "
            f"archives), cold, as processes, on this {os.cpu_count()}-core machine:",
            "",
            "| how | wall time |",
            "|---|---|",
        ]
        lines += [f"| {label} | {seconds:.1f} s |" for label, seconds in scale]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        (ROOT / "bench" / "results-check.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
