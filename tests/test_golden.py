"""Golden files: the whole parse of every fixture text, per grammar.

``tests/golden/<grammar>/<case>/<file>.json`` holds ``CodeFile.model_dump(mode="json")``
of ``fixtures/text/<case>/<file>.code``.  Regenerate with ``pytest --update-goldens``
and review the diff; the values for the reference models were checked by a person
(see also tests/test_extract.py, which pins them one by one).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeparse import CodeFile, parse_file

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "text"
GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = sorted(FIXTURES.glob("*/*.code"))


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_golden(path, request):
    cf = parse_file(path.relative_to(ROOT).as_posix())
    golden = GOLDEN / cf.grammar / path.parent.name / (path.stem + ".json")
    actual = json.dumps(cf.model_dump(mode="json"), indent=1, sort_keys=True) + "\n"
    if request.config.getoption("--update-goldens"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual, encoding="utf-8")
        return
    assert golden.exists(), f"no golden file {golden}; run: pytest tests/test_golden.py --update-goldens"
    expected = golden.read_text(encoding="utf-8")
    if actual != expected:
        pytest.fail(
            f"{path} no longer parses as {golden.relative_to(ROOT)} records.\n"
            "If the change is intended, run: pytest tests/test_golden.py --update-goldens "
            "and review the diff.",
            pytrace=False,
        )
    # The golden loads back into the public models (extra="forbid").
    CodeFile.model_validate_json(expected)


def test_no_stale_goldens():
    expected = {f"{p.parent.name}/{p.stem}" for p in CASES}
    present = {f"{p.parent.name}/{p.stem}" for p in GOLDEN.glob("*/*/*.json")}
    assert present <= expected, sorted(present - expected)
