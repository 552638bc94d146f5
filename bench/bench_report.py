"""Benchmark of `codeparse report`, run on demand:

    python bench/bench_report.py                   # writes bench/results-report.md
    python bench/bench_report.py --before REV      # also the same figures for git revision REV
    python bench/bench_report.py --no-write        # only prints

In one run, on one machine (figures are ratios within the run; the tests assert
behaviour only):

* **report against check** on the scripted `nn.Transformer(d_model=512)` archive
  (about 177 MB; the one `bench/make_corpus.py` makes into `bench/out/`, git-ignored, never
  committed, which bench/bench_check.py reads too): `python -m codeparse report ARCHIVE -o out.html` against
  `python -m codeparse check ARCHIVE --format jsonl`, run alternately (median of --runs
  runs each), and in process (imports excluded, best of --rounds): `build_report` against
  `codeparse.check`, in a fresh process that never imports torch.  CPU time (the
  process's and its workers'), not wall time: the machine is often shared.  With
  ``--before REV``, that revision's package (``git archive``) is measured in the same
  alternation.  Target: report costs at most 1.5x check.
* **time to ready** in headless Chromium (Debian's `/usr/bin/chromium`, through
  Playwright) on a torch-generated archive with at least 200 module classes, each in its
  own code file: the page's own `performance.now()` when it sets
  `document.body.dataset.ready`, against a blank page that sets it at once (median of
  --runs loads each).  Target: under 1 s absolute.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import warnings
from datetime import datetime, timezone
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from _timing import _export, cpu_time  # noqa: E402 - bench/ is on sys.path when run as a script
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
BLANK = "<!doctype html><html><body><script>document.body.dataset.readyMs = performance.now().toFixed(1); " \
        "document.body.dataset.ready = '1';</script></body></html>"
CLASSES = 200


def make_many_classes(folder: Path) -> Path:
    """A scripted model of CLASSES module classes, each in its own Python module, so each
    in its own archive code file; every block has an `if` on a shape and a submodule."""
    import torch

    pkg = folder / "manyblocks"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for i in range(CLASSES):
        (pkg / f"block{i}.py").write_text(
            "import torch\nfrom torch import nn\n\n\n"
            f"class Block{i}(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lin = nn.Linear(4, 4)\n"
            f"        self.scale = {i + 1}\n\n"
            "    def forward(self, x):\n"
            f"        if x.size(0) > {i % 7}:\n"
            "            x = self.lin(x)\n"
            "        return x * self.scale\n"
        )
    imports = "\n".join(f"from manyblocks.block{i} import Block{i}" for i in range(CLASSES))
    (pkg / "model.py").write_text(
        f"import torch\nfrom torch import nn\n{imports}\n\n\n"
        "class Many(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        f"        self.blocks = nn.ModuleList([{', '.join(f'Block{i}()' for i in range(CLASSES))}])\n\n"
        "    def forward(self, x):\n"
        "        for b in self.blocks:\n"
        "            x = b(x)\n"
        "        return x\n"
    )
    sys.path.insert(0, str(folder))
    model = importlib.import_module("manyblocks.model").Many().eval()
    path = folder / "many_classes.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(torch.jit.script(model), str(path))
    return path


def alternate(commands: list[tuple[list[str], Path]], runs: int) -> list[float]:
    """Median CPU time of each command (its process and the processes it waits for), run
    with the package at its path first on ``PYTHONPATH``, alternately (load spikes hit all)."""
    times: list[list[float]] = [[] for _ in commands]
    for run in range(runs + 1):  # the first round warms the file cache and each package's template cache
        for k, (cmd, root) in enumerate(commands):
            start = cpu_time()
            subprocess.run([sys.executable, "-P", *cmd], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(root)})
            if run:
                times[k].append(cpu_time() - start)
    return [statistics.median(t) for t in times]


IN_PROCESS = """
import sys
sys.path.insert(0, sys.argv[3])
import codeparse
from _timing import cpu_best
from codeparse.contract.check import Policy
from codeparse.report import build_report
path, rounds, policy = sys.argv[1], int(sys.argv[2]), Policy()
codeparse.check([path], policy)
build_report([path], policy=policy)
check = report = float("inf")
for _ in range(rounds):  # alternated, so that a load spike hits both
    check = min(check, cpu_best(1, lambda: codeparse.check([path], policy)))
    report = min(report, cpu_best(1, lambda: build_report([path], policy=policy)))
print(check, report)
"""


def in_process(path: Path, rounds: int, root: Path = ROOT) -> tuple[float, float]:
    """Smallest in-process CPU times of check (its worker included) and build_report, in a
    fresh process without torch (a process holding torch's objects makes every garbage
    collection slower), with the package at ``root``."""
    done = subprocess.run([sys.executable, "-P", "-c", IN_PROCESS, str(path), str(rounds), str(ROOT / "bench")],
                          check=True, capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(root)})
    check, report = (float(v) for v in done.stdout.split())
    return check, report


def ready_times(pages: list[Path], runs: int) -> list[float]:
    """Median ms from navigation start to `dataset.ready`, per page, loads alternated."""
    from playwright.sync_api import sync_playwright

    got: list[list[float]] = [[] for _ in pages]
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True,
                                                       args=FLAGS, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        for _ in range(runs + 1):
            for k, path in enumerate(pages):
                page.goto(path.as_uri())
                page.wait_for_function("document.body && document.body.dataset.ready === '1'")
                got[k].append(float(page.evaluate("document.body.dataset.readyMs")))
        context.close()
    return [statistics.median(t[1:]) for t in got]  # the first load of each warms the browser


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="codeparse report benchmark")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", default=None, metavar="REV", help="also measure this git revision")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)

    import torch

    import codeparse
    import make_corpus  # bench/ is on sys.path when run as a script
    from codeparse.report.page import write_report

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    os.environ.update(env)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        large, _zoo = make_corpus.make(quiet=True)
        many = make_many_classes(folder)
        mb = large.stat().st_size / 1e6
        out = folder / "large.html"
        roots = [ROOT]
        if args.before:
            rev = subprocess.run(["git", "rev-parse", "--short", args.before], cwd=ROOT, check=True,
                                 capture_output=True, text=True).stdout.strip()
            roots.append(folder / "before")
            _export(args.before, roots[1])
        for root in roots:  # the interpreter's start reads bytecode, as an installed package does
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "codeparse")], check=True,
                           stdout=subprocess.DEVNULL)
        write_report(out, [str(large)])  # warm the template cache, as any second run finds it
        commands = []
        for root in roots:
            commands += [(["-m", "codeparse", "check", str(large), "--format", "jsonl"], root),
                         (["-m", "codeparse", "report", str(large), "-o", str(out)], root)]
        times = alternate(commands, args.runs)
        check_s, report_s = times[:2]
        check_in, report_in = in_process(large, args.rounds)
        before_in = in_process(large, args.rounds, roots[1]) if args.before else None
        page = folder / "many.html"
        write_report(page, [str(many)])
        archive = codeparse.open_archive(str(many))
        blank = folder / "blank.html"
        blank.write_text(BLANK)
        many_ms, blank_ms = ready_times([page, blank], args.runs)

        when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        cpus = os.cpu_count()
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        lines = [
            f"`python bench/bench_report.py` on {when}; CPython {platform.python_version()}, torch {torch.__version__}, "
            f"{cpus} cores, {platform.machine()}, load average {load:.1f} at the end; CPU time (each process's "
            f"and its workers'): process figures are medians of {args.runs} alternated runs, in-process figures "
            f"the best of {args.rounds} rounds; ready times are medians of {args.runs} loads.",
            "",
            "| measure | value |",
            "|---|---|",
            f"| input | `nn.Transformer(d_model=512)` scripted, {mb:.0f} MB, {out.stat().st_size / 1e6:.2f} MB of HTML |",
            f"| `codeparse check --format jsonl` (process) | {check_s * 1000:.0f} ms |",
            f"| `codeparse report -o out.html` (process) | {report_s * 1000:.0f} ms |",
            f"| **report / check, process** | **{report_s / check_s:.2f}×** (target ≤ 1.5×) |",
            f"| `codeparse.check` (in process) | {check_in * 1000:.0f} ms |",
            f"| `build_report` (in process) | {report_in * 1000:.0f} ms |",
            f"| **report / check, in process** | **{report_in / check_in:.2f}×** |",
        ]
        if before_in is not None:
            lines += [
                f"| before (`{rev}`): check / report, process | {times[2] * 1000:.0f} ms / {times[3] * 1000:.0f} ms: "
                f"**{times[3] / times[2]:.2f}×** |",
                f"| before (`{rev}`): check / report, in process | {before_in[0] * 1000:.0f} ms / "
                f"{before_in[1] * 1000:.0f} ms: **{before_in[1] / before_in[0]:.2f}×** |",
            ]
        lines += [
            f"| many-class archive | {len(archive.classes)} classes, {len(archive.files)} code files, "
            f"{page.stat().st_size / 1e6:.2f} MB of HTML |",
            f"| time to `dataset.ready`, report of it | {many_ms:.0f} ms |",
            f"| time to `dataset.ready`, blank page | {blank_ms:.0f} ms |",
            f"| **ready, absolute / over blank** | **{many_ms / 1000:.2f} s** (target < 1 s); "
            f"{many_ms / max(blank_ms, 0.1):.1f}× the blank page |",
        ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        (ROOT / "bench" / "results-report.md").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
