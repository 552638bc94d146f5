"""Parse once, debug info on demand, the content cache (in process and on disk)."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest

import codeparse
from codeparse.archive import debuginfo
from codeparse.archive.torchscript import read_archive
from codeparse.text.cache import FORMAT, EntryCache
from codeparse.cli.app import main
from codeparse.contract.check import Policy

ROOT = Path(__file__).resolve().parent.parent
ARCHIVES = ROOT / "fixtures" / "archives"
CUSTOM = ARCHIVES / "custom_model.script.pt"
SOME = [CUSTOM, ARCHIVES / "params.script.pt", ARCHIVES / "custom_model.trace.pt",
        ARCHIVES / "nn_multihead_attention.script.pt"]


def _copy_with(src: Path, dst: Path, name: str, old: bytes, new: bytes) -> Path:
    """``src`` with one entry's bytes edited (every other entry as torch wrote it)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == name:
                assert old in data
                data = data.replace(old, new)
            zout.writestr(info, data)
    return dst


def _cache_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def test_reports_are_the_same_with_and_without_the_cache(tmp_path):
    paths = [str(p) for p in SOME]
    plain = codeparse.check(paths, Policy()).model_dump_json()
    cold = codeparse.check(paths, Policy(), cache_dir=tmp_path).model_dump_json()
    warm = codeparse.check(paths, Policy(), cache_dir=tmp_path).model_dump_json()
    assert plain == cold == warm
    files = _cache_files(tmp_path)
    assert files and all(p.suffix == ".json" and not p.name.startswith(".tmp-") for p in files)
    for p in files:
        raw = p.read_bytes()
        assert not raw.startswith(b"\x80")  # never a pickle
        data = json.loads(raw)
        assert data["format"] == FORMAT and data["fingerprint"]


def test_the_key_covers_the_declarations_a_parse_consulted(tmp_path):
    """The root file's bytes are the same in both archives, but the class it declares
    ``custom_layer`` with is a module in one and a plain class in the other: the cached
    parse of the first is not reused for the second."""
    entry = "custom_model.script/code/__torch__/torch/nn/modules/conv.py"
    edited = _copy_with(CUSTOM, tmp_path / "edited.pt", entry, b"class Conv2d(Module):", b"class Conv2d(object):")
    root = f"{CUSTOM}!custom_model.script/code/__torch__.py"
    fresh = {str(p): read_archive(p) for p in (CUSTOM, edited)}
    fresh_root = {p: next(cf for cf in a.files if cf.path.endswith("!custom_model.script/code/__torch__.py"))
                  for p, a in fresh.items()}
    assert fresh_root[str(CUSTOM)].path == root
    # The edit reaches the root file's parse: the layer is no submodule there any more.
    roles = {p: {r.path: r.role for f in cf.classes for m in f.methods for r in m.self_refs}
             for p, cf in fresh_root.items()}
    assert roles[str(CUSTOM)]["self.custom_layer"] == "submodule"
    assert roles[str(edited)]["self.custom_layer"] == "attribute"
    shared = EntryCache(tmp_path / "cache")
    for p in (CUSTOM, edited, CUSTOM, edited):
        assert read_archive(p, cache=shared).model_dump_json() == fresh[str(p)].model_dump_json()
    assert shared.hits and shared.misses
    # From disk, in a new cache object (a later run), the same.
    later = EntryCache(tmp_path / "cache")
    for p in (edited, CUSTOM):
        assert read_archive(p, cache=later).model_dump_json() == fresh[str(p)].model_dump_json()
    assert later.misses == 0


def test_jobs_share_a_cache_folder_safely(tmp_path):
    paths = [str(p) for p in SOME] * 2
    plain = codeparse.check(paths, Policy()).model_dump_json()
    folder = tmp_path / "cache"
    assert codeparse.check(paths, Policy(), jobs=2, cache_dir=folder).model_dump_json() == plain
    files = _cache_files(folder)
    assert files and not [p for p in files if p.name.startswith(".tmp-")]
    # A damaged or foreign entry is a miss, never an error.
    for i, p in enumerate(files):
        p.write_text(["{", '{"format": 999}', "[]", "null"][i % 4])
    assert codeparse.check(paths, Policy(), jobs=2, cache_dir=folder).model_dump_json() == plain


def test_debug_info_is_read_only_for_origins_asked_for(monkeypatch, tmp_path):
    # check reads each input in a worker process (its budget): calls are counted in a file.
    log = tmp_path / "calls"
    real = debuginfo.read_debug_pkl

    def counted(*a, **k):
        with open(log, "a") as handle:
            handle.write("1")
        return real(*a, **k)

    def calls() -> int:
        return len(log.read_text()) if log.exists() else 0

    monkeypatch.setattr(debuginfo, "read_debug_pkl", counted)
    # Archive-level codes only: no finding asks for an origin.
    report = codeparse.check([str(CUSTOM)], Policy(select=["CP3"]))
    assert report.inputs[0].readable and calls() == 0
    # One code file has branch findings: only its debug info is read.
    report = codeparse.check([str(CUSTOM)], Policy(select=["CP201"]))
    [finding] = report.inputs[0].findings
    assert finding.origin is not None and finding.origin.line == 65 and calls() == 1
    # open_archive (and the HTML report) read all of it, for the source map.
    log.unlink()
    archive = codeparse.open_archive(CUSTOM)
    assert calls() == len(archive.source_map) == 11


def test_cache_dir_from_the_command_line_and_pyproject(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["check", str(CUSTOM), "--format", "jsonl", "--config", os.devnull]) == 0
    first = capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []  # off by default: nothing written
    assert main(["check", str(CUSTOM), "--format", "jsonl", "--cache-dir", "c1"]) == 0
    assert capsys.readouterr().out == first and _cache_files(tmp_path / "c1")
    (tmp_path / "pyproject.toml").write_text('[tool.codeparse]\ncache-dir = "c2"\nfail-on = "error"\n')
    assert main(["check", str(CUSTOM), "--format", "jsonl"]) == 0  # found in the checked tree: not trusted
    out, err = capsys.readouterr()
    assert out == first and not (tmp_path / "c2").exists() and "cache-dir in the nearest pyproject.toml is ignored" in err
    assert main(["check", str(CUSTOM), "--format", "jsonl", "--config", "pyproject.toml"]) == 0
    assert capsys.readouterr().out == first and _cache_files(tmp_path / "c2")
    (tmp_path / "pyproject.toml").write_text("[tool.codeparse]\ncache-dir = 3\n")
    assert main(["check", str(CUSTOM), "--config", "pyproject.toml"]) == 2
    assert "cache-dir must be a folder name" in capsys.readouterr().err


def test_an_entry_cache_without_a_folder_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cache = EntryCache()
    for p in SOME + SOME:
        read_archive(p, cache=cache)
    assert cache.hits > 0 and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["custom_model.script.pt", "params.script.pt"])
def test_one_parse_per_entry(name, monkeypatch):
    """The pre-pass classifies each entry once; each entry is then walked and read once."""
    from codeparse.text import reader

    counts = {"prepare": 0, "start": 0, "finish": 0}

    def counting(fn, key):
        def wrapped(*a, **k):
            counts[key] += 1
            return fn(*a, **k)
        return wrapped

    for key in counts:
        monkeypatch.setattr(reader, f"{key}_text" if key == "prepare" else f"{key}_file",
                            counting(getattr(reader, f"{key}_text" if key == "prepare" else f"{key}_file"), key))
    archive = read_archive(ARCHIVES / name)
    n = len(archive.files)
    assert counts == {"prepare": n, "start": n, "finish": n}


def test_an_entry_met_again_is_not_classified_again(tmp_path, monkeypatch):
    from codeparse.text import reader

    real, calls = reader.prepare_text, []

    def counted(*a, **k):
        calls.append(a[1] if len(a) > 1 else k.get("path"))
        return real(*a, **k)

    monkeypatch.setattr(reader, "prepare_text", counted)
    shared = EntryCache(tmp_path / "cache")
    first = read_archive(CUSTOM, cache=shared).model_dump_json()
    assert len(calls) == len(set(calls)) == 11  # each code entry classified once
    calls.clear()
    # The same entries again (in this run, then from disk in a later one): declarations and
    # parses are both reused, so the statement classifier does not run at all.
    assert read_archive(CUSTOM, cache=shared).model_dump_json() == first and calls == []
    assert read_archive(CUSTOM, cache=EntryCache(tmp_path / "cache")).model_dump_json() == first and calls == []


def test_origins_asked_line_by_line_are_those_of_every_line():
    from codeparse.archive.debuginfo import LineOrigins, line_origins, read_debug_pkl

    with zipfile.ZipFile(ARCHIVES / "nn_multihead_attention.script.pt") as zf:
        names = [n for n in zf.namelist() if n.endswith(".py") and n + ".debug_pkl" in zf.namelist()]
        assert names
        for name in names:
            text = zf.read(name).decode("utf-8")
            line_map = read_debug_pkl(zf.read(name + ".debug_pkl"))
            every = line_origins(text, line_map)
            lazy = LineOrigins(text, line_map)
            count = text.count("\n") + 2
            assert [lazy.get(n) for n in range(count, -1, -1)] == [every.get(n) for n in range(count, -1, -1)]
            assert list(lazy.items()) == list(every.items()) and every


def _input_entries(folder: Path) -> list[Path]:
    return [p for p in _cache_files(folder) if "input" in json.loads(p.read_bytes())]


def test_a_warm_input_is_answered_by_the_parent_without_a_worker(tmp_path, monkeypatch):
    """With a cache folder, an input whose bytes, path, policy and codeparse are those of a
    stored report is not read again: no worker is started for it."""
    from codeparse.gate import budget

    copy = tmp_path / "copy.pt"
    copy.write_bytes(CUSTOM.read_bytes())
    paths = [str(p) for p in SOME] + [str(copy), str(ARCHIVES.parent / "files")]
    plain = codeparse.check(paths, Policy()).model_dump_json()
    folder = tmp_path / "cache"
    assert codeparse.check(paths, Policy(), cache_dir=folder).model_dump_json() == plain
    stored = _input_entries(folder)
    # One per input read (the files folder walked); `notes.pt`, no model file, is listed unread.
    inputs = codeparse.check(paths, Policy()).inputs
    assert len(stored) == len([i for i in inputs if i.kind != "other"]) == len(inputs) - 1
    started = []
    real = budget.run_bounded
    monkeypatch.setattr(budget, "run_bounded", lambda tasks, *a, **k: started.append(len(tasks)) or real(tasks, *a, **k))
    arrived = []
    warm = codeparse.check(paths, Policy(), cache_dir=folder, progress=lambda r: arrived.append(r.path))
    assert warm.model_dump_json() == plain and started == []
    assert arrived == [i.path for i in warm.inputs]
    # Other bytes, another policy: read again in a worker (and stored under their own key).
    edited = tmp_path / "edited2.pt"
    _copy_with(CUSTOM, edited, "custom_model.script/code/__torch__/torch/nn/modules/conv.py",
               b"class Conv2d(Module):", b"class Conv2d(object):")
    copy.write_bytes(edited.read_bytes())
    expected = [codeparse.check([str(copy)], Policy()).model_dump_json(),
                codeparse.check([str(CUSTOM)], Policy(select=["CP2"])).model_dump_json()]
    started.clear()
    assert codeparse.check([str(copy)], Policy(), cache_dir=folder).model_dump_json() == expected[0]
    assert codeparse.check([str(CUSTOM)], Policy(select=["CP2"]), cache_dir=folder).model_dump_json() == expected[1]
    assert started == [1, 1]

def test_an_input_entry_is_checked_before_the_parent_uses_it(tmp_path):
    """A stored report that is not exactly the shape check makes (or names another path) is a
    miss: the input is read again, and the report is the true one."""
    paths = [str(CUSTOM)]
    plain = codeparse.check(paths, Policy()).model_dump_json()
    folder = tmp_path / "cache"
    codeparse.check(paths, Policy(), cache_dir=folder)
    [entry] = _input_entries(folder)
    data = json.loads(entry.read_bytes())
    finding = data["input"]["findings"][0]
    for bad in ({**data["input"], "path": "other.pt"}, {**data["input"], "files": "11"},
                {**data["input"], "findings": [{**finding, "span": {"start": 1}}]},
                {**data["input"], "findings": [{**finding, "severity": "fatal"}]},
                {**data["input"], "extra": 1}, [data["input"]]):
        entry.write_text(json.dumps({**data, "input": bad}))
        assert codeparse.check(paths, Policy(), cache_dir=folder).model_dump_json() == plain
    entry.write_text(json.dumps(data) + " " * (17 << 20))  # over the size read back
    assert codeparse.check(paths, Policy(), cache_dir=folder).model_dump_json() == plain


def test_an_input_over_budget_is_never_stored(tmp_path, monkeypatch):
    import sys

    checker = sys.modules["codeparse.gate.run"]
    real = checker.input_data

    def greedy(*args, **kwargs):
        raise MemoryError

    folder = tmp_path / "cache"
    monkeypatch.setattr(checker, "input_data", greedy)
    report = codeparse.check([str(CUSTOM)], Policy(), cache_dir=folder)
    assert [f.code for f in report.inputs[0].findings] == ["CP340"] and not report.inputs[0].readable
    assert not folder.exists() or _input_entries(folder) == []
    monkeypatch.setattr(checker, "input_data", real)
    again = codeparse.check([str(CUSTOM)], Policy(), cache_dir=folder)
    assert again.inputs[0].readable and again.model_dump_json() == codeparse.check([str(CUSTOM)], Policy()).model_dump_json()


def test_an_input_written_while_it_is_read_is_not_stored(tmp_path, monkeypatch):
    """The report is stored under the digest of the bytes hashed before the worker read the
    file: if the file changed meanwhile, nothing is stored."""
    import sys

    checker = sys.modules["codeparse.gate.run"]
    real = checker.input_data
    copy = tmp_path / "copy.pt"
    copy.write_bytes(CUSTOM.read_bytes())

    def rewriting(path, *args, **kwargs):  # in the worker: the same bytes written again
        Path(path).write_bytes(Path(path).read_bytes())
        return real(path, *args, **kwargs)

    folder = tmp_path / "cache"
    monkeypatch.setattr(checker, "input_data", rewriting)
    report = codeparse.check([str(copy)], Policy(), cache_dir=folder)
    assert report.inputs[0].readable and _input_entries(folder) == []
    monkeypatch.setattr(checker, "input_data", real)
    assert codeparse.check([str(copy)], Policy(), cache_dir=folder) == report
    assert len(_input_entries(folder)) == 1


_NO_OPENSSL = """
import sys
from codeparse.gate import budget
budget.available = lambda: False  # the archive read in this process
from codeparse.cli.app import main
code = main(["check", "--isolated", "--format", "json", *sys.argv[1:]])
assert "hashlib" not in sys.modules and "_hashlib" not in sys.modules, "hashlib imported"
sys.exit(code)
"""


def test_content_keys_are_sha256_and_a_check_loads_no_openssl():
    """The content keys and fingerprints are SHA-256 digests (the interpreter's own module,
    ``hashlib``'s digests), and a check reads archives without importing ``hashlib``
    (which loads OpenSSL's library: a few milliseconds of each process)."""
    import hashlib
    import subprocess
    import sys

    from codeparse.text import cache

    for data in (b"", b"abc", bytes(range(256)) * 1000, "é\0x".encode()):
        assert cache.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
        parts = cache.sha256(data[:7])
        copied = parts.copy()
        parts.update(data[7:])
        assert parts.digest() == hashlib.sha256(data).digest() and copied.hexdigest() == hashlib.sha256(data[:7]).hexdigest()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", _NO_OPENSSL, *map(str, SOME)], capture_output=True, text=True,
                          env=env)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert len(json.loads(done.stdout)) == len(SOME)
