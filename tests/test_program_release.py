"""An archive's program frees its inference without the cyclic collector: the parse of
every entry holds reference cycles (each function's inference and its calls, the callee
table and the hook that walks files on first lookup), which
:func:`codeparse.text.program.parse_program` breaks once no one can ask again (no
registry), or when the caller says so (``registry["release"]``,
:meth:`codeparse.archive.torchscript.OpenedArchive.release`)."""

from __future__ import annotations

import gc
import zipfile
from contextlib import contextmanager
from pathlib import Path

from codeparse.archive.torchscript import reading_archive
from codeparse.infer.conditions import Inference
from codeparse.text.program import parse_program

ARCHIVES = Path(__file__).resolve().parent.parent / "fixtures" / "archives"
# Several code files whose functions call each other's (parse_program follows them).
ARCHIVE = ARCHIVES / "custom_model.script.pt"


@contextmanager
def collector_off():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def inferences() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is Inference)


def entries() -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(ARCHIVE) as zf:
        return [(f"{ARCHIVE}!{n}", zf.read(n)) for n in zf.namelist() if n.endswith(".py") and "/code/" in n]


def test_the_archive_has_several_files_with_ifs():
    files, _ = parse_program(entries(), as_dict=True)
    assert len(files) >= 2
    assert sum(len(m["ifs"]) for cf in files for c in cf["classes"] for m in c["methods"]) > 0


def test_without_a_registry_nothing_is_left_for_the_collector():
    code = entries()
    with collector_off():
        before = inferences()
        files, _ = parse_program(code, as_dict=True)
        assert files
        assert inferences() == before


def test_with_a_registry_the_inference_lives_until_released():
    code = entries()
    with collector_off():
        before = inferences()
        registry: dict = {}
        files, _ = parse_program(code, as_dict=True, registry=registry)
        names = [m["qualified_name"] for cf in files for c in cf["classes"] for m in c["methods"]]
        assert registry["functions"].get(names[0]) is not None  # still there to follow calls
        assert inferences() > before
        registry.pop("release")()
        assert registry["functions"].get(names[0]) is None
        assert inferences() == before


def test_an_open_archive_released_answers_no_callee_and_frees_its_inference():
    with collector_off():
        before = inferences()
        with reading_archive(ARCHIVE) as opened:
            files = opened.files
            name = next(m["qualified_name"] for cf in files for c in cf["classes"] for m in c["methods"])
            assert opened.callee(name) is not None
            assert inferences() > before
            opened.release()
            assert opened.callee(name) is None
            assert inferences() == before
            opened.release()  # twice: nothing more to do
