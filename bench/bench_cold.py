"""Cold processes, before/after in one run: python bench/bench_cold.py

What a fresh ``codeparse`` process costs, this checkout against ``--before REV`` (default
``main``, exported with ``git archive``), each command run ``--runs`` times per side in
alternating processes, from this checkout's folder with the side's package first on the
path (``python -P``, so the working directory is never imported instead):

* ``check --format jsonl`` on the generated 177 MB ``nn.Transformer`` archive
  (``bench/make_corpus.py``): CPU time (user + system) of the process and its worker;
* the same on one small archive (``fixtures/archives/custom_model.script.pt``);
* ``parse fixtures/text/custom_model/script.code --format json``: CPU time;
* ``python -c pass`` as the baseline of an interpreter's own start.

Every figure is the lower quartile and the median of a side's runs (CPU time on a shared
machine only grows with load: the lower quartile is the steadier figure); the speed-up is
before / after of the lower quartiles.  Run ``python -m compileall -q codeparse`` first where
bytecode writing is off (``PYTHONDONTWRITEBYTECODE``): this script precompiles both sides.
Writes ``bench/results-cold.md`` unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIG = ["--max-entry-bytes", str(1 << 30), "--max-total-bytes", str(1 << 31)]
COMMANDS = (
    ("`check --format jsonl` on the 177 MB `nn.Transformer` archive",
     ["-m", "codeparse", "check", "--format", "jsonl", "--config", os.devnull, *BIG, "bench/out/transformer_d512.pt"]),
    ("`check --format jsonl` on `custom_model.script.pt` (11 code files)",
     ["-m", "codeparse", "check", "--format", "jsonl", "--config", os.devnull,
      "fixtures/archives/custom_model.script.pt"]),
    ("`parse custom_model/script.code --format json`",
     ["-m", "codeparse", "parse", "fixtures/text/custom_model/script.code", "--format", "json"]),
    ("`python -c pass` (an interpreter's start, for scale)", ["-c", "pass"]),
)


def cpu(root: Path, args: list[str]) -> float:
    """CPU time (user + system) of one process and its waited-for children, in ms."""
    env = dict(os.environ, PYTHONPATH=str(root))
    proc = subprocess.Popen([sys.executable, "-P", *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{args[:4]}... exited {os.waitstatus_to_exitcode(status)} with {root}")
    return (usage.ru_utime + usage.ru_stime) * 1000


def quartile(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 4]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="git revision to compare with (default: main)")
    parser.add_argument("--runs", type=int, default=12, help="processes per command and side, alternating")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if not (ROOT / "bench/out/transformer_d512.pt").exists():
        subprocess.run([sys.executable, str(ROOT / "bench/make_corpus.py")], check=True)
    rev = subprocess.run(["git", "rev-parse", "--short", args.before], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp)
        data = subprocess.run(["git", "archive", args.before, "codeparse", "grammars"], cwd=ROOT, check=True,
                              capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(before, filter="data")
        for root in (before, ROOT):
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "codeparse")], check=True)
        for label, command in COMMANDS:
            found: dict[str, list[float]] = {"before": [], "after": []}
            for _ in range(args.runs):
                for side, root in (("before", before), ("after", ROOT)):
                    found[side].append(cpu(root, command))
            rows.append((label, found))
            print(f"{label}: before {quartile(found['before']):.0f} ms, after {quartile(found['after']):.0f} ms",
                  file=sys.stderr)
    load_after = os.getloadavg()[0]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Benchmark: cold `codeparse` processes, before and after",
        "",
        f"`python bench/bench_cold.py` on {stamp}; CPython {platform.python_version()}, {os.cpu_count()} cores, "
        f"{platform.machine()}; load average {load_before:.1f} before, {load_after:.1f} after; before = `{rev}`, "
        f"after = this checkout; CPU time (user + system) of each process and its worker, {args.runs} runs per "
        "command and side in alternating processes, run from the checkout with the side's package first on the "
        "path (`python -P`); the lower quartile of the runs (CPU time on a shared machine only grows with load), "
        "the median in brackets.",
        "",
        "| command | before | after | speed-up |",
        "|---|---|---|---|",
    ]
    for label, found in rows:
        b, a = quartile(found["before"]), quartile(found["after"])
        lines.append(f"| {label} | {b:.0f} ms ({statistics.median(found['before']):.0f}) | "
                     f"{a:.0f} ms ({statistics.median(found['after']):.0f}) | **{b / a:.2f}×** |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        (ROOT / "bench" / "results-cold.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
