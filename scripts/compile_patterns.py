"""Write ``grammars/patterns.json``: the compiled form of every pattern the grammars compile,
``grammars/compiled/<name>.json``: each ``grammars/<name>.toml`` file as ``tomllib`` reads it,
and ``grammars/compiled/operators.json``: the index of the operator table.

    python scripts/compile_patterns.py

Run it after changing a grammar file, any other TOML file of ``grammars/`` or the operator
table (``tests/test_grammar.py`` fails while the stored patterns lag behind the grammars).  It stores what this interpreter's ``re`` and the
installed ``regex`` make of each pattern; see :mod:`codeparse.grammar.compiled`.  (``regex``
orders some sets of characters differently from one process to the next, so the bytes
written may differ from run to run for the same patterns.)
"""

from __future__ import annotations

import argparse
import array
import json
import re
import sys
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codeparse.grammar.compiled import (  # noqa: E402 - the checkout first
    FORMAT, STORE_FILE, TABLES_DIR, TABLES_FORMAT, checksum, engine_tags, pack, recording, store_key)


def _re_entry(source: str) -> Optional[list]:
    from re import _compiler, _parser

    try:
        parsed = _parser.parse(source, 0)
        code = _compiler._code(parsed, 0)
    except re.error:
        return None
    indexgroup: list = [None] * parsed.state.groups
    for name, index in parsed.state.groupdict.items():
        indexgroup[index] = name
    return [parsed.state.flags, parsed.state.groups - 1, dict(parsed.state.groupdict), indexgroup,
            pack(source, array.array("I", code).tobytes())]


def _regex_entry(source: str, flags: int) -> list:
    import regex

    data = regex.compile(source, flags)._pickled_data
    (_source, stored_flags, code, group_index, index_group, named_lists, named_list_indexes, req_offset, req_chars,
     req_flags, group_count) = data
    return [flags, stored_flags, pack(source, code), group_index, sorted(index_group.items()),
            named_lists, named_list_indexes, req_offset, list(req_chars), req_flags, group_count]


def sources() -> dict[str, set]:
    """Every source the shipped grammars compile (each grammar's ``compile_all``, the parser's
    bracket patterns), by engine."""
    from codeparse.grammar import engine as grammar
    from codeparse.parse import statements as parser

    with recording() as found:
        for gid in grammar.grammar_ids():
            loaded = grammar._load(grammar._grammar_files()[gid])  # a fresh load: nothing compiled yet
            loaded.compile_all()
            parser._nesting.__wrapped__("".join(o + c for o, c in loaded.bracket_pairs), parser._NEST_DEPTH)
    return found


def _unique(entries: dict[str, Any], source: str) -> str:
    key = store_key(source)
    if key in entries:
        raise SystemExit(f"two patterns share the store key {key}: change the key's checksums")
    return key


def build() -> dict[str, Any]:
    """The store's content for this interpreter's engines, from :func:`sources`: each entry
    under its source's :func:`~codeparse.grammar.compiled.store_key` (the writer fails if two
    sources share one), the sources ``re`` cannot compile listed as they are."""
    from codeparse.grammar.engine import _FLAGS

    found = sources()
    entries_re = {}
    not_re = []
    for source in sorted(found["re"] | found["regex"]):
        entry = _re_entry(source)
        if entry is not None:
            entries_re[_unique(entries_re, source)] = entry
        elif source in found["re"] or source in found["regex"]:
            not_re.append(source)
    entries_regex: dict[str, list] = {}
    for source in sorted(found["regex"]):
        entries_regex[_unique(entries_regex, source)] = _regex_entry(source, _FLAGS)
    return {"format": FORMAT, "engines": engine_tags(), "re": entries_re, "not_re": not_re, "regex": entries_regex}


def write(path: Any) -> None:
    """Write :func:`build`'s content to ``path`` (JSON, keys sorted: the same bytes each time for the same
    patterns and engines)."""
    body = json.dumps(build(), sort_keys=True, separators=(",", ":")).encode("utf-8")
    with open(path, "wb") as handle:
        handle.write(body)


def tables(folder: Path) -> dict[str, bytes]:
    """The compiled form of each TOML file of ``folder``, by file name (``<name>.json``): the
    :func:`~codeparse.grammar.compiled.checksum` of its bytes and what ``tomllib`` reads from
    its text, in the order it reads it; and the operator table's index (``operators.json``,
    :func:`codeparse.infer.operators.table_index`)."""
    import tomllib

    from codeparse.infer.operators import TABLE_FILE, TABLE_INDEX, table_index

    out = {}
    table = folder / TABLE_FILE
    if table.exists():
        out[Path(TABLE_INDEX).name] = (json.dumps(table_index(table.read_bytes()), ensure_ascii=False,
                                                  separators=(",", ":")) + "\n").encode("utf-8")
    for path in sorted(folder.glob("*.toml")):
        form = {"format": TABLES_FORMAT, "checksum": checksum(path.read_bytes()),
                "data": tomllib.loads(path.read_text(encoding="utf-8"))}
        out[path.stem + ".json"] = (json.dumps(form, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
                                    + "\n").encode("utf-8")
    return out


def write_tables(source: Path, target: Path) -> int:
    """Write :func:`tables` of ``source`` into ``target`` and remove the forms of files gone; the count written."""
    target.mkdir(parents=True, exist_ok=True)
    forms = tables(source)
    for stale in target.glob("*.json"):
        if stale.name not in forms:
            stale.unlink()
    for name, body in forms.items():
        (target / name).write_bytes(body)
    return len(forms)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("--output", type=Path, default=ROOT / "grammars" / STORE_FILE,
                        help=f"where to write the store (default: grammars/{STORE_FILE}); the compiled TOML "
                             f"files go to the folder {TABLES_DIR}/ beside it")
    path = parser.parse_args(argv).output.resolve()
    write(path)
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    print(f"wrote {shown} ({path.stat().st_size} bytes)")
    count = write_tables(ROOT / "grammars", path.parent / TABLES_DIR)
    print(f"wrote {count} compiled files into {shown.parent / TABLES_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
