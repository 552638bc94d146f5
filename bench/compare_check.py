"""Before/after comparison of `codeparse check` output: every report byte-identical.

    python bench/compare_check.py BASE_CHECKOUT            # this checkout against BASE_CHECKOUT
    python bench/compare_check.py BASE_CHECKOUT --dask     # also `--dask local`
    python bench/compare_check.py BASE_CHECKOUT --quick    # the fixture archives only

``BASE_CHECKOUT`` is another checkout of codeparse (``git worktree add /tmp/base main`` or
``git archive COMMIT | tar -x -C /tmp/base``).  Each command runs once with this checkout
and once with the base one first on ``PYTHONPATH``, from this checkout's folder (so the
input paths, and the paths in the reports, are the same), and their standard output,
standard error and exit code are compared byte for byte.  The inputs: the fixtures, the
legacy fixtures, and the benchmark corpus (``bench/make_corpus.py``) when it is there.
Prints one line per command and exits 1 if any differ.
"""

from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEGACY = "fixtures/legacy"  # real archives saved by older PyTorch versions
BIG = ["--max-entry-bytes", str(1 << 30), "--max-total-bytes", str(1 << 31)]
API = ("import sys, codeparse\n"
       "from codeparse import Policy\n"
       "r = codeparse.check(sys.argv[2:], Policy(target=sys.argv[1]))\n"
       "print(r.model_dump_json(indent=1)); print(repr(r.inputs[0].findings[:3]))\n")


def commands(quick: bool, dask: bool, tmp: Path) -> list[tuple[str, list[str], bytes | None]]:
    """(name, arguments of `python -m codeparse` or `-c` code, standard input)."""
    fx = ["fixtures"]
    out: list[tuple[str, list[str], bytes | None]] = []
    for fmt in ("json", "jsonl", "sarif", "table", "concise", "github"):
        out.append((f"check {fmt} fixtures", ["check", "--format", fmt, "--no-color", *fx] if fmt == "table"
                    else ["check", "--format", fmt, *fx], None))
    if quick:
        return out
    out += [
        ("check json --jobs 2", ["check", "--format", "json", "--jobs", "2", *fx], None),
        ("check json --target export", ["check", "--format", "json", "--target", "export", *fx], None),
        ("check sarif --target export", ["check", "--format", "sarif", "--target", "export", *fx], None),
        ("check table --target export", ["check", "--format", "table", "--target", "export", *fx], None),
        ("check json --statistics", ["check", "--format", "json", "--statistics", *fx], None),
        ("check table --statistics", ["check", "--statistics", *fx], None),
        ("check table --include-library --quiet", ["check", "--include-library", "--quiet", *fx], None),
        ("check json --select CP2 --fail-on warning", ["check", "--format", "json", "--select", "CP2",
                                                        "--fail-on", "warning", *fx], None),
        ("check jsonl --exclude", ["check", "--format", "jsonl", "--exclude", "*trace*", *fx], None),
        ("check json legacy", ["check", "--format", "json", LEGACY], None),
        ("check sarif legacy", ["check", "--format", "sarif", LEGACY], None),
        ("scan json", ["scan", "--format", "json", *fx], None),
        ("check json stdin", ["check", "--format", "json", "-"],
         (ROOT / "fixtures/archives/annotate.script.pt").read_bytes()),
        ("api check", ["-c", API, "trace", "fixtures/archives", "fixtures/files"], None),
        ("api check export", ["-c", API, "export", "fixtures/archives"], None),
        ("check json --target export legacy", ["check", "--format", "json", "--target", "export", LEGACY], None),
        ("check sarif --target export legacy", ["check", "--format", "sarif", "--target", "export", LEGACY], None),
        ("check jsonl --target export --jobs 2", ["check", "--format", "jsonl", "--target", "export", "--jobs", "2",
                                                  *fx], None),
        ("check json --target export stdin archive", ["check", "--format", "json", "--target", "export", "-"],
         (ROOT / "fixtures/archives/export_nonzero_other_method.script.pt").read_bytes()),
        ("check json --target export stdin code", ["check", "--format", "json", "--target", "export", "-"],
         (ROOT / "fixtures/text/export_int_as_size/script.code").read_bytes()),
        ("api check export files", ["-c", API, "export", "fixtures/files", "fixtures/text"], None),
    ]
    for phase in ("cold", "warm"):
        out.append((f"check json --cache-dir {phase}", ["check", "--format", "json", "--cache-dir", "{cache}", *fx],
                    None))
        out.append((f"check jsonl --jobs 2 --cache-dir {phase}",
                    ["check", "--format", "jsonl", "--jobs", "2", "--cache-dir", "{cache2}", *fx], None))
        out.append((f"check json --target export --cache-dir {phase}",
                    ["check", "--format", "json", "--target", "export", "--cache-dir", "{cache3}", *fx], None))
    corpus = ROOT / "bench/out"
    if (corpus / "transformer_d512.pt").exists():
        names = ["bench/out/transformer_d512.pt", "bench/out/zoo"]
        for fmt in ("json", "jsonl", "sarif", "table"):
            out.append((f"check {fmt} corpus", ["check", "--format", fmt, *BIG, *names], None))
        out.append(("check json corpus export", ["check", "--format", "json", "--target", "export", *BIG, *names],
                    None))
    if dask:
        out.append(("check json --dask local", ["check", "--format", "json", "--dask", "local", *fx], None))
        out.append(("check sarif --dask local", ["check", "--format", "sarif", "--dask", "local",
                                                  "fixtures/archives"], None))
    return out


def run(root: Path, args: list[str], stdin: bytes | None, cache: Path) -> tuple[int, bytes, bytes]:
    env = dict(os.environ, PYTHONPATH=str(root), COLUMNS="200", TERM="dumb")
    env.pop("NO_COLOR", None)
    args = [a.replace("{cache}", str(cache / "c1")).replace("{cache2}", str(cache / "c2"))
            .replace("{cache3}", str(cache / "c3")) for a in args]
    # -P: the checkout on PYTHONPATH is imported, not the one in the working directory
    cmd = [sys.executable, "-P", *args] if args[0] == "-c" else [sys.executable, "-P", "-m", "codeparse", *args]
    extra = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    done = subprocess.run(cmd, capture_output=True, cwd=ROOT, env=env, **extra)
    return done.returncode, done.stdout, done.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path, help="the checkout to compare against")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--dask", action="store_true")
    parser.add_argument("--only", default=None, help="only commands whose name holds this text")
    args = parser.parse_args()
    differ = 0
    with tempfile.TemporaryDirectory(prefix="codeparse-compare-") as tmp_name:
        tmp = Path(tmp_name)
        for name, argv, stdin in commands(args.quick, args.dask, tmp):
            if args.only and args.only not in name:
                continue
            before = run(args.base.resolve(), argv, stdin, tmp / "base")
            after = run(ROOT, argv, stdin, tmp / "this")
            same = before == after
            print(f"{'same  ' if same else 'DIFFER'} {name} (exit {after[0]}, {len(after[1])} bytes)", flush=True)
            if not same:
                differ += 1
                for label, a, b in (("stdout", before[1], after[1]), ("stderr", before[2], after[2])):
                    if a != b:
                        lines = difflib.unified_diff(a.decode(errors="replace").splitlines(),
                                                     b.decode(errors="replace").splitlines(), "base", "this",
                                                     lineterm="", n=1)
                        print(f"  {label}:\n    " + "\n    ".join(list(lines)[:30]))
                if before[0] != after[0]:
                    print(f"  exit {before[0]} -> {after[0]}")
    print(f"{differ} command(s) differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
