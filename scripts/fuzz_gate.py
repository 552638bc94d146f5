"""Look for a file a loader runs and the gate passes: mutants of the canary corpus and composed pickles.

Every other round takes a hostile file of ``fixtures/canaries/`` and changes it (a byte set,
bytes cut or inserted, the end cut, a run of bytes copied from elsewhere in it, or two
files spliced); the others compose a pickle program at random (:func:`compose`: allowed
globals, data types, the protocol's helpers and canary-writing callables, by name, dotted
or in Python 2 spelling, called, instantiated, given state, memoized).  Each is given to
the gate (:func:`codeparse.check.input_data`, in process).  A mutant the
gate passes is loaded for real (``pickle.loads`` and ``torch.load(weights_only=False)`` in
forked processes, :func:`make_canaries.run_loaders`): if its canary appears, the gate has a
hole, and the mutant is written to ``--out`` and reported.  Deterministic for a seed.

    python scripts/fuzz_gate.py --budget 20000 --seed 1 --out /tmp/bypasses

``tests/test_canaries.py`` runs it with a small budget on every test run.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_canaries  # noqa: E402

MUTATIONS = ("set", "cut", "insert", "truncate", "copy", "splice")
# Bytes worth trying: opcodes that push, pop, call and name globals, and line ends.
INTERESTING = b"(.0123NR\x81\x85\x86\x87\x93\x94\x95bcioqhjrstuaeXV\x8c\x80\x88\x89\n\x00\xff"


def mutate(rng: random.Random, data: bytes, other: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        if not out:
            break
        kind = rng.choice(MUTATIONS)
        i = rng.randrange(len(out))
        if kind == "set":
            out[i] = rng.choice(INTERESTING) if rng.random() < 0.7 else rng.randrange(256)
        elif kind == "cut":
            del out[i:i + rng.randint(1, 8)]
        elif kind == "insert":
            out[i:i] = bytes([rng.choice(INTERESTING)])
        elif kind == "truncate":
            del out[i:]
        elif kind == "copy":
            j = rng.randrange(len(out))
            out[i:i] = out[j:j + rng.randint(1, 16)]
        else:
            j = rng.randrange(len(other)) if other else 0
            out = out[:i] + bytearray(other[j:])
    return bytes(out)


# Globals a composed pickle names: allowed ones, data types, the protocol's helpers, and
# callables that write the canary (by name, dotted, or spelled the Python 2 way).
POOL = (
    ("collections", "OrderedDict"), ("torch._utils", "_rebuild_tensor_v2"), ("builtins", "set"),
    ("_codecs", "encode"), ("torch", "Size"), ("torch._tensor", "_rebuild_from_type_v2"),
    ("copyreg", "_reconstructor"), ("copyreg", "__newobj__"), ("builtins", "object"), ("builtins", "list"),
    ("builtins", "dict"), ("builtins", "str"), ("argparse", "Namespace"), ("pathlib", "PurePosixPath"),
    ("cProfile", "run"), ("codecs", "open"), ("StringIO", "open"), ("__builtin__", "open"),
    ("torch.nn.modules.module", "torch.os.system"), ("torch._utils", "torch.os.system"), ("posix", "system"),
    ("logging", "FileHandler"), ("runpy", "_run_code"), ("pathlib", "Path.write_text"), ("pathlib", "Path"),
)
PUSHES = (b"N", b"}", b"]", b")", b"\x88", b"K\x00", b"(")


def compose(rng: random.Random) -> bytes:
    """A random pickle program: globals from POOL, the canary's strings, containers, and the
    opcodes that call, instantiate, set state, memoize and pop, at a random protocol."""
    mc = make_canaries
    proto = rng.choice((None, 0, 2, 4))
    parts = [b"\x80" + bytes([proto])] if proto else []
    for _ in range(rng.randint(1, 12)):
        kind = rng.randrange(10)
        if kind < 3:
            module, name = rng.choice(POOL)
            parts.append(mc.sg(module, name) if proto == 4 and rng.random() < 0.5 else mc.g(module, name))
        elif kind < 5:
            parts.append(mc.s(rng.choice((mc.PY, mc.SH, mc.CANARY, "w", "x"))))
        elif kind < 7:
            parts.append(rng.choice(PUSHES))
        else:
            parts.append(rng.choice((b"R", b"\x81", b"b", b"t", b"\x85", b"\x86", b"\x87", b"0", b"q\x01", b"h\x01",
                                     b"\x94", b"s", b"a", b"e", b"u", b"o")))
    return b"".join(parts) + b"."


def gate_passes(path: Path) -> bool:
    """Whether ``codeparse check`` would exit 0 for the file (named alone, default policy)."""
    from codeparse.contract.records import Limits
    from codeparse.gate.policy import fails
    from codeparse.gate.run import input_data

    policy = Limits()
    report = input_data(str(path), policy)
    return report["readable"] and not any(fails(f, policy) for f in report["findings"])


def fuzz(budget: int, seed: int = 0, out: Path | None = None, loaders: tuple[str, ...] = ("pickle",)) -> dict:
    """``budget`` mutants; returns counts and the bypasses found (mutant -> loaders that ran it)."""
    manifest = make_canaries.MANIFEST_PATH
    import json

    files = json.loads(manifest.read_text())["files"]
    corpus = [(make_canaries.OUT / n).read_bytes() for n, e in sorted(files.items()) if e["hostile"]]
    rng = random.Random(seed)
    passed: list[Path] = []
    found: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="fuzz-gate-") as tmp:
        for n in range(budget):
            if n % 2:
                data = compose(rng)
            else:
                data = mutate(rng, rng.choice(corpus), rng.choice(corpus))
            path = Path(tmp) / f"m{n}.pkl"
            path.write_bytes(data)
            if gate_passes(path):
                passed.append(path)
            else:
                path.unlink()
        if passed:
            fired = make_canaries.run_loaders(passed, timeout=10.0, loaders=loaders)
            for path in passed:
                ran = [k for k, v in fired[str(path)].items() if v]
                if ran:
                    found[path.name] = ran
                    if out is not None:
                        out.mkdir(parents=True, exist_ok=True)
                        (out / path.name).write_bytes(path.read_bytes())
    return {"mutants": budget, "passed_gate": len(passed), "bypasses": found}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--torch", action="store_true", help="also run torch.load(weights_only=False)")
    args = parser.parse_args(argv)
    loaders = ("pickle", "torch_load") if args.torch else ("pickle",)
    result = fuzz(args.budget, args.seed, args.out, loaders)
    print(f"{result['mutants']} mutants, {result['passed_gate']} passed the gate, "
          f"{len(result['bypasses'])} ran a canary: {sorted(result['bypasses'])}")
    return 1 if result["bypasses"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
