"""The models of an archive's program (:func:`codeparse.text.program.parse_program` without
``as_dict``) are built from the files' own data without copying it
(:func:`codeparse.contract.build.code_file_taking_plain`) only when no one else holds that
data: the call's own content cache met no entry twice and no registry keeps the
functions.  A hit shares a stored file's nested data with the file it was stored from,
and a caller's cache keeps it: those are built by copying.  Either way the models are the
ones the copying builder makes of the plain data."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from codeparse.contract import build
from codeparse.text.cache import EntryCache
from codeparse.text.program import parse_program

ARCHIVES = Path(__file__).resolve().parent.parent / "fixtures" / "archives"
NAMES = ("custom_model.script.pt", "deep_encoder.script.pt", "cond_attribute.script.pt", "annotate.trace.pt")


def entries(name: str) -> list[tuple[str, bytes]]:
    path = ARCHIVES / name
    with zipfile.ZipFile(path) as zf:
        return [(f"{path}!{n}", zf.read(n)) for n in zf.namelist() if n.endswith(".py") and "/code/" in n]


def copied(code: list[tuple[str, bytes]]) -> list:
    files, _ = parse_program(code, as_dict=True)
    return [build.code_file_from_plain(cf) for cf in files]


@pytest.fixture
def taken(monkeypatch):
    """The files the taking builder was given, by path."""
    paths: list[str] = []
    real = build.code_file_taking_plain

    def counting(data: dict):
        paths.append(data["path"])
        return real(data)

    monkeypatch.setattr(build, "code_file_taking_plain", counting)
    return paths


@pytest.mark.parametrize("name", NAMES)
def test_an_archive_read_alone_is_built_by_taking_its_data(name, taken):
    code = entries(name)
    models, found = parse_program(code)
    assert found == []
    assert taken == [path for path, _ in code]
    expected = copied(code)
    assert models == expected
    assert [m.model_dump_json() for m in models] == [m.model_dump_json() for m in expected]


def test_an_entry_met_twice_is_built_by_copying(taken):
    code = entries("custom_model.script.pt")
    # The same bytes under another root folder: the same module, so its parse is the
    # stored one (a hit), whose nested data the first file's model would otherwise take.
    twice = code + [(path.replace("!", "!again/", 1).replace("/custom_model/code/", "/code/"), data)
                    for path, data in code]
    assert len({path for path, _ in twice}) == len(twice)
    models, _ = parse_program(twice)
    assert taken == []
    expected = copied(twice)
    assert models == expected
    half = len(code)
    assert [m.model_dump(exclude={"path", "diagnostics"}) for m in models[:half]] == \
        [m.model_dump(exclude={"path", "diagnostics"}) for m in models[half:]]


def test_a_callers_cache_is_left_holding_plain_data(taken):
    code = entries("custom_model.script.pt")
    cache = EntryCache()
    models, _ = parse_program(code, cache=cache)
    assert taken == []
    again, _ = parse_program(code, cache=cache)  # every file from the cache: still plain data
    assert cache.hits == len(code)
    assert again == models == copied(code)
