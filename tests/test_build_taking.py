"""Models built from the parse path's own data without copying it
(:func:`codeparse.contract.build.code_file_taking_plain`), against the copying builder
(:func:`~codeparse.contract.build.code_file_from_plain`) and against validation."""

from __future__ import annotations

import copy
from pathlib import Path

import codeparse
from codeparse.contract.build import code_file_from_plain, code_file_taking_plain

ROOT = Path(__file__).resolve().parent.parent
CODE = sorted((ROOT / "fixtures" / "text").glob("*/*.code")) + sorted((ROOT / "fixtures" / "archive_code").rglob("*.py"))


def _calls_shared(model) -> bool:
    for fn in model.functions + [m for c in model.classes for m in c.methods]:
        ids = {id(c) for c in fn.calls}
        if not all(id(c) in ids for if_ in fn.ifs for c in if_.then_calls + if_.else_calls):
            return False
    return True


def test_taking_builds_what_copying_and_validation_build_on_every_fixture():
    for path in CODE:
        data = codeparse.parse_file(path, as_dict=True)
        expected = copy.deepcopy(data)
        copied = code_file_from_plain(data)
        assert data == expected, path  # the copying builder leaves its data alone
        taken = code_file_taking_plain(data)
        assert taken == copied == codeparse.CodeFile.model_validate(expected), path
        assert repr(taken) == repr(copied), path
        assert taken.model_dump_json() == copied.model_dump_json(), path
        assert taken.model_dump(mode="json") == expected, path
        assert _calls_shared(taken), path


def test_parse_file_models_are_built_by_taking_and_leave_later_parses_alone():
    # The parse path hands its own data to the taking builder: the models equal the copied
    # ones, and nothing a model now holds leaks into a later parse's plain data.
    for path in CODE[::7]:
        model = codeparse.parse_file(path)
        data = codeparse.parse_file(path, as_dict=True)
        assert model == code_file_from_plain(data), path
        assert model.model_dump(mode="json") == data, path
        assert _calls_shared(model), path


def test_missing_defaults_are_added_in_field_order_as_the_copying_builder_adds_them():
    path = ROOT / "fixtures" / "text" / "custom_model" / "script.code"
    data = codeparse.parse_file(path, as_dict=True)
    functions = data["functions"] + [m for c in data["classes"] for m in c["methods"]]
    assert any(fn["calls"] for fn in functions)
    for fn in functions:
        del fn["signature"]["returns"]  # default None
        for call in fn["calls"]:
            del call["method"], call["target"]  # defaults None
    copied = code_file_from_plain(data)
    taken = code_file_taking_plain(copy.deepcopy(data))
    assert taken == copied and repr(taken) == repr(copied)
    assert taken.model_dump_json() == copied.model_dump_json()
    pairs = [(t, c) for ft, fc in zip(taken.functions + [m for k in taken.classes for m in k.methods],
                                       copied.functions + [m for k in copied.classes for m in k.methods])
             for t, c in zip(ft.calls, fc.calls)]
    assert pairs and all(list(t.__dict__) == list(c.__dict__) for t, c in pairs)
    assert list(pairs[0][0].__dict__)[-2:] == ["method", "target"]  # added after the others
