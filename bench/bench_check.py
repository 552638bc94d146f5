"""Benchmark of `codeparse check` against `torch.jit.load` (issue 3), run on demand:

    python bench/bench_check.py            # writes bench/results-check.md
    python bench/bench_check.py --no-write # only prints

In one run, on one machine, it measures:

* a large archive with real weights, generated into a temporary folder (never
  committed): `torch.jit.script(nn.Transformer(d_model=512))` saved with
  `torch.jit.save` (about 176 MB);
* the fixture archives, re-saved with zero weights into the same temporary folder
  (the committed ones have their tensor data stripped, which `torch.jit.load` refuses).

and for each, two comparisons:

* process to process: `python -m codeparse check --format jsonl ARCHIVE...` against
  `python -c "import torch; m = torch.jit.load(p); [walk every module's method code]"`
  (median of --runs runs each);
* in process, imports excluded: `codeparse.check([...])` (open_archive, resolution,
  findings) against `torch.jit.load` + the same walk (best of --rounds rounds each).

Figures are ratios against the torch numbers of the same run.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import tempfile
import warnings
from datetime import datetime, timezone
from pathlib import Path

from _timing import best_of, median_run  # bench/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parent.parent
TORCH_WALK = (
    "import sys, torch\n"
    "for p in sys.argv[1:]:\n"
    "    m = torch.jit.load(p)\n"
    "    [s._c._get_method(n).code for _, s in m.named_modules() for n in s._c._method_names()]\n"
)


NOTE = """\
**The targets are not met** (≥ 5× process to process, ≥ 10× in process).  Why, from the
profiles of this run's inputs:

* `import torch` costs about 1.2–1.5 s here, which is what the process figures gain;
  but `torch.jit.load` itself is fast: its C++ importer compiles the 75 KB of code of the
  177 MB Transformer archive and maps its weights in about 0.15 s.  The weights cost
  codeparse nothing (never read), so the race is code text against code text.
* codeparse's time is the core parser: about 75 % of `check` is `parse_text`
  (lexing, regex grammar, extraction, inference, pydantic), which reads about
  0.5–0.9 MB/s end to end (see bench/results.md: about 0.25× `ast.parse`, against its own
  3× target).  A fresh process also pays about 0.1 s of imports (pydantic models) and
  compiles the grammar rules it uses on first use (the first archive of a process costs
  about 0.09 s where the next costs 0.015 s), before the parse proper.
* The archive layer (zip, limits, debug info, cross-file resolution, findings) is the
  other quarter: files are parsed once in reverse stored order with the other classes'
  declarations, and re-parsed only when a class they name is read later (6 of 416 files
  over the fixtures).

What next, in order of gain: (1) the core parser's throughput (the same bottleneck as
issue 2's benchmark); (2) cache the compiled grammar across processes (rules already
compile lazily, per rule); (3) a content-addressed cache of parsed entries (the `torch/nn/*` files are
byte-identical across archives and CI runs) keyed by entry hash, grammar and the
declarations the file asked for; (4) parse only the files reachable from `forward`.
`--jobs N` already spreads many archives over N processes."""


def walk(module) -> int:
    return sum(len(s._c._get_method(n).code) for _, s in module.named_modules() for n in s._c._method_names())


def make_large(folder: Path) -> Path:
    import torch

    torch.manual_seed(0)
    path = folder / "transformer_d512.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(torch.jit.script(torch.nn.Transformer(d_model=512).eval()), str(path))
    return path


def resave_fixtures(folder: Path) -> list[Path]:
    """The fixture archives, loaded with zero weights and saved whole (torch can load them)."""
    import torch

    sys.path.insert(0, str(ROOT / "tests"))
    import ir_oracle  # noqa: E402 - the tests' loader for stripped archives

    spec = importlib.util.spec_from_file_location("codeparse_fixture_models", ROOT / "fixtures" / "models.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.register_fixture_ops()
    out = []
    for src in sorted((ROOT / "fixtures" / "archives").glob("*.pt")):
        try:
            loaded, _ = ir_oracle.load_archive(src)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.jit.save(loaded, str(folder / src.name))
                torch.jit.load(str(folder / src.name))  # torch can read it back without help
        except Exception:  # noqa: BLE001 - a few fixtures need the test-only patches to load
            continue
        out.append(folder / src.name)
    return out


def measure(paths: list[Path], runs: int, rounds: int, ops_preamble: str) -> dict[str, float]:
    import torch

    import codeparse
    from codeparse.models import Policy

    names = [str(p) for p in paths]
    cp_proc = median_run([sys.executable, "-m", "codeparse", "check", "--format", "jsonl", *names], runs, ROOT)
    torch_proc = median_run([sys.executable, "-c", ops_preamble + TORCH_WALK, *names], runs, ROOT)
    policy = Policy(max_entry_bytes=1 << 30, max_total_bytes=1 << 31)
    codeparse.check(names, policy)  # warm: grammar compiled, modules imported
    cp_in = best_of(rounds, lambda: codeparse.check(names, policy))

    def torch_all():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for p in names:
                walk(torch.jit.load(p))

    torch_all()
    torch_in = best_of(rounds, torch_all)
    return {"cp_proc": cp_proc, "torch_proc": torch_proc, "cp_in": cp_in, "torch_in": torch_in}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="process runs (median)")
    parser.add_argument("--rounds", type=int, default=3, help="in-process rounds (best)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    import torch

    rows = []
    with tempfile.TemporaryDirectory(prefix="codeparse-bench-") as tmp:
        folder = Path(tmp)
        large = make_large(folder)
        size = large.stat().st_size
        fixtures_dir = folder / "fixtures"
        fixtures_dir.mkdir()
        fixtures = resave_fixtures(fixtures_dir)
        ops = ("import importlib.util, sys\n"
               f"spec = importlib.util.spec_from_file_location('m', {str(ROOT / 'fixtures' / 'models.py')!r})\n"
               "mod = importlib.util.module_from_spec(spec); sys.modules['m'] = mod; spec.loader.exec_module(mod)\n"
               "mod.register_fixture_ops()\n")
        big = measure([large], args.runs, args.rounds, "")
        small = measure(fixtures, args.runs, args.rounds, ops)
        fixture_bytes = sum(p.stat().st_size for p in fixtures)
        rows.append((f"`nn.Transformer(d_model=512)` scripted, {size / 1e6:.0f} MB, 1 archive", big))
        rows.append((f"fixture archives re-saved with weights, {len(fixtures)} archives, "
                     f"{fixture_bytes / 1e6:.1f} MB", small))

    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Benchmark: `codeparse check` against `torch.jit.load`",
        "",
        f"`python bench/bench_check.py` on {when}; CPython {platform.python_version()}, torch {torch.__version__}, "
        f"{os.cpu_count()} cores, {platform.machine()}; process figures are the median of {args.runs} runs, "
        f"in-process figures the best of {args.rounds} rounds.  Targets (issue 3): ≥ 5× process to process, "
        "≥ 10× in process (imports excluded).",
        "",
        "| input | codeparse check (process) | torch load + walk (process) | **speed-up** | "
        "open_archive + check (in process) | torch.jit.load + walk (in process) | **speed-up** |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, m in rows:
        lines.append(
            f"| {label} | {m['cp_proc'] * 1000:.0f} ms | {m['torch_proc'] * 1000:.0f} ms | "
            f"**{m['torch_proc'] / m['cp_proc']:.1f}×** | {m['cp_in'] * 1000:.1f} ms | "
            f"{m['torch_in'] * 1000:.1f} ms | **{m['torch_in'] / m['cp_in']:.1f}×** |"
        )
    lines += ["", NOTE]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        (ROOT / "bench" / "results-check.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
