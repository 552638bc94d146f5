"""What the gate reads of a file is what the loaders read: every pickle of a stream, whatever
the first one held; a pyproject.toml in the checked tree cannot turn reading off.  The files
are built here byte by byte (the helpers of scripts/make_canaries.py); the torch-marked
tests load them with the real loaders, in a subprocess, and see the canary appear."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest

from codeparse.cli.app import main
from codeparse.files.filekind import LFS_MAGIC
from codeparse.text import cache

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import make_canaries as mk  # noqa: E402

EVIL = mk.pk(mk.call(mk.g("cProfile", "run"), mk.s(mk.PY)))
SYSTEM = mk.pk(mk.call(mk.g("os", "system"), mk.s(mk.SH)))


def _check(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["check", *argv, "--format", "json"])
    out, _err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}


def _codes(report: dict) -> dict[str, list[str]]:
    return {Path(i["path"]).name: [f["code"] for f in i["findings"]] for i in report.get("inputs", [])}


def _fires(path: Path, loader: str) -> bool:
    return mk.run_loaders([path], timeout=60.0, loaders=(loader,))[str(path)][loader]


# --------------------------------------------------------------------------- streams

def underscore_magic_stream() -> bytes:
    """The legacy stream whose magic number is a protocol 0 LONG spelled with an underscore
    (``int()`` reads it), the object pickle calling os.system."""
    digits = str(mk.MAGIC)
    magic = b"L" + (digits[0] + "_" + digits[1:]).encode() + b"L\n."
    return magic + b"M\xe9\x03." + b"}." + SYSTEM + b"]."


def test_a_legacy_stream_with_the_magic_number_spelled_otherwise_is_walked_whole(tmp_path, capsys):
    path = tmp_path / "underscore.pt"
    path.write_bytes(underscore_magic_stream())
    code, report = _check(capsys, str(path), "--isolated")
    assert code == 1
    assert "CP330" in _codes(report)["underscore.pt"]
    assert [p["entry"] for p in report["inputs"][0]["pickles"]] == [
        "underscore.pt", "underscore.pt#1", "underscore.pt#2", "underscore.pt#3", "underscore.pt#4"]


@pytest.mark.parametrize("first", [b"N.", b"K\x01.", b"\x80\x02}q\x00."])
def test_pickles_after_the_first_are_walked_whatever_it_held(tmp_path, capsys, first):
    path = tmp_path / "stream.pkl"
    path.write_bytes(first + EVIL)
    code, report = _check(capsys, str(path), "--isolated")
    assert code == 1 and "CP334" in _codes(report)["stream.pkl"]


def test_a_clean_stream_after_the_first_pickle_still_passes(tmp_path, capsys):
    path = tmp_path / "clean.pt"
    path.write_bytes(mk.legacy_stream(mk.CLEAN_DICT, mk.pk(b"]")))
    code, report = _check(capsys, str(path), "--isolated")
    assert code == 0 and _codes(report)["clean.pt"] == ["CP323"]


@pytest.mark.torch
def test_torch_load_runs_the_underscore_magic_stream(tmp_path, capsys):
    path = tmp_path / "underscore.pt"
    path.write_bytes(underscore_magic_stream())
    assert _fires(path, "torch_load")
    assert main(["check", str(path), "--isolated"]) == 1
    capsys.readouterr()


# ------------------------------------------------------------------ the tree's pyproject

@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    monkeypatch.setattr(cache, "_secret", None)
    root = tmp_path / "tree"
    root.mkdir()
    (root / "model.pkl").write_bytes(SYSTEM)
    (root / "model.pt").write_bytes(mk.raw_zip(mk._checkpoint_entries(SYSTEM, root="model")))
    monkeypatch.chdir(root)
    return root


@pytest.mark.parametrize("ignore", [
    'ignore = ["CP309"]',
    'ignore = ["CP30", "CP31"]',
    'per-file-ignores = {"*" = ["CP309", "CP344"]}',
    'select = ["CP2"]',
])
def test_a_tree_that_lowers_a_limit_cannot_hide_what_it_left_unread(tree, capsys, ignore):
    (tree / "pyproject.toml").write_text(f"[tool.codeparse]\nmax-entry-bytes = 16\n{ignore}\n")
    code, report = _check(capsys, ".")
    codes = _codes(report)
    assert code == 1
    assert "CP309" in codes["model.pkl"] and "CP309" in codes["model.pt"]


@pytest.mark.parametrize("code", ["CP308", "CP309", "CP310", "CP311", "CP312", "CP313", "CP344"])
def test_the_reading_limit_codes_are_safety_codes(tmp_path, code):
    from codeparse.gate.policy import load_policy

    path = tmp_path / "pyproject.toml"
    path.write_text(f'[tool.codeparse]\nignore = ["{code}"]\nper-file-ignores = {{"*" = ["{code}"]}}\n')
    notes: list[str] = []
    policy = load_policy(path, trusted=False, notes=notes)
    assert code not in policy.ignore and code not in policy.per_file_ignores["*"]
    assert any(code in note for note in notes)
    assert code in load_policy(path, trusted=True).ignore  # a trusted --config FILE still may


def test_the_tree_cannot_raise_a_limit(tree, capsys):
    (tree / "pyproject.toml").write_text("[tool.codeparse]\nmax-entry-bytes = 999999999999\n")
    code, report = _check(capsys, ".")
    assert code == 1 and report["policy"]["max_entry_bytes"] < 999999999999


@pytest.mark.torch
def test_the_tree_pickles_run_under_the_loaders(tree):
    assert _fires(tree / "model.pkl", "pickle")
    assert _fires(tree / "model.pt", "torch_load")



# ------------------------------------------------------------------------------ legacy tar

def base256_checksum(tar: bytes) -> bytes:
    """``tar`` with its first header's checksum stored base-256 (``0x80`` then 7 big-endian
    bytes), as ``tarfile.nti`` reads it; the sum itself is unchanged."""
    raw = bytearray(tar)
    total = int(bytes(raw[148:156]).split(b"\0")[0].strip(), 8)
    raw[148:156] = b"\x80" + total.to_bytes(7, "big")
    return bytes(raw)


ZERO = mk.pk(b"K\x00")
TAR = {"storages": ZERO + mk.pk(b"]"), "tensors": ZERO, "pickle": SYSTEM}


def test_a_base256_checksum_is_a_tar_as_tarfile_reads_it():
    import io
    import tarfile

    from codeparse.files.filekind import is_tar, recognize_bytes

    data = base256_checksum(mk.legacy_tar(TAR))
    assert tarfile.open(fileobj=io.BytesIO(data), mode="r:").getnames() == ["storages", "tensors", "pickle"]
    assert is_tar(data) and recognize_bytes(data).detail == "legacy tar"
    broken = bytearray(data)
    broken[155] ^= 1  # the sum no longer holds: tarfile refuses the header
    assert not is_tar(bytes(broken))
    assert not is_tar(bytes(512) + data)  # a zero block first: tarfile finds no member


@pytest.mark.parametrize("name", ["m.pt", "m.tar", "m.bin", "model"])
def test_a_base256_tar_fails_in_a_walk_and_by_name(tmp_path, capsys, name):
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / name).write_bytes(base256_checksum(mk.legacy_tar(TAR)))
    for target in (str(folder), str(folder / name)):
        code, report = _check(capsys, target, "--isolated")
        assert code == 1 and report["inputs"][0]["kind"] == "checkpoint"
        assert "CP330" in _codes(report)[name]


def test_a_tar_that_is_also_an_lfs_pointer_is_read_as_a_tar(tmp_path, capsys):
    data = base256_checksum(mk.legacy_tar(TAR, first=LFS_MAGIC.decode()))
    assert data.startswith(LFS_MAGIC)
    path = tmp_path / "pointer.pt"
    path.write_bytes(data)
    code, report = _check(capsys, str(path), "--isolated")
    assert code == 1 and "CP330" in _codes(report)["pointer.pt"] and "CP322" not in _codes(report)["pointer.pt"]


def link_tar(target: str, kind: bytes, name: str = "storages") -> bytes:
    """A legacy tar whose ``name`` member is a link (``tarfile.SYMTYPE``/``LNKTYPE``) to ``target``."""
    import io
    import tarfile

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for member in ("storages", "tensors", "pickle"):
            info = tarfile.TarInfo(member)
            info.mtime, info.mode = 0, 0o644
            if member == name:
                info.type, info.linkname = kind, target
                tar.addfile(info)
            else:
                data = {**TAR, "pickle": mk.CLEAN_DICT}[member]
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.mark.parametrize("name", ["storages", "tensors", "pickle"])
@pytest.mark.parametrize("kind", ["sym", "hard"])
def test_a_tar_member_that_is_a_link_fails_closed_with_a_code(tmp_path, capsys, name, kind):
    import tarfile

    payload = tmp_path / "payload.txt"
    payload.write_bytes(EVIL)
    link = tarfile.SYMTYPE if kind == "sym" else tarfile.LNKTYPE
    path = tmp_path / "linked.pt"
    path.write_bytes(link_tar(str(payload), link, name))
    code, report = _check(capsys, str(path), "--isolated")
    findings = report["inputs"][0]["findings"]
    assert code == 1
    assert [f["code"] for f in findings if f["severity"] == "error"] == ["CP332"]
    assert "link to" in findings[-1]["message"] and "internal error" not in json.dumps(report)


@pytest.mark.torch
def test_the_loaders_run_the_tars(tmp_path, capsys):
    import tarfile

    plain = tmp_path / "base256.pt"
    plain.write_bytes(base256_checksum(mk.legacy_tar({**TAR, "pickle": EVIL})))
    pointer = tmp_path / "pointer.pt"
    pointer.write_bytes(base256_checksum(mk.legacy_tar({**TAR, "pickle": EVIL}, first=LFS_MAGIC.decode())))
    payload = tmp_path / "payload.txt"
    payload.write_bytes(EVIL)
    linked = tmp_path / "linked.pt"
    linked.write_bytes(link_tar(str(payload), tarfile.SYMTYPE))
    fired = mk.run_loaders([plain, pointer, linked], timeout=60.0, loaders=("torch_load",))
    assert all(fired[str(p)]["torch_load"] for p in (plain, pointer, linked)), fired
    for path in (plain, pointer, linked):
        assert main(["check", str(path), "--isolated"]) == 1
    capsys.readouterr()


# ---------------------------------------------------------------------- pickle starts

def legacy_after(prefix: bytes) -> bytes:
    """The legacy stream whose magic pickle starts with ``prefix`` (opcodes that push and pop)."""
    magic = b"\x8a\x0a" + mk.MAGIC.to_bytes(10, "little") + b"."
    return prefix + magic + b"M\xe9\x03." + b"}." + EVIL + b"]."


STARTS = {
    "proto1.pkl": b"\x80\x01" + mk.pk(mk.call(mk.g("cProfile", "run"), mk.s(mk.PY)), None),
    "proto0.pkl": b"\x80\x00" + b"ccProfile\nrun\n(V" + mk.PY.encode() + b"\ntR.",
    "binbytes.pkl": b"C\x000" + b"ccProfile\nrun\n(V" + mk.PY.encode() + b"\ntR.",
    "bigbytes.pkl": b"B\x03\x00\x00\x00abc0" + mk.pk(mk.call(mk.g("cProfile", "run"), mk.s(mk.PY)), None),
    "none_pop.pkl": b"N0" + mk.pk(mk.call(mk.g("cProfile", "run"), mk.s(mk.PY)), None),
    "legacy_binbytes.pt": legacy_after(b"C\x000"),
    "no_stop.pkl": b"ccProfile\nrun\n(V" + mk.PY.encode() + b"\ntR\xff",  # runs, then fails
}


def test_every_pickle_start_the_unpickler_accepts_is_a_pickle_in_a_walk(tmp_path, capsys):
    from codeparse.files.filekind import recognize

    folder = tmp_path / "models"
    folder.mkdir()
    for name, data in STARTS.items():
        (folder / name).write_bytes(data)
        assert recognize(folder / name).kind == "pickle", name
    code, report = _check(capsys, str(folder), "--isolated")
    codes = _codes(report)
    assert code == 1
    assert {n: "CP334" in codes[n] for n in STARTS} == {n: True for n in STARTS}


@pytest.mark.parametrize("text", [
    b"bad idea\n", b"import os\nprint(1)\n", b"Please read me\n", b"(just a note)\n", b"N",
    b"class A:\n    pass\n", b"graph(%x):\n  return (%x)\n", b'{"a": 1}', b"", b"\x80\x09N.",
    b"cat foo\nbar\n", b"build\n",
])
def test_text_that_no_unpickler_reads_is_no_pickle(text):
    from codeparse.files.filekind import is_pickle

    assert not is_pickle(text)


def test_a_pickle_cut_by_the_head_bound_is_still_a_pickle():
    from codeparse.files.filekind import _HEAD, is_pickle

    long = b"(" + b"K\x01" * _HEAD + b"l."  # a protocol 1 list: its STOP lies past the bound
    assert is_pickle(long) and not is_pickle(long[:_HEAD])


@pytest.mark.torch
def test_the_loaders_run_the_pickle_starts(tmp_path, capsys):
    paths = []
    for name, data in STARTS.items():
        path = tmp_path / name
        path.write_bytes(data)
        paths.append(path)
    fired = mk.run_loaders(paths, timeout=60.0, loaders=("pickle", "torch_load"))
    loader = {p: "torch_load" if p.suffix == ".pt" else "pickle" for p in paths}
    assert {p.name: fired[str(p)][loader[p]] for p in paths} == {p.name: True for p in paths}
    assert main(["check", str(tmp_path), "--isolated"]) == 1
    capsys.readouterr()


# -------------------------------------------------------------- frames that end past STOP

def framed(body: bytes, hidden: bytes) -> bytes:
    """A protocol 4 pickle whose one FRAME holds ``body`` (ending in STOP) and ``hidden``:
    a reader that peeks goes on after STOP (into ``hidden``), one that cannot (io.BytesIO,
    an unbuffered file) after the frame."""
    inner = body + hidden
    return b"\x80\x04\x95" + struct.pack("<Q", len(inner)) + inner


def frame_stream() -> bytes:
    """The legacy stream whose magic pickle's frame hides four clean pickles: after them,
    where torch.load(io.BytesIO(...)) reads on, the object pickle calls cProfile.run."""
    magic = b"\x8a\x0a" + mk.MAGIC.to_bytes(10, "little") + b"."
    return framed(magic, b"M\xe9\x03." + b"}." + b"}." + b"].") + b"M\xe9\x03." + b"}." + EVIL + b"]."


def frame_tar() -> bytes:
    """A legacy tar whose storages count (0) is framed: torch reads the storage views from
    its unbuffered file after the frame, where they call cProfile.run."""
    storages = framed(b"K\x00.", b"].") + EVIL
    return mk.legacy_tar({"storages": storages, "tensors": ZERO, "pickle": mk.CLEAN_DICT})


def test_a_frame_that_ends_past_stop_is_read_from_both_ends(tmp_path, capsys):
    for name, data in (("frame.pt", frame_stream()), ("frame_tar.pt", frame_tar())):
        path = tmp_path / name
        path.write_bytes(data)
        code, report = _check(capsys, str(path), "--isolated")
        assert code == 1 and "CP334" in _codes(report)[name], name


def test_frames_cannot_multiply_the_pickles_walked(tmp_path, capsys):
    from codeparse.pickles.scan import MAX_STARTS, stream_scans

    # every pickle has three starts after it (its STOP, and two frames that end past it)
    data = framed(b"N.", framed(b"N.", b"N.")) * 20
    scans = stream_scans(data, "many.pkl")
    assert len(scans) == MAX_STARTS + 1
    assert [s.failure for s in scans] == [None] * MAX_STARTS + ["cap"]
    path = tmp_path / "many.pkl"
    path.write_bytes(data)
    code, report = _check(capsys, str(path), "--isolated")
    assert code == 1 and "CP338" in _codes(report)["many.pkl"]


@pytest.mark.torch
def test_torch_load_of_bytes_reads_on_after_the_frame(tmp_path, capsys):
    stream = tmp_path / "frame.pt"
    stream.write_bytes(frame_stream())
    tar = tmp_path / "frame_tar.pt"
    tar.write_bytes(frame_tar())
    script = (
        "import io, sys, torch\n"
        "data = open(sys.argv[1], 'rb').read()\n"
        "try:\n    torch.load(io.BytesIO(data), weights_only=False)\n"
        "except Exception:\n    pass\n")
    import subprocess

    folder = tmp_path / "run"
    folder.mkdir()
    subprocess.run([sys.executable, "-c", script, str(stream)], cwd=folder, timeout=120, capture_output=True)
    assert (folder / mk.CANARY).exists()  # read from bytes: after the frame
    assert _fires(tar, "torch_load")  # the storages member, from its unbuffered file
    for path in (stream, tar):
        assert main(["check", str(path), "--isolated"]) == 1
    capsys.readouterr()


def straddling(payload: bytes) -> bytes:
    """A pickle whose FRAME ends inside a BINUNICODE's argument: a linear walk (and
    pickle.loads) reads the string on past the frame and ``payload`` as the contents of a
    BINBYTES; a reader that cannot peek (io.BytesIO: torch.load's data.pkl) reads the
    string afresh from after the frame, and runs ``payload``."""
    size, inside = 16, 5
    after = b"a" * (size - 5) + b"B" + struct.pack("<I", len(payload))
    frame = b"X" + struct.pack("<I", size) + b"a" * inside
    return b"\x80\x04\x95" + struct.pack("<Q", len(frame)) + frame + after + payload + b"."


def test_a_frame_that_ends_inside_an_opcode_fails_closed(tmp_path, capsys):
    import pickle

    from codeparse.pickles.scan import frame_problem

    data = straddling(mk.call(mk.g("cProfile", "run"), mk.s(mk.PY)))
    assert pickle.loads(data).startswith(b"ccProfile")  # read linearly: the payload is bytes
    assert "ends inside the opcode at byte 11" in frame_problem(data, 0, len(data))
    path = tmp_path / "straddle.pt"
    path.write_bytes(mk.raw_zip(mk._checkpoint_entries(data, root="straddle")))
    (tmp_path / "straddle.pkl").write_bytes(data)
    code, report = _check(capsys, str(path), str(tmp_path / "straddle.pkl"), "--isolated")
    assert code == 1
    assert _codes(report) == {"straddle.pt": ["CP323", "CP332"], "straddle.pkl": ["CP324", "CP332"]}
    nested = b"\x80\x04\x95" + struct.pack("<Q", 12) + b"\x95" + struct.pack("<Q", 2) + b"N.N."
    assert "inside the frame" in frame_problem(nested, 0, len(nested))


@pytest.mark.parametrize("protocol", [4, 5])
def test_the_frames_pickle_writes_read_alike(protocol):
    import pickle

    from codeparse.pickles.scan import frame_problem

    for obj in ({"a": list(range(30000)), "b": b"x" * 200000, "c": ["s%d" % i for i in range(20000)]},
                [(i, str(i), float(i)) for i in range(20000)]):
        data = pickle.dumps(obj, protocol=protocol)
        assert data.count(b"\x95") and frame_problem(data, 0, len(data)) is None


@pytest.mark.torch
def test_torch_load_runs_the_straddling_frame(tmp_path, capsys):
    path = tmp_path / "straddle.pt"
    path.write_bytes(mk.raw_zip(mk._checkpoint_entries(straddling(mk.call(mk.g("cProfile", "run"), mk.s(mk.PY))),
                                                      root="straddle")))
    assert _fires(path, "torch_load")
    assert main(["check", str(path), "--isolated"]) == 1
    capsys.readouterr()
