"""Before/after comparison of what `parse` returns: every byte identical.

    python bench/compare_parse.py BASE_CHECKOUT

``BASE_CHECKOUT`` is another checkout of codeparse (``git worktree add /tmp/base main`` or
``git archive COMMIT codeparse grammars | tar -x -C /tmp/base``).  Each command runs once
with this checkout and once with the base one first on ``PYTHONPATH``, from this checkout's
folder (so the input paths are the same), and their standard output, standard error and
exit code are compared byte for byte:

* ``codeparse parse --format jsonl`` over every code text of ``fixtures/`` (``.code`` and
  ``.py`` files) and, one process per folder, every archive (``fixtures/legacy`` included);
* the library: ``parse_file(path).model_dump_json()`` (the model path) and
  ``json.dumps(parse_file(path, as_dict=True))`` (the dict path) of every code text, and
  ``parse_text`` of each text with the grammar forced to every grammar the base knows.

Prints one line per command and exits 1 if any differ.
"""

from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = (".code", ".py")
ARCHIVES = (".pt", ".ptl", ".pth", ".pt1", ".pt2", ".jit", ".zip", ".bin")
LIBRARY = r"""
import json, sys, codeparse
for path in sys.argv[1:]:
    print(path)
    print(codeparse.parse_file(path).model_dump_json())
    print(json.dumps(codeparse.parse_file(path, as_dict=True), sort_keys=False))
"""
FORCED = r"""
import json, sys, codeparse
from pathlib import Path
ids = [g.id for g in codeparse.available_grammars()]
for path in sys.argv[1:]:
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    for grammar in ids:
        print(path, grammar, json.dumps(codeparse.parse_text(text, path=path, grammar=grammar, as_dict=True)))
"""


def inputs() -> tuple[list[str], dict[str, list[str]]]:
    """The code texts, and the archives by folder, relative to the checkout."""
    texts, archives = [], {}
    for path in sorted((ROOT / "fixtures").rglob("*")):
        if not path.is_file():
            continue
        name = str(path.relative_to(ROOT))
        if path.suffix in CODE:
            texts.append(name)
        elif path.suffix in ARCHIVES:
            archives.setdefault(str(path.parent.relative_to(ROOT)), []).append(name)
    return texts, archives


def commands() -> list[tuple[str, list[str]]]:
    texts, archives = inputs()
    out = [("parse jsonl texts", ["-m", "codeparse", "parse", "--format", "jsonl", *texts])]
    out += [(f"parse jsonl {folder}", ["-m", "codeparse", "parse", "--format", "jsonl", *names])
            for folder, names in sorted(archives.items())]
    out.append(("library model and dict", ["-c", LIBRARY, *texts]))
    out.append(("library forced grammars", ["-c", FORCED, *texts]))
    return out


def run(args: list[str], checkout: Path) -> tuple[bytes, bytes, int]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "NO_COLOR": "1"}
    # -P: the checkout on PYTHONPATH is imported, not the one in the working directory
    done = subprocess.run([sys.executable, "-P", *args], cwd=ROOT, env=env, capture_output=True)
    return done.stdout, done.stderr, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path, help="the other checkout (its codeparse/ and grammars/)")
    args = parser.parse_args()
    differ = 0
    for name, argv in commands():
        after, before = run(argv, ROOT), run(argv, args.base.resolve())
        same = after == before
        differ += not same
        print(f"{'same' if same else 'DIFFER'}: {name} ({len(after[0]):,} bytes out, exit {after[2]})")
        if not same:
            for label, a, b in (("stdout", after[0], before[0]), ("stderr", after[1], before[1])):
                if a != b:
                    diff = difflib.unified_diff(b.decode(errors="replace").splitlines(),
                                                a.decode(errors="replace").splitlines(),
                                                "before", "after", lineterm="", n=0)
                    for line in list(diff)[:20]:
                        print(f"  {label}: {line[:300]}")
            if after[2] != before[2]:
                print(f"  exit: before {before[2]}, after {after[2]}")
    print(f"{differ} of {len(commands())} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
