"""What the statement layer and the call/reference scan cost, before/after in one run: python bench/bench_stages.py

Over the inputs of ``bench/bench_parse.py`` (every fixture text and archive code file),
each side in its own process, alternating, CPU time (``time.process_time``), best of
``--rounds`` per process:

* ``ast.parse`` over the same texts (every figure is a ratio of the same round's);
* ``parse_statements``: the statement layer alone (lines, blocks, the master patterns);
* within ``parse_file(..., as_dict=True)`` plus reading every if's kind and sources and
  every call (``bench_parse.read_dict``): the CPU time of ``Extractor._scan`` (calls and
  self references of each function, the inference it asks included) and of
  ``Extractor._class_head`` (names, bases, declarations of each class), and the whole path.

``--before REV`` (default ``main``) is exported with ``git archive`` and measured the same
way.  The machine may be shared: read the ratios of one run, not the absolute times.
Writes ``bench/results-stages.md`` unless ``--no-write``.
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
from codeparse import api
from codeparse.parse import statements as parser
from codeparse.text import extract
from codeparse.parse.source import SourceText
grammars = [codeparse.load_grammar(api.detect_grammar(t) or "torchscript-v2") for t in texts]
for f in files:
    codeparse.parse_file(f, as_dict=True)
spent = {"scan": 0.0, "class": 0.0}
def timed(name, key):
    original = getattr(extract.Extractor, name)
    def wrapper(*args):
        start = clock()
        try:
            return original(*args)
        finally:
            spent[key] += clock() - start
    setattr(extract.Extractor, name, wrapper)
timed("_scan", "scan")
timed("_class_head", "class")
out = []
for _ in range(rounds):
    gc.collect()
    start = clock(); [ast.parse(t) for t in texts]; t_ast = clock() - start
    start = clock(); [parser.parse_statements(SourceText(t, "-"), g) for t, g in zip(texts, grammars)]
    t_statements = clock() - start
    spent["scan"] = spent["class"] = 0.0
    start = clock(); [read_dict(codeparse.parse_file(f, as_dict=True)) for f in files]; t_dict = clock() - start
    out.append({"ast": t_ast, "statements": t_statements, "scan": spent["scan"], "class": spent["class"],
                "dict": t_dict})
print(json.dumps(out))
"""

STAGES = (("statements", "`parse_statements`"), ("scan", "`Extractor._scan`"),
          ("class", "`Extractor._class_head`"), ("dict", "dict path (all of it)"))


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="git revision to compare with (default: main)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per process")
    parser.add_argument("--repeat", type=int, default=3, help="processes per side, alternating")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rev, rounds = before_after(CHILD, args.before, args.rounds, args.repeat)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Benchmark: the statement layer and the call/reference scan, before and after",
        "",
        f"`python bench/bench_stages.py` on {when}; CPython {platform.python_version()}, {os.cpu_count()} cores, "
        f"{platform.machine()}, load average {os.getloadavg()[0]:.1f} at the end; before = `{rev}`, after = this "
        f"checkout; CPU time; {args.rounds} rounds in each of {args.repeat} alternating processes per side, each "
        "round timing `ast.parse` and every stage back to back; each figure is the median over a side's rounds of "
        "the stage's time over the same round's `ast.parse` time.  Inputs: the fixture corpus of "
        "`bench/bench_parse.py`.  `_scan` counts the inference it asks for (paths of names, callee targets).",
        "",
        "| stage | before (× `ast.parse` time) | after | speed-up |",
        "|---|---|---|---|",
    ]
    for key, label in STAGES:
        before = median([r[key] / r["ast"] for r in rounds["before"]])
        after = median([r[key] / r["ast"] for r in rounds["after"]])
        lines.append(f"| {label} | {before:.3f} | {after:.3f} | **{before / after:.2f}×** |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        (ROOT / "bench" / "results-stages.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
