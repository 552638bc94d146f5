"""Bad input for the archive reader and ``codeparse check``: each gets a clear coded
finding or exit 2 with one line, never a traceback, and memory stays bounded.

Hostile zips are written byte by byte (:func:`raw_zip`), so a "bomb" that inflates to
gigabytes is a few megabytes on disk and is built in milliseconds: its deflate
stream repeats one fully flushed block (a full flush resets the dictionary, so the
copies are independent).  Nothing here ever inflates it.
"""

from __future__ import annotations

import io
import pickle
import struct
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest

import codeparse
from codeparse.gate.run import check_input
from codeparse.cli.app import main
from codeparse.contract.check import Policy

ROOT = Path(__file__).resolve().parent.parent
CUSTOM_SCRIPT = ROOT / "fixtures" / "archives" / "custom_model.script.pt"
PYTORCH1 = ROOT / "fixtures" / "legacy" / "torch-js__torch-js__test_model-7f2acda.pt"
# Real printer output (torch 2.13): one class with a branch on tensor values (CP201).
GOOD_CODE = (Path(__file__).resolve().parent.parent / "fixtures" / "archive_code"
             / "tutorial_decision_gate.script" / "__torch__.py").read_bytes()
MB = 1 << 20


def peak_memory(fn):
    """``(fn(), peak bytes traced while it ran)``."""
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def raw_zip(entries: list[tuple], zip64: bool = False) -> bytes:
    """A zip from ``(name, method, stored bytes, crc, declared size)`` tuples, headers as given."""
    out = io.BytesIO()
    central = []
    for name, method, payload, crc, size in entries:
        offset = out.tell()
        nb = name.encode()
        out.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 0, crc,
                              len(payload), size, len(nb), 0))
        out.write(nb)
        out.write(payload)
        central.append(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, method, 0, 0, crc,
                                   len(payload), size, len(nb), 0, 0, 0, 0, 0, offset) + nb)
    start = out.tell()
    out.write(b"".join(central))
    size = out.tell() - start
    n = len(entries)
    if zip64 or n > 0xFFFF:
        record = out.tell()
        out.write(struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, n, n, size, start))
        out.write(struct.pack("<4sIQI", b"PK\x06\x07", 0, record, 1))
        n = 0xFFFF
    out.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, n, n, size, start, 0))
    return out.getvalue()


def stored(name: str, data: bytes) -> tuple:
    return (name, 0, data, zlib.crc32(data), len(data))


def zeros_stream(megabytes: int) -> bytes:
    """A raw deflate stream that inflates to ``megabytes`` MiB of zeros."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(b"\0" * MB) + c.flush(zlib.Z_FULL_FLUSH)
    return block * megabytes + b"\x03\x00"  # final empty fixed-Huffman block


def archive_with(tmp_path: Path, extra: list[tuple], name: str = "bad.pt", code: bytes = GOOD_CODE) -> Path:
    entries = [stored("m/version", b"3\n"), stored("m/code/__torch__.py", code), *extra]
    path = tmp_path / name
    path.write_bytes(raw_zip(entries))
    return path


def codes_of(path: Path, **policy) -> tuple[bool, list[str]]:
    report = check_input(str(path), Policy(**policy))
    return report.readable, [f.code for f in report.findings]


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


# --------------------------------------------------------------------- whole inputs


def test_not_a_zip(tmp_path, capsys):
    path = tmp_path / "model.pt"
    path.write_text("this is not an archive\n")
    code, _, err = run_cli(capsys, "check", path)
    assert code == 2
    assert err.strip() == f"{path}: CP304 not a TorchScript archive: not a zip file (it does not start with `PK`)"


def test_truncated_zip(tmp_path, capsys):
    data = CUSTOM_SCRIPT.read_bytes()
    path = tmp_path / "truncated.pt"
    path.write_bytes(data[: len(data) // 2])
    code, _, err = run_cli(capsys, "check", path)
    assert code == 2
    assert err.count("\n") == 1 and ": CP305 the zip archive is damaged" in err


def test_pytorch1_container_is_unsupported(capsys):
    assert PYTORCH1.exists(), f"legacy fixture {PYTORCH1} is missing"
    code, out, err = run_cli(capsys, "check", PYTORCH1, "--format", "json")
    assert code == 2
    assert "CP306 unsupported format: a pre-zip `PYTORCH1` container" in err
    report = codeparse.Report.model_validate_json(out)
    [finding] = report.inputs[0].findings
    assert (finding.code, finding.span, report.inputs[0].readable) == ("CP306", None, False)


def test_entries_past_the_limit_refused_from_the_end_record(tmp_path):
    # One entry more than the default limit (50,000): the smallest archive it refuses.
    entries = [stored(f"m/data/{i}", b"") for i in range(Policy().max_entries)]
    entries.insert(0, stored("m/code/__torch__.py", GOOD_CODE))
    path = tmp_path / "many.pt"
    path.write_bytes(raw_zip(entries))
    (readable, codes), peak = peak_memory(lambda: codes_of(path))
    assert (readable, codes) == (False, ["CP308"])
    assert peak < 8 * MB  # the central directory was never parsed
    # Raising the limit reads it (the count is an option).
    readable, codes = codes_of(path, max_entries=Policy().max_entries + 1)
    assert readable and "CP201" in codes and "CP308" not in codes


# ------------------------------------------------------------------- entries


def test_zip_bomb_is_never_inflated(tmp_path):
    bomb = zeros_stream(2048)  # inflates to 2 GiB; about 2 MB stored
    assert len(bomb) < 4 * MB
    path = archive_with(tmp_path, [("m/code/__torch__/bomb.py", 8, bomb, 0, 2048 * MB)])
    (readable, codes), peak = peak_memory(lambda: codes_of(path))
    assert readable and "CP309" in codes and "CP201" in codes  # the rest is still checked
    assert peak < 32 * MB


def test_bomb_with_a_lying_size_stops_at_the_declared_size(tmp_path):
    path = archive_with(tmp_path, [("m/code/__torch__/liar.py", 8, zeros_stream(512), 0, 1000)])
    (readable, codes), peak = peak_memory(lambda: codes_of(path))
    assert readable and "CP313" in codes  # CRC check fails after the declared 1000 bytes
    assert peak < 32 * MB


def test_compression_ratio_and_total_limits(tmp_path):
    path = archive_with(tmp_path, [("m/code/__torch__/dense.py", 8, zeros_stream(4), 0, 4 * MB)])
    assert "CP311" in codes_of(path)[1]
    assert "CP311" not in codes_of(path, max_ratio=10_000)[1]
    readable, codes = codes_of(CUSTOM_SCRIPT, max_total_bytes=4000)
    assert readable and "CP310" in codes


def test_entry_of_100_mb(tmp_path):
    big = zeros_stream(100)
    path = archive_with(tmp_path, [("m/code/__torch__/big.py", 8, big, 0, 100 * MB),
                                   ("m/data/0", 8, big, 0, 100 * MB)])
    (readable, codes), peak = peak_memory(lambda: codes_of(path))
    # The code entry is refused by its declared size; the tensor data entry is never opened.
    assert readable and codes.count("CP309") == 1
    assert peak < 32 * MB


def test_entry_names_with_dotdot_or_absolute_paths(tmp_path):
    path = archive_with(tmp_path, [stored("m/code/../../evil.py", b"x = 1\n"),
                                   stored("/etc/code/abs.py", b"x = 1\n")])
    archive = codeparse.open_archive(path)
    unsafe = [f for f in archive.findings if f.code == "CP312"]
    assert [f.args["entry"] for f in unsafe] == ["m/code/../../evil.py", "/etc/code/abs.py"]
    assert [f.path.split("!")[1] for f in archive.files] == ["m/code/__torch__.py"]


def test_non_utf8_and_empty_and_binary_code(tmp_path):
    path = archive_with(tmp_path, [stored("m/code/__torch__/latin.py", b"def f(x: str) -> str:\n  return \"\xe9\"\n"),
                                   stored("m/code/__torch__/empty.py", b""),
                                   stored("m/code/__torch__/nul.py", b"\x00\x01\x02")])
    archive = codeparse.open_archive(path)
    by_file = {(f.path.split("!")[1], f.code) for f in archive.findings}
    assert ("m/code/__torch__/latin.py", "CP110") in by_file
    assert ("m/code/__torch__/empty.py", "CP109") in by_file
    assert ("m/code/__torch__/nul.py", "CP302") in by_file
    [latin] = [f for f in archive.findings if f.code == "CP110"]
    assert (latin.span.line, latin.span.column) == (2, 11)


def test_data_pkl_is_never_unpickled(tmp_path, capsys):
    marker = tmp_path / "pwned"
    live = tmp_path / "live"

    def payload(target: Path) -> bytes:
        source = f"open({str(target)!r}, 'w').write('ran')".encode()
        return (b"\x80\x02cbuiltins\nexec\nX" + len(source).to_bytes(4, "little") + source + b"\x85R.")

    pickle.loads(payload(live))  # the payload is live: unpickling it runs code
    assert live.exists()
    path = archive_with(tmp_path, [stored("m/data.pkl", payload(marker))])
    archive = codeparse.open_archive(path)
    assert archive.files
    code, out, _ = run_cli(capsys, "check", path)
    run_cli(capsys, "parse", path, "--format", "jsonl")
    assert code == 1 and "CP330" in out  # the pickle scan names builtins.exec, never runs it
    assert not marker.exists()


def test_debug_pkl_naming_a_forbidden_global(tmp_path):
    marker = tmp_path / "pwned"
    source = f"open({str(marker)!r}, 'w')".encode()
    evil = b"\x80\x02cos\nsystem\nX" + len(source).to_bytes(4, "little") + source + b"\x85R."
    with zipfile.ZipFile(CUSTOM_SCRIPT) as zf:
        entries = [stored(i.filename, zf.read(i)) for i in zf.infolist()]
    target = "custom_model.script/code/__torch__.py.debug_pkl"
    entries = [stored(target, evil) if e[0] == target else e for e in entries]
    path = tmp_path / "evil_debug.pt"
    path.write_bytes(raw_zip(entries))
    archive = codeparse.open_archive(path)
    [rejected] = [f for f in archive.findings if f.code == "CP314"]
    assert rejected.args == {"entry": target, "global_name": "os.system"} and rejected.span is None
    assert not marker.exists()
    # The rest of the archive is still checked: the branch is found, without its origin now,
    # and the other files keep their source mapping.
    [branch] = [f for f in archive.findings if f.code == "CP201"]
    assert branch.origin is None
    assert any(f.origin is not None for f in archive.findings if f.code == "CP202")


def test_every_check_and_archive_code_is_produced(tmp_path):
    """Each condition finding and archive code (CP201-CP219, CP304-CP339 but the model
    files' own) is produced by some input here."""
    from codeparse.contract.codes import CODES

    produced: set[str] = set()
    # Condition codes over the fixture archives (CP201-CP208).
    for path in sorted((ROOT / "fixtures" / "archives").glob("*.script.pt")):
        produced.update(f.code for f in codeparse.open_archive(path).findings)
    def write(name: str, data: bytes) -> Path:
        (tmp_path / name).write_bytes(data)
        return tmp_path / name

    produced.update(codes_of(write("a.pt", b"nope"))[1])  # CP304
    produced.update(codes_of(write("b.pt", CUSTOM_SCRIPT.read_bytes()[:500]))[1])  # CP305
    produced.update(codes_of(write("c.pt", raw_zip([stored("m/other.txt", b"x")])))[1])  # CP307
    produced.update(codes_of(write("u.code", b"def h(x: int) -> int:\n  if y:\n    return x\n"
                                             b"  else:\n    return 1\n"))[1])  # CP207
    if PYTORCH1.exists():
        produced.update(codes_of(PYTORCH1)[1])
    unresolved = (b"class M(Module):\n  __parameters__ = []\n  __buffers__ = []\n  training : bool\n"
                  b"  sub : __torch__.Missing\n  def forward(self: __torch__.M,\n    x: Tensor) -> Tensor:\n"
                  b"    _0 = __torch__.nowhere(x)\n    return (self).helper(_0, )\n")
    path = tmp_path / "unresolved.pt"
    path.write_bytes(raw_zip([stored("m/code/__torch__.py", unresolved), stored("m/code/__torch__.py", b""),
                              stored("m/code/__torch__/x.py.debug_pkl", b"not a pickle"),
                              # A finding in x.py asks for its origin, so `check` reads its debug info (CP315).
                              stored("m/code/__torch__/x.py", b"def f(x: int) -> int:\n  y = = x\n  return x\n"),
                              stored("m/data.pkl", b"\x80\x02c__torch__\nM\nq\x00.")]))
    produced.update(codes_of(path)[1])
    produced.update(codes_of(path, max_entries=1)[1])
    mixed = tmp_path / "mixed.pt"
    mixed.write_bytes(raw_zip([stored("m/version", b"3"), stored("m/code/__torch__.py", GOOD_CODE),
                               stored("m/code/__torch__/s.py",
                                      b"class S(Module):\n  __parameters__ = []\n  __buffers__ = []\n"
                                      b"  training : bool\n  def other(self: __torch__.S) -> int:\n    return 1\n"),
                               stored("m/code/__torch__/t.py",
                                      b"class T(Module):\n  __parameters__ = []\n  __buffers__ = []\n"
                                      b"  training : bool\n  s : __torch__.S\n"
                                      b"  def forward(self: __torch__.T,\n    x: Tensor) -> Tensor:\n"
                                      b"    s = self.s\n    _0 = self.nothere\n    return (s).forward(x, )\n"),
                               stored("m/code/__torch__/u.py", b"\x00"),
                               stored("/abs/code/x.py", b"")]))
    produced.update(codes_of(mixed)[1])
    produced.update(codes_of(archive_with(tmp_path, [("m/code/__torch__/d.py", 8, zeros_stream(4), 0, 4 * MB)],
                                          name="dense.pt"))[1])
    produced.update(codes_of(archive_with(tmp_path, [("m/code/__torch__/l.py", 8, zeros_stream(2), 0, 100)],
                                          name="liar.pt"))[1])
    produced.update(codes_of(CUSTOM_SCRIPT, max_total_bytes=4000)[1])
    produced.update(codes_of(CUSTOM_SCRIPT, max_entry_bytes=100)[1])
    dbg = tmp_path / "dbg.pt"
    dbg.write_bytes(raw_zip([stored("m/version", b"3"), stored("m/code/__torch__.py", GOOD_CODE),
                             stored("m/code/__torch__.py.debug_pkl", b"\x80\x02cos\nsystem\n.")]))
    produced.update(codes_of(dbg)[1])
    mine = {c for c in CODES if "CP201" <= c <= "CP219" or "CP304" <= c <= "CP339"}  # CP340-: test_hostile.py
    mine -= {c for c in CODES if "CP322" <= c <= "CP339"}  # model files': tests/test_model_files.py
    assert mine - produced == set()
    assert produced <= set(CODES)


# ------------------------------------------------------------------- fuzzing

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SMALL = ROOT / "fixtures" / "archives" / "cond_tensor_value.script.pt"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=1 << 16),
       flips=st.lists(st.tuples(st.integers(min_value=0, max_value=1 << 16), st.integers(1, 255)), max_size=8))
def test_damaged_archives_never_raise(tmp_path, cut, flips):
    """Truncated or corrupted archives give findings or an unreadable report, never an exception."""
    data = bytearray(_SMALL.read_bytes())
    for at, xor in flips:
        data[at % len(data)] ^= xor
    if cut:
        data = data[: cut % (len(data) + 1)]
    path = tmp_path / "fuzzed.pt"
    path.write_bytes(bytes(data))
    report = check_input(str(path), Policy())
    assert report.path == str(path)
    if not report.readable:
        assert report.findings and report.findings[0].span is None


def test_the_first_bytes_of_stored_entries_are_the_ones_zipfile_gives(monkeypatch):
    """ZipReader.head reads stored entries straight from the file: over fixture archives
    and 1,000 copies with a byte of a local header (or the data after it) changed, every
    head is zipfile's (bytes, or None where zipfile refuses)."""
    import random

    from codeparse.archive import torchscript as archive
    from codeparse.files import zipread
    from codeparse.contract.records import Limits

    rng = random.Random(3)
    paths = sorted((ROOT / "fixtures" / "archives").glob("*.pt"))[::25] + [ROOT / "fixtures" / "files" / "exported.pt2"]
    compared = 0

    def heads(data: bytes, fast: bool) -> list:
        try:
            reader, _ = zipread.open_zip("x.pt", Limits(), data)
        except codeparse.InputError:
            return []
        if not fast:
            monkeypatch.setattr(archive.ZipReader, "_stored_head", lambda self, info, size: None)
        try:
            return [reader.head(n, size) for n in reader.names for size in (2, 4, 64, 5000)]
        finally:
            monkeypatch.undo()

    for path in paths:
        data = path.read_bytes()
        infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
        for k in range(1 + 100):
            changed = bytearray(data)
            if k:
                info = rng.choice(infos)
                at = info.header_offset + rng.randrange(30 + len(info.filename) + 8)
                if at < len(changed):
                    changed[at] = rng.randrange(256)
            got = heads(bytes(changed), True)
            assert got == heads(bytes(changed), False)
            compared += len(got)
    assert compared > 5000
