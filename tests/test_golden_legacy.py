"""Golden files for the legacy archives, per grammar, as tests/test_golden.py.

``tests/golden/<grammar>/legacy/<archive>/<entry>.json`` holds
``CodeFile.model_dump(mode="json")`` of one code entry of ``fixtures/legacy/<archive>``
(``<archive>`` is ``generated/<file>`` for the archives saved with old torch releases)
(``<entry>`` is its path under ``code/`` with ``/`` as ``.``), parsed as the archive
reader does: model.json archives through ``codeparse.archive.legacy`` (classes synthesised
from the JSON), the others as archive text.  Regenerate with
``pytest tests/test_golden_legacy.py --update-goldens`` and review the diff; what was
checked by hand is listed in ``fixtures/legacy/README.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeparse import CodeFile
from test_legacy import ARCHIVES, EXPECTED_GRAMMAR, GENERATED, LEGACY, parsed

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"


def _stem(entry: str) -> str:
    rel = entry.split("/code/", 1)[1] if "/code/" in entry else entry.rsplit("/", 1)[-1]
    return rel[: -len(".py")].replace("/", ".")


# 1.2 inlines every submodule's forward (Conv2d's padding logic included) into its
# caller: that archive's goldens would weigh 9 MB, so tests/test_legacy.py pins its
# facts instead (test_generated_1_2_custom_model_inlined_reads_like_today).
TOO_LARGE = {"generated/torch-1.2.0__custom_model_compat.script.pt"}
NAMES = [a.name for a in ARCHIVES if EXPECTED_GRAMMAR[a.name]] + [
    n for n in (a.relative_to(LEGACY).as_posix() for a in GENERATED) if n not in TOO_LARGE]
CASES = [(name, index) for name in NAMES for index in range(len(parsed(name)))]


def _golden_path(cf: CodeFile, archive: str) -> Path:
    return GOLDEN / cf.grammar / "legacy" / archive / (_stem(cf.path.split("!", 1)[1]) + ".json")


@pytest.mark.parametrize("archive, index", CASES, ids=[f"{a}#{i}" for a, i in CASES])
def test_golden_legacy(archive, index, request):
    cf = parsed(archive)[index]
    golden = _golden_path(cf, archive)
    actual = json.dumps(cf.model_dump(mode="json"), indent=1, sort_keys=True) + "\n"
    if request.config.getoption("--update-goldens"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual, encoding="utf-8")
        return
    assert golden.exists(), f"no golden file {golden}; run: pytest tests/test_golden_legacy.py --update-goldens"
    expected = golden.read_text(encoding="utf-8")
    if actual != expected:
        pytest.fail(
            f"{cf.path} no longer parses as {golden.relative_to(ROOT)} records.\n"
            "If the change is intended, run: pytest tests/test_golden_legacy.py --update-goldens "
            "and review the diff.",
            pytrace=False,
        )
    CodeFile.model_validate_json(expected)


def test_no_stale_legacy_goldens():
    expected = {_golden_path(parsed(a)[i], a) for a, i in CASES}
    present = set(GOLDEN.glob("*/legacy/*/*.json")) | set(GOLDEN.glob("*/legacy/generated/*/*.json"))
    assert present <= expected, sorted(str(p) for p in present - expected)
    # every grammar has legacy goldens
    assert {p.relative_to(GOLDEN).parts[0] for p in present} == {
        "torchscript-v1.0", "torchscript-v1.3", "torchscript-v2"}
