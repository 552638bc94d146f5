"""What condition inference costs on the parse path, before/after in one run: python bench/bench_inference.py

Over the inputs of ``bench/bench_parse.py`` (every fixture text and archive code file),
each side in its own process, alternating, CPU time (``time.process_time``), best of
``--rounds``:

* ``ast.parse`` over the same texts (the baseline every parse figure is a ratio of);
* ``parse_file(..., as_dict=True)`` plus reading every if's kind and sources and every
  call (``bench_parse.read_dict``);
* within that, the CPU time spent answering conditions: ``Extractor._condition`` timed
  around each call (the verdict of every ``if`` and loop: sources, resolved text, none
  check, data-dependent shape), its share of the dict path, and its cost per condition.

``--before REV`` (default ``main``) is exported with ``git archive`` and measured the same
way.  The machine is shared: read the ratios of one run, not the absolute times.  Writes
``bench/results-inference.md`` unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path

from _timing import CHILD_HEAD, before_after  # bench/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parent.parent

CHILD = CHILD_HEAD + r"""
from codeparse.text import extract
spent = [0.0, 0]
answer = extract.Extractor._condition
def timed(*args):
    start = clock()
    try:
        return answer(*args)
    finally:
        spent[0] += clock() - start
        spent[1] += 1
extract.Extractor._condition = timed
prepared = [0.0]
prepare = extract.Extractor._prepare
def timed_prepare(*args):
    start = clock()
    try:
        return prepare(*args)
    finally:
        prepared[0] += clock() - start
extract.Extractor._prepare = timed_prepare
for f in files:
    codeparse.parse_file(f, as_dict=True)
out = []
for _ in range(rounds):
    start = clock(); [ast.parse(t) for t in texts]; t_ast = clock() - start
    spent[:] = [0.0, 0]
    prepared[0] = 0.0
    start = clock(); [read_dict(codeparse.parse_file(f, as_dict=True)) for f in files]; t_dict = clock() - start
    out.append({"ast": t_ast, "dict": t_dict, "conditions": spent[0], "count": spent[1], "prepare": prepared[0]})
print(json.dumps(out))
"""


def median_round(found: list[dict]) -> dict:
    """The round with the median dict-path time over ``ast.parse`` time."""
    ordered = sorted(found, key=lambda r: r["dict"] / r["ast"])
    return ordered[len(ordered) // 2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="git revision to compare with (default: main)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per process")
    parser.add_argument("--repeat", type=int, default=3, help="processes per side, alternating")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rev, rounds = before_after(CHILD, args.before, args.rounds, args.repeat)
    # Each round times ast.parse and the dict path back to back, so a round's ratios hold
    # under the load of that moment; the table gives the median round of each side.
    sides = {name: median_round(found) for name, found in rounds.items()}
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Benchmark: what condition inference costs on the parse path",
        "",
        f"`python bench/bench_inference.py` on {when}; CPython {platform.python_version()}, {os.cpu_count()} cores, "
        f"{platform.machine()}, load average {os.getloadavg()[0]:.1f} at the end; before = `{rev}`, after = this checkout; "
        f"CPU time; {args.rounds} rounds in each of {args.repeat} alternating processes per side, each round timing "
        "`ast.parse` and the dict path back to back; the table shows each side's median round (by dict path over "
        "`ast.parse`).  "
        "Inputs: the fixture corpus of `bench/bench_parse.py`; the dict path is `parse_file(..., as_dict=True)` "
        "plus reading every if's kind and sources and every call; *conditions* is the CPU time spent answering "
        "the conditions of every `if` and loop (sources, resolved text, none check, data-dependent shape); "
        "*function facts* is the CPU time of `Extractor._prepare` (each function's definitions, scopes and "
        "returns, gathered before any condition is answered).",
        "",
        "| side | `ast.parse` | dict path | speed vs `ast.parse` | conditions | share of the dict path "
        "| per condition | function facts (`_prepare`) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in ("before", "after"):
        r = sides[name]
        lines.append(f"| {name} | {r['ast'] * 1000:.0f} ms | {r['dict'] * 1000:.0f} ms | {r['ast'] / r['dict']:.2f}× "
                     f"| {r['conditions'] * 1000:.0f} ms ({r['count']}) | {r['conditions'] / r['dict']:.0%} "
                     f"| {r['conditions'] / r['count'] * 1e6:.0f} µs "
                     f"| {r['prepare'] * 1000:.0f} ms |")
    b, a = sides["before"], sides["after"]
    def per_ast(found: list[dict], key: str) -> float:
        ratios = sorted(r[key] / r["ast"] for r in found)
        return ratios[len(ratios) // 2]

    for found in rounds.values():
        for r in found:
            r["inference"] = r["conditions"] + r["prepare"]
    cond = per_ast(rounds["after"], "conditions") / per_ast(rounds["before"], "conditions")
    both = per_ast(rounds["after"], "inference") / per_ast(rounds["before"], "inference")
    whole = per_ast(rounds["after"], "dict") / per_ast(rounds["before"], "dict")
    lines += ["", f"After / before, each as the median over its rounds of the time over the same round's "
                  f"`ast.parse`: conditions **{cond:.2f}×**, conditions and function facts together **{both:.2f}×**, "
                  f"the whole dict path **{whole:.2f}×**."]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        (ROOT / "bench" / "results-inference.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
