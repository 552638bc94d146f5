"""Benchmark of the offline parse path (issue 2), run on demand: python bench/bench_parse.py

Measures, in one run on this machine:
  * extraction throughput of `codeparse.parse_text` end to end (lexing, parsing,
    extraction, inference, pydantic validation) on every fixture text, against
    `ast.parse` alone on the same strings;
  * start-up of `codeparse parse <small file> --format json` as a process, against
    `python -c pass`;
  * whether `import torch` happens anywhere on that path (`python -X importtime`).
Figures are reported as ratios against the baseline measured in the same run, and
written to bench/results.md (pass --no-write to only print).
"""

from __future__ import annotations

import argparse
import ast
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from _timing import best_of, median_run  # bench/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "fixtures" / "text" / "custom_model" / "script.code"


def corpus() -> list[str]:
    files = sorted((ROOT / "fixtures" / "text").glob("*/*.code"))
    files += sorted((ROOT / "fixtures" / "archive_code").rglob("*.py"))
    return [f.read_text(encoding="utf-8") for f in files]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=15, help="process runs for start-up")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    import codeparse

    texts = corpus()
    size = sum(len(t.encode("utf-8")) for t in texts)
    for text in texts:  # warm: grammar compiled, caches filled
        codeparse.parse_text(text)
    t_cp = best_of(args.rounds, lambda: [codeparse.parse_text(t) for t in texts])
    t_ast = best_of(args.rounds, lambda: [ast.parse(t) for t in texts])

    exe = [sys.executable, "-m", "codeparse", "parse", str(SMALL), "--format", "json"]
    t_pass = median_run([sys.executable, "-c", "pass"], args.runs, ROOT)
    t_start = median_run(exe, args.runs, ROOT)
    importtime = subprocess.run(
        [sys.executable, "-X", "importtime", *exe[1:]], capture_output=True, text=True, cwd=ROOT
    ).stderr
    torch_imported = any(line.rstrip().endswith(("| torch", "|   torch")) or " torch." in line.split("|")[-1]
                         for line in importtime.splitlines() if "|" in line)
    modules = sum(1 for line in importtime.splitlines() if line.startswith("import time:")) - 1

    rows = [
        ("corpus", f"{len(texts)} fixture texts, {size / 1e6:.2f} MB"),
        ("`codeparse.parse_text` (end to end)", f"{size / t_cp / 1e6:.2f} MB/s ({t_cp * 1000:.0f} ms)"),
        ("`ast.parse` alone (baseline)", f"{size / t_ast / 1e6:.2f} MB/s ({t_ast * 1000:.0f} ms)"),
        ("**extraction speed / ast.parse speed**", f"**{t_ast / t_cp:.2f}×** (target ≥ 3×)"),
        ("`python -c pass` (baseline)", f"{t_pass * 1000:.0f} ms"),
        ("`codeparse parse custom_model/script.code --format json`", f"{t_start * 1000:.0f} ms"),
        ("**start-up, absolute / over baseline**", f"**{t_start:.3f} s** (target < 0.2 s); {t_start / t_pass:.1f}× `python -c pass`"),
        ("`torch` imported on that path", "yes" if torch_imported else "no"),
        ("bytecode cache (`PYTHONDONTWRITEBYTECODE`)",
         "off: every start compiles codeparse's sources" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "on"),
        ("modules imported on that path", str(modules)),
    ]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Benchmark: offline parse path",
        "",
        f"`python bench/bench_parse.py` on {stamp}; {platform.python_implementation()} "
        f"{platform.python_version()}, {os.cpu_count()} cores, {platform.machine()}; "
        f"best of {args.rounds} rounds for throughput, median of {args.runs} runs for start-up.",
        "",
        "| measure | value |",
        "|---|---|",
        *[f"| {a} | {b} |" for a, b in rows],
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if not args.no_write:
        (ROOT / "bench" / "results.md").write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
