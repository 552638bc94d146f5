"""Benchmark of the parse path (issues 2 and 12), run on demand: python bench/bench_parse.py

Measures, in one run on this machine, CPU time (``time.process_time``), every figure a
ratio against ``ast.parse`` on the same texts in the same run (issue 12, "What must show"):

  * ``parse_file(..., as_dict=True)`` plus reading every if's kind and sources and every
    call from the dict, over the fixture corpus (target ≥ 2× the speed of ``ast.parse``);
  * ``parse_file()`` with models plus reading the same through attributes (target ≥ 0.6×);
  * ``codeparse parse --format jsonl`` over the whole corpus in one process, against one
    process running ``ast.parse`` over the same files (target ≥ 1×);
  * per-byte cost at 8× a traced function's length over 1× for ``parse_text``, ``check``
    and ``ops`` (``bench_linear.py``; target ≤ 1.5);
  * start-up: median wall time of ``codeparse parse custom_model/script.code --format json``
    minus ``python -c pass`` (target ≤ 0.15 s), and the modules that path imports;
  * memory retained by the result over the input text's size: the dict (target ≤ 10×) and
    a built ``CodeFile`` (target ≤ 40×).

Writes bench/results.md (pass --no-write to only print).
"""

from __future__ import annotations

import argparse
import ast
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import time
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path

from _timing import cpu_best, median_run  # bench/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "fixtures" / "text" / "custom_model" / "script.code"
AST_PROCESS = "import ast, sys\nfor p in sys.argv[1:]:\n    ast.parse(open(p, encoding='utf-8').read())\n"

START_UP = """\
## Start-up: where it goes

`codeparse parse` on one small file starts at {wall:.3f} s over `python -c pass` in wall time on
this machine and {cpu:.3f} s in CPU time (target ≤ 0.15 s; the wall figure counts waiting for
a core on a loaded machine).  It is spent importing ({modules} modules: click and the
standard-library modules it imports, `json`, `tomllib`, `pathlib`; no pydantic, torch
or numpy), loading the grammar and building the patterns the text needs.  No pattern is
compiled: `grammars/patterns.json.gz` stores what `re` and `regex` make of every pattern
of the grammars (`python scripts/compile_patterns.py` writes it), and a process builds
each from it in microseconds, `regex` patterns (for this file: the `def` rule, `param`,
`items`, `expr_items` and the receiver look-ahead of the scan) with `regex`'s C engine
alone, without importing its Python compiler; compiling them took some 60 ms of a check
process.  What else keeps it small: a rule that compiles with `re` stands in its
grammar's master pattern as itself; operator overloads are parsed per operator when first
asked for (all 2,276 took 80 ms); detection loads grammars newest first and stops at the
first that matches.  Where bytecode writing is off, the README's install precompiles it
(`python -m compileall`)."""


def stage_figures() -> dict[str, str]:
    """The "after" figures of the last recorded bench_stages and bench_inference runs, as
    the note below quotes them (``?`` where a file or row is missing)."""
    found = {"statements": "?", "scan": "?", "conditions": "?"}
    rows = {"`parse_statements`": "statements", "`Extractor._scan`": "scan"}
    for name in ("results-stages.md", "results-inference.md"):
        path = ROOT / "bench" / name
        for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cells[0] in rows and len(cells) >= 3:
                found[rows[cells[0]]] = f"{float(cells[2]):.2f}×"
            elif cells[0] == "after" and len(cells) >= 7:
                found["conditions"] = cells[6].split()[0]
    return found


def corpus() -> list[Path]:
    files = sorted((ROOT / "fixtures" / "text").glob("*/*.code"))
    files += sorted((ROOT / "fixtures" / "archive_code").rglob("*.py"))
    return files


def read_dict(cf: dict) -> int:
    """Every if's kind and sources and every call, read from the plain data."""
    n = 0
    for fn in cf["functions"] + [m for c in cf["classes"] for m in c["methods"]]:
        for if_ in fn["ifs"]:
            cond = if_["condition"]
            n += len(cond["kind"]) + sum(len(s["ref"]) + len(s["kind"]) for s in cond["sources"])
        n += sum(len(c["callee"]) for c in fn["calls"])
    return n


def read_model(cf) -> int:
    """The same through the models' attributes."""
    n = 0
    for fn in list(cf.functions) + [m for c in cf.classes for m in c.methods]:
        for if_ in fn.ifs:
            cond = if_.condition
            n += len(cond.kind) + sum(len(s.ref) + len(s.kind) for s in cond.sources)
        n += sum(len(c.callee) for c in fn.calls)
    return n


def child_cpu(cmd: list[str], runs: int) -> float:
    """The smallest CPU time (user + system) of ``runs`` runs of a child process."""
    best = float("inf")
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return best


def retained(fn) -> tuple[object, int]:
    """``fn()`` and the bytes its result still holds (tracemalloc, after a collection)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    gc.collect()
    size = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return result, size


NOTE = """\
## Which targets hold

Met: **linear time** (per-byte cost at 8× within 1.5× of 1× for `parse_text`, `check`
and `ops`; before the endpos bound the same benchmark gave 3.99×, 3.98× and 3.54×, in a
separate run on an earlier commit); **no pydantic, torch or numpy** on the `parse` path for
JSON and tables (asserted by `tests/test_cli.py` with `-X importtime`); **the dict path**
equal to `CodeFile.model_dump(mode="json")` and the CLI's JSON byte-identical to the
model's over every fixture (`tests/test_plain.py`); goldens unchanged; **memory of a built
`CodeFile`** within 40× its text: models are built from the plain data without validating
it again (`codeparse.models.code_file_from_plain`, equal to `model_validate` over every
fixture), a call listed in `calls` and in an if's `then_calls` is one object, and every
model of a class shares one field set (pydantic gave each model its own set, about 400
bytes).

Missed, and why.  **Memory of the dict** (≤ 10× wanted): spans, calls, references,
parameters, ifs, conditions and functions are key-sharing dicts (half a literal dict's
size) and strings are pooled per file, but a plain dict per node, a list per field (empty
ones included) and an int per offset still cost about 14 bytes per character of text.
**Speed** (the three speed rows above): every stage is in Python, and no stage dominates
any more.  `bench/results-stages.md` and `bench/results-inference.md` split the dict path:
statement classification about {statements} of `ast.parse`'s time, the call and reference
scan about {scan}, answering conditions about {conditions} µs each; `regex` matches with
recursive sub-patterns (`def` signatures, parameters) still cost about 9 µs each.  The
two floor rows bound what tuning can reach: building the same dicts at C speed, with no
parsing at all, already takes {share:.0%} of the time the 2× target allows, which leaves
about {left:.1f} µs per line ({lines:,} lines) to classify statements, find calls and
references and answer conditions, all in Python: about one `regex` match and one dict per
line.  Reaching 2× needs another design (a native scanner, or results whose nodes are
built when read), not more tuning of this one.  **Start-up**: see below."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=15, help="process runs for start-up")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]

    sys.path.insert(0, str(ROOT))
    import codeparse
    from bench_linear import measure as linear, table as linear_table

    files = corpus()
    texts = [f.read_text(encoding="utf-8") for f in files]
    size = sum(len(t.encode("utf-8")) for t in texts)
    for f in files:  # warm: grammars compiled, caches filled, models built once
        codeparse.parse_file(f)
    t_ast = cpu_best(args.rounds, lambda: [ast.parse(t) for t in texts])
    t_dict = cpu_best(args.rounds, lambda: [read_dict(codeparse.parse_file(f, as_dict=True)) for f in files])
    t_model = cpu_best(args.rounds, lambda: [read_model(codeparse.parse_file(f)) for f in files])
    # Floors: what any implementation in Python pays before it parses anything.  The same
    # dicts the dict path returns, rebuilt by the C JSON decoder (no parsing, no inference),
    # and a Python loop that only visits every line of the texts.
    dumped = [json.dumps(codeparse.parse_file(f, as_dict=True)) for f in files]
    t_build = cpu_best(args.rounds, lambda: [json.loads(d) for d in dumped])
    t_lines = cpu_best(args.rounds, lambda: [sum(1 for _ in t.splitlines()) for t in texts])
    lines_total = sum(t.count("\n") for t in texts)
    names = [str(f) for f in files]
    t_cli = child_cpu([sys.executable, "-m", "codeparse", "parse", "--format", "jsonl", *names], 3)
    t_ast_proc = child_cpu([sys.executable, "-c", AST_PROCESS, *names], 3)

    linear_rows = linear(rounds=3)

    exe = [sys.executable, "-m", "codeparse", "parse", str(SMALL), "--format", "json"]
    t_pass = median_run([sys.executable, "-c", "pass"], args.runs, ROOT)
    t_start = median_run(exe, args.runs, ROOT)
    c_pass = child_cpu([sys.executable, "-c", "pass"], args.runs)
    c_start = child_cpu(exe, args.runs)
    importtime = subprocess.run([sys.executable, "-X", "importtime", *exe[1:]],
                                capture_output=True, text=True, cwd=ROOT).stderr
    imported = {line.split("|")[-1].strip().split(".")[0] for line in importtime.splitlines()
                if line.startswith("import time:") and "|" in line}
    heavy = sorted(imported & {"pydantic", "pydantic_core", "torch", "numpy"})
    modules = sum(1 for line in importtime.splitlines() if line.startswith("import time:")) - 1

    text_bytes = sum(len(t) for t in texts)  # str length: what the result is measured against
    from codeparse import extract
    # The parameter cache shares strings across files: emptied so that the results hold
    # (and are charged for) their own; what the cache itself refills is charged too.
    extract._PARAMS.clear()
    _, mem_dict = retained(lambda: [codeparse.parse_text(t, as_dict=True) for t in texts])
    extract._PARAMS.clear()
    _, mem_model = retained(lambda: [codeparse.parse_text(t) for t in texts])
    _, mem_text = retained(lambda: [t.encode("utf-8").decode("utf-8") for t in texts])

    def ratio(t: float) -> str:
        return f"**{t_ast / t:.2f}×**"

    rows = [
        ("corpus", f"{len(files)} fixture files (`fixtures/text`, `fixtures/archive_code`), {size / 1e6:.2f} MB"),
        ("`ast.parse` alone (baseline)", f"{t_ast * 1000:.0f} ms CPU ({size / t_ast / 1e6:.2f} MB/s)"),
        ("`parse_file(..., as_dict=True)` + reading ifs, sources, calls",
         f"{t_dict * 1000:.0f} ms; speed {ratio(t_dict)} `ast.parse` (target ≥ 2×)"),
        ("`parse_file()` (models) + reading the same by attribute",
         f"{t_model * 1000:.0f} ms; speed {ratio(t_model)} `ast.parse` (target ≥ 0.6×)"),
        ("`codeparse parse --format jsonl` over the corpus, one process (CPU)",
         f"{t_cli * 1000:.0f} ms against {t_ast_proc * 1000:.0f} ms for a process running `ast.parse` over the "
         f"same files: **{t_ast_proc / t_cli:.2f}×** (target ≥ 1×)"),
        ("floor: the same dicts built by the C JSON decoder (`json.loads`; no parsing)",
         f"{t_build * 1000:.0f} ms: {t_build / (t_ast / 2):.0%} of the time the ≥ 2× target allows "
         f"({t_ast / 2 * 1000:.0f} ms)"),
        ("floor: a Python loop visiting every line, doing nothing", f"{t_lines * 1000:.1f} ms"),
        ("`python -c pass` (baseline, wall)", f"{t_pass * 1000:.0f} ms"),
        ("`codeparse parse custom_model/script.code --format json` (wall)", f"{t_start * 1000:.0f} ms"),
        ("**start-up over `python -c pass`** (wall, the target's measure)", f"**{t_start - t_pass:.3f} s** (target ≤ 0.15 s)"),
        ("start-up over `python -c pass` in CPU time (user + system, best run; what an idle machine's wall "
         "time would approach)", f"{c_start - c_pass:.3f} s ({c_start * 1000:.0f} ms against {c_pass * 1000:.0f} ms)"),
        ("pydantic / torch / numpy imported on that path", ", ".join(heavy) if heavy else "none"),
        ("modules imported on that path", str(modules)),
        ("bytecode cache (`PYTHONDONTWRITEBYTECODE`)",
         "off in this environment: precompiled with `python -m compileall -q codeparse` (README install)"
         if os.environ.get("PYTHONDONTWRITEBYTECODE") else "on"),
        ("memory held by the dict / input text", f"**{mem_dict / text_bytes:.1f}×** (target ≤ 10×)"),
        ("memory held by built `CodeFile`s / input text", f"**{mem_model / text_bytes:.1f}×** (target ≤ 40×)"),
        ("(the input strings themselves, for scale)", f"{mem_text / text_bytes:.1f}×"),
    ]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Benchmark: the parse path",
        "",
        f"`python bench/bench_parse.py` on {stamp}; {platform.python_implementation()} "
        f"{platform.python_version()}, {os.cpu_count()} cores, {platform.machine()}.  CPU time, best of "
        f"{args.rounds} rounds in process; child-process CPU best of 3; start-up the median of {args.runs} "
        f"wall-clock runs.  Load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after: on a "
        "shared machine absolute figures move from run to run by 2× and more; the ratios compare "
        "figures of this one run.",
        "",
        "| measure | value |",
        "|---|---|",
        *[f"| {a} | {b} |" for a, b in rows],
        "",
        "## Per-byte cost against a function's length (`bench/bench_linear.py`)",
        "",
        *linear_table(linear_rows, 1000, 8),
        "",
        NOTE.format(**stage_figures(), share=t_build / (t_ast / 2),
                    left=(t_ast / 2 - t_build) / lines_total * 1e6, lines=lines_total),
        "",
        START_UP.format(wall=t_start - t_pass, cpu=c_start - c_pass, modules=modules),
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if not args.no_write:
        (ROOT / "bench" / "results.md").write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
