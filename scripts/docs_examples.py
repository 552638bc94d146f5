"""Write the console examples of README.md and the docs pages from real runs.

    python scripts/docs_examples.py            # rewrite every example block
    python scripts/docs_examples.py --check    # exit 1 when a block differs from its run

``docs/examples.toml`` lists the examples: each has an ``id``, the ``page`` it feeds
(``README.md`` or ``docs/...md``), the ``command`` (``codeparse ...``, run from the
checkout's root on the bundled fixtures) and optionally ``keep``, the output lines shown
(1-based, inclusive ranges; a cut is shown as one ``…`` line).  In the page, the block is
the ```` ```console ```` fence right after the marker line ``<!-- example ID -->``.  The
block is ``$ command``, the output (each line's trailing blanks removed, paths of the
checkout shown as ``.`` and of the Python environment as ``<venv>``) and ``[exit N]`` when
the exit status is not 0.

Add an example: write the marker and an empty console block into the page, add an entry
to ``docs/examples.toml``, run this script.  ``tests/test_docs.py`` runs every example
again and fails when a page shows anything else.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples.toml"
COLUMNS = 100
CUT = "…"
MARKER = re.compile(r"^<!-- example (?P<id>[\w.-]+) -->\n```console\n(?P<body>.*?)^```$", re.M | re.S)

# A runner takes the arguments after ``codeparse`` and returns (exit status, output): standard
# output followed by standard error, as a terminal COLUMNS wide shows them.
Runner = Callable[[list[str]], tuple[int, str]]


@dataclass(frozen=True)
class Example:
    id: str
    page: str
    command: str
    keep: tuple[tuple[int, int], ...] = ()

    @property
    def args(self) -> list[str]:
        words = shlex.split(self.command)
        if not words or words[0] != "codeparse":
            raise ValueError(f"example {self.id}: the command must start with `codeparse`")
        return words[1:]


def load(path: Path = EXAMPLES) -> list[Example]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    examples = []
    for entry in data.get("example", []):
        unknown = set(entry) - {"id", "page", "command", "keep"}
        if unknown:
            raise ValueError(f"example {entry.get('id')}: unknown keys {sorted(unknown)}")
        keep = tuple((int(a), int(b)) for a, b in entry.get("keep", []))
        examples.append(Example(entry["id"], entry["page"], entry["command"], keep))
    ids = [e.id for e in examples]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"example ids used twice: {dupes}")
    return examples


def block(example: Example, code: int, output: str) -> str:
    """The console block's text (without the fences) for one run."""
    lines = [line.rstrip() for line in _placed(output).rstrip().splitlines()]
    if example.keep:
        shown, last = [], 0
        for start, end in example.keep:
            if start > last + 1:
                shown.append(CUT)
            shown.extend(lines[start - 1:end])
            last = end
        if last < len(lines):
            shown.append(CUT)
        lines = shown
    if code != 0:
        lines.append(f"[exit {code}]")
    return "\n".join([f"$ {example.command}", *lines]) + "\n"


def _placed(output: str) -> str:
    """The output with this machine's paths shown as placeholders: the Python environment's
    (``<venv>``; torch's own files lie there) and then the checkout's (``.``)."""
    return output.replace(str(Path(sys.prefix)), "<venv>").replace(str(ROOT), ".")


def blocks_in(text: str) -> dict[str, str]:
    """Marker id -> the console block's text, for one page."""
    return {m["id"]: m["body"] for m in MARKER.finditer(text)}


def replace(text: str, wanted: dict[str, str]) -> str:
    return MARKER.sub(lambda m: (f"<!-- example {m['id']} -->\n```console\n"
                                 f"{wanted.get(m['id'], m['body'])}```"), text)


def run_process(args: list[str]) -> tuple[int, str]:
    """Run ``python -m codeparse args`` as a process from the checkout's root."""
    env = {**os.environ, "COLUMNS": str(COLUMNS), "PYTHONPATH": str(ROOT)}
    env.pop("FORCE_COLOR", None)
    done = subprocess.run([sys.executable, "-m", "codeparse", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def rendered(examples: list[Example], run: Runner) -> dict[str, dict[str, str]]:
    """page -> {id: block text}, every example run once."""
    pages: dict[str, dict[str, str]] = {}
    for example in examples:
        code, output = run(example.args)
        pages.setdefault(example.page, {})[example.id] = block(example, code, output)
    return pages


def problems(examples: list[Example], pages: dict[str, dict[str, str]]) -> list[str]:
    """What differs between the pages and the runs (empty when all agree)."""
    found = []
    listed = {(e.page, e.id) for e in examples}
    for page in sorted({e.page for e in examples} | set(_pages_with_markers())):
        text = (ROOT / page).read_text(encoding="utf-8")
        shown = blocks_in(text)
        for example_id in shown:
            if (page, example_id) not in listed:
                found.append(f"{page}: marker `{example_id}` has no entry in docs/examples.toml")
        for example_id, wanted in pages.get(page, {}).items():
            if example_id not in shown:
                found.append(f"{page}: no marker <!-- example {example_id} --> before a console block")
            elif shown[example_id] != wanted:
                found.append(f"{page}: example `{example_id}` differs from its run")
    return found


def _pages_with_markers() -> list[str]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [str(p.relative_to(ROOT)) for p in pages if "<!-- example " in p.read_text(encoding="utf-8")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on a difference")
    args = parser.parse_args(argv)
    examples = load()
    pages = rendered(examples, run_process)
    if args.check:
        found = problems(examples, pages)
        for line in found:
            print(line, file=sys.stderr)
        return 1 if found else 0
    for page, wanted in pages.items():
        path = ROOT / page
        text = path.read_text(encoding="utf-8")
        missing = set(wanted) - set(blocks_in(text))
        if missing:
            print(f"{page}: no marker for {sorted(missing)}", file=sys.stderr)
            return 1
        new = replace(text, wanted)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
