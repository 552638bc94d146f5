"""Benchmark of `check --target export` against `check --target trace`, run on demand:

    python bench/bench_export.py                     # writes bench/results-export.md
    python bench/bench_export.py --before main~3     # also that revision, in the same run
    python bench/bench_export.py --no-write          # only prints

The inputs are those of bench/bench_check.py that need no torch: every committed fixture
archive (script and trace; codeparse never reads tensor data, so the stripped archives
cost it what the re-saved ones do).  In one process, alternating the two targets round by
round, it times `codeparse.check(paths, policy)` (reading, resolution, findings, the
verdict) in CPU time, the worker processes' included (the machine is often shared), and
reports the best of --rounds rounds of each and their ratio.  The target: export costs at
most 10 % more than trace.  With --before REV, that revision's package runs the same
rounds in processes alternating with this checkout's, and gets a row of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("trace", "export")

# One process of one side (before_after): the package under test first on the path.
CHILD = r"""
import json, sys
root, data, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, root)
sys.path.insert(1, data + "/bench")
from bench_export import measure
print(json.dumps([measure(rounds)]))
"""


def inputs() -> list[str]:
    return sorted(str(p) for p in (ROOT / "fixtures" / "archives").glob("*.pt"))


def measure(rounds: int) -> dict[str, float]:
    """The best CPU time of each target over ``rounds`` alternating rounds, in seconds, with
    the ``codeparse`` found first on the path."""
    from _timing import cpu_time

    from codeparse.gate.run import check
    from codeparse.gate.policy import policy_with
    from codeparse.contract.check import Policy

    paths = inputs()
    policies = {t: policy_with(Policy(), target=t) for t in TARGETS}
    check(paths[:3], policies["export"])  # warm: grammar rules compiled on first use
    best = {t: float("inf") for t in TARGETS}
    for _ in range(rounds):
        for target, policy in policies.items():
            start = cpu_time()
            check(paths, policy)
            best[target] = min(best[target], cpu_time() - start)
    return best


def _row(label: str, size: float, count: int, best: dict[str, float]) -> str:
    return (f"| {label}, {count} archives, {size:.1f} MB | {best['trace'] * 1000:.0f} ms | "
            f"{best['export'] * 1000:.0f} ms | **{best['export'] / best['trace']:.2f}×** (target ≤ 1.10×) |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", default=None, help="a git revision to time in the same run")
    parser.add_argument("--repeat", type=int, default=2, help="processes per side with --before")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(1, str(ROOT / "bench"))

    paths = inputs()
    size = sum(Path(p).stat().st_size for p in paths) / 1e6
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    rows = []
    if args.before:
        from _timing import before_after

        rev, found = before_after(CHILD, args.before, args.rounds, args.repeat)
        best = {side: {t: min(r[t] for r in found[side]) for t in TARGETS} for side in found}
        print(json.dumps(best), file=sys.stderr)
        rows.append(_row(f"fixture archives at `{rev}` (before)", size, len(paths), best["before"]))
        rows.append(_row("fixture archives, this checkout", size, len(paths), best["after"]))
        how = (f"best of {args.rounds} rounds each in {args.repeat} processes per side, sides alternating, "
               "targets alternating in each process")
    else:
        rows.append(_row("fixture archives", size, len(paths), measure(args.rounds)))
        how = f"best of {args.rounds} rounds each, targets alternating in one process"
    lines = [
        f"`python bench/bench_export.py{' --before ' + args.before if args.before else ''}` on {when}; "
        f"CPython {platform.python_version()}, {platform.machine()}; CPU time of the process and its "
        f"workers; {how}; load average {load} at the end.",
        "| inputs | `check --target trace` | `check --target export` | **export / trace** |",
        "|---|---|---|---|",
        *rows,
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        (ROOT / "bench" / "results-export.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
