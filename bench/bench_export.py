"""Benchmark of `check --target export` against `check --target trace` (issue 9), run on demand:

    python bench/bench_export.py            # writes bench/results-export.md
    python bench/bench_export.py --no-write # only prints

The inputs are those of bench/bench_check.py that need no torch: every committed fixture
archive (script and trace; codeparse never reads tensor data, so the stripped archives
cost it what the re-saved ones do).  In one process, alternating the two targets round by
round, it times `codeparse.check(paths, policy)` (reading, resolution, findings, the
verdict) and reports the best of --rounds rounds of each and their ratio.  The target of
issue 9: export costs at most 10 % more than trace.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)

    from codeparse.check import check, policy_with
    from codeparse.models import Policy

    paths = sorted(str(p) for p in (ROOT / "fixtures" / "archives").glob("*.pt"))
    policies = {t: policy_with(Policy(), target=t) for t in ("trace", "export")}
    check(paths[:3], policies["export"])  # warm: grammar rules compiled on first use
    best = {"trace": float("inf"), "export": float("inf")}
    for _ in range(args.rounds):
        for target, policy in policies.items():
            start = time.perf_counter()
            check(paths, policy)
            best[target] = min(best[target], time.perf_counter() - start)
    ratio = best["export"] / best["trace"]
    size = sum(Path(p).stat().st_size for p in paths) / 1e6
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"`python bench/bench_export.py` on {when}; CPython {platform.python_version()}, "
        f"{platform.machine()}; best of {args.rounds} rounds each, targets alternating in one process.",
        "| inputs | `check --target trace` | `check --target export` | **export / trace** |",
        "|---|---|---|---|",
        f"| fixture archives, {len(paths)} archives, {size:.1f} MB | {best['trace'] * 1000:.0f} ms | "
        f"{best['export'] * 1000:.0f} ms | **{ratio:.2f}×** (target ≤ 1.10×) |",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        (ROOT / "bench" / "results-export.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
