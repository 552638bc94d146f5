"""Per-byte cost against a function's length, run on demand: python bench/bench_linear.py

A traced ``forward`` in the form of ``fixtures/text/tutorial_rnn_loop/trace.code`` (the
trace of a loop over a cell, unrolled by the tracer: ``_k = (cell).forward(torch.select(xs,
0, i), _j, )`` then ``_a, _b, = _k``) is extended to N and to 8·N steps of the loop; each
text is read by ``parse_text``, by ``check`` (as a ``.code`` file) and by ``ops`` (its
operator inventory, bundled table).  The figure is CPU time per byte at 8× the length
over CPU time per byte at 1× (target ≤ 1.5: cost per byte flat in a function's length).

Prints a Markdown table; ``bench/bench_parse.py`` includes the same rows in results.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _timing import cpu_best  # bench/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parent.parent


def traced_forward(steps: int) -> str:
    """The unrolled-loop trace of ``tutorial_rnn_loop`` with ``steps`` iterations."""
    lines = [
        "def forward(self,",
        "    xs: Tensor) -> Tuple[Tensor, Tensor]:",
        "  cell = self.cell",
        '  _0 = torch.zeros([3, 4], dtype=None, layout=None, device=torch.device("cpu"), pin_memory=False)',
    ]
    prev, n = "_0", 1
    for i in range(steps):
        lines.append(f"  _{n} = (cell).forward(torch.select(xs, 0, {i}), {prev}, )")
        lines.append(f"  _{n + 1}, _{n + 2}, = _{n}")
        prev, n = f"_{n + 2}", n + 3
    lines.append(f"  return ({prev}, {prev})")
    return "\n".join(lines) + "\n"


def measure(base_steps: int = 1000, factor: int = 8, rounds: int = 3) -> list[tuple[str, float, float, float]]:
    """(stage, µs/byte at 1×, µs/byte at 8×, ratio) for parse_text, check and ops."""
    sys.path.insert(0, str(ROOT))
    import codeparse
    from codeparse.infer import operators
    from codeparse.gate.run import check

    rows = []
    with tempfile.TemporaryDirectory(prefix="codeparse-linear-") as tmp:
        paths, sizes, texts = [], [], []
        for steps in (base_steps, base_steps * factor):
            text = traced_forward(steps)
            path = Path(tmp) / f"trace_{steps}.code"
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
            sizes.append(len(text.encode("utf-8")))
            texts.append(text)
        policy = codeparse.Policy()
        stages = {
            "parse_text": lambda i: codeparse.parse_text(texts[i]),
            "check": lambda i: check([paths[i]], policy),
            "ops": lambda i: operators.inventory([codeparse.parse_file(paths[i])], source="table"),
        }
        for name, run in stages.items():
            run(0)  # warm: grammar compiled, tables loaded
            per_byte = [cpu_best(rounds, lambda i=i: run(i)) / sizes[i] * 1e6 for i in (0, 1)]
            rows.append((name, per_byte[0], per_byte[1], per_byte[1] / per_byte[0]))
    return rows


def table(rows, base_steps: int, factor: int) -> list[str]:
    out = [
        f"| stage | µs/byte at 1× ({base_steps} steps) | µs/byte at {factor}× | ratio (target ≤ 1.5) |",
        "|---|---|---|---|",
    ]
    out += [f"| `{name}` | {a:.2f} | {b:.2f} | **{r:.2f}** |" for name, a, b, r in rows]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--factor", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("\n".join(table(measure(args.steps, args.factor, args.rounds), args.steps, args.factor)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
