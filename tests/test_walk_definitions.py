"""The walk's definitions made without Definition's constructor are whole Definitions.

The walk (text.extract) makes the definitions of one-name assignments and of parameters
with ``object.__new__`` and one store per field; every definition of every function of
every fixture text must then hold each field of the dataclass and equal the one its
constructor makes from those fields (a field added to Definition and not set by the walk
fails here), and the ``if`` blocks' call lists must be what counting each block's
statements' ends gives.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left
from pathlib import Path

from codeparse.infer.facts import Definition
from codeparse.text.reader import decode_code, prepare_text, start_file

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FIELDS = [f.name for f in dataclasses.fields(Definition)]


def _texts():
    for path in sorted((FIXTURES / "text").glob("*/*.code")) + sorted((FIXTURES / "archive_code").rglob("*.py")):
        text, _ = decode_code(path.read_bytes(), str(path))
        yield path, text


def _states(started):
    classes, functions = started.state
    for cls in classes:
        yield from cls["methods"]
    yield from functions


def test_every_definition_the_walk_makes_equals_the_constructors():
    checked = 0
    seen = set()
    for path, text in _texts():
        started = start_file(prepare_text(text, str(path)))
        for state in _states(started):
            facts = state[4]
            for name, defs in facts.defs.items():
                for d in defs:
                    missing = [f for f in FIELDS if not hasattr(d, f)]
                    assert not missing, (path, name, missing)
                    assert d == Definition(**{f: getattr(d, f) for f in FIELDS}), (path, name)
                    assert d.name == name
                    seen.add(d.kind)
                    checked += 1
        started.extractor.release()
    assert checked > 20_000
    assert {"param", "assign", "for"} <= seen, seen


def _calls_in(calls, block):
    """The calls of a block as counted before: up to the largest block end of its statements."""
    if not block:
        return []
    starts = [c["span"]["start"] for c in calls]
    return calls[bisect_left(starts, block[0].start):bisect_left(starts, max(s.block_end for s in block))]


def test_if_blocks_calls_are_those_up_to_the_largest_block_end():
    from codeparse.text.reader import finish_file

    ifs = 0
    for path, text in _texts():
        started = start_file(prepare_text(text, str(path)))
        states = list(_states(started))  # before finish_file replaces the classes' methods
        data = finish_file(started, True)
        functions = [m for c in data["classes"] for m in c["methods"]] + data["functions"]
        assert len(functions) == len(states)
        for state, fn in zip(states, functions):
            walk = state[5]
            assert fn["qualified_name"] == state[2]
            for (if_stmt, _, _), if_data in zip(walk.ifs, fn["ifs"], strict=True):
                assert if_data["then_calls"] == _calls_in(fn["calls"], if_stmt.body)
                assert if_data["else_calls"] == _calls_in(fn["calls"], if_stmt.orelse)
                ifs += 1
        started.extractor.release()
    assert ifs > 1_000


def test_a_value_without_a_comma_splits_into_one_item_at_most():
    """_Walk.bind splits an assignment's value into items only where it holds a comma:
    without one, Extractor.list_items never gives the two or more items a tuple target
    would bind element by element (every fixture assignment's value, and its text cut
    at every bracket)."""
    checked = 0
    for path, text, ex, start, end in _assignment_values():
        for stop in [end] + [i for i in range(start, end) if text[i] in "([{"]:
            if text.find(",", start, stop) == -1:
                items = ex.list_items(start, stop)
                assert items is None or len(items) <= 1, (path, text[start:stop])
                checked += 1
    assert checked > 10_000


def test_a_value_splits_into_no_more_items_than_its_commas_plus_one():
    """_Walk.bind splits an assignment's value for a tuple target of n names only where it
    holds n - 1 commas or more: Extractor.list_items never gives more items than the
    commas plus one (every fixture assignment's value, and its text cut at every comma)."""
    checked = 0
    for path, text, ex, start, end in _assignment_values():
        for stop in [end] + [i for i in range(start, end) if text[i] == ","]:
            items = ex.list_items(start, stop) or []
            assert len(items) <= text.count(",", start, stop) + 1, (path, text[start:stop])
            checked += 1
    assert checked > 10_000


def test_the_shared_mutator_verdicts_are_the_semantics_answers():
    """The walk's table of which callees mutate a list (shared by every file's extractor of
    one Semantics) holds, for every callee the fixtures' walks asked, what the semantics'
    operator table says; and the walk asks it for a fixture's expression statements too
    (torch.append(l, v) on a line of its own defines l)."""
    from codeparse.infer.semantics import shared_semantics
    from codeparse.text import extract

    sem = shared_semantics()
    extract._MUTATORS.clear()
    mutating = 0
    for path, text in _texts():
        started = start_file(prepare_text(text, str(path)))
        for state in _states(started):
            mutating += sum(d.kind == "mutate" for defs in state[4].defs.values() for d in defs)
        started.extractor.release()
    table = extract._mutators(sem)
    assert len(table) > 100
    for callee, verdict in table.items():
        op = sem.operator(callee)
        assert verdict == (op is not None and op.rpartition(":")[2] in sem.mutators), callee
    assert any(table.values()) and mutating > 10


def _assignment_values():
    """``(path, text, extractor, start, end)`` for the value of every assignment statement of
    every fixture text, nested statements included."""
    from codeparse.infer.semantics import shared_semantics
    from codeparse.text.extract import Extractor

    for path, text in _texts():
        prepared = prepare_text(text, str(path))
        ex = Extractor(prepared.source, prepared.grammar, shared_semantics(), None)
        stack = list(prepared.statements)
        while stack:
            s = stack.pop()
            stack.extend(s.body)
            stack.extend(s.orelse or ())
            if s.kind == "assign":
                yield (path, text, ex, *s.span_of("value"))
