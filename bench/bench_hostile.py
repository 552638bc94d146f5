"""Doubling benchmark for the former quadratic and exponential paths of hostile inputs.

For each hostile shape, CPU time (best of 3, ``_timing.cpu_best``: this process and the
workers it waited for) at size n and 2n, and the ratio: about 2 is linear, 4 quadratic, and an exponential shape shows a ratio in the
thousands.  Inputs are generated here (the same generators as ``tests/test_hostile.py``).
Run from the repository root::

    PYTHONPATH=. python bench/bench_hostile.py            # prints the table
    PYTHONPATH=. python bench/bench_hostile.py --write    # and writes bench/results-hostile.md

The machine is shared: report the ratios of one run, not the absolute times.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import codeparse  # noqa: E402
from codeparse.archive.legacy import read_bytecode  # noqa: E402
from test_archive_bad import raw_zip, stored  # noqa: E402
from test_hostile import attribute_chain, ifelse_blocks, temporaries  # noqa: E402

from _timing import cpu_best  # noqa: E402 - bench/ is on sys.path when run as a script


def parse(text: str):
    return lambda: codeparse.parse_text(text)


def module_tree(depth: int, folder: Path):
    files = []
    for i in range(depth + 1):
        subs = "" if i == depth else f"  a : __torch__.C{i + 1}\n  b : __torch__.C{i + 1}\n"
        files.append(f"class C{i}(Module):\n  __parameters__ = []\n  __buffers__ = []\n  training : bool\n{subs}"
                     f"  def forward(self: __torch__.C{i},\n    x: Tensor) -> Tensor:\n    return x\n")
    path = folder / f"tree{depth}.pt"
    path.write_bytes(raw_zip([stored("m/version", b"3"), stored("m/code/__torch__.py", "".join(files).encode()),
                              stored("m/data.pkl", b"\x80\x02c__torch__\nC0\nq\x00.")]))
    return lambda: codeparse.open_archive(path)


def bytecode(n: int):
    code = (("instructions", ()), ("operators", tuple((f"aten::op{j}", "") for j in range(n))))
    data = pickle.dumps((8, *[(f"__torch__.M.m{i}", code) for i in range(n)]), protocol=2)
    return lambda: read_bytecode(data)


def model_json(attrs: int, reads: int, folder: Path):
    model = {"protoVersion": 2, "mainModule": {"name": "m", "torchscriptArena": {"key": "code/m.py"},
                                               "attributes": [{"name": f"a{i}", "type": "int"} for i in range(attrs)]}}
    body = "".join(f"  _{i} = self.q{i}.z\n" for i in range(reads))
    code = f"op_version_set = 0\ndef forward(self,\n    x):\n{body}  return x\n".encode()
    path = folder / f"attrs{attrs}.pt"
    path.write_bytes(raw_zip([stored("m/version", b"1"), stored("m/model.json", json.dumps(model).encode()),
                              stored("m/code/m.py", code)]))
    return lambda: codeparse.open_archive(path)


def pickle_gate(kind: str, n: int):
    """The pickle gate (walk and findings) on a hostile pickle of size n: n distinct globals
    each called with the previous one as argument; n tuples nested in one another, a global
    at the bottom; n memoized globals fetched n times (protocol 0, the pickletools walk)."""
    from codeparse.pickles.picklescan import pickle_findings, scan_pickle

    if kind == "called":
        body = b"".join(b"cm%d\nf%d\n" % (i, i) + b"(" for i in range(n)) + b"N" + b"tR" * n
        data = b"\x80\x02" + body + b"."
    elif kind == "nested":
        data = b"\x80\x02ccProfile\nrun\n" + b"\x85" * n + b"."
    else:
        data = b"cos\nsystem\np0\n0" + b"g0\n0" * n + b"N."
    return lambda: list(pickle_findings("x", [scan_pickle(data, "x")]))


def rows(folder: Path):
    parens = "def f(x: Tensor) -> Tensor:\n  if bool({}x{}):\n    pass\n  else:\n    pass\n  return x\n"
    lines = "def f(x: Tensor) -> Tensor:\n{}  return x\n"
    yield "if/else blocks reassigning one local", 400, lambda n: parse(ifelse_blocks(n))
    yield "doubling temporaries `_k = add(_k-1, _k-1)`", 22, lambda n: parse(temporaries(n, doubling=True))
    yield "chained temporaries feeding an if", 2000, lambda n: parse(temporaries(n, doubling=False))
    yield "parentheses n deep in a condition", 2000, lambda n: parse(parens.format("(" * n, ")" * n))
    yield "lines of `_0 = torch.add(x, 1)`", 16000, lambda n: parse(lines.format("  _0 = torch.add(x, 1)\n" * n))
    yield "`a_i = a_{i-1}.b` reads", 16000, lambda n: parse(attribute_chain(n))
    yield "module tree: class with two of the next, depth n", 22, lambda n: module_tree(n, folder)
    yield "bytecode.pkl: n methods sharing n operators", 2000, bytecode
    yield "model.json: 10n attributes, n `self.qN.z` reads", 2500, lambda n: model_json(10 * n, n, folder)
    yield "pickle: n distinct globals, each called on the next", 20000, lambda n: pickle_gate("called", n)
    yield "pickle: a global in n nested tuples", 200000, lambda n: pickle_gate("nested", n)
    yield "pickle (protocol 0): one global fetched n times", 100000, lambda n: pickle_gate("memo", n)


def main(argv: list[str]) -> int:
    out = ["| shape | n | CPU s at n | CPU s at 2n | ratio |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for title, n, make in rows(Path(tmp)):
            small = cpu_best(3, make(n))
            large = cpu_best(3, make(2 * n))
            out.append(f"| {title} | {n} | {small:.3f} | {large:.3f} | {large / max(small, 1e-6):.2f} |")
            print(out[-1], flush=True)
    if "--write" in argv:
        text = ("# Doubling benchmark of the hostile shapes\n\n"
                "`PYTHONPATH=. python bench/bench_hostile.py --write`; CPU time, best of 3, "
                f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end (read the ratios, "
                "not the times): about 2 is linear.\n\n"
                + "\n".join(out) + "\n")
        (ROOT / "bench" / "results-hostile.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
