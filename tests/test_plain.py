"""The plain-data path.  ``parse_file(..., as_dict=True)`` is built without
pydantic and equals ``CodeFile.model_dump(mode="json")``; the CLI writes JSON from it,
byte-identical to the model's JSON, for every fixture; ``import codeparse`` loads no
pydantic until a model is touched."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

import codeparse
from codeparse.output import render
from codeparse.cli.app import run_parse

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CODE = sorted((FIXTURES / "text").glob("*/*.code")) + sorted((FIXTURES / "archive_code").rglob("*.py")) \
    + sorted((FIXTURES / "legacy").rglob("*.py"))


@pytest.fixture(scope="module")
def models() -> dict[str, "codeparse.CodeFile"]:
    """Every fixture parsed once with models (frozen), for the tests that compare against them."""
    return {str(path): codeparse.parse_file(path) for path in CODE}


def test_fixture_corpus_is_there():
    assert len(CODE) > 500


def test_dict_equals_model_dump_and_renders_the_same_bytes(models):
    for path in CODE:
        data = codeparse.parse_file(path, as_dict=True)
        model = models[str(path)]
        assert data == model.model_dump(mode="json"), path
        # Built without validating again: equal to what validation builds, calls shared.
        assert model == codeparse.CodeFile.model_validate(data), path
        for fn in model.functions + [m for c in model.classes for m in c.methods]:
            ids = {id(c) for c in fn.calls}
            assert all(id(c) in ids for if_ in fn.ifs for c in if_.then_calls + if_.else_calls), path
        assert render.render_jsonl_line(data) == render.render_jsonl_line(model), path
        assert render.render_jsonl_line(data) == model.model_dump_json(), path


def test_cli_json_is_the_model_json_byte_for_byte(models):
    paths = [str(p) for p in CODE]
    for fmt in ("json", "jsonl"):
        out = io.StringIO()
        run_parse(paths, fmt, None, out, io.StringIO())
        expected = io.StringIO()
        writer = render.JsonArrayWriter(expected) if fmt == "json" else None
        for path in paths:
            model = models[path]
            if writer is not None:
                writer.write(model)
            else:
                expected.write(render.render_jsonl_line(model) + "\n")
        if writer is not None:
            writer.close()
        assert out.getvalue() == expected.getvalue(), fmt


def test_hostile_text_serialises_identically():
    text = ('def f(x: Tensor) -> Tensor:\n  y = "\\x01\u00e9\u2028\x7f\\""\n  if bool(x):\n'
            '    z = "\U0001f642"\n  else:\n    z = 2\n  return x\n  x = = \x1b[31m\t\n')
    data = codeparse.parse_text(text, "h.code", as_dict=True)
    model = codeparse.parse_text(text, "h.code")
    assert data["diagnostics"] and data == model.model_dump(mode="json")
    assert render.render_jsonl_line(data) == model.model_dump_json()
    out = io.StringIO()
    writer = render.JsonArrayWriter(out)
    writer.write(data)
    writer.close()
    expected = io.StringIO()
    writer = render.JsonArrayWriter(expected)
    writer.write(model)
    writer.close()
    assert out.getvalue() == expected.getvalue()


def test_import_codeparse_loads_pydantic_only_when_a_model_is_touched():
    code = (
        "import sys, codeparse\n"
        "assert 'pydantic' not in sys.modules\n"
        "d = codeparse.parse_file(sys.argv[1], as_dict=True)\n"
        "assert 'pydantic' not in sys.modules and d['functions'][0]['ifs']\n"
        "import codeparse.gate.run\n"
        "assert callable(codeparse.check) and not isinstance(codeparse.check, type(sys))\n"
        "assert codeparse.CodeFile.model_validate(d).model_dump(mode='json') == d\n"
        "assert 'pydantic' in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(FIXTURES / "text" / "custom_model" / "script.code")],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
