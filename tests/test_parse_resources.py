"""What reading one input costs besides parsing: the bytes asked of the file, the garbage
collector's work while the result grows."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import codeparse

ROOT = Path(__file__).resolve().parent.parent
TEXT = ROOT / "fixtures" / "text" / "nn_transformer" / "script.code"


def test_a_file_is_read_with_what_its_size_needs(monkeypatch):
    asked = []
    read = os.read

    def recording(fd, n):
        asked.append(n)
        return read(fd, n)

    monkeypatch.setattr(os, "read", recording)
    data = codeparse.parse_file(TEXT, as_dict=True)
    size = TEXT.stat().st_size
    # One read of the size and one byte more (a short read is the end of a regular file),
    # not of the 64 MiB limit: os.read allocates what it is asked for.
    assert asked == [size + 1]
    assert data["functions"] or data["classes"]


def test_a_file_larger_than_the_limit_is_still_refused(tmp_path):
    path = tmp_path / "big.code"
    path.write_text("def f(x):\n  return x\n" * 50, encoding="utf-8")
    try:
        codeparse.parse_file(path, max_bytes=100)
    except codeparse.InputError as exc:
        assert exc.code == "CP344"
    else:
        raise AssertionError("a file over max_bytes was read")


def _collections_during(fn) -> int:
    found = []

    def callback(phase, info):
        if phase == "start":
            found.append(info["generation"])

    gc.callbacks.append(callback)
    try:
        fn()
    finally:
        gc.callbacks.remove(callback)
    return len(found)


def test_the_collector_is_paused_while_one_input_is_read_and_restored_after():
    text = TEXT.read_text(encoding="utf-8")
    assert gc.isenabled()
    # The same allocations with the collector running do trigger collections: the check below can fail.
    assert _collections_during(lambda: [[{} for _ in range(50)] for _ in range(2000)]) > 0
    assert _collections_during(lambda: codeparse.parse_text(text)) == 0
    assert _collections_during(lambda: codeparse.parse_file(TEXT, as_dict=True)) == 0
    assert gc.isenabled()


def test_a_caller_that_turned_the_collector_off_keeps_it_off():
    gc.disable()
    try:
        codeparse.parse_text(TEXT.read_text(encoding="utf-8"), as_dict=True)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_is_restored_when_reading_fails():
    try:
        codeparse.parse_text(b"not str")  # type: ignore[arg-type]
    except TypeError:
        pass
    try:
        codeparse.parse_file(ROOT / "no-such-file.code")
    except codeparse.InputError:
        pass
    assert gc.isenabled()
