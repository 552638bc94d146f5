"""Write ``grammars/patterns.json.gz``: the compiled form of every pattern the grammars compile.

    python scripts/compile_patterns.py

Run it after changing a grammar file (``tests/test_grammar.py`` fails while the stored
patterns lag behind the grammars).  It stores what this interpreter's ``re`` and the
installed ``regex`` make of each pattern; see :mod:`codeparse.grammar.compiled`.  (``regex``
orders some sets of characters differently from one process to the next, so the bytes
written may differ from run to run for the same patterns.)
"""

from __future__ import annotations

import argparse
import array
import base64
import gzip
import json
import re
import sys
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codeparse.grammar.compiled import FORMAT, STORE_FILE, engine_tags, recording  # noqa: E402 - the checkout first


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
            base64.b64encode(array.array("I", code).tobytes()).decode("ascii")]


def _regex_entry(source: str, flags: int) -> list:
    import regex

    data = regex.compile(source, flags)._pickled_data
    (_source, stored_flags, code, group_index, index_group, named_lists, named_list_indexes, req_offset, req_chars,
     req_flags, group_count) = data
    return [flags, stored_flags, base64.b64encode(code).decode("ascii"), group_index, sorted(index_group.items()),
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


def build() -> dict[str, Any]:
    """The store's content for this interpreter's engines, from :func:`sources`."""
    from codeparse.grammar.engine import _FLAGS

    found = sources()
    entries_re = {}
    not_re = []
    for source in sorted(found["re"] | found["regex"]):
        entry = _re_entry(source)
        if entry is not None:
            entries_re[source] = entry
        elif source in found["re"] or source in found["regex"]:
            not_re.append(source)
    entries_regex = {source: _regex_entry(source, _FLAGS) for source in sorted(found["regex"])}
    return {"format": FORMAT, "engines": engine_tags(), "re": entries_re, "not_re": not_re, "regex": entries_regex}


def write(path: Any) -> None:
    """Write :func:`build`'s content to ``path`` (gzip with no timestamp: the same bytes each time)."""
    body = json.dumps(build(), sort_keys=True, separators=(",", ":")).encode("utf-8")
    with open(path, "wb") as handle:
        handle.write(gzip.compress(body, 9, mtime=0))


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("--output", type=Path, default=ROOT / "grammars" / STORE_FILE,
                        help=f"where to write the store (default: grammars/{STORE_FILE})")
    path = parser.parse_args(argv).output.resolve()
    write(path)
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    print(f"wrote {shown} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
