"""`codeparse ops` and `codeparse which`: operators offline (bundled table) and live (torch)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from codeparse.cli.app import main
from codeparse.trace.sides import load_side
from codeparse.infer.operators import inventory, load_table, lookup, resolve

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
TABLE = ROOT / "grammars" / "operators.json.gz"
ADD_TENSOR = "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"


def all_fixture_files():
    files = []
    for d in sorted((FIXTURES / "archive_code").iterdir()):
        files.extend(u.code_file for u in load_side(str(d)).units)
    for d in sorted((FIXTURES / "text").iterdir()):
        for f in sorted(d.glob("*.code")):
            files.extend(u.code_file for u in load_side(str(f)).units)
    return files


@pytest.fixture(scope="module")
def fixture_files():
    return all_fixture_files()


@pytest.mark.parametrize("name, operator, overload", [
    ("torch.conv2d", "aten::conv2d", None),
    ("ops.prim.RaiseException", "prim::RaiseException", None),
    ("torch._C._nn.linear", "aten::linear", None),
    ("torch.add", "aten::add", None),
    ("torch.Tensor.add", "aten::add", None),
    ("torch.ops.aten.add.Tensor", "aten::add", "Tensor"),
    ("aten::add.Scalar", "aten::add", "Scalar"),
    ("bool", "aten::Bool", None),
    ("torch.linalg.norm", "aten::linalg_norm", None),
    ("something", None, None),
])
def test_names_resolve_to_operators(name, operator, overload):
    assert resolve(name) == (operator, overload)


def test_table_is_small_and_complete():
    size = TABLE.stat().st_size
    assert 20_000 < size < 100_000, size
    data = load_table()
    assert data["torch_version"].startswith("2.13.0")
    assert len(data["operators"]) == 2276
    assert sum(len(v[0]) for v in data["operators"].values()) == 4374
    with gzip.open(TABLE) as f:
        assert json.loads(f.read())["format"] == 1


def test_table_entries_read_one_by_one_equal_the_whole_table():
    """`load_table()["operators"]` decodes an entry (with its bucket) when first asked for:
    every entry equals the whole file's, a name that is no key is absent, and iterating
    gives the whole table in its order."""
    whole = json.loads(gzip.decompress(TABLE.read_bytes()))
    ops = load_table()["operators"]
    assert type(ops) is not dict and {k: v for k, v in load_table().items() if k != "operators"} == {
        k: v for k, v in whole.items() if k != "operators"}
    for name, entry in whole["operators"].items():
        assert ops[name] == entry and ops.get(name) == entry and name in ops
    for name in ("aten::nothing", "aten", "", "::", "t", "format", "operators", "Tensor self", 3):
        assert ops.get(name) is None and name not in ops
    assert dict(ops.items()) == whole["operators"] and len(ops) == len(whole["operators"]) and list(ops) == list(
        whole["operators"])


def test_the_table_index_serves_each_operator_from_its_bucket(monkeypatch, tmp_path):
    """With its index (`grammars/compiled/operators.json`, made from this very table file),
    an entry is decoded from its bucket alone, equal to the whole table's; with an index made
    from another table file, a damaged one or none, the table is decoded whole."""
    import shutil

    from codeparse.grammar import locations
    from codeparse.infer import operators

    whole = json.loads(gzip.decompress(TABLE.read_bytes()))
    ops = load_table()["operators"]
    assert ops._buckets is not None  # the shipped index serves the shipped table
    for name, entry in whole["operators"].items():
        assert ops.get(name) == entry
    assert list(ops) == list(whole["operators"]) and ops.get("aten::nothing") is None
    (tmp_path / "compiled").mkdir()
    shutil.copy(TABLE, tmp_path / operators.TABLE_FILE)
    index = json.loads((TABLE.parent / operators.TABLE_INDEX).read_text(encoding="utf-8"))
    other = dict(index, table="0" + index["table"][1:])
    for written, served in ((index, True), (other, False), ("{", False), (None, False)):
        path = tmp_path / operators.TABLE_INDEX
        path.unlink(missing_ok=True)
        if written is not None:
            path.write_text(written if isinstance(written, str) else json.dumps(written), encoding="utf-8")
        monkeypatch.setattr(locations, "grammar_dir", lambda: tmp_path)
        operators.load_table.cache_clear()
        try:
            read = operators.load_table()
            assert (type(read["operators"]) is not dict) == served
            assert {k: v for k, v in read.items() if k != "operators"} == {
                k: v for k, v in whole.items() if k != "operators"}
            assert all(read["operators"].get(name) == entry for name, entry in whole["operators"].items())
        finally:
            operators.load_table.cache_clear()


def test_which_offline_prints_schemas_and_binding(capsys):
    assert main(["which", "torch.add", "--source", "table"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "torch.add → aten::add"
    assert out[1].startswith("  TorchScript: supported (schemas from the bundled table, torch 2.13.0")
    assert out[2] == "  Python: torch.add, torch._C._VariableFunctions.add, torch.Tensor.add, torch.ops.aten.add"
    assert out[3] == "  overloads (16):"
    assert out[4] == "    " + ADD_TENSOR


def test_which_one_overload_and_nn_binding(capsys):
    assert main(["which", "aten::add.Tensor", "--source", "table", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["operator"] == "aten::add" and data["info"]["schemas"] == [ADD_TENSOR]
    _, info = lookup("torch._C._nn.linear", "table")
    assert info.schemas[0] == "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor"
    assert info.bindings == ["torch._C._nn.linear", "torch.nn.functional.linear", "torch.ops.aten.linear"]


def test_which_unknown(capsys):
    assert main(["which", "not_an_op", "--source", "table"]) == 2
    assert capsys.readouterr().err.strip() == "codeparse which: 'not_an_op' does not name an operator"
    assert main(["which", "torch.no_such_op", "--source", "table"]) == 1
    assert "not a registered operator" in capsys.readouterr().out


def test_ops_inventory_offline_names_every_fixture_operator(fixture_files):
    uses, diags = inventory(fixture_files, "table")
    assert len(uses) > 150
    unknown = [u.operator for u in uses if not u.known]
    assert unknown == ["codeparse_fixture::twice"]  # the fixture's own custom op (torch.library)
    assert all(u.schemas for u in uses if u.known)
    assert [(d.code, d.args["operator"]) for d in diags] == [("CP220", "codeparse_fixture::twice")]
    conv = next(u for u in uses if u.operator == "aten::conv2d")
    printed = sum(Path(f.path).read_text(encoding="utf-8").count("torch.conv2d(") for f in fixture_files)
    assert conv.callees == ["torch.conv2d"] and conv.count == printed > 0
    linear = next(u for u in uses if u.operator == "aten::linear")
    assert set(linear.callees) >= {"torch.linear"}
    raise_ = next(u for u in uses if u.operator == "prim::RaiseException")
    assert raise_.callees == ["ops.prim.RaiseException"]


def test_ops_cli_counts_and_places(capsys):
    gate = str(FIXTURES / "text" / "tutorial_decision_gate" / "script.code")
    assert main(["ops", gate, "--source", "table", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(u["operator"], u["count"], u["callees"]) for u in data] == [
        ("aten::Bool", 1, ["bool"]), ("aten::gt", 1, ["torch.gt"]), ("aten::neg", 1, ["torch.neg"]),
        ("aten::sum", 1, ["torch.sum"])]
    assert data[2]["locations"] == [f"{gate}:6:10"]
    assert "aten::neg(Tensor self) -> Tensor" in data[2]["schemas"]


def test_ops_cli_unknown_operator_is_a_finding(capsys):
    archive = str(FIXTURES / "archives" / "ops_calls.script.pt")
    assert main(["ops", archive, "--source", "table"]) == 1
    captured = capsys.readouterr()
    assert "codeparse_fixture::twice" in captured.out
    assert "CP220 operator codeparse_fixture::twice (called as ops.codeparse_fixture.twice, 1 times)" in captured.err


def test_offline_ops_and_which_never_import_torch():
    code = (
        "import sys; from codeparse.cli.app import main; "
        f"main(['ops', {str(FIXTURES / 'text' / 'custom_model' / 'script.code')!r}, '--source', 'table']); "
        "main(['which', 'torch.add', '--source', 'table']); "
        "assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


@pytest.mark.torch
def test_live_schemas_agree_with_the_table(fixture_files):
    uses_table, _ = inventory(fixture_files, "table")
    uses_live, _ = inventory(fixture_files, "live")
    assert [u.model_dump() for u in uses_live] == [u.model_dump() for u in uses_table]
    for name in ("torch.add", "torch._C._nn.linear", "aten::add", "ops.prim.RaiseException", "torch.conv2d"):
        _, live = lookup(name, "live")
        _, table = lookup(name, "table")
        assert live.source == "live" and table.source == "table"
        assert (live.schemas, live.bindings, live.scriptable) == (table.schemas, table.bindings, table.scriptable)


@pytest.mark.torch
def test_which_live(capsys):
    assert main(["which", "torch.add", "--source", "live"]) == 0
    out = capsys.readouterr().out
    assert "schemas from the installed torch" in out and ADD_TENSOR in out


@pytest.mark.torch
def test_table_is_up_to_date_with_installed_torch():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_operator_table.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("up to date: 2276 operators, 4374 schemas")
