"""A global the pickle only names can still run while the file loads.

The opcode walk sees which globals a pickle calls with REDUCE, INST or OBJ.  But the
loader also calls methods it looks up on objects whose attributes the pickle itself set:
APPEND calls ``obj.append``, a second BUILD calls ``obj.__setstate__``, SETITEM calls
``obj.__setitem__``, and SETITEM on a module's ``__dict__`` rebinds an allowlisted name
before it is called.  An empty SETITEMS, APPENDS or ADDITEMS leaves its target where a
later REDUCE calls it.  Each file below makes ``pickle.loads`` write a canary file (run
here, in its own process); each must fail the gate, because a global that is neither in
torch's ``weights_only`` allowlist nor a known data type is an error however it is used.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from codeparse.gate.run import check_data


def _s(text: str) -> bytes:
    """BINUNICODE."""
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _write_canary(path: Path) -> bytes:
    return _s(f"open({str(path)!r}, 'w').close()")


def _files(canary: Path) -> dict[str, bytes]:
    code = _write_canary(canary)
    dbm_fields = [("_dirfile", _s(str(canary))), ("_datfile", _s("/dev/null")), ("_bakfile", _s(str(canary) + ".bak")),
                  ("_index", b"}"), ("_readonly", b"\x89"), ("_mode", b"J" + struct.pack("<i", 0o644)),
                  ("_os", b"cdbm.dumb\n_os\n")]
    return {
        # a global stored in a data type's state, called by APPEND / by a second BUILD
        "append": b"\x80\x02cargparse\nNamespace\n)\x81}" + _s("append") + b"ccProfile\nrun\nsb" + code + b"a.",
        "setstate": b"\x80\x02cargparse\nNamespace\n)\x81}" + _s("__setstate__") + b"ccProfile\nrun\nsb" + code + b"b.",
        # a stdlib class instantiated and given state, whose __setitem__ appends to a file
        "setitem": (b"\x80\x02cdbm.dumb\n_Database\n)\x81}(" + b"".join(_s(k) + v for k, v in dbm_fields) + b"ub"
                    + _s("written by pickle.loads") + _s("v") + b"s."),
        # an empty SETITEMS / APPENDS / ADDITEMS leaves the global for the REDUCE that follows
        "empty_setitems": b"\x80\x02ccProfile\nrun\n(u" + code + b"\x85R.",
        "empty_appends": (b"\x80\x04" + _s("dbm.dumb") + _s("_os.system") + b"\x93(e"
                          + _s(f"touch {canary}") + b"\x85R."),
        "empty_additems": b"\x80\x04clogging\nFileHandler\n(\x90" + _s(str(canary)) + b"\x85R0N.",
        # an allowlisted name rebound through its module's __dict__, then called
        "module_dict": (b"\x80\x02ctorch._utils\n__dict__\n" + _s("_rebuild_tensor_v2") + b"ccProfile\nrun\ns0"
                        + b"ctorch._utils\n_rebuild_tensor_v2\n" + code + b"\x85R."),
    }


# the module_dict file imports torch._utils when it loads
NAMES = [pytest.param(n, marks=pytest.mark.torch) if n == "module_dict" else n for n in sorted(_files(Path("/x")))]


@pytest.mark.parametrize("name", NAMES)
def test_pickle_loads_runs_it(name, tmp_path):
    canary = tmp_path / "canary"
    path = tmp_path / f"{name}.pkl"
    path.write_bytes(_files(canary)[name])
    subprocess.run([sys.executable, "-c", f"import pickle; pickle.loads(open({str(path)!r}, 'rb').read())"],
                   cwd=tmp_path, capture_output=True, timeout=60)
    assert canary.exists(), f"{name}: the loader did not run the payload, so the file proves nothing"


@pytest.mark.parametrize("name", NAMES)
def test_the_gate_stops_it(name, tmp_path):
    path = tmp_path / f"{name}.pkl"
    path.write_bytes(_files(tmp_path / "canary")[name])
    report = check_data([str(path)])
    errors = [f for item in report["inputs"] for f in item["findings"] if f["severity"] == "error"]
    assert report["exit_code"] == 1, report
    assert {f["code"] for f in errors} & {"CP330", "CP331", "CP334"}, errors
