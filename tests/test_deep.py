"""Deep chains of definitions, tests and calls (``fixtures/models_deep.py``, made by torch).

A condition is read depth-first; where that nests past the depth limit the reading is
resumed from where it stopped, so every chain is answered.  Only a cycle of definitions
longer than the raised limit is left ``unknown``, and reported (CP113), never an internal
error.  The IR oracle (``tests/test_oracle.py``) checks the answers of these archives
against TorchScript's graph; this file pins the commands' exit codes and the answers.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from pathlib import Path

import pytest

import codeparse
from codeparse.cli import main
from codeparse.infer.memo import DEEPEST_CYCLE

ROOT = Path(__file__).resolve().parent.parent
ARCHIVES = ROOT / "fixtures" / "archives"
TEXT = ROOT / "fixtures" / "text"


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def _kinds(files: list[dict], qualified: str) -> Counter:
    """(kind, first three refs) of every if of one method, counted."""
    for cf in files:
        for cls in cf["classes"]:
            for m in cls["methods"]:
                if m["qualified_name"] == qualified:
                    return Counter((i["condition"]["kind"], tuple(s["ref"] for s in i["condition"]["sources"])[:3])
                                   for i in m["ifs"])
    raise AssertionError(f"{qualified} not found")


def test_encoder_with_unrolled_layer_drop_and_early_return_is_read():
    code, out, err = _run("parse", "--format", "json", str(ARCHIVES / "deep_encoder.script.pt"))
    assert (code, err) == (0, "")
    files = json.loads(out)
    assert all(not cf["diagnostics"] for cf in files)
    drop = _kinds(files, "__torch__.Transformer.forward")
    assert drop == Counter({
        ("attribute", ("self.training",)): 12,
        ("attribute", ("self.layer_drop", "self.training")): 12,
        ("tensor_value", ("torch.rand([1])", "self.layer_drop", "self.training")): 12,
    })
    early = _kinds(files, "__torch__.Transformer.intermediate")
    assert early == Counter({
        ("argument", ("num_layers",)): 13,
        ("argument", ("num_layers", "self.layers")): 1,
        # The layers are followed into every file of the archive (parse reads it as one
        # program, as check does): the values appended depend on their shape checks; the
        # first test counts one append only (the later ones run after it).
        ("tensor_shape", ("mask", "self", "self.layers.0")): 10,
        ("tensor_shape", ("self", "self.layers.0.norm", "self.layers.0.norm.bias")): 1,
    })


def test_encoder_check_has_no_internal_error():
    code, out, err = _run("check", "--format", "json", str(ARCHIVES / "deep_encoder.script.pt"))
    report = json.loads(out)
    codes = {f["code"] for i in report["inputs"] for f in i["findings"]}
    assert "CP301" not in codes and "CP113" not in codes
    assert report["inputs"][0]["readable"] is True


def test_loop_through_300_layers_is_answered():
    code, out, err = _run("parse", "--format", "json", str(ARCHIVES / "deep_loop_fits.script.pt"))
    assert (code, err) == (0, "")
    (cf,) = [f for f in json.loads(out) if f["path"].endswith("code/__torch__.py")]
    (if_,) = cf["classes"][0]["methods"][0]["ifs"]
    sources = {(s["ref"], s["kind"]) for s in if_["condition"]["sources"]}
    assert if_["condition"]["kind"] == "tensor_shape"
    # Every layer the loop carries x through, x itself and the trip count.
    assert sources == {("x", "tensor_shape"), ("steps", "tensor_shape")} | {
        (f"self.layers.{i}", "tensor_shape") for i in range(300)}


@pytest.mark.parametrize("source", ["archive", "text"])
def test_loop_through_2000_layers_is_a_coded_abstention(source: str):
    path = ARCHIVES / "deep_loop_too_long.script.pt" if source == "archive" else (
        TEXT / "deep_loop_too_long" / "script.code")
    code, out, err = _run("parse", "--format", "json", str(path))
    assert code == 1  # read, one condition not understood
    files = json.loads(out)
    found = [(cf, d) for cf in files for d in cf["diagnostics"]]
    assert [d["code"] for _, d in found] == ["CP113"]
    cf, diag = found[0]
    assert diag["message"] == (f"what this condition depends on passes through a cycle of more than "
                               f"{DEEPEST_CYCLE} steps; its kind is unknown")
    methods = [*cf["functions"], *(m for c in cf["classes"] for m in c["methods"])]
    (if_,) = [i for m in methods for i in m["ifs"]]
    assert if_["span"]["line"] == diag["span"]["line"]
    assert if_["condition"]["kind"] == "unknown"
    assert if_["condition"]["sources"] == [
        {"ref": if_["condition"]["text"], "kind": "unknown", "type": "unknown"}]
    assert "internal error" not in err


def test_resumed_reading_matches_the_shallow_one():
    """The same loop through 300 layers, read as bare text (no layer bodies: each call
    depends on its receiver and argument): the depth-first reading is resumed many times
    over and gives the archive's answer."""
    cf = codeparse.parse_file(str(TEXT / "deep_loop_fits" / "script.code"))
    (if_,) = cf.functions[0].ifs
    assert if_.condition.kind == "tensor_shape"
    refs = {s.ref for s in if_.condition.sources}
    assert refs == {"x", "steps"} | {f"self.layers.{i}" for i in range(300)}
