"""Hostile inputs, second round (issue 15): one test per row of the issue's table.

Every input is generated here, at test time (the large ones too: nothing big is
committed), and each test checks the finding or the clean result the row should give,
and that it comes within the row's bounds (10 s of CPU, 1 GB) on a loaded 2-core
machine.  Memory is measured where it matters in a child process (``os.wait4``'s
``ru_maxrss`` of that process alone), since tracemalloc would slow the pure-Python
unpickler tenfold.
"""

from __future__ import annotations

import json
import os
import pickle
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

import codeparse
from codeparse.check import check_input
from codeparse.models import Policy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_archive_bad import GOOD_CODE, MB, codes_of, peak_memory, raw_zip, run_cli, stored  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CPU_BOUND = 10.0  # seconds of CPU per row
MEMORY_BOUND = 1 << 30


def cpu(fn):
    """``(fn(), CPU seconds it took)``."""
    start = time.process_time()
    result = fn()
    return result, time.process_time() - start


def run_measured(*argv: str, cwd: Path | None = None, stdin=None) -> tuple[int, str, str, int]:
    """Run ``codeparse argv`` in a child process: exit code, stdout, stderr, peak RSS in bytes."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with open(os.devnull, "rb") as null:
        out_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"hostile-{os.getpid()}-out"
        err_path = out_path.with_suffix(".err")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen([sys.executable, "-m", "codeparse", *map(str, argv)], stdout=out, stderr=err,
                                    stdin=stdin or null, cwd=cwd, env=env)
            _pid, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
    try:
        return proc.returncode, out_path.read_text(), err_path.read_text(), usage.ru_maxrss * 1024
    finally:
        out_path.unlink()
        err_path.unlink()


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def deflated(name: str, data: bytes) -> tuple:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    payload = c.compress(data) + c.flush()
    return (name, 8, payload, zlib.crc32(data), len(data))


# ------------------------------------------------------------------------ zip rows


def with_end_record_count(data: bytes, count: int) -> bytes:
    """``data`` (a zip) with its end-of-archive record announcing ``count`` entries."""
    at = data.rfind(b"PK\x05\x06")
    return data[:at + 8] + struct.pack("<HH", count, count) + data[at + 12:]


def test_end_record_saying_3_cannot_hide_60000_entries(tmp_path, capsys):
    entries = [stored("m/version", b"3"), stored("m/code/__torch__.py", GOOD_CODE)]
    entries += [stored(f"m/d/{i}", b"") for i in range(60_000)]
    path = write(tmp_path / "liar.pt", with_end_record_count(raw_zip(entries), 3))
    assert path.stat().st_size > 4 * MB
    ((readable, codes), peak), seconds = cpu(lambda: peak_memory(lambda: codes_of(path, max_entries=10)))
    assert (readable, codes) == (False, ["CP308"])
    assert peak < 8 * MB and seconds < CPU_BOUND  # stopped after 11 records: zipfile never parsed them
    code, _, err = run_cli(capsys, "check", path, "--max-entries", "10")
    assert code == 2
    assert err == f"{path}: CP308 the archive has at least 11 entries; the limit is 10 (--max-entries)\n"
    # Within the limit the walk agrees with zipfile, and the archive is read.
    readable, codes = codes_of(path, max_entries=70_000)
    assert readable and "CP201" in codes


def test_fifty_deflated_entries_of_one_mib_are_held_to_the_ratio(tmp_path):
    line = b"  _0 = torch.add(x, 1)\n"
    body = b"def f(x: Tensor) -> Tensor:\n" + line * (MB // len(line))
    entries = [stored("m/version", b"3"), stored("m/code/__torch__.py", GOOD_CODE)]
    entries += [deflated(f"m/code/__torch__/e{i}.py", body[:MB]) for i in range(50)]
    path = write(tmp_path / "dense.pt", raw_zip(entries))
    assert path.stat().st_size < 200_000
    (readable, codes), seconds = cpu(lambda: codes_of(path))
    assert readable and codes.count("CP311") == 50 and "CP201" in codes
    assert seconds < CPU_BOUND


def test_many_small_dense_entries_are_held_to_the_archive_ratio(tmp_path):
    body = b" " * 4000 + b"\n"  # under the per-entry floor; 174 times its stored size
    entries = [stored("m/version", b"3"), stored("m/code/__torch__.py", GOOD_CODE)]
    entries += [deflated(f"m/code/__torch__/s{i}.py", body) for i in range(600)]
    path = write(tmp_path / "small.pt", raw_zip(entries))
    archive = codeparse.open_archive(path, Policy(max_ratio=100))
    refused = [f for f in archive.findings if f.code == "CP311"]
    read = len(archive.files) - 1
    # Entries are read until 1 MiB has been inflated at more than 100 times its stored size.
    assert refused and read * len(body) <= MB + len(body)
    assert read + len(refused) == 600


def test_overlapping_entries_are_not_read(tmp_path):
    a, b = b"def a(x: int) -> int:\n  return x\n", b"def b(x: int) -> int:\n  return x\n"
    data = bytearray(raw_zip([stored("m/version", b"3"), stored("m/code/__torch__.py", GOOD_CODE),
                              stored("m/code/__torch__/a.py", a), stored("m/code/__torch__/b.py", b)]))
    name = b"m/code/__torch__/a.py"
    central = data.rfind(name) - 46  # a's central directory record: stretch its data over b's header
    struct.pack_into("<I", data, central + 20, len(a) + 40)
    path = write(tmp_path / "overlap.pt", bytes(data))
    archive = codeparse.open_archive(path)
    [overlap] = [f for f in archive.findings if f.code == "CP341"]
    assert overlap.args == {"entry": "m/code/__torch__/b.py", "other": "m/code/__torch__/a.py"}
    assert [f.path.split("!", 1)[1] for f in archive.files] == ["m/code/__torch__.py"]


# --------------------------------------------------------------------- pickle rows


def archive_with_debug(tmp_path: Path, debug: bytes, name: str = "dbg.pt") -> Path:
    return write(tmp_path / name, raw_zip([stored("m/version", b"3"), stored("m/code/__torch__.py", GOOD_CODE),
                                           stored("m/code/__torch__.py.debug_pkl", debug)]))


def test_memo_index_0x0fffffff_in_debug_pkl(tmp_path):
    evil = b"\x80\x02K\x01r\xff\xff\xff\x0f."  # LONG_BINPUT 0x0fffffff: 4 GB for the C unpickler
    path = archive_with_debug(tmp_path, evil.ljust(431, b" "))
    ((readable, codes), peak), seconds = cpu(lambda: peak_memory(lambda: codes_of(path)))
    assert readable and "CP343" in codes and "CP201" in codes
    assert peak < 32 * MB and seconds < CPU_BOUND
    [finding] = [f for f in codeparse.open_archive(path).findings if f.code == "CP343"]
    assert finding.args["reason"] == "memo index 268435455 after 3 opcodes"


def test_list_builder_copies_are_counted():
    """A list copied by ``build_intlist`` a million times from one memo reference stops early."""
    from codeparse.debuginfo import PickleLimit, read_debug_pkl

    data = (b"\x80\x02ctorch.jit._pickle\nbuild_intlist\nq\x00(" + b"K\x01" * 20_000 + b"lq\x01"
            + b"(" + b"h\x00h\x01\x85R" * 50_000 + b"t.")
    with pytest.raises(PickleLimit, match="objects built"):
        cpu(lambda: read_debug_pkl(data))


def test_start_line_10_to_the_5000_in_debug_pkl(tmp_path, capsys):
    text = GOOD_CODE.decode()
    rows = ((0, ((text, "model.py", 10**5000), 0, len(text))),)
    debug = pickle.dumps(rows, protocol=2)
    assert 2000 < len(debug) < 4000
    path = archive_with_debug(tmp_path, debug)
    readable, codes = codes_of(path)
    assert readable and "CP343" in codes and "CP201" in codes
    for fmt in ("table", "json", "jsonl", "sarif"):
        code, out, err = run_cli(capsys, "check", path, "--format", fmt)
        assert code == 1 and "internal error" not in out + err  # CP343 is an error
        if fmt in ("json", "sarif"):
            json.loads(out)  # readable by Python's json: no 5,000-digit number anywhere
    # A line number that fits in a pickle integer but not in the sane range is refused too.
    rows = ((0, ((text, "model.py", 1 << 35), 0, len(text))),)
    [finding] = [f for f in codeparse.open_archive(archive_with_debug(tmp_path, pickle.dumps(rows, 2), "b.pt")).findings
                 if f.code == "CP343"]
    assert finding.args["reason"] == "a starting line number out of range (34359738368)"


def bytecode_archive(tmp_path: Path, bytecode: bytes, name: str = "m.ptl") -> Path:
    return write(tmp_path / name, raw_zip([stored("m/version", b"8"), stored("m/code/__torch__.py", GOOD_CODE),
                                           stored("m/bytecode.pkl", bytecode)]))


def test_bytecode_n_methods_times_m_shared_operators(tmp_path):
    def bytecode(n: int, m: int) -> bytes:
        code = (("instructions", ()), ("operators", tuple((f"aten::op{j}", "") for j in range(m))))
        return pickle.dumps((8, *[(f"__torch__.M.m{i}", code) for i in range(n)]), protocol=2)

    small = bytecode(10, 10)
    assert len(small) < 600  # the row's 556 bytes: pickle shares the code table by reference
    from codeparse.legacy import read_bytecode

    info, seconds = cpu(lambda: read_bytecode(bytecode(4000, 4000)))  # 16M pairs if walked per method
    assert (len(info.methods), len(info.operators)) == (4000, 4000)
    assert seconds < 2
    readable, codes = codes_of(bytecode_archive(tmp_path, small))
    assert readable and "CP351" in codes


def test_thirty_mb_bytecode_pkl_of_memoised_globals(tmp_path):
    parts, size, i = [b"\x80\x02(K\x08"], 0, 0
    while size < 30 * MB:
        part = b"c__torch__\nG%d\nr" % i + struct.pack("<I", i + 1)
        parts.append(part)
        size += len(part)
        i += 1
    path = bytecode_archive(tmp_path, b"".join(parts) + b"t.")
    code, out, _err, rss = run_measured("check", path, "--format", "json")
    report = json.loads(out)
    [finding] = [f for f in report["inputs"][0]["findings"] if f["code"] == "CP343"]
    assert finding["args"]["reason"] == "more than 10000 distinct globals"
    assert code == 1 and rss < MEMORY_BOUND
    # The same size of references to one memoised global stops at the object bound.
    shared = bytecode_archive(tmp_path, b"\x80\x02(K\x08c__torch__\nG\nq\x00" + b"h\x00" * (15 * MB) + b"t.", "s.ptl")
    (readable, codes), seconds = cpu(lambda: codes_of(shared))
    assert readable and "CP343" in codes and seconds < CPU_BOUND


# ------------------------------------------------------------- module tree, model.json


def test_module_tree_over_classes_depth_22(tmp_path):
    files = []
    for i in range(23):
        subs = "" if i == 22 else f"  a : __torch__.C{i + 1}\n  b : __torch__.C{i + 1}\n"
        body = (f"class C{i}(Module):\n  __parameters__ = []\n  __buffers__ = []\n  training : bool\n{subs}"
                f"  def forward(self: __torch__.C{i},\n    x: Tensor) -> Tensor:\n    return x\n")
        files.append(body)
    path = write(tmp_path / "tree.pt", raw_zip([stored("m/version", b"3"),
                                                stored("m/code/__torch__.py", "".join(files).encode()),
                                                stored("m/data.pkl", b"\x80\x02c__torch__\nC0\nq\x00.")]))
    archive, seconds = cpu(lambda: codeparse.open_archive(path))
    assert seconds < CPU_BOUND
    nodes, node = 0, archive.module_tree
    while node.children:  # each class is expanded once: `a` holds the tree, `b` points to it
        a, b = node.children
        assert (a.same_as, b.same_as, b.children) == (None, a.path, [])
        nodes += 2
        node = a
    assert nodes == 44 and node.type == "__torch__.C22"
    assert len(archive.model_dump_json()) < 100_000  # 4 million nodes if expanded per path


def test_model_json_fifty_thousand_attributes_five_thousand_reads(tmp_path):
    attrs = [{"name": f"a{i}", "type": "int", "id": i} for i in range(50_000)]
    model = {"protoVersion": 2, "mainModule": {"name": "m", "attributes": attrs,
                                               "torchscriptArena": {"key": "code/m.py"}}}
    reads = "".join(f"  _{i} = self.q{i}.z\n" for i in range(5000))
    code = f"op_version_set = 0\ndef forward(self,\n    x):\n{reads}  return x\n".encode()
    path = write(tmp_path / "attrs.pt", raw_zip([stored("m/version", b"1"), stored("m/model.json", json.dumps(model).encode()),
                                                 stored("m/code/m.py", code)]))
    report, seconds = cpu(lambda: check_input(str(path), Policy()))
    assert report.readable and report.files == 1 and seconds < CPU_BOUND


def test_model_json_entry_named_with_a_bang(tmp_path, capsys):
    model = {"protoVersion": 2, "mainModule": {"name": "m", "torchscriptArena": {"key": "code/a!b.py"}}}
    code = b"op_version_set = 0\ndef forward(self,\n    x):\n  return x\n"
    path = write(tmp_path / "bang.pt", raw_zip([stored("m/version", b"1"), stored("m/model.json", json.dumps(model).encode()),
                                                stored("m/code/a!b.py", code)]))
    status, out, err = run_cli(capsys, "parse", path, "--format", "jsonl")
    assert status == 0 and "internal error" not in err
    assert json.loads(out)["path"] == f"{path}!m/code/a!b.py"
    status, out, err = run_cli(capsys, "check", path)
    assert status == 0 and "internal error" not in out + err
