"""What the condition rules cost, before/after in one run: python bench/bench_verdicts.py

The rules follow calls (per-function summaries), type conversions and apply the others of
docs/how-it-works.md, "What a condition depends on".  This measures, in the same run and on
the same inputs, the code before them (``--before``, by default the parent of the first
commit whose subject starts "Condition verdicts", exported with ``git archive``) against
the checkout:

* ``parse_text`` over the inputs of ``bench/bench_parse.py`` (every fixture text and
  archive code file); conditions are read by ``parse_text`` itself;
* ``open_archive`` + ``check`` over the fixture archives (the in-process half of
  ``bench/bench_check.py``, without its generated 177 MB archive);
* linearity: a chain of N functions, each calling the next, for N and 2N.

A third variant, the checkout with call following off (``FOLLOW_CALLS = False``), gives
what following calls costs by itself.  "Before" is older code: it lacks every later
change of ``codeparse`` too (other work landed since), so before/after is an
upper bound of the rules' cost.

Each side runs in its own process, alternating, best of ``--rounds``; times are the
CPU time of the process and of the worker processes ``check`` reads its inputs in, which
a machine shared with other jobs disturbs far less than wall time; figures are ratios of the same run.  Writes ``bench/results-verdicts.md`` unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tarfile
import io
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys
from pathlib import Path
root, mode, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, root)
import codeparse
if sys.argv[5] == "nofollow":
    import codeparse.infer.callees
    codeparse.infer.callees.FOLLOW_CALLS = False
data = Path(sys.argv[4])
if mode == "parse":
    files = sorted((data / "fixtures" / "text").glob("*/*.code"))
    files += sorted((data / "fixtures" / "archive_code").rglob("*.py"))
    texts = [f.read_text(encoding="utf-8") for f in files]
    work = lambda: [codeparse.parse_text(t) for t in texts]
    size = sum(len(t.encode()) for t in texts)
elif mode == "check":
    from codeparse.check import check
    from codeparse.contract.check import Policy
    paths = [str(p) for p in sorted((data / "fixtures" / "archives").glob("*.pt"))]
    work = lambda: check(paths, Policy())
    size = sum(Path(p).stat().st_size for p in paths)
else:
    n = int(mode.split(":")[1])
    fns = ["def f0(x: Tensor) -> int:\n  return torch.size(x, 0)\n"]
    fns += [f"def f{i}(x: Tensor) -> int:\n  _0 = __torch__.f{i - 1}(x)\n  if torch.gt(_0, {i}):\n    _1 = _0\n  else:\n    _1 = 0\n  return _1\n" for i in range(1, n)]
    text = "".join(fns)
    work = lambda: codeparse.parse_text(text, path="m/code/__torch__.py")
    size = len(text)
import resource
def cpu():  # this process and its ended worker processes (check reads each input in one)
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
work()
best = float("inf")
for _ in range(rounds):
    t = cpu(); work(); best = min(best, cpu() - t)
print(json.dumps({"seconds": best, "bytes": size}))
"""


def export(rev: str, dest: Path) -> None:
    data = subprocess.run(["git", "archive", rev, "codeparse", "grammars"], cwd=ROOT, check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")


def default_before() -> str:
    first = subprocess.run(["git", "log", "--reverse", "--format=%H", "--grep=^Condition verdicts"],
                           cwd=ROOT, check=True, capture_output=True, text=True).stdout.split()
    if not first:
        raise SystemExit("no commit whose subject starts \"Condition verdicts\"; pass --before REV")
    return first[0] + "^"


def run(root: Path, mode: str, rounds: int, variant: str = "follow") -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(root), mode, str(rounds), str(ROOT), variant],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)})
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=None, help="git revision before the condition rules")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per process")
    parser.add_argument("--repeat", type=int, default=3, help="processes per side, alternating")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    before = args.before or default_before()
    rev = subprocess.run(["git", "rev-parse", "--short", before], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp)
        export(before, old)
        for mode, label in (("parse", "`parse_text`, bench_parse.py inputs"),
                            ("check", "`open_archive` + `check`, fixture archives"),
                            ("chain:400", "chain of 400 functions"), ("chain:800", "chain of 800 functions")):
            b = a = n = float("inf")
            size = 0
            for _ in range(args.repeat):
                rb, rn, ra = run(old, mode, args.rounds), run(ROOT, mode, args.rounds, "nofollow"), \
                    run(ROOT, mode, args.rounds)
                b, n, a, size = min(b, rb["seconds"]), min(n, rn["seconds"]), min(a, ra["seconds"]), ra["bytes"]
            rows.append((label, size, b, n, a))
            print(f"{label}: before {b * 1000:.0f} ms, not following {n * 1000:.0f} ms, after {a * 1000:.0f} ms",
                  file=sys.stderr)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"`python bench/bench_verdicts.py` on {when}; CPython {platform.python_version()}, "
        f"{os.cpu_count()} cores, {platform.machine()}, load average {os.getloadavg()[0]:.1f} at the end; before = `{rev}` "
        f"(the parent of the condition-rules commit), after = this checkout; CPU time (worker processes included), best of {args.rounds} rounds in each of "
        f"{args.repeat} alternating processes per side.",
        "",
        "",
        "*not following*: this checkout with `codeparse.infer.callees.FOLLOW_CALLS = False` (rule 3's",
        "following of calls off, every other rule on); the last column is what following calls costs.",
        "",
        "| input | size | before | after, not following | after | **throughput after / before** "
        "| **following calls: throughput with / without** |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, size, b, n, a in rows:
        lines.append(f"| {label} | {size / 1e6:.2f} MB | {b * 1000:.0f} ms | {n * 1000:.0f} ms | {a * 1000:.0f} ms "
                     f"| **{b / a:.2f}×** | **{n / a:.2f}×** |")
    chain = {label: a for label, _, _, _, a in rows if label.startswith("chain")}
    if len(chain) == 2:
        t400, t800 = chain["chain of 400 functions"], chain["chain of 800 functions"]
        lines.append("")
        lines.append(f"Doubling the chain of functions multiplies the time by {t800 / t400:.2f} "
                     "(linear: one summary per function).")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        (ROOT / "bench" / "results-verdicts.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
