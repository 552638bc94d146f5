"""The archive reader on real archives: layouts, version records, cross-file resolution,
module tree, call graph, reachability and source mapping (no torch needed, except the
last test, which compares the module tree with ``torch.jit.load``)."""

from __future__ import annotations

import pickle
import sys
import zipfile
from pathlib import Path

import pytest

import codeparse
from codeparse.archive.torchscript import archive_code_files
from codeparse.archive.debuginfo import ForbiddenGlobal, line_origins, read_debug_pkl

ROOT = Path(__file__).resolve().parent.parent
ARCHIVES = ROOT / "fixtures" / "archives"
LEGACY = ROOT / "fixtures" / "legacy"  # real archives saved by older PyTorch versions (its README)
DATA = Path(__file__).resolve().parent / "data"
CUSTOM_SCRIPT = ARCHIVES / "custom_model.script.pt"
CUSTOM_TRACE = ARCHIVES / "custom_model.trace.pt"
MODELS_PY = ROOT / "fixtures" / "models.py"


def _need(path: Path) -> Path:
    assert path.exists(), f"fixture {path} is missing: fixtures are committed (regenerate: python fixtures/generate.py)"
    return path


@pytest.fixture(scope="module")
def custom():
    return codeparse.open_archive(_need(CUSTOM_SCRIPT))


def test_files_are_the_code_entries_in_stored_order(custom):
    with zipfile.ZipFile(CUSTOM_SCRIPT) as zf:
        stored = [n for n in zf.namelist() if n.endswith(".py")]
    assert [f.path for f in custom.files] == [f"{CUSTOM_SCRIPT}!{n}" for n in stored]
    assert custom.layout == "zip" and custom.root == "custom_model.script" and custom.version == 3
    assert custom.root_class == "__torch__.CustomModel"
    assert codeparse.Archive.model_validate_json(custom.model_dump_json()) == custom


def test_module_tree_follows_declarations_across_files(custom):
    tree = custom.module_tree
    assert tree.path == "self" and tree.type == "__torch__.CustomModel"
    children = {c.path: c for c in tree.children}
    assert list(children) == [
        "self.custom_layer", "self.custom_layer1", "self.custom_layer2", "self.layer1", "self.layer2",
        "self.flatten", "self.fc1", "self.condition_func1", "self.condition_func2",
    ]
    layer2 = children["self.layer2"]
    assert layer2.type == "__torch__.torch.nn.modules.container.___torch_mangle_2.Sequential"
    assert [(c.path, c.type.rsplit(".", 1)[1]) for c in layer2.children] == [
        ("self.layer2.0", "Conv2d"), ("self.layer2.1", "BatchNorm2d"), ("self.layer2.2", "ReLU")]


def test_submodule_calls_resolve_to_the_method_they_run(custom):
    forward = custom.call_graph["__torch__.CustomModel.forward"]
    # `(layer1).forward(x1, )`: layer1 is a ...container.Sequential, so its forward runs.
    assert "__torch__.torch.nn.modules.container.Sequential.forward" in forward
    assert "__torch__.torch.nn.modules.container.___torch_mangle_2.Sequential.forward" in forward
    seq = custom.call_graph["__torch__.torch.nn.modules.container.___torch_mangle_2.Sequential.forward"]
    assert seq == [
        "__torch__.torch.nn.modules.conv.___torch_mangle_1.Conv2d.forward",
        "__torch__.torch.nn.modules.batchnorm.BatchNorm2d.forward",
        "__torch__.torch.nn.modules.activation.ReLU.forward",
    ]
    # Free functions are reached through methods: BatchNorm2d.forward -> F.batch_norm.
    assert "__torch__.torch.nn.functional.batch_norm" in custom.reachable
    # `__len__` of Sequential is compiled but never called from forward.
    assert "__torch__.torch.nn.modules.container.Sequential.__len__" not in custom.reachable
    assert set(custom.reachable) <= set(custom.functions)


def test_every_if_knows_whether_forward_reaches_it(custom):
    top = [b for b in custom.branches if b.function == "__torch__.CustomModel.forward"]
    assert [(b.span.line, b.kind, b.reachable) for b in top] == [
        (22, "tensor_value", True), (28, "attribute", True), (43, "attribute", True)]
    reachable = set(custom.reachable)
    assert all(b.reachable == (b.function in reachable) for b in custom.branches)


def test_tensor_value_branch_has_code_and_original_lines(custom):
    [finding] = [f for f in custom.findings if f.code == "CP201"]
    assert finding.path == f"{CUSTOM_SCRIPT}!custom_model.script/code/__torch__.py"
    assert (finding.span.line, finding.span.column) == (22, 5)
    assert finding.origin.path == "fixtures/models.py"
    original = MODELS_PY.read_text().splitlines()[finding.origin.line - 1]
    assert original.strip() == "if x[0][0][0][0] % 2 == 0:"
    assert finding.severity == "warning"
    assert "x (Tensor)" in finding.message


def test_source_map_maps_ifs_and_calls_to_their_lines(custom):
    lines = MODELS_PY.read_text().splitlines()
    code = custom.source_map[f"{CUSTOM_SCRIPT}!custom_model.script/code/__torch__.py"]
    with zipfile.ZipFile(CUSTOM_SCRIPT) as zf:
        text = zf.read("custom_model.script/code/__torch__.py").decode().splitlines()
    pairs = {text[n - 1].strip(): lines[o.line - 1].strip() for n, o in code.items()}
    assert pairs["if torch.eq(branch_testing, True):"].startswith("if self.branch_testing == True:")
    assert pairs["x1 = (custom_layer2).forward(x0, )"] == "x = self.custom_layer2(x)"
    assert pairs["if torch.eq(condition_testing, True):"].startswith("if self.condition_testing == True:")


def test_traced_archive_reports_no_ifs():
    archive = codeparse.open_archive(_need(CUSTOM_TRACE))
    assert archive.branches == []
    assert [f for f in archive.findings if f.code.startswith("CP2")] == []
    assert archive.root_class == "__torch__.CustomModel"
    assert "__torch__.torch.nn.modules.container.Sequential.forward" in archive.reachable


def test_torch_package_layout():
    archive = codeparse.open_archive(DATA / "package_linear.pt")
    assert archive.layout == "torch.package"
    assert archive.version == 6  # `.data/version`
    assert [f.path.split("!")[1] for f in archive.files] == [
        "pkg_test/.data/ts_code/code/__torch__.py",
        "pkg_test/.data/ts_code/code/__torch__/torch/nn/modules/linear.py",
    ]
    assert archive.root_class == "__torch__.M"
    assert [c.path for c in archive.module_tree.children] == ["self.l"]
    assert [f.code for f in archive.findings] == ["CP201"]  # `if x.sum() > 0:`


def test_renamed_archive_and_any_top_folder(tmp_path):
    renamed = tmp_path / "weights.bin"
    with zipfile.ZipFile(CUSTOM_SCRIPT) as src, zipfile.ZipFile(renamed, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename.replace("custom_model.script/", "anything-at-all/", 1), src.read(info))
    archive = codeparse.open_archive(renamed)
    assert archive.root == "anything-at-all"
    assert len(archive.files) == 11
    assert [f.code for f in archive.findings if f.code == "CP201"] == ["CP201"]


def test_cross_file_roles_reach_through_submodules():
    """`self.layer1.conv` gets its role and type from the declarations of layer1's class,
    which a file parsed alone cannot know."""
    path = _need(ARCHIVES / "self_locals_chain.script.pt")
    archive = codeparse.open_archive(path)
    refs = {r.path: (r.role, r.declared_type) for f in archive.functions.values() for r in f.self_refs}
    assert refs["self.layer1.conv"] == ("submodule", "__torch__.torch.nn.modules.conv.Conv2d")
    assert refs["self.layer1.act.0"] == ("submodule", "__torch__.torch.nn.modules.activation.ReLU")
    with zipfile.ZipFile(path) as zf:
        alone = codeparse.parse_bytes(zf.read("self_locals_chain.script/code/__torch__.py"), "x")
    alone_refs = {r.path: (r.role, r.declared_type) for c in alone.classes for m in c.methods for r in m.self_refs}
    assert alone_refs["self.layer1.conv"][1] is None
    # ... and the call through it runs Conv2d.forward.
    assert "__torch__.torch.nn.modules.conv.Conv2d.forward" in archive.reachable


@pytest.mark.parametrize("name", sorted(p.name for p in LEGACY.glob("*") if p.is_file() and p.suffix != ".md"))
def test_legacy_archives_are_read(name):
    path = LEGACY / name
    if name.startswith("torch-js__torch-js__test_model-7f2acda"):
        with pytest.raises(codeparse.InputError) as info:
            codeparse.open_archive(path)
        assert info.value.code == "CP306"
        return
    archive = codeparse.open_archive(path)
    assert archive.files, "every legacy zip has code"
    assert archive.version in (1, 3, 4, 10)
    assert archive.root_class is not None
    assert not [f for f in archive.findings if f.code in ("CP316", "CP317", "CP318", "CP313", "CP314", "CP315")]


def test_parse_command_accepts_archives(capsys):
    from codeparse.cli.app import main

    code = main(["parse", str(CUSTOM_SCRIPT), "--format", "jsonl"])
    out, err = capsys.readouterr()
    assert code == 0, err
    files = [codeparse.CodeFile.model_validate_json(line) for line in out.splitlines()]
    assert [f.path for f in files] == [cf.path for cf, _ in archive_code_files(CUSTOM_SCRIPT)]
    assert files[0].classes[0].qualified_name == "__torch__.CustomModel"


# ------------------------------------------------------------------- debug info layouts


def _layout_pickles():
    """The same two rows in each layout of source_range_serialization.cpp."""
    text = "def f(x):\n    if x:\n        return x\n"
    src = (text, "m.py", 10)
    rows2 = ((0, (src, 0, 9)), (14, (src, 14, 19)))
    rows3_old = ((0, 0, (src, 0, 9)), (14, 1, (src, 14, 19)))  # (offset, tag, range)
    rows3_new = ((0, (src, 0, 9), 0), (14, (src, 14, 19), 1))  # (offset, range, tag)
    table = ["", "def f(x):\n", "    if x:\n", "        return x\n", "m.py"]
    tsrc = ([1, 2, 3], 4, 10)
    rows_table = ("FORMAT_WITH_STRING_TABLE", table, ((0, (tsrc, 0, 9), 0), (14, (tsrc, 14, 19), 1)))
    return {"pairs": rows2, "tag_then_range": rows3_old, "range_then_tag": rows3_new, "string_table": rows_table}


@pytest.mark.parametrize("layout", ["pairs", "tag_then_range", "range_then_tag", "string_table"])
def test_debug_pkl_layouts(layout):
    data = pickle.dumps(_layout_pickles()[layout], protocol=2)
    line_map = read_debug_pkl(data)
    code = "def f(x: Tensor) -> Tensor:\n  if bool(x):\n"
    # Code bytes 0.. come from m.py line 10, bytes 14.. (the `if`) from line 11.
    assert line_map.at(0) == ("m.py", 10)
    assert line_map.at(30) == ("m.py", 11)
    assert line_origins(code, line_map) == {1: ("m.py", 10), 2: ("m.py", 11)}


def test_debug_pkl_forbidden_global_never_runs(tmp_path):
    marker = tmp_path / "ran"
    payload = (b"\x80\x02cbuiltins\nexec\nX" + len(f"open({str(marker)!r}, 'w')".encode()).to_bytes(4, "little")
               + f"open({str(marker)!r}, 'w')".encode() + b"\x85R.")
    with pytest.raises(ForbiddenGlobal) as info:
        read_debug_pkl(payload)
    assert info.value.name == "builtins.exec"
    assert not marker.exists()


def test_every_fixture_debug_pkl_is_read():
    count = 0
    for path in sorted(ARCHIVES.glob("*.pt")):
        with zipfile.ZipFile(path) as zf:
            for name in zf.namelist():
                if name.endswith(".debug_pkl"):
                    assert len(read_debug_pkl(zf.read(name))) > 0, name
                    count += 1
    assert count > 300


@pytest.mark.torch
def test_module_tree_matches_torch_jit_load():
    """The tree read without torch equals ``named_modules()`` of the loaded archive."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import ir_oracle

    for stem in ("custom_model.script", "custom_model.trace", "nn_transformer.script", "self_locals_chain.trace",
                 "sequential_getattr.script", "nn_moduledict.script"):
        path = ARCHIVES / f"{stem}.pt"
        if not path.exists():
            continue
        module, _ = ir_oracle.load_archive(path)
        expected = {("self." + name if name else "self"): sub._c._type().qualified_name()
                    for name, sub in module.named_modules()}
        archive = codeparse.open_archive(path)
        got = {}
        # The tree lists a class's submodules once; a later node of the same class names that
        # place (`same_as`), and the paths below it are the same ones with its own prefix.
        listed = {}
        stack = [archive.module_tree]
        while stack:
            node = stack.pop()
            listed[node.path] = node
            stack.extend(node.children)
        stack = [(archive.module_tree, "self")]
        while stack:
            node, shown = stack.pop()
            got[shown] = node.type
            source = listed[node.same_as] if node.same_as else node
            assert not (node.same_as and node.children)
            stack.extend((child, shown + child.path[len(source.path):]) for child in source.children)
        assert got == expected, stem


def test_torch_package_with_one_code_folder_per_id(tmp_path):
    """Some torch.package versions keep code under `.data/ts_code/<id>/code/`."""
    moved = tmp_path / "pkg.pt"
    with zipfile.ZipFile(DATA / "package_linear.pt") as src, zipfile.ZipFile(moved, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename.replace(".data/ts_code/code/", ".data/ts_code/0/code/"), src.read(info))
    archive = codeparse.open_archive(moved)
    assert archive.layout == "torch.package"
    assert [f.path.split("!")[1] for f in archive.files][0] == "pkg_test/.data/ts_code/0/code/__torch__.py"
    assert archive.root_class == "__torch__.M" and [f.code for f in archive.findings] == ["CP201"]


def test_debug_pkl_bombs_are_refused_without_building_them():
    """A string table reused a million times, or more ranges than code bytes, is refused."""
    from codeparse.archive.debuginfo import DebugInfoError

    table_bomb = ("FORMAT_WITH_STRING_TABLE", ["x" * 1000, "f.py"], ((0, (([0] * 100_000, 1, 1), 0, 1), 0),))
    with pytest.raises(DebugInfoError, match="too long"):
        read_debug_pkl(pickle.dumps(table_bomb, protocol=2))
    src = ("def f(x):\n", "f.py", 1)
    rows = tuple((i, (src, 0, 9)) for i in range(1000))
    with pytest.raises(DebugInfoError, match="1000 ranges for 10 bytes"):
        read_debug_pkl(pickle.dumps(rows, protocol=2), max_rows=11)
