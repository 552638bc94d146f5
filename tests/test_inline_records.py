"""Records made inline (the scan's calls and references, parameters, class attributes,
condition sources, spans) are the dicts their makers make: the same keys in the same order, sharing the
maker's key table (so the same size), on every fixture text."""

from __future__ import annotations

import sys
from pathlib import Path

from codeparse import parse_file
from codeparse.parse.source import span_data
from codeparse.text import extract

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

MAKERS = {
    "span": span_data,
    "call": extract._call,
    "ref": extract._self_ref,
    "param": extract._param,
    "attribute": extract._attribute,
    "source": extract._source,
}


def _same(kind: str, d: dict) -> None:
    made = MAKERS[kind](*d.values())
    assert made == d and list(made) == list(d), (kind, d)
    assert sys.getsizeof(d) == sys.getsizeof(made), (kind, d)  # the key table is shared


def test_inline_records_equal_and_share_keys_with_their_makers():
    seen = dict.fromkeys(MAKERS, 0)
    paths = sorted((FIXTURES / "text").glob("*/*.code"))[::3] + sorted((FIXTURES / "archive_code").rglob("*.py"))[::3]
    for path in paths:
        cf = parse_file(path, as_dict=True)
        functions = cf["functions"] + [m for c in cf["classes"] for m in c["methods"]]
        for cls in cf["classes"]:
            _same("span", cls["span"])
            for a in cls["attributes"]:
                _same("attribute", a)
                _same("span", a["span"])
                seen["attribute"] += 1
        for fn in functions:
            _same("span", fn["span"])
            for p in fn["signature"]["params"]:
                _same("param", p)
                _same("span", p["span"])
                seen["param"] += 1
            for c in fn["calls"]:
                _same("call", c)
                _same("span", c["span"])
                seen["call"] += 1
            for r in fn["self_refs"]:
                _same("ref", r)
                _same("span", r["span"])
                seen["ref"] += 1
            for i in fn["ifs"]:
                _same("span", i["span"])
                _same("span", i["block_span"])
                seen["span"] += 1
                for source in i["condition"]["sources"]:
                    _same("source", source)
                    seen["source"] += 1
    assert all(count > 100 for count in seen.values()), seen
