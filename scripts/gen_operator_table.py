#!/usr/bin/env python
"""Write ``grammars/operators.json.gz``: every TorchScript operator, its overload schemas and
the Python names that reach it, from the installed torch.

Usage (needs torch)::

    python scripts/gen_operator_table.py            # writes grammars/operators.json.gz
    python scripts/gen_operator_table.py --check    # exit 1 if the file differs from a fresh run

then ``python scripts/compile_patterns.py``, which writes the table's index
(``grammars/compiled/operators.json``, read by :func:`codeparse.infer.operators.load_table`).

The file is gzip-compressed JSON, written with a fixed mtime so that reruns with the same
torch give identical bytes::

    {"format": 1, "torch_version": "2.13.0+cpu", "generator": "...",
     "bindings": {"t": "torch", "V": "torch._C._VariableFunctions", ...},
     "operators": {"aten::add": [[".Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", ...],
                                 "tVT"], ...}}

Each operator holds its schemas with the operator name left off (``aten::add`` +
``.Tensor(...)`` is the schema as torch prints it) and a string of binding codes, one per
Python namespace holding a callable of the operator's name (``codeparse.infer.operators.BINDINGS``).
The content is built by ``codeparse.infer.operators.build_table``, the same code that answers live
lookups, so the table and live torch agree.
"""

import argparse
import gzip
import io
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "grammars", "operators.json.gz")


def encode(table):
    raw = json.dumps(table, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as z:
        z.write(raw)
    return buf.getvalue(), len(raw)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args(argv)
    sys.path.insert(0, REPO)
    from codeparse.infer.operators import build_table

    table = build_table()
    data, raw = encode(table)
    n_schemas = sum(len(v[0]) for v in table["operators"].values())
    summary = "%d operators, %d schemas, torch %s: %d bytes (%d uncompressed)" % (
        len(table["operators"]), n_schemas, table["torch_version"], len(data), raw)
    if args.check:
        try:
            with open(args.out, "rb") as f:
                same = f.read() == data
        except OSError:
            same = False
        print(("up to date: " if same else "differs: ") + summary)
        return 0 if same else 1
    with open(args.out, "wb") as f:
        f.write(data)
    print("wrote %s: %s" % (os.path.relpath(args.out, REPO), summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
