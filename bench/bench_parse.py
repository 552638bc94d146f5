"""Benchmark of the parse path, before and after in one run: python bench/bench_parse.py [--before REV]

Measures, on this machine, in CPU time (user + system), every speed figure a ratio against
``ast.parse`` on the same texts in the same round:

  * the baseline: ``ast.parse`` of each file with its tree dropped (the fair baseline), and
    beside it the old one, ``[ast.parse(t) for t in texts]``, which keeps every tree alive
    until the round ends (the garbage collector then rescans them all, which slows
    ``ast.parse`` down 2-2.6× and so flatters every ratio);
  * ``parse_file(..., as_dict=True)`` plus reading every if's kind and sources and every
    call from the dict, over the fixture corpus's ordinary code (target ≥ 0.7× the fair
    baseline's speed), and over the whole corpus with the depth-limit fixtures
    (:data:`STRESS_CASES`) beside it;
  * ``parse_file()`` with models plus reading the same through attributes (target ≥ 0.5×);
  * ``codeparse parse --format jsonl`` over the whole corpus in one process, against one
    process running ``ast.parse`` over the same files;
  * per-byte cost at 8× a traced function's length over 1× for ``parse_text``, ``check``
    and ``ops`` (``bench_linear.traced_forward``; target ≤ 1.5);
  * start-up: median wall time of ``codeparse parse custom_model/script.code --format json``
    minus ``python -c pass`` (target ≤ 0.15 s), and the CPU time of the same, with the
    package's bytecode precompiled (``python -m compileall``, as the README's install does);
  * memory retained by the result over the input text's size: the dict and a built
    ``CodeFile`` (target: no worse than before).

Each round of the two paths starts with the parse's bounded memos of texts it has read
(parameters, class lists: ``text.extract._PARAMS``/``_LISTS``) emptied, so that a round
reads the corpus as a fresh process would, not with every signature seen the round before.

With ``--before REV`` (a git revision; exported with ``git archive``) both sides are
measured, each in its own processes, alternating (``--repeat`` processes per side, each
timing ``--rounds`` rounds): every "before" figure comes from the same run as its "after".
Without it, only this checkout.  Writes bench/results.md (``--no-write`` to only print).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from _timing import CHILD_HEAD, _export  # bench/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "fixtures" / "text" / "custom_model" / "script.code"
AST_PROCESS = "import ast, sys\nfor p in sys.argv[1:]:\n    ast.parse(open(p, encoding='utf-8').read())\n"

# One process of one side: the speed rounds, then (once) per-byte cost and memory.
CHILD = CHILD_HEAD + r"""
import importlib, tempfile, tracemalloc
from pathlib import Path
from bench_linear import traced_forward
import resource
from bench_parse import read_model
def cpu():  # this process and its waited-for workers (check may start some), user + system
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
from bench_parse import is_stress
# Ordinary code and the depth-limit fixtures, timed apart in every round (see is_stress).
parts = {"": [i for i, f in enumerate(files) if not is_stress(f)], "_stress": [i for i, f in enumerate(files) if is_stress(f)]}
picked = parts[""]
def fair():
    for i in picked:
        ast.parse(texts[i])
def kept():
    return [ast.parse(texts[i]) for i in picked]
def clear_params():  # the parse's bounded memos of texts seen earlier in the process (parameters, lists, mutator verdicts)
    for name in ("codeparse.text.extract", "codeparse.extract"):
        try:
            found = importlib.import_module(name)
        except ImportError:
            continue
        for memo in ("_PARAMS", "_LISTS", "_MUTATORS"):
            getattr(found, memo, {}).clear()
def dict_path():  # each round reads the corpus as a fresh process would: no text remembered from the last
    clear_params()
    return [read_dict(codeparse.parse_file(files[i], as_dict=True)) for i in picked]
def model_path():
    clear_params()
    return [read_model(codeparse.parse_file(files[i])) for i in picked]
for f in files:  # warm: grammars compiled, tables loaded, model classes built
    codeparse.parse_file(f)
rows = []
for _ in range(rounds):
    row = {}
    for name, fn in (("ast_fair", fair), ("ast_kept", kept), ("dict", dict_path), ("model", model_path)):
        for suffix, picked in parts.items():
            gc.collect()
            start = cpu(); fn(); row[name + suffix] = cpu() - start
    rows.append(row)
picked = parts[""]  # the stage rounds below read ordinary code

def best(fn, n=3):
    times = []
    for _ in range(n):
        start = cpu(); fn(); times.append(cpu() - start)
    return min(times)
def module(*names):
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            pass
    raise ImportError(names)
operators = module("codeparse.infer.operators", "codeparse.operators")
linear = {}
with tempfile.TemporaryDirectory() as tmp:
    policy = codeparse.Policy()
    for steps in (1000, 8000):
        text = traced_forward(steps)
        path = Path(tmp) / f"trace_{steps}.code"
        path.write_text(text, encoding="utf-8")
        size = len(text.encode("utf-8"))
        stages = {
            "parse_text": lambda: codeparse.parse_text(text),
            "check": lambda: codeparse.check([str(path)], policy),
            "ops": lambda: operators.inventory([codeparse.parse_file(path)], source="table"),
        }
        for name, fn in stages.items():
            fn()
            linear.setdefault(name, []).append(best(fn) / size * 1e6)

def retained(fn):
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    gc.collect()
    size = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return size
chars = sum(len(t) for t in texts)
clear_params()
mem_dict = retained(lambda: [codeparse.parse_text(t, as_dict=True) for t in texts])
clear_params()
mem_model = retained(lambda: [codeparse.parse_text(t) for t in texts])

# Where the dict path's time goes: the stages' functions wrapped by name in whichever module
# holds them (the package layout may differ between the sides), timed over two more rounds.
import inspect, sys as _sys
STAGES = {"parse_statements": "statements", "_prepare": "walk", "_scan": "scan", "_condition": "conditions",
          "code_file_from_plain": "models", "code_file_taking_plain": "models"}
spent = dict.fromkeys(STAGES.values(), 0.0)
def timer(fn, key):
    def timed(*args, **kwargs):
        start = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[key] += clock() - start
    return timed
wrapped = {}
for name, mod in list(_sys.modules.items()):
    if not name.startswith("codeparse") or mod is None:
        continue
    for attr, value in list(vars(mod).items()):
        targets = [(mod, attr, value)]
        if inspect.isclass(value) and value.__module__ == name:
            targets = [(value, a, v) for a, v in vars(value).items()]
        for owner, a, v in targets:
            if a in STAGES and callable(v):
                key = (id(owner), a)
                if key not in wrapped:
                    wrapped[key] = timer(v, STAGES[a])
                    setattr(owner, a, wrapped[key])
stages = []
for _ in range(2):
    for key in spent:
        spent[key] = 0.0
    start = clock(); fair(); t_ast = clock() - start
    start = clock(); dict_path(); t_dict = clock() - start
    row = {"ast": t_ast, "dict": t_dict, **spent}
    spent["models"] = 0.0
    start = clock(); model_path(); row["model"] = clock() - start
    row["models"] = spent["models"]
    stages.append(row)
print(json.dumps({"rounds": rows, "linear": linear, "mem_dict": mem_dict / chars, "mem_model": mem_model / chars,
                  "stages": stages}))
"""


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


def corpus() -> list[Path]:
    files = sorted((ROOT / "fixtures" / "text").glob("*/*.code"))
    files += sorted((ROOT / "fixtures" / "archive_code").rglob("*.py"))
    return files


# The cases of fixtures/models_deep.py: a ModuleList of hundreds to thousands of layers unrolled
# into one function, made to reach the reader's depth limits.  Their nesting makes `ast.parse`
# slow (more than half of its time over the corpus goes to these few files, where ours is
# faster than it), so a ratio over the whole corpus says little about ordinary model code: the
# targets are read on the rest, with the whole corpus shown beside.
STRESS_CASES = ("deep_encoder", "deep_loop_fits", "deep_loop_too_long")


def is_stress(path: Path) -> bool:
    """Whether a corpus file belongs to a depth-limit fixture (``fixtures/text/CASE/...`` or
    ``fixtures/archive_code/CASE.script/...``)."""
    case = Path(path).resolve().relative_to(ROOT / "fixtures").parts[1]
    return case.split(".")[0] in STRESS_CASES


def child_cpu(cmd: list[str], runs: int, env: dict) -> float:
    """The smallest CPU time (user + system) of ``runs`` runs of a child process."""
    best = float("inf")
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return best


def wall_median(cmd: list[str], runs: int, env: dict) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def side(root: Path, rounds: int, runs: int, names: list[str]) -> dict:
    """One process of the child (speed rounds, per-byte cost, memory), then the process
    figures (the CLI over the corpus, start-up) of the package at ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    # Bytecode precompiled, as the README's install does (where writing it is off, every
    # start would compile the package again).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "codeparse")], check=True)
    out = subprocess.run([sys.executable, "-P", "-c", CHILD, str(root), str(ROOT), str(rounds)],
                         capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(out.stderr)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    # -P: the package on PYTHONPATH is imported, not the one in the working directory
    found["cli"] = child_cpu([sys.executable, "-P", "-m", "codeparse", "parse", "--format", "jsonl", *names], 1, env)
    exe = [sys.executable, "-P", "-m", "codeparse", "parse", str(SMALL), "--format", "json"]
    found["start_wall"] = wall_median(exe, runs, env) - wall_median([sys.executable, "-P", "-c", "pass"], runs, env)
    found["start_cpu"] = child_cpu(exe, runs, env) - child_cpu([sys.executable, "-P", "-c", "pass"], runs, env)
    return found


def merge(runs: list[dict]) -> dict:
    """One side's figures over its processes: every round's ratios, the best process figures."""
    rounds = [r for run in runs for r in run["rounds"]]

    for r in rounds:  # the whole corpus: ordinary code and the depth-limit fixtures of the same round
        for key in ("ast_fair", "ast_kept", "dict", "model"):
            r[key + "_all"] = r[key] + r[key + "_stress"]

    def ratio(path: str, base: str) -> float:
        return statistics.median(r[base] / r[path] for r in rounds)

    def ms(key: str) -> float:
        return statistics.median(r[key] for r in rounds) * 1000

    linear = {name: [min(run["linear"][name][i] for run in runs) for i in (0, 1)] for name in runs[0]["linear"]}
    return {
        "ast_fair": ms("ast_fair"), "ast_kept": ms("ast_kept"), "dict": ms("dict"), "model": ms("model"),
        "kept_over_fair": ratio("ast_fair", "ast_kept"),
        "dict_fair": ratio("dict", "ast_fair"), "dict_kept": ratio("dict", "ast_kept"),
        "model_fair": ratio("model", "ast_fair"), "model_kept": ratio("model", "ast_kept"),
        "ast_fair_all": ms("ast_fair_all"), "dict_all": ms("dict_all"), "model_all": ms("model_all"),
        "dict_fair_all": ratio("dict_all", "ast_fair_all"), "model_fair_all": ratio("model_all", "ast_fair_all"),
        "stress_share": statistics.median(r["ast_fair_stress"] / r["ast_fair_all"] for r in rounds),
        "linear": {name: (a, b, b / a) for name, (a, b) in linear.items()},
        "cli": min(run["cli"] for run in runs) * 1000,
        "start_wall": min(run["start_wall"] for run in runs), "start_cpu": min(run["start_cpu"] for run in runs),
        "mem_dict": min(run["mem_dict"] for run in runs), "mem_model": min(run["mem_model"] for run in runs),
        "stages": {key: (statistics.median(r[key] / r["ast"] for run in runs for r in run["stages"]),
                         statistics.median(r[key] / r["dict" if key != "models" else "model"]
                                           for run in runs for r in run["stages"]))
                   for key in STAGE_ROWS},
    }


def rows_of(sides: dict[str, dict], ast_proc: float) -> list[tuple[str, ...]]:
    def cells(fmt) -> tuple[str, ...]:
        return tuple(fmt(s) for s in sides.values())

    rows = [
        ("ordinary code: `ast.parse`, each tree dropped (**the baseline**), median ms per round",
         *cells(lambda s: f"{s['ast_fair']:.0f} ms")),
        ("ordinary code: `ast.parse`, every tree kept alive (the old baseline), ms",
         *cells(lambda s: f"{s['ast_kept']:.0f} ms ({s['kept_over_fair']:.2f}× the baseline's time)")),
        ("ordinary code: `parse_file(..., as_dict=True)` + reading ifs, sources, calls: speed over the baseline "
         "(target ≥ 0.7×)",
         *cells(lambda s: f"**{s['dict_fair']:.2f}×** ({s['dict']:.0f} ms; {s['dict_kept']:.2f}× the old baseline)")),
        ("ordinary code: `parse_file()` (models) + reading the same by attribute (target ≥ 0.5×)",
         *cells(lambda s: f"**{s['model_fair']:.2f}×** ({s['model']:.0f} ms; {s['model_kept']:.2f}× the old "
                          "baseline)")),
        ("whole corpus, the depth-limit fixtures included: `ast.parse` (each tree dropped), ms; their share of it",
         *cells(lambda s: f"{s['ast_fair_all']:.0f} ms ({s['stress_share']:.0%} on the depth-limit fixtures)")),
        ("whole corpus: the dict path / the model path over the baseline",
         *cells(lambda s: f"{s['dict_fair_all']:.2f}× / {s['model_fair_all']:.2f}× ({s['dict_all']:.0f} ms / "
                          f"{s['model_all']:.0f} ms)")),
        (f"`codeparse parse --format jsonl` over the corpus, one process, CPU (a process running `ast.parse` over "
         f"the same files: {ast_proc:.0f} ms)",
         *cells(lambda s: f"{s['cli']:.0f} ms ({ast_proc / s['cli']:.2f}×)")),
    ]
    for name in next(iter(sides.values()))["linear"]:
        rows.append((f"per-byte cost of `{name}` at 8× a traced function's length over 1× (target ≤ 1.5)",
                     *cells(lambda s, n=name: f"**{s['linear'][n][2]:.2f}** ({s['linear'][n][0]:.2f} → "
                                              f"{s['linear'][n][1]:.2f} µs/byte)")))
    for key, label in STAGE_ROWS.items():
        rows.append((label, *cells(lambda s, k=key: f"{s['stages'][k][0]:.2f}× the baseline's time "
                                                    f"({s['stages'][k][1]:.0%} of the path)")))
    rows += [
        ("start-up of `codeparse parse custom_model/script.code --format json` over `python -c pass`, wall "
         "(target ≤ 0.15 s)", *cells(lambda s: f"**{s['start_wall']:.3f} s**")),
        ("the same in CPU time (user + system, best run)", *cells(lambda s: f"{s['start_cpu']:.3f} s")),
        ("memory held by the dicts / input text", *cells(lambda s: f"{s['mem_dict']:.1f}×")),
        ("memory held by built `CodeFile`s / input text", *cells(lambda s: f"{s['mem_model']:.1f}×")),
    ]
    return rows


# Where the time goes (the stages' functions timed by name, in two more rounds per process).
STAGE_ROWS = {
    "statements": "ordinary code, in the dict path: the statement layer (`parse_statements`)",
    "walk": "ordinary code, in the dict path: walking each function's definitions (`Extractor._prepare`)",
    "scan": "ordinary code, in the dict path: the call and reference scan (`Extractor._scan`)",
    "conditions": "ordinary code, in the dict path: answering conditions (`Extractor._condition`)",
    "models": "ordinary code, in the model path: building the models from the plain data (`code_file_from_plain`; `code_file_taking_plain` where the parse hands over its own data)",
}

NOTE = """\
## Reading the figures

The targets are read on ordinary code: every fixture text and archive code file except the
depth-limit fixtures, whose thousands of unrolled layers make `ast.parse` slow (it spends
about half of its corpus time on those few files, where ours is faster than it); the whole
corpus is shown beside.  Each round times the two parts apart.
The baseline is `ast.parse` of each file with its tree dropped.  Keeping all trees alive,
as this benchmark did before, makes the collector rescan them: `ast.parse` then runs
2-3× slower, which flattered every ratio; that old baseline is shown beside for
comparison.  Ratios are medians over rounds of the path's time against the same round's
`ast.parse` time; a ratio above 1 is faster than `ast.parse`.  Per-byte cost and memory are
the best of each side's processes; the stage rows time the named functions in two further
rounds (a function's time includes what it calls).  The machine is shared by other jobs:
absolute figures move between runs, the ratios and the before/after of one run are what to
compare."""


def budget_note(after: dict) -> str:
    """What the dict path's time is made of, against what the 0.7× target allows."""
    stage = {key: after["stages"][key][0] for key in STAGE_ROWS}
    total = 1 / after["dict_fair"]
    rest = total - sum(v for k, v in stage.items() if k != "models")
    return (
        "## Where the dict path's time goes\n\n"
        f"On ordinary code, at 0.7× the dict path may take {1 / 0.7:.2f}× the baseline's time; here it takes "
        f"{total:.2f}× ({max(0.0, 1 - 1 / 0.7 / total):.0%} of it would have to go): "
        f"answering conditions {stage['conditions']:.2f}× (data dependence included), the statement layer "
        f"{stage['statements']:.2f}×, the call and reference scan {stage['scan']:.2f}×, walking definitions "
        f"{stage['walk']:.2f}×, and {rest:.2f}× for the rest (reading and decoding the file, detecting the grammar, "
        "class declarations, spans, the plain records, freeing each file's objects).  The prototype's ideas, each tried here on this code and measured: sources held as int "
        "bits (in place; set work had fallen to 2% of a pass, so they gained about 1%), paths read without "
        "building expression trees (the visits read almost every tree anyway; only a name bound to `getattr(obj, "
        "\"n\")` now takes the path the reference scan read), line heads and statement "
        "rules in one `finditer` (slower with these grammars' rules: every alternative is tried on every line). "
        "What remains is Python work per statement, per match and per visit, spread over every stage; no one "
        "stage holds the gap to the target."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=None, help="git revision to measure beside this checkout")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per process")
    parser.add_argument("--repeat", type=int, default=2, help="processes per side, alternating")
    parser.add_argument("--runs", type=int, default=9, help="process runs for start-up")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    files = corpus()
    names = [str(f) for f in files]
    size = sum(f.stat().st_size for f in files)
    stress = sum(map(is_stress, files))
    ast_proc = child_cpu([sys.executable, "-c", AST_PROCESS, *names], 3, dict(os.environ)) * 1000
    runs: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        roots = {"after": ROOT}
        rev = None
        if args.before:
            rev = subprocess.run(["git", "rev-parse", "--short", args.before], cwd=ROOT, check=True,
                                 capture_output=True, text=True).stdout.strip()
            _export(args.before, Path(tmp))
            roots = {"before": Path(tmp), "after": ROOT}
        for _ in range(args.repeat):
            for name, root in roots.items():
                runs.setdefault(name, []).append(side(root, args.rounds, args.runs, names))
                print(f"{name}: done", file=sys.stderr)
    sides = {name: merge(found) for name, found in runs.items()}
    head = ["measure", *(f"before (`{rev}`)" if n == "before" else "after (this checkout)" for n in sides)]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Benchmark: the parse path",
        "",
        f"`python bench/bench_parse.py{' --before ' + args.before if args.before else ''}` on {stamp}; "
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, "
        f"{platform.machine()}.  Corpus: {len(files)} fixture files (`fixtures/text`, `fixtures/archive_code`), "
        f"{size / 1e6:.2f} MB: {len(files) - stress} files of ordinary code and {stress} of the depth-limit fixtures "
        f"(`fixtures/models_deep.py`: {', '.join(STRESS_CASES)}).  CPU time; {args.rounds} rounds in each of {args.repeat} processes per side, "
        f"sides alternating; start-up the median of {args.runs} wall-clock runs.  Load average "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *["| " + " | ".join(row) + " |" for row in rows_of(sides, ast_proc)],
        "",
        NOTE,
        "",
        budget_note(sides["after"]),
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if not args.no_write:
        (ROOT / "bench" / "results.md").write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
