"""One archive, one answer: ``parse ARCHIVE`` and ``check ARCHIVE`` read every code entry of
an archive as one program (calls followed into the archive's other files, its classes'
declarations giving types), so each ``if`` gets the same condition from both."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeparse.archive.torchscript import archive_code_files, reading_archive

ROOT = Path(__file__).resolve().parent.parent
ARCHIVES = sorted((ROOT / "fixtures" / "archives").glob("*.pt"))


def _conditions(files: list[dict]) -> dict:
    out = {}
    for cf in files:
        for fn in [*cf["functions"], *(m for c in cf["classes"] for m in c["methods"])]:
            for if_ in fn["ifs"]:
                out[(cf["path"], fn["qualified_name"], if_["span"]["start"])] = if_["condition"]
            for loop in fn["loops"]:
                out[(cf["path"], fn["qualified_name"], loop["span"]["start"], "loop")] = loop["condition"]
    return out


def test_fixture_archives_present():
    assert len(ARCHIVES) > 100


@pytest.mark.parametrize("archive", ARCHIVES, ids=[p.name[: -len(".pt")] for p in ARCHIVES])
def test_parse_and_check_give_one_answer(archive: Path):
    parsed = [cf.model_dump(mode="json") for cf, _ in archive_code_files(str(archive))]
    with reading_archive(str(archive)) as opened:
        checked = opened.files
    assert [cf["path"] for cf in parsed] == [cf["path"] for cf in checked]
    assert _conditions(parsed) == _conditions(checked)
    assert parsed == checked


def test_rule_cross_file_an_unused_argument_is_no_source():
    """``e = self.pe.get_embed([h, w])`` with ``get_embed`` in another file of the archive
    (``return self.pos_embed``): ``if e is not None`` reads the attribute only, from parse
    as from check (before, parse did not follow the call and reported the sizes)."""
    files = [cf for cf, _ in archive_code_files(str(ROOT / "fixtures" / "archives" / "rule_cross_file.script.pt"))]
    forward = next(m for cf in files for c in cf.classes for m in c.methods if m.qualified_name == "__torch__.CrossFile.forward")
    (if_,) = forward.ifs
    assert if_.condition.kind == "attribute"
    assert [(s.ref, s.kind, s.type) for s in if_.condition.sources] == [
        ("self.pe", "attribute", "__torch__.helpers.pos.PosEmbed"),
        ("self.pe.pos_embed", "attribute", "Tensor"),
    ]
