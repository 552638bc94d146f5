"""A condition's answer does not depend on the conditions asked before it.

The conditions of a file are answered one after another over shared memos (the entries of
:mod:`codeparse.infer.memo`, per-name answers of :mod:`codeparse.infer.names`, callees'
summaries): what one answer computed, the next reuses.  Whatever an answer reuses must be
what it would have computed itself.  Over every code text of ``fixtures/text`` (printed by
torch), each condition asked alone (the first and only one its file computes; the others
are given back as the whole file answered them, without asking) answers as it does within
the whole file; over the scripted archives (several functions, calls followed between
them), each condition asked again in the reverse order, on a program whose
conditions were all given back, answers as in the program; and no memo entry is closed
while a cycle settles its named sources (rule 2 held back).  ``fixtures/models_order.py``
holds models whose answers once depended on the order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import codeparse
from codeparse.infer import memo
from codeparse.infer.conditions import Inference
from codeparse.text.program import parse_program

ROOT = Path(__file__).resolve().parent.parent
TEXTS = sorted((ROOT / "fixtures" / "text").glob("*/*.code"))
# Every scripted archive but the one chain of 2,000 links (its texts are asked alone above).
PROGRAMS = sorted(p for p in (ROOT / "fixtures" / "archive_code").glob("*.script")
                  if p.name != "deep_loop_too_long.script")


def _answers(monkeypatch, text: str, alone=None, given=None) -> list:
    """The answer of every condition of ``text``, in the order the parse asks them; with
    ``alone`` only that one is computed, the others are ``given[k]``."""
    real = Inference.condition
    out: list = []

    def condition(self, test, scopes):
        k = len(out)
        out.append(real(self, test, scopes) if alone is None or k == alone else given[k])
        return out[-1]

    with monkeypatch.context() as m:
        m.setattr(Inference, "condition", condition)
        codeparse.parse_text(text, as_dict=True)
    return out


def test_each_condition_asked_alone_answers_as_within_its_file(monkeypatch):
    asked = 0
    differ = []
    for path in TEXTS:
        text = path.read_text(encoding="utf-8")
        whole = _answers(monkeypatch, text)
        for k, expected in enumerate(whole[1:], 1):  # the first is asked alone within the file
            alone = _answers(monkeypatch, text, k, whole)
            assert len(alone) == len(whole)
            asked += 1
            if alone[k] != expected:
                differ.append(f"{path.parent.name}/{path.name} #{k} {expected['text']!r}: within the file "
                              f"{expected['kind']} {expected['sources']}, alone {alone[k]['kind']} {alone[k]['sources']}")
    assert not differ, "\n".join(differ)
    assert asked > 100


def _entries(folder: Path) -> list:
    paths = sorted(folder.rglob("*.py"))
    return [(f"{folder.name}/code/{p.relative_to(folder).as_posix()}", p.read_bytes()) for p in paths]


@pytest.mark.parametrize("folder", PROGRAMS, ids=lambda p: p.name)
def test_each_condition_asked_in_reverse_answers_as_in_its_program(folder, monkeypatch):
    """Conditions asked in the reverse order, after a parse that asked none of them (the
    program's functions kept alive by a registry until they are all asked)."""
    entries = _entries(folder)
    real = Inference.condition
    whole: dict = {}
    asked: list = []

    def record(self, test, scopes):
        whole[(self.facts.owner, test, self.text)] = found = real(self, test, scopes)
        return found

    def give_back(self, test, scopes):
        key = (self.facts.owner, test, self.text)
        asked.append((key, self, scopes))
        return whole[key]

    with monkeypatch.context() as m:
        m.setattr(Inference, "condition", record)
        parse_program(entries, as_dict=True)
        m.setattr(Inference, "condition", give_back)
        registry: dict = {}
        parse_program(entries, as_dict=True, registry=registry)
    try:
        again = {key: real(inference, key[1], scopes) for key, inference, scopes in reversed(asked)}
    finally:
        registry["release"]()
    assert again.keys() == whole.keys()
    differ = [f"{key[0]} {whole[key]['text']!r}: in the program {whole[key]['kind']} {whole[key]['sources']}, "
              f"in reverse {again[key]['kind']} {again[key]['sources']}"
              for key in whole if again[key] != whole[key]]
    assert not differ, "\n".join(differ)


def test_no_entry_closes_while_a_cycle_settles_its_named_sources(monkeypatch):
    """An entry memoized while a cycle settles its named sources (``Memo.named_only``: rule
    2 held back) would keep what rule 2 adds out: ``Memo._close`` gives such a component no
    rule-2 settling, and an entry closed without a cycle is memoized as computed.  A
    settling round computes again what the walk computed, and what a computation reaches
    depends on the text only, so every entry a round reaches was met by the walk (memoized
    then, or in the cycle): over every fixture text none closes during a settling."""
    closed: list = []
    settled = [0]
    enter, settle_named = memo.Memo.enter, memo.Memo._settle_named

    def entering(self, key, compute, args):
        named_only = self.named_only
        found = enter(self, key, compute, args)
        if named_only and key in self.results:
            closed.append(key)
        return found

    def settling(self, *args):
        settled[0] += 1
        return settle_named(self, *args)

    monkeypatch.setattr(memo.Memo, "enter", entering)
    monkeypatch.setattr(memo.Memo, "_settle_named", settling)
    for path in TEXTS:
        codeparse.parse_text(path.read_text(encoding="utf-8"), as_dict=True)
    assert settled[0] > 50  # cycles met
    assert closed == []


def test_the_order_fixtures_are_there():
    """The models of ``fixtures/models_order.py`` are among what the tests above read."""
    names = {p.parent.name for p in TEXTS}
    order = {"order_self_set_read", "order_nested_while", "order_rule2_cycle"}
    assert order <= names
    assert {f"{case}.script" for case in order} <= {p.name for p in PROGRAMS}
    assert len(PROGRAMS) > 150
