"""Before/after comparison of `codeparse report` pages: every page byte-identical.

    python bench/compare_report.py BASE_CHECKOUT           # this checkout against BASE_CHECKOUT
    python bench/compare_report.py BASE_CHECKOUT --quick   # a few archives only

``BASE_CHECKOUT`` is another checkout of codeparse (``git worktree add /tmp/base main``).
One process per checkout (run with ``-P`` and that checkout alone on ``PYTHONPATH``, from
this checkout's folder, so that input paths are the same) writes the page of every case
with :func:`codeparse.report.page.build_report`, and the two pages of each case (and their
exit codes) are compared byte for byte.  The cases: each fixture archive under both
targets, each legacy fixture, the folders of fixture model files and of code texts, code
texts at the edges of decoding, each script/trace pair of ``fixtures/text`` and the
archive pairs, and the benchmark's Transformer (``bench/make_corpus.py``) when it is
there.  Prints the cases that differ and exits 1 if any do.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEGACY = ROOT / "fixtures" / "legacy"  # real archives saved by older PyTorch versions

CHILD = r"""
import json, sys
from pathlib import Path
from codeparse import Policy
from codeparse.report import build_report
cases, out = json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2])
for n, (paths, options) in enumerate(cases):
    target = options.pop("target", None)
    policy = Policy(target=target) if target else Policy()
    try:
        html, code = build_report(paths, policy=policy, **options)
    except Exception as exc:  # a crash is a result too: compared like a page
        html, code = f"{type(exc).__name__}: {exc}", -1
    (out / f"{n}.html").write_text(f"{code}\n{html}", encoding="utf-8")
"""


def odd_texts(folder: Path) -> list[str]:
    """Code texts at the edges of reading: undecodable bytes, a byte-order mark, CRLF line
    ends, a NUL byte, nothing; each made from a fixture text."""
    text = (ROOT / "fixtures" / "text" / "custom_model" / "script.code").read_bytes()
    made = {"latin1.code": text.replace(b"forward", b"forw\xe4rd", 1), "bom.code": b"\xef\xbb\xbf" + text,
            "crlf.code": text.replace(b"\n", b"\r\n"), "nul.code": text + b"\0", "empty.code": b""}
    folder.mkdir()
    for name, data in made.items():
        (folder / name).write_bytes(data)
    return [str(folder / name) for name in made]


def cases(quick: bool, folder: Path) -> list[tuple[list[str], dict]]:
    """(inputs, build_report options) of every page compared."""
    archives = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "fixtures" / "archives").iterdir() if p.is_file())
    if quick:
        archives = archives[:12]
    out: list[tuple[list[str], dict]] = []
    for target in ("trace", "export"):
        out += [([a], {"target": target}) for a in archives]
    if not quick:
        out += [([str(p)], {}) for p in sorted(LEGACY.iterdir()) if p.is_file() and p.suffix != ".md"]
        out.append((["fixtures/files"], {}))
        out.append((["fixtures/text", "tests/data/package_linear.pt"], {}))
        out += [([p], {}) for p in odd_texts(folder)]
        out.append((["fixtures/text/custom_model", "fixtures/files/plain.pkl"], {"target": "export"}))
        for case in sorted((ROOT / "fixtures" / "text").iterdir()):
            if (case / "script.code").exists() and (case / "trace.code").exists():
                out.append(([], {"script": f"fixtures/text/{case.name}/script.code",
                                 "trace": f"fixtures/text/{case.name}/trace.code"}))
        for script in sorted((ROOT / "fixtures" / "archives").glob("*.script.pt")):
            trace = script.with_name(script.name.replace(".script.pt", ".trace.pt"))
            if trace.exists():
                out.append(([str(script.relative_to(ROOT))], {"script": str(script.relative_to(ROOT)),
                                                               "trace": str(trace.relative_to(ROOT))}))
    big = ROOT / "bench" / "out" / "transformer_d512.pt"
    if big.exists():
        out.append((["bench/out/transformer_d512.pt"], {}))
    return out


def pages(root: Path, listed: Path, out: Path) -> None:
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=str(root))
    # -P: the checkout on PYTHONPATH is imported, not the one in the working directory
    subprocess.run([sys.executable, "-P", "-c", CHILD, str(listed), str(out)], check=True, cwd=ROOT, env=env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path, help="the checkout to compare against")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="codeparse-compare-report-") as tmp_name:
        tmp = Path(tmp_name)
        todo = cases(args.quick, tmp / "texts")
        listed = tmp / "cases.json"
        listed.write_text(json.dumps(todo))
        pages(args.base.resolve(), listed, tmp / "base")
        pages(ROOT, listed, tmp / "this")
        differ = 0
        for n, (paths, options) in enumerate(todo):
            before = (tmp / "base" / f"{n}.html").read_bytes()
            after = (tmp / "this" / f"{n}.html").read_bytes()
            if before != after:
                differ += 1
                at = next((i for i, (a, b) in enumerate(zip(before, after)) if a != b), min(len(before), len(after)))
                print(f"DIFFER {paths} {options}: first at byte {at}: "
                      f"{before[at - 60:at + 60]!r} -> {after[at - 60:at + 60]!r}")
    print(f"{len(todo)} pages compared, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
