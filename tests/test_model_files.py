"""Every model file is recognised by its bytes, and every pickle is scanned without unpickling.
Inputs: fixtures/files/ (made by torch 2.13 with fixtures/generate_files.py) and
malicious pickles built opcode by opcode here, whose payload would create a file in a temp
folder.  That a payload *would* run is shown in a subprocess only, never in this process.
"""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import codeparse
from codeparse.gate.run import check
from codeparse.gate.inputs import SKIPPED, expand_inputs
from codeparse.cli.app import main
from codeparse.contract.codes import CODES
from codeparse.files.filekind import recognize
from codeparse.contract.check import Policy
from codeparse.pickles.picklescan import PickleScan, classify, scan_pickle, scan_stream

ROOT = Path(__file__).resolve().parent.parent
FILES = ROOT / "fixtures" / "files"
GENERATOR_SOURCE = (ROOT / "fixtures" / "generate_files.py").read_text(encoding="utf-8")

KINDS = {
    "state_dict.pt": "checkpoint", "pickled_module.pth": "checkpoint", "legacy_checkpoint.pt": "checkpoint",
    "quantized.script.pt": "torchscript", "quantized_state_dict.pt": "checkpoint", "exported.pt2": "pt2",
    "renamed.bin": "torchscript", "large_trace.pt": "torchscript", "plain.pkl": "pickle",
    "lfs_pointer.pt": "lfs_pointer", "notes.pt": "other", "malicious.script.pt": "torchscript",
    "malicious_memo.pkl": "pickle",
}


def codes(report) -> list[str]:
    return [f.code for item in report.inputs for f in item.findings]


def one(path: Path, **policy):
    return check([str(path)], Policy(**policy))


# ------------------------------------------------------------------ recognition


def test_every_fixture_file_is_recognised_by_its_bytes():
    assert {p.name for p in FILES.iterdir() if p.name != "files.json"} == set(KINDS)
    assert {name: recognize(FILES / name).kind for name in KINDS} == KINDS


@pytest.mark.parametrize("name, kind, expected, exit_code", [
    ("state_dict.pt", "checkpoint", ["CP323"], 0),
    ("pickled_module.pth", "checkpoint", ["CP323", "CP336", "CP336", "CP336"], 0),  # torch.nn classes: warnings
    ("legacy_checkpoint.pt", "checkpoint", ["CP323"], 0),
    ("quantized_state_dict.pt", "checkpoint", ["CP323"], 0),
    ("plain.pkl", "pickle", ["CP324"], 0),
    ("exported.pt2", "pt2", ["CP325"], 0),
    ("lfs_pointer.pt", "lfs_pointer", ["CP322"], 0),
])
def test_model_files_named_alone(name, kind, expected, exit_code):
    report = one(FILES / name)
    assert report.inputs[0].kind == kind and report.inputs[0].readable
    assert codes(report) == expected and report.exit_code == exit_code


def test_checkpoint_messages_say_what_they_hold():
    messages = {name: one(FILES / name).inputs[0].findings[0].message for name in
                ("state_dict.pt", "pickled_module.pth", "legacy_checkpoint.pt", "exported.pt2", "lfs_pointer.pt")}
    assert messages["state_dict.pt"].startswith("torch.save checkpoint (state dict or tensors): 1 pickle(s) scanned")
    assert messages["pickled_module.pth"].startswith("torch.save checkpoint (pickled module)")
    assert "legacy format): 5 pickle(s) scanned" in messages["legacy_checkpoint.pt"]
    assert messages["exported.pt2"].startswith("torch.export archive (torch.export.save): 1 pickle(s) scanned")
    assert "not fetched" in messages["lfs_pointer.pt"] and CODES["CP322"].severity == "warning"


def test_pt2_nested_checkpoint_pickle_is_scanned():
    item = check([str(FILES / "exported.pt2")], Policy(), scan_only=True).inputs[0]
    assert [p.entry for p in item.pickles] == ["exported/data/sample_inputs/model.pt!archive/data.pkl"]
    assert "torch._utils._rebuild_tensor_v2" in item.pickles[0].globals


def test_pickled_module_lists_its_globals():
    item = check([str(FILES / "pickled_module.pth")], Policy()).inputs[0]
    assert item.pickles[0].entry == "pickled_module/data.pkl"
    assert item.pickles[0].globals == [
        "torch.nn.modules.container.Sequential", "builtins.set", "collections.OrderedDict",
        "torch.nn.modules.linear.Linear", "torch._utils._rebuild_parameter", "torch._utils._rebuild_tensor_v2",
        "torch.FloatStorage", "torch.nn.modules.activation.ReLU"]
    # Outside torch's weights_only allowlist: the module classes the pickle instantiates (CP336).
    assert item.pickles[0].dangerous == [] and item.pickles[0].unknown == [
        "torch.nn.modules.container.Sequential", "torch.nn.modules.linear.Linear", "torch.nn.modules.activation.ReLU"]


def test_renamed_torchscript_archive_is_checked_as_an_archive():
    item = one(FILES / "renamed.bin").inputs[0]
    assert item.kind == "archive" and item.files == 3 and item.findings == []


def test_quantized_model_torchbind_placeholder_is_not_an_empty_input():
    archive = codeparse.open_archive(FILES / "quantized.script.pt")
    placeholder = [f for f in archive.files if f.path.endswith("code/__torch__/torch/classes/quantized.py")]
    assert len(placeholder) == 1 and placeholder[0].diagnostics == []
    assert "CP109" not in {f.code for f in archive.findings}
    assert one(FILES / "quantized.script.pt").exit_code == 0
    # an empty standalone input still is one
    assert codeparse.parse_text("", path="empty.code").diagnostics[0].code == "CP109"


def test_large_trace_debug_info_is_read_and_its_limit_is_an_option():
    """torch.jit.load reads this trace; its .debug_pkl repeats a 14 kB call stack per row."""
    archive = codeparse.open_archive(FILES / "large_trace.pt")
    assert "CP315" not in {f.code for f in archive.findings}
    entry = f"{FILES / 'large_trace.pt'}!large_trace/code/__torch__.py"
    assert len(archive.source_map[entry]) > 2000
    small = codeparse.open_archive(FILES / "large_trace.pt", Policy(max_debug_chars=10_000))
    [too_long] = [f for f in small.findings if f.code == "CP315"]
    assert "--max-debug-chars" in too_long.message
    # `check` unpickles debug info only for an origin a reported finding asks for:
    # a trace without ifs asks for none, so the limit is never reached there.
    assert codes(one(FILES / "large_trace.pt", max_debug_chars=10_000)) == []


def test_directory_walk_looks_at_content(tmp_path):
    inputs = dict(expand_inputs([str(FILES)]))
    assert {Path(p).name for p in inputs} == set(KINDS)
    assert inputs[str(FILES / "notes.pt")] == "not a model file"
    report = check([str(FILES)], Policy())
    by_name = {Path(i.path).name: i for i in report.inputs}
    assert by_name["notes.pt"].kind == "other" and by_name["notes.pt"].readable
    assert by_name["notes.pt"].findings == []
    assert report.exit_code == 1  # the malicious archive: CP330 is an error; notes.pt is not
    # files without a model suffix that are no model are passed over in silence
    (tmp_path / "README.md").write_text("# models\n")
    (tmp_path / "weights").write_bytes((FILES / "state_dict.pt").read_bytes())
    assert [(Path(p).name, problem) for p, problem in expand_inputs([str(tmp_path)])] == [("weights", None)]


def test_a_named_file_with_a_model_suffix_is_listed_without_reading_it(tmp_path, monkeypatch):
    import codeparse.files.filekind as filekind

    read: list[str] = []
    real = filekind.recognize
    monkeypatch.setattr(filekind, "recognize", lambda path, *a, **k: read.append(Path(path).name) or real(path, *a, **k))
    (tmp_path / "config.yaml").write_text("a: 1\n")
    names = [FILES / "notes.pt", FILES / "state_dict.pt", FILES / "renamed.bin", tmp_path / "config.yaml"]
    notes: list[str] = []
    listed = expand_inputs([str(n) for n in names], notes=notes)
    # Checked whatever their bytes say (notes.pt is CP304 in the check): only the YAML file is read to decide.
    assert [(Path(p).name, problem) for p, problem in listed] == [("notes.pt", None), ("state_dict.pt", None),
                                                                  ("renamed.bin", None)]
    assert read == ["config.yaml"] and notes == [f"{tmp_path / 'config.yaml'}: {SKIPPED}"]
    # A walk of the folder still reads each file's bytes.
    read.clear()
    assert [Path(p).name for p, _ in expand_inputs([str(FILES)])] and "notes.pt" in read


def test_notes_named_alone_is_an_error_as_before():
    report = one(FILES / "notes.pt")
    assert codes(report) == ["CP304"] and report.exit_code == 2


def test_check_reads_an_archive_and_code_text_from_stdin():
    archive = (ROOT / "fixtures" / "archives" / "custom_model.script.pt").read_bytes()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "codeparse", "check", "-", "--format", "jsonl"], input=archive,
                         capture_output=True, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    item = codeparse.contract.check.InputReport.model_validate_json(run.stdout.splitlines()[0])
    assert item.path == "-" and item.kind == "archive" and item.files == 11
    assert "CP201" in {f.code for f in item.findings}
    text = (ROOT / "fixtures" / "text" / "custom_model" / "script.code").read_bytes()
    run = subprocess.run([sys.executable, "-m", "codeparse", "check", "-", "--format", "jsonl", "--select", "CP201"],
                         input=text, capture_output=True, env=env, cwd=ROOT)
    item = codeparse.contract.check.InputReport.model_validate_json(run.stdout)
    assert item.kind == "code" and [f.code for f in item.findings] == ["CP201"] and run.returncode == 0


# ------------------------------------------------------------- pickle scanning


def payload(target: Path, how: str) -> bytes:
    """The generator's hand-built malicious pickles (fixtures/generate_files.py), for `target`."""
    namespace: dict = {}
    start = GENERATOR_SOURCE.index("def payload_pickle")
    end = GENERATOR_SOURCE.index("def replace_entry")
    exec(compile("import struct\nPAYLOAD_FILE = 'codeparse-pickle-ran'\n" + GENERATOR_SOURCE[start:end],
                 "generate_files.py", "exec"), namespace)
    return namespace["payload_pickle"](str(target), how)


def runs_in_a_subprocess(data: bytes, tmp_path: Path) -> bool:
    """Load `data` with pickle in a child process; True when the payload created its file."""
    blob = tmp_path / "payload.bin"
    blob.write_bytes(data)
    subprocess.run([sys.executable, "-c", "import pickle,sys; pickle.loads(open(sys.argv[1],'rb').read())",
                    str(blob)], capture_output=True, timeout=60)
    return (tmp_path / "codeparse-pickle-ran").exists()


@pytest.mark.parametrize("how, global_name", [
    ("global", "posix.system"), ("stack_global_memo", "os.system"), ("exec", "builtins.exec"),
])
def test_malicious_pickles_are_found_and_never_run(tmp_path, how, global_name):
    data = payload(tmp_path, how)
    target = tmp_path / "codeparse-pickle-ran"
    # inside this process: scanning names the global and runs nothing
    scan = scan_pickle(data, "x.pkl")
    assert scan.error is None and global_name in scan.globals and classify(global_name) == "dangerous"
    path = tmp_path / "evil.pkl"
    path.write_bytes(data)
    report = check([str(path)], Policy())
    assert codes(report) == ["CP324", "CP330"] and report.exit_code == 1
    assert not target.exists()
    # in a child process, pickle itself runs it: the scan was right to call it dangerous
    assert runs_in_a_subprocess(data, tmp_path)


def test_malicious_torchscript_archive_fails_check_with_cp330(tmp_path):
    data = payload(tmp_path, "stack_global_memo")
    evil = tmp_path / "model.pt"
    with zipfile.ZipFile(FILES / "renamed.bin") as zin, zipfile.ZipFile(evil, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info, data if info.filename.endswith("/data.pkl") else zin.read(info))
    report = check([str(evil)], Policy())
    cp330 = [f for f in report.inputs[0].findings if f.code == "CP330"]
    assert [f.args["global_name"] for f in cp330] == ["os.system"] and f"!renamed/data.pkl" not in cp330[0].path
    assert cp330[0].args["entry"] == "renamed/data.pkl" and report.exit_code == 1
    assert check([str(evil)], Policy(ignore=["CP330"])).exit_code == 0  # selectable by code
    assert not (tmp_path / "codeparse-pickle-ran").exists()
    fixture = check([str(FILES / "malicious.script.pt")], Policy())
    assert [f.args["global_name"] for f in fixture.inputs[0].findings if f.code == "CP330"] == ["posix.system"]


def proto4(body: bytes) -> bytes:
    return b"\x80\x04\x95" + struct.pack("<Q", len(body)) + body


@pytest.mark.parametrize("data, globals_, error", [
    (b"\x80\x02(cos\nsystem\nS'true'\no.", ["os.system"], None),  # INST-style: MARK, GLOBAL, OBJ
    (b"\x80\x02(S'true'\nios\nsystem\n.", ["os.system"], None),  # INST
    (b"\x80\x02\x82\x01)R.", [], "extension code 1 at byte 2 names a global through the loader's copyreg registry"),
    (b"\x80\x02cbuiltins\ngetattr\n.", ["builtins.getattr"], None),
    (b"\x80\x02c__builtin__\neval\n.", ["builtins.eval"], None),  # Python 2 spelling
    (b"\x80\x02coperator\nattrgetter\n.", ["operator.attrgetter"], None),
    (b"\x80\x02cos\nsystem\n", ["os.system"], "pickle exhausted before seeing STOP"),
    (proto4(b"K\x01K\x02\x93."), [], "STACK_GLOBAL at byte 15 takes operands that are not known strings"),
    (proto4(b"h\x05\x93."), [], "memo key 5 read before it is written (byte 11)"),
    (b"\x80\x02\xff.", [], None),
])
def test_opcode_walk(data, globals_, error):
    scan = scan_pickle(data, "p")
    assert scan.globals == globals_
    if data == b"\x80\x02\xff.":
        assert scan.error is not None and "opcode" in scan.error
    else:
        assert scan.error == error


def _fixture_pickles() -> list[bytes]:
    out = []
    for path in [*sorted((ROOT / "fixtures" / "archives").glob("*.pt"))[::6], *sorted(FILES.iterdir())]:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                out += [zf.read(n) for n in zf.namelist() if n.endswith(".pkl")]
        elif path.suffix in (".pkl", ".pth", ".pt"):
            out.append(path.read_bytes())
    return out


# Mutated STRING arguments carry unknown escapes (a backslash before e) that pickletools warns about.
@pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")
def test_the_one_loop_walk_gives_the_pickletools_walk(monkeypatch):
    """scan_pickle reads the opcodes torch writes in one loop and leaves everything else to
    the pickletools walk: the same scan (globals, offsets, opcodes, end, error) for every
    fixture pickle, for 3,000 mutations of them (a byte changed, inserted, or the end cut),
    and at the opcode bound.  Each table row has the argument size and stack effect that
    pickletools gives the opcode."""
    import pickletools
    import random

    from codeparse.pickles import picklescan

    for code, (size, popped, pushed) in picklescan._PLAIN_OPS.items():
        op = pickletools.code2op[chr(code)]
        assert (op.arg.n if op.arg else 0) == size and len(op.stack_before) == popped, op.name
        assert pickletools.markobject not in op.stack_before
        assert len(op.stack_after) == (pushed > 0)
        assert (op.stack_after == [pickletools.markobject]) == (pushed == 2)
    pickles = _fixture_pickles()
    plain = [p for p in pickles if picklescan._walk_plain(p, 0, picklescan.PickleScan(entry="p"))]
    assert len(pickles) > 40 and len(plain) > 40
    rng = random.Random(13)
    cases = list(pickles) + [pickle.dumps({"a": [1, 2.5, "x", b"y", (None, True)], "b": Policy}, protocol=p)
                             for p in range(6)]
    for data in pickles[:100]:
        for _ in range(30):
            b = bytearray(data)
            i = rng.randrange(len(b))
            how = rng.randrange(3)
            if how == 0:
                b[i] = rng.randrange(256)
            elif how == 1:
                del b[i:]
            else:
                b[i:i] = bytes([rng.randrange(256)])
            cases.append(bytes(b))
    for data in cases:
        assert scan_pickle(data, "p") == picklescan._walk(data, "p", 0)
    for limit in (0, 1, 9, 60):
        monkeypatch.setattr(picklescan, "MAX_OPS", limit)
        for data in cases[:200]:
            assert scan_pickle(data, "p") == picklescan._walk(data, "p", 0)


def test_glob_classes_match_as_fnmatch_does():
    """The table's globs are sorted into names, prefixes and patterns; each global gets
    the class fnmatch gives it."""
    import fnmatch

    from codeparse.pickles.picklescan import _globs, classify, load_table

    table = load_table()
    names = [g.replace("*", middle).replace("?", "x") for verdict in ("dangerous",)
             for g in table[verdict]["globals"] for middle in ("", "x", ".y.z", "Storage")]
    names += ["os", "osx.path", "torch.FloatStorage", "torch.Storagex", "torch.floatStorage", "builtins.evalx",
              "torch.nn.modules", "__torch__", "torch.ops", "torch.opsx.y"]
    for name in names:
        expected = any(fnmatch.fnmatchcase(name, g) for g in table["dangerous"]["globals"])
        assert _globs("dangerous").match(name) == expected, name
    assert classify("torch.FloatStorage") == "allowed" and classify("os.system") == "dangerous"


def test_unknown_and_unreadable_pickles_in_check(tmp_path):
    unknown = tmp_path / "unknown.pkl"
    unknown.write_bytes(b"\x80\x02cmylib.models\nNet\n)\x81.")
    truncated = tmp_path / "truncated.pkl"
    truncated.write_bytes(pickle.dumps({"a": [1, 2, 3]}, protocol=4)[:-5])
    report = check([str(unknown), str(truncated)], Policy())
    # The class is instantiated (NEWOBJ): a warning; a pickle that cannot be walked fails closed.
    assert codes(report) == ["CP324", "CP336", "CP324", "CP332"]
    assert report.exit_code == 1
    assert report.inputs[0].findings[1].args["global_name"] == "mylib.models.Net"


def test_unknown_globals_past_the_table_limit_are_counted_in_one_finding(tmp_path):
    """A pickle naming thousands of made-up globals gives the first ``listed`` CP331s and
    one CP333 that counts the rest; a dangerous global after them is still reported."""
    from codeparse.pickles.picklescan import load_table

    listed = load_table()["unknown"]["listed"]
    names = [f"evil{i}\nf{i}" for i in range(listed + 2000)] + ["posix\nsystem"]
    flood = tmp_path / "flood.pkl"
    flood.write_bytes(b"\x80\x02" + b"".join(b"c" + n.encode() + b"\n0" for n in names) + b"N.")
    report = check([str(flood)], Policy())
    found = report.inputs[0].findings
    assert [f.code for f in found] == ["CP324"] + ["CP331"] * listed + ["CP330", "CP333"]
    assert found[listed].args["global_name"] == f"evil{listed - 1}.f{listed - 1}"
    more = found[-1]
    start = flood.read_bytes().index(f"cevil{listed}\n".encode())
    assert more.args == {"entry": "flood.pkl", "count": "2000", "offset": str(start), "listed": str(listed)}
    assert more.severity == "error" and report.exit_code == 1  # names not known safe fail the gate


def test_every_torch_made_pickle_is_known_safe():
    """The fixture archives and files made by torch name only allowed globals."""
    archives = sorted((ROOT / "fixtures" / "archives").glob("*.pt"))
    report = check([str(p) for p in archives] + [str(FILES / n) for n in KINDS if "malicious" not in n
                                                 and n != "notes.pt"], Policy(select=["CP33"]), scan_only=True)
    # Only the whole-module pickle names globals outside the weights_only allowlist: the
    # torch.nn classes it instantiates (CP336, warnings).
    assert {(Path(r.path).name, f.code) for r in report.inputs for f in r.findings} <= {("pickled_module.pth", "CP336")}


def test_severities_come_from_the_data_table():
    from codeparse.grammar.locations import grammar_dir

    table = tomllib.loads((grammar_dir() / "pickle-globals.toml").read_text(encoding="utf-8"))
    for section in ("dangerous", "called", "data_types", "instantiated", "unknown", "unreadable", "unreadable_name",
                    "walk_cap"):
        assert CODES[table[section]["code"]].severity == table[section]["severity"]
    for name in ("os.system", "posix.system", "nt.system", "subprocess.Popen", "builtins.eval", "builtins.exec",
                 "builtins.getattr", "builtins.__import__", "builtins.compile", "builtins.open", "runpy._run_code",
                 "importlib.import_module", "marshal.loads", "pickle.loads", "socket.socket", "shutil.rmtree",
                 "sys.modules", "webbrowser.open", "operator.attrgetter"):
        assert classify(name) == "dangerous", name
    for name in ("torch._utils._rebuild_tensor_v2", "torch.FloatStorage", "collections.OrderedDict", "torch.float32"):
        assert classify(name) == "allowed", name  # torch's weights_only allowlist, exactly
    for name in ("__torch__.CustomModel", "torch.jit._pickle.restore_type_tag", "torch.nn.modules.linear.Linear"):
        assert classify(name) == "unknown", name  # silent only where torch.jit.load's own unpickler reads them


def test_scan_command(capsys):
    code = main(["scan", str(FILES), "--format", "jsonl"])
    out = capsys.readouterr().out
    reports = [codeparse.contract.check.InputReport.model_validate_json(line) for line in out.splitlines()]
    assert code == 1
    by_name = {Path(r.path).name: r for r in reports}
    assert set(by_name) == set(KINDS)
    assert [f.code for f in by_name["malicious.script.pt"].findings] == ["CP330"]
    assert by_name["renamed.bin"].files == 0 and len(by_name["renamed.bin"].pickles) == 3  # no code parsed
    assert main(["scan", str(FILES / "state_dict.pt")]) == 0
    capsys.readouterr()
    assert main(["scan", str(ROOT / "fixtures" / "text" / "params" / "script.code")]) == 2
    assert "CP304" in capsys.readouterr().out


def test_a_scan_as_plain_data_is_a_deep_copy_of_its_fields():
    import copy

    scans = [s for path in sorted(FILES.rglob("*")) if path.is_file()
             for s in scan_stream(path.read_bytes(), path.name)]
    assert any(s.names and s.offsets for s in scans)  # the malicious fixtures name globals
    for s in scans:
        plain = s.plain()
        fields = {name: getattr(s, name) for name in PickleScan.__slots__}
        assert plain == copy.deepcopy(fields) and list(plain) == list(fields)
        assert all(plain[k] is not v for k, v in fields.items() if isinstance(v, (list, dict)))  # copies
        assert all(plain["names"][k] is not v for k, v in s.names.items())


def test_a_scan_made_from_its_plain_data_is_equal_and_each_field_counts():
    """A scan read back from the content cache (its plain data) is equal to the scan and shown
    the same; a scan differs from one whose field differs, whichever field it is."""
    scans = [s for path in sorted(FILES.rglob("*")) if path.is_file()
             for s in scan_stream(path.read_bytes(), path.name)]
    assert any(s.error for s in scans) and any(s.globals for s in scans)
    for s in scans:
        again = PickleScan(**s.plain())
        assert again == s and repr(again) == repr(s)
        assert repr(s).startswith(f"PickleScan(entry={s.entry!r}, globals={s.globals!r}, ")
    s = next(s for s in scans if s.globals)
    for name in PickleScan.__slots__:
        other = PickleScan(**s.plain())
        value = getattr(other, name)
        setattr(other, name, not value if isinstance(value, bool) else value + 1 if isinstance(value, int)
                else "x" if value is None else value[:-1] if isinstance(value, (str, list))
                else dict(list(value.items())[:-1]))
        assert other != s, name
    with pytest.raises(TypeError):
        PickleScan(entry="p", glob=[])


def test_scan_stream_walks_consecutive_pickles():
    data = pickle.dumps(1, protocol=2) + pickle.dumps({"x": 1}, protocol=2) + b"\x00raw bytes"
    scans = scan_stream(data, "legacy.pt")
    # A loader reads what follows as a pickle too: the raw bytes are walked, and fail.
    assert [s.entry for s in scans] == ["legacy.pt", "legacy.pt#1", "legacy.pt#2"]
    assert scans[0].error is None and scans[1].error is None and scans[2].failure == "walk"


@pytest.mark.parametrize("data, more, expected", [
    (pickle.dumps({"a": [1, (2, 3)], "b": "x"}, protocol=0), False, True),
    (pickle.dumps([1, "a", (None,)], protocol=1), False, True),
    (b"N0" * 3000 + b"\x80\x02N.", True, True),  # a header behind padding: the window ends inside it
    (b"X\x05\x00\x00\x00posixX\x06\x00\x00\x00system\x93X\x01\x00\x00\x00x\x85R", False, True),  # no STOP
    (b"cos\nsystem\n(S'true'\ntR", False, True),
    # TorchScript text: `class X:` reads as a GLOBAL of two lines, then the text ends
    (b"class _RecordFunction:\n  capsule : Capsule\n", False, False),
    (b"Notes about the model\n", False, False),
    (b"# Title\n", False, False),
])
def test_protocol_0_and_1_pickles_are_recognised_by_a_walk(data, more, expected):
    from codeparse.files.filekind import is_pickle

    assert is_pickle(data, more=more) is expected
