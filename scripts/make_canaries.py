"""Write fixtures/canaries/: files built to run code when a loader opens them, and clean twins.

Every hostile file does one harmless thing when it is loaded: it writes a file (``CANARY``,
or for a C++ build its sources) into the loader's working directory, empty before.  Each class
of file is one way the bytes can make a loader run code while a scanner reads them
differently (see ``CLASSES``).  The clean twins are what torch 2.13 and ``pickle`` write
for ordinary models, state dicts and checkpoints.

The loaders are then really run on every file (:func:`run_loaders`: ``pickle.loads``,
``torch.load(weights_only=False)``, ``torch.jit.load``; each file in its own forked
process with its own empty working directory and a timeout), and which of them made the
canary appear is written to ``fixtures/canaries/manifest.json``.  ``tests/test_canaries.py``
runs the loaders again (so the record cannot go stale) and checks that ``codeparse check``
fails every file whose canary appears and passes every clean twin.

    python scripts/make_canaries.py            # rewrite the files and the manifest
    python scripts/make_canaries.py --check    # exit 1 if a rewrite would change anything

Deterministic: the same torch and Python write the same bytes.  Nothing here is ever
loaded by codeparse; the files exist to be refused.
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "canaries"
MANIFEST_PATH = OUT / "manifest.json"
CANARY = "CANARY"
PY = "open('CANARY', 'w').close()"  # Python source the payloads run
SH = "touch CANARY"  # shell command the payloads run
LOADERS = ("pickle", "torch_load", "jit_load")
TIMEOUT = 30.0  # seconds per file and loader

# The classes of bypass, as the manifest names them.
CLASSES = {
    "callable": "a callable that no list names, called by REDUCE",
    "dotted": "a dotted name resolved attribute by attribute from an allowed module",
    "py2_name": "a Python 2 name the unpickler maps to another module",
    "computed_name": "a global whose name is computed at load time",
    "padding": "opcodes enough to pass the walk's cap before the payload",
    "zip": "a zip the scanner and torch's reader read differently",
    "legacy": "the legacy torch.save stream or tar format",
    "polyglot": "a file that is two formats at once",
    "old_protocol": "a protocol 0/1 or N0-prefixed pickle",
}


# ----------------------------------------------------------------------------- pickle bytes

def s(text: str) -> bytes:
    """A str (BINUNICODE)."""
    data = text.encode("utf-8")
    return b"X" + struct.pack("<I", len(data)) + data


def b(data: bytes) -> bytes:
    """A bytes object (SHORT_BINBYTES / BINBYTES, protocol 3+)."""
    return (b"C" + bytes([len(data)]) if len(data) < 256 else b"B" + struct.pack("<I", len(data))) + data


def i(n: int) -> bytes:
    return b"J" + struct.pack("<i", n)


NONE, TRUE, FALSE = b"N", b"\x88", b"\x89"


def g(module: str, name: str) -> bytes:
    """GLOBAL module name."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def sg(module: str, name: str) -> bytes:
    """STACK_GLOBAL of two pushed strings (protocol 4)."""
    return s(module) + s(name) + b"\x93"


def tup(*items: bytes) -> bytes:
    return b"(" + b"".join(items) + b"t"


def lst(*items: bytes) -> bytes:
    return b"]" + b"(" + b"".join(items) + b"e"


def dct(*pairs: tuple[bytes, bytes]) -> bytes:
    return b"}" + b"(" + b"".join(k + v for k, v in pairs) + b"u"


def call(fn: bytes, *args: bytes) -> bytes:
    return fn + tup(*args) + b"R"


def pk(body: bytes, proto: Optional[int] = 2) -> bytes:
    return (b"\x80" + bytes([proto]) if proto is not None else b"") + body + b"."


# --------------------------------------------------------------------- the hostile pickles

def _fork_exec() -> bytes:
    args = [lst(b(b"/bin/sh"), b(b"-c"), b(SH.encode())), tup(b(b"/bin/sh")), TRUE, tup(), NONE, NONE,
            *[i(-1)] * 6, i(3), i(4), TRUE, FALSE, i(-1), NONE, NONE, NONE, i(-1), NONE, FALSE]
    return pk(call(g("_posixsubprocess", "fork_exec"), *args), 4)


def _load_inline() -> bytes:
    # load_inline(name, cpp_sources, ..., build_directory) writes the sources into the build
    # folder before it compiles; a `$` in the name breaks the ninja file, so no compiler runs.
    import inspect

    from torch.utils import cpp_extension

    names = list(inspect.signature(cpp_extension.load_inline).parameters)
    args = [s("canary$"), s("int canary() { return 1; }")] + [NONE] * (names.index("build_directory") - 2)
    return pk(call(g("torch.utils.cpp_extension", "load_inline"), *args, s(".")))


def _getter_chain(getter: str, args: bytes, final: Optional[bytes]) -> bytes:
    module = call(g("_frozen_importlib", "_gcd_import"), s("os"))
    got = call(g("_operator", getter), *args) + tup(module) + b"R"
    return pk(got + (final or b""))


def callables() -> dict[str, bytes]:
    """Callables that no list names, each called with arguments that make the canary."""
    return {
        "cprofile_run.pkl": pk(call(g("cProfile", "run"), s(PY))),
        "profile_run.pkl": pk(call(g("profile", "run"), s(PY))),
        "posixsubprocess_fork_exec.pkl": _fork_exec(),
        "cpp_extension_load_inline.pkl": _load_inline(),
        "timeit_timeit.pkl": pk(call(g("timeit", "timeit"), s("pass"), s(PY))),
        "timeit_repeat.pkl": pk(call(g("timeit", "repeat"), s("pass"), s(PY))),
        "pdb_run.pkl": pk(call(g("pdb", "run"), s(PY))),
        "runpy_run_code.pkl": pk(call(g("runpy", "_run_code"), s(PY), dct())),
        "import_attrgetter_chain.pkl": _getter_chain("attrgetter", (s("system"),), tup(s(SH)) + b"R"),
        "import_methodcaller_chain.pkl": _getter_chain("methodcaller", (s("system"), s(SH)), None),
        "functools_partial.pkl": pk(call(g("_functools", "partial"), g("cProfile", "run"), s(PY)) + tup() + b"R"),
        "builtins_map.pkl": pk(call(g("builtins", "list"), call(g("builtins", "map"), g("cProfile", "run"),
                                                                  lst(s(PY))))),
        "doctest_examples.pkl": pk(call(g("doctest", "run_docstring_examples"), s(f">>> {PY}\n"), dct())),
        "pydoc_pipepager.pkl": pk(call(g("pydoc", "pipepager"), s("x"), s(SH))),
        "osx_support_read_output.pkl": pk(call(g("_osx_support", "_read_output"), s(SH))),
        "logging_dictconfig.pkl": pk(call(g("logging.config", "dictConfig"), dct(
            (s("version"), i(1)),
            (s("handlers"), dct((s("h"), dct((s("()"), s("cProfile.run")), (s("statement"), s(PY))))))))),
        "collect_env_run.pkl": pk(call(g("torch.utils.collect_env", "run"), s(SH))),
        "typing_eval_type.pkl": pk(call(g("typing", "_eval_type"), call(g("typing", "ForwardRef"), s(PY)),
                                        dct(), dct())),
        "codecs_open.pkl": pk(call(g("codecs", "open"), s(CANARY), s("w"))),
        "logging_filehandler.pkl": pk(call(g("logging", "FileHandler"), s(CANARY))),
        "zipfile_zipfile.pkl": pk(call(g("zipfile", "ZipFile"), s(CANARY), s("w"))),
        "pathlib_method.pkl": pk(call(sg("pathlib", "Path.write_text"), call(g("pathlib", "Path"), s(CANARY)),
                                      s("x")), 4),
        "main_dotted.pkl": pk(call(sg("__main__", "os.system"), s(SH)), 4),
    }


def dotted() -> dict[str, bytes]:
    return {
        "stack_global_torch_os_system.pkl": pk(call(sg("torch.nn.modules.module", "torch.os.system"), s(SH)), 4),
        "global_dotted_proto4.pkl": pk(call(g("torch.nn.modules.module", "torch.os.system"), s(SH)), 4),
        "stack_global_torch_utils.pkl": pk(call(sg("torch._utils", "torch.os.system"), s(SH)), 4),
    }


def py2_names() -> dict[str, bytes]:
    return {
        "py2_stringio_open.pkl": pk(call(g("StringIO", "open"), s(CANARY), s("w"))),
        "py2_builtin_reduce.pkl": pk(call(g("__builtin__", "reduce"), g("runpy", "_run_code"), lst(s(PY), dct()))),
        "py2_dumbdbm_open.pkl": pk(call(g("dumbdbm", "open"), s(CANARY), s("c"))),
    }


def computed_names() -> dict[str, bytes]:
    name = call(g("builtins", "str"), s("posix"))
    return {
        "stack_global_computed.pkl": pk(name + s("system") + b"\x93" + tup(s(SH)) + b"R", 4),
    }


def padded(ops: int) -> bytes:
    """A pickle with ``ops`` NONE/POP pairs before its payload (the walk's cap)."""
    return pk(b"N0" * (ops // 2 + 1) + call(g("cProfile", "run"), s(PY)))


# ------------------------------------------------------------------------------ containers

def _local(name: str, data: bytes, method: int = zipfile.ZIP_STORED, local_name: Optional[str] = None) -> tuple:
    raw = data
    if method:
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        raw = c.compress(data) + c.flush()
    crc = zlib.crc32(data)
    stored_name = (local_name or name).encode()
    header = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, len(raw), len(data),
                         len(stored_name), 0) + stored_name
    return header + raw, (name, method, crc, len(raw), len(data))


def _central(entry: tuple, offset: int) -> bytes:
    name, method, crc, csize, size = entry
    raw = name.encode()
    return struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, crc, csize, size,
                       len(raw), 0, 0, 0, 0, 0, offset) + raw


def _end(count: int, size: int, offset: int) -> bytes:
    return struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, count, count, size, offset, 0)


def raw_zip(entries: list[tuple[str, bytes]], local_names: Optional[dict] = None) -> bytes:
    """A zip of stored entries written by hand (duplicates and any names allowed)."""
    body, central = b"", b""
    for name, data in entries:
        local, entry = _local(name, data, local_name=(local_names or {}).get(name))
        central += _central(entry, len(body))
        body += local
    return body + central + _end(len(entries), len(central), len(body))


def _checkpoint_entries(data_pkl: bytes, root: str = "archive", name: str = "data.pkl") -> list[tuple[str, bytes]]:
    return [(f"{root}/{name}", data_pkl), (f"{root}/byteorder", b"little"), (f"{root}/version", b"3\n")]


CLEAN_DICT = pk(dct((s("epoch"), i(3)), (s("lr"), b"G" + struct.pack(">d", 0.5))))


def two_central_directories(evil: bytes) -> bytes:
    """torch's reader takes the central directory at the offset the end record stores;
    ``zipfile`` takes the one that ends where the end record starts.  The first lists
    the hostile ``data.pkl``, the second a clean one of the same name length."""
    good_local, good = _local("archive/data.pkl", CLEAN_DICT)
    bad_local, bad = _local("archive/data.pkl", evil)
    rest = [_local(n, d) for n, d in _checkpoint_entries(b"")[1:]]

    def entries(first_local: bytes, at: int) -> tuple[bytes, list[int]]:
        data, offsets = first_local, [at]
        for local, _ in rest:
            offsets.append(at + len(data))
            data += local
        return data, offsets

    seen_by_torch, torch_offsets = entries(bad_local, 0)
    body = seen_by_torch + bytes(512)  # room: zipfile's offsets are the stored ones moved up
    seen_by_zipfile, zipfile_offsets = entries(good_local, len(body))
    body += seen_by_zipfile
    listed = [bad] + [e for _, e in rest]
    first = b"".join(_central(e, o) for e, o in zip(listed, torch_offsets))
    first_at = len(body)
    body += first
    # zipfile moves every offset by (its directory's position - the stored offset), here
    # len(first): the second directory's offsets are written that much lower.
    listed = [good] + [e for _, e in rest]
    body += b"".join(_central(e, o - len(first)) for e, o in zip(listed, zipfile_offsets))
    return body + _end(1 + len(rest), len(first), first_at)


def zips(evil: bytes) -> dict[str, bytes]:
    clean = CLEAN_DICT
    return {
        "zip_two_central_dirs.pt": two_central_directories(evil),
        "zip_upper_case_data_pkl.pt": raw_zip(_checkpoint_entries(evil, name="DATA.PKL")),
        "zip_case_collision.pt": raw_zip(_checkpoint_entries(clean) + [("archive/Data.pkl", evil)]),
        "zip_case_collision_first.pt": raw_zip([("archive/DATA.PKL", evil)] + _checkpoint_entries(clean)),
        "zip_duplicate_data_pkl.pt": raw_zip(_checkpoint_entries(clean) + [("archive/data.pkl", evil)]),
        "zip_duplicate_data_pkl_first.pt": raw_zip([("archive/data.pkl", evil)] + _checkpoint_entries(clean)),
        "zip_other_root.pt": raw_zip(_checkpoint_entries(evil, root="weights")),
        "zip_local_name_differs.pt": raw_zip(_checkpoint_entries(evil), {"archive/data.pkl": "archive/xxxx.pkl"}),
    }


MAGIC = 0x1950A86A20F9469CFC6C


def legacy_stream(main: bytes, keys: bytes) -> bytes:
    """torch.save's pre-zip stream: magic number, protocol version, sys_info, the object,
    the storage keys (then the storages' bytes, none here)."""
    magic = pk(b"\x8a\x0a" + MAGIC.to_bytes(10, "little"))
    proto = pk(b"M" + struct.pack("<H", 1001))
    info = pk(dct((s("protocol_version"), b"M" + struct.pack("<H", 1001)), (s("little_endian"), TRUE),
                  (s("type_sizes"), dct((s("short"), b"K\x02"), (s("int"), b"K\x04"), (s("long"), b"K\x04")))))
    return magic + proto + info + main + keys


def legacy_tar(members: dict[str, bytes], first: Optional[str] = None) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        names = ([first] if first else []) + ["storages", "tensors", "pickle"]
        for name in names:
            data = members.get(name, b"")
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def legacy(evil: bytes) -> dict[str, bytes]:
    zero = pk(b"K\x00")
    proto0 = b"N0" + evil[2:] if evil.startswith(b"\x80") else b"N0" + evil
    return {
        "legacy_second_pickle.pt": legacy_stream(CLEAN_DICT, proto0),
        "legacy_object_pickle.pt": legacy_stream(evil, pk(b"]")),
        "legacy_tar.pt": legacy_tar({"storages": zero + pk(b"]"), "tensors": zero, "pickle": evil}),
        "legacy_tar_storages.pt": legacy_tar({"storages": evil, "tensors": zero, "pickle": CLEAN_DICT}),
    }


def polyglots(evil: bytes) -> dict[str, bytes]:
    zero = pk(b"K\x00")
    return {
        "lfs_pointer_tar.pt": legacy_tar({"storages": zero + pk(b"]"), "tensors": zero, "pickle": evil},
                                         first="version https://git-lfs.github.com/spec/v1"),
    }


def old_protocols() -> dict[str, bytes]:
    return {
        "protocol0.pkl": b"ccProfile\nrun\n(V" + PY.encode() + b"\ntR.",
        "protocol1.pkl": pk(call(g("cProfile", "run"), s(PY)), None),
        "n0_prefixed.pkl": b"N0" + pk(call(g("cProfile", "run"), s(PY))),
    }


def hostile() -> dict[str, tuple[str, bytes]]:
    """Every hostile file: name -> (class, bytes)."""
    evil = pk(call(g("cProfile", "run"), s(PY)))
    out: dict[str, tuple[str, bytes]] = {}
    for cls, table in (("callable", callables()), ("dotted", dotted()), ("py2_name", py2_names()),
                       ("computed_name", computed_names()), ("zip", zips(evil)), ("legacy", legacy(evil)),
                       ("polyglot", polyglots(evil)), ("old_protocol", old_protocols())):
        for name, data in table.items():
            out[name] = (cls, data)
    return out


# ----------------------------------------------------------------------------- clean twins

def _stable_keys(data: bytes) -> bytes:
    """A legacy torch.save stream with its storage keys (memory addresses, as decimal
    strings) renumbered in order of appearance: the same bytes each run."""
    import re

    keys: dict[bytes, bytes] = {}

    def renumber(match: "re.Match[bytes]") -> bytes:
        digits = match.group(2)
        if len(digits) != int.from_bytes(match.group(1), "little"):
            return match.group(0)
        new = keys.setdefault(digits, str(len(keys)).encode())
        return b"X" + len(new).to_bytes(4, "little") + new

    return re.sub(rb"X(.\x00\x00\x00)(\d{6,20})", renumber, data, flags=re.S)


def clean() -> dict[str, bytes]:
    """What torch 2.13 and pickle write for ordinary files (built here, byte for byte)."""
    import argparse
    import collections
    import pathlib
    import pickle

    import torch

    torch.manual_seed(0)

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(2, 2, 1)
            self.act = torch.nn.ReLU()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.act(self.conv(x))

    Block.__module__ = "__main__"  # what torch.save(model) in a training script pickles
    Block.__qualname__ = "Block"
    model = Block()

    def saved(obj, **kw) -> bytes:
        buffer = io.BytesIO()
        torch.save(obj, buffer, **kw)
        return buffer.getvalue()

    def jit(module) -> bytes:
        buffer = io.BytesIO()
        torch.jit.save(module, buffer)
        return buffer.getvalue()

    small = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU())
    sys.modules["__main__"].Block = Block  # torch.save pickles the class by name
    try:
        whole = saved(model)
    finally:
        del sys.modules["__main__"].Block
    training = {"model": small.state_dict(), "epoch": 3, "out_dir": pathlib.PurePosixPath("runs/exp1"),
                "args": argparse.Namespace(lr=0.1, batch=8)}
    return {
        "clean_state_dict.pt": saved(small.state_dict()),
        "clean_state_dict_legacy.pt": _stable_keys(saved(small.state_dict(), _use_new_zipfile_serialization=False)),
        "clean_whole_model.pt": whole,
        "clean_training_checkpoint.pt": saved(training),
        "clean_tensors.pt": saved([torch.arange(4), torch.ones(2, dtype=torch.float16)]),
        "clean_script.pt": jit(torch.jit.script(small)),
        "clean_trace.pt": jit(torch.jit.trace(small, torch.ones(1, 3))),
        "clean_pickle_p0.pkl": pickle.dumps({"a": [1, 2.5, "x"], "b": (None, True)}, protocol=0),
        "clean_pickle_p2.pkl": pickle.dumps({"a": [1, 2.5, "x"], "b": (None, True)}, protocol=2),
        "clean_pickle_p4.pkl": pickle.dumps({"a": [1, 2.5, "x"], "b": (None, True)}, protocol=4),
        "clean_ordered_dict.pkl": pickle.dumps(collections.OrderedDict(a=1, b=[2]), protocol=2),
    }


# ------------------------------------------------------------------------------- loaders

_DRIVER = r"""
import json, os, signal, sys, time
kind = sys.argv[1]
jobs = json.loads(sys.stdin.read())
sys.stdin = open(os.devnull)
import torch  # imported once, before the forks: a pickle naming torch finds it loaded
import pickle
out = {}
for path, folder in jobs:
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.chdir(folder)
        fd = os.open(os.devnull, os.O_RDWR)
        for n in (0, 1, 2):
            os.dup2(fd, n)
        try:
            if kind == "pickle":
                with open(path, "rb") as handle:
                    pickle.loads(handle.read())
            elif kind == "torch_load":
                torch.load(path, weights_only=False)
            else:
                torch.jit.load(path)
        except BaseException:
            pass
        os._exit(0)
    end = time.monotonic() + float(os.environ.get("CANARY_TIMEOUT", "30"))
    status = "done"
    while True:
        got, _ = os.waitpid(pid, os.WNOHANG)
        if got:
            break
        if time.monotonic() > end:
            status = "timeout"
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            break
        time.sleep(0.02)
    grace = time.monotonic() + 3  # what the payload started (a shell) may still be running
    try:
        while time.monotonic() < grace:
            os.killpg(pid, 0)
            time.sleep(0.02)
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    out[path] = status
print(json.dumps(out))
"""


def canary_seen(folder: Path) -> bool:
    """The loader's working directory, empty before, is not any more."""
    return any(folder.iterdir())


def run_loaders(paths: list[Path], timeout: float = TIMEOUT,
                loaders: tuple[str, ...] = LOADERS) -> dict[str, dict[str, bool]]:
    """For each file, whether each loader made its canary appear (one process per loader,
    which forks one child per file, each in a fresh working directory)."""
    result: dict[str, dict[str, bool]] = {str(p): {} for p in paths}
    with tempfile.TemporaryDirectory(prefix="canaries-") as tmp:
        for kind in loaders:
            jobs = []
            for n, path in enumerate(paths):
                folder = Path(tmp) / kind / str(n)
                folder.mkdir(parents=True)
                jobs.append((str(Path(path).resolve()), str(folder)))
            env = dict(os.environ, CANARY_TIMEOUT=str(timeout), PYTHONWARNINGS="ignore")
            done = subprocess.run([sys.executable, "-c", _DRIVER, kind], input=json.dumps(jobs), text=True,
                                  capture_output=True, env=env, timeout=timeout * len(paths) + 120)
            if done.returncode != 0:
                raise RuntimeError(f"the {kind} driver failed: {done.stderr[-2000:]}")
            for (path, folder), original in zip(jobs, paths):
                result[str(original)][kind] = canary_seen(Path(folder))
    return result


def build() -> dict[str, dict]:
    """Every file: name -> {class, hostile, bytes}."""
    files: dict[str, dict] = {}
    for name, (cls, data) in hostile().items():
        files[name] = {"class": cls, "hostile": True, "bytes": data}
    for name, data in clean().items():
        files[name] = {"class": "clean", "hostile": False, "bytes": data}
    return files


def main(argv: list[str]) -> int:
    check = "--check" in argv
    files = build()
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, entry in files.items():
            path = Path(tmp) / name
            path.write_bytes(entry["bytes"])
            paths.append(path)
        fired = run_loaders(paths)
    manifest = {
        "canary": "anything written to the loader's working directory, empty before (payloads write CANARY)",
        "loaders": list(LOADERS),
        "classes": CLASSES,
        "files": {name: {"class": e["class"], "hostile": e["hostile"],
                         "fires": fired[str(Path(tmp) / name)]} for name, e in sorted(files.items())},
    }
    text = json.dumps(manifest, indent=2) + "\n"
    if check:
        stale = [n for n, e in files.items() if not (OUT / n).is_file() or (OUT / n).read_bytes() != e["bytes"]]
        old = (OUT / "manifest.json").read_text() if (OUT / "manifest.json").is_file() else ""
        if stale or old != text:
            print(f"stale: {stale or 'manifest.json'}")
            return 1
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, entry in files.items():
        (OUT / name).write_bytes(entry["bytes"])
    (OUT / "manifest.json").write_text(text)
    silent = [n for n, e in manifest["files"].items() if e["hostile"] and not any(e["fires"].values())]
    print(f"wrote {len(files)} files; hostile files no loader ran: {silent}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
