"""What inference skips gives the answers a full reading gives.

Over every code text of ``fixtures/text`` (printed by torch): the definitions
:meth:`~codeparse.infer.datadep.FunctionDataDependence.mutated_in_place` leaves unread (no
in-place call can be in their text) hold no in-place write; a cycle settled from what its
walk gave gives what it gives settled from nothing; a name's span tells a parenthesised
name as its text does; what the visits tell of one name (mutated, defined in a loop) is
what a reading of the whole function tells.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import codeparse
from codeparse.infer import datadep, memo
from codeparse.infer.datadep import FunctionDataDependence
from codeparse.infer.facts import LOOPS, MUTATIONS
from codeparse.parse.expressions import CallExpr, names_in
from codeparse.text import extract

ROOT = Path(__file__).resolve().parent.parent
TEXTS = sorted((ROOT / "fixtures" / "text").glob("*/script.code"))


def _parsed_inferences() -> list:
    """The Inference of every function of every fixture text, after its file is parsed."""
    made: list = []
    real = extract.Inference

    def keep(*args):
        inf = real(*args)
        made.append(inf)
        return inf

    extract.Inference = keep
    try:
        for path in TEXTS:
            codeparse.parse_file(path, as_dict=True)
    finally:
        extract.Inference = real
    return made


@pytest.fixture(scope="module")
def inferences() -> list:
    return _parsed_inferences()


def test_the_definitions_left_unread_hold_no_in_place_write(inferences, monkeypatch):
    skipped = found = 0
    for inf in inferences:
        may_write = datadep._writer_finder(inf.sem, inf.reader.max_depth)
        skipped += sum(1 for defs in inf.facts.defs.values() for d in defs
                       if d.value is not None and not may_write(inf.text, *d.value))
        quick = FunctionDataDependence(inf).mutated_in_place()
        with monkeypatch.context() as m:
            m.setattr(datadep, "_writer_finder", lambda sem, depth: lambda text, start, end: True)
            full = FunctionDataDependence(inf).mutated_in_place()
        assert quick == full, inf.facts.owner
        found += len(full)
    assert skipped > 1000  # most definitions are no in-place call
    assert found >= 7  # `running_mean.add_`, `torch.add_(num_batches_tracked, 1)`, `_set_item`...


def _loop_variants() -> list[str]:
    """Texts with loop-carried cycles of several lengths and shapes, made from the deep
    loop fixture (printed by torch): its chain of layers cut to ``n`` links, with the if
    around the carried value kept, its marking operator changed, or the if left out."""
    text = (ROOT / "fixtures" / "text" / "deep_loop_fits" / "script.code").read_text()
    lines = text.splitlines(keepends=True)
    head = [line for line in lines if not line.lstrip().startswith(("_", "x"))]
    out = []
    for n in (1, 2, 3, 7, 40):
        body = [f'    _{i} = getattr(layers, "{i}")\n' for i in range(n)]
        body += [f"    x{i + 1} = (_{i}).forward(x{i}, )\n" for i in range(n)]
        tail = [f"    if torch.gt(torch.size(x{n}, 0), 1):\n", f"      x{n + 1} = torch.sub(x{n}, 1)\n",
                "    else:\n", f"      x{n + 1} = x{n}\n", f"    x0 = x{n + 1}\n", "  return x0\n"]
        start = head.index("    layers = self.layers\n") + 1
        base = "".join(head[:start] + body + tail)
        out.append(base)
        out.append(base.replace(f"torch.size(x{n}, 0)", f"torch.sum(x{n})"))
        out.append(base.replace(f"    if torch.gt(torch.size(x{n}, 0), 1):\n      x{n + 1} = torch.sub(x{n}, 1)\n"
                                f"    else:\n      x{n + 1} = x{n}\n", f"    x{n + 1} = torch.sub(x{n}, int(x{n}))\n"
                                f"    if bool(torch.gt(x{n + 1}, 0)):\n      x{n + 1} = x0\n"))
    return out


def test_cycles_settle_from_their_walk_as_from_nothing(monkeypatch):
    """A cycle's named sources settle from what the walk gave (less what rule 2 may have
    added) to what they settle to from nothing: every fixture text, and loops carrying a
    value round cycles of several lengths, with rule 2 inside the cycle or not."""
    texts = [path.read_text() for path in TEXTS] + _loop_variants()
    assert sum("for " in text or "while " in text for text in texts) > 40
    settled = []
    real = memo.Memo._settle_named
    monkeypatch.setattr(memo.Memo, "_settle_named", lambda self, *a: settled.append(a) or real(self, *a))
    warm = [codeparse.parse_text(text, as_dict=True) for text in texts]
    assert len(settled) > 50  # cycles met
    monkeypatch.setattr(memo, "WARM_START", False)
    cold = [codeparse.parse_text(text, as_dict=True) for text in texts]
    assert warm == cold
    kinds = {if_["condition"]["kind"] for cf in warm[-15:] for fn in cf["functions"] for if_ in fn["ifs"]}
    assert {"tensor_shape", "tensor_value"} <= kinds


def test_a_name_is_parenthesised_exactly_when_its_span_is_longer_than_it(inferences):
    """resolved.Resolver tells a parenthesised name (``(layer1)``) by its span's length:
    over every name the reader gives in every definition's value of every fixture text,
    that agrees with the text the span covers."""
    seen = parenthesised = 0
    for inf in inferences:
        for defs in inf.facts.defs.values():
            for d in defs:
                if d.value is None:
                    continue
                for n in names_in(inf.tree(d.value)):
                    seen += 1
                    longer = n.end - n.start != len(n.id)
                    assert (inf.text[n.start:n.end] != n.id) == longer, (inf.text[n.start:n.end], n.id)
                    parenthesised += longer
    assert seen > 10_000 and parenthesised > 100


def _mutated_in_loop(facts) -> tuple[set[str], set[str]]:
    """The names a mutation defines and the names with a definition inside a loop, read
    from every definition of a function at once (the reading conditions did before it
    found a name's flags at its first visit)."""
    mutated = {name for name, defs in facts.defs.items() if any(d.kind in MUTATIONS for d in defs)}
    in_loop = {name for name, defs in facts.defs.items()
               if any(scope.kind in LOOPS for d in defs for scope in d.scopes)}
    return mutated, in_loop


def test_a_names_flags_are_those_of_the_whole_function_reading(inferences):
    """conditions.Inference._leaf tells, per name, whether a mutation defines it and
    whether it has a definition inside a loop: over every name defined in every function
    of every fixture text, what reading every definition of the function at once finds."""
    mutated_seen = looped_seen = 0
    for inf in inferences:
        mutated, in_loop = _mutated_in_loop(inf.facts)
        inf._build()  # (the visits' parts, which _leaf reads)
        for name in inf.facts.defs:
            leaf = inf._leaf(name)
            if type(leaf) is int:  # a literal, self or a parameter: no definition decides it
                assert name in inf.facts.params or name == inf.facts.self_name or name in inf.sem.literals
                continue
            _, is_mutated, is_looped = leaf
            assert (is_mutated, is_looped) == (name in mutated, name in in_loop), (inf.facts.owner, name)
            mutated_seen += is_mutated
            looped_seen += is_looped
    assert mutated_seen > 20 and looped_seen > 100


def test_the_parts_past_the_names_are_built_when_a_question_needs_them():
    """Inference() builds the names part only; types, calls, memo and resolved text come
    with the first question that needs them.  Over every function of every fixture text:
    a parse leaves many functions (no if, no loop, no caller following them) with none
    built, and every other with them built; and the answers other stages ask of an
    Inference before any condition (expr_type, name_type, method_operator, callee_of of
    every definition's value) are the ones its parts give when built first."""
    made = _parsed_inferences()  # (its own parse: the other tests' questions build parts)
    real = extract.Inference
    unbuilt = sum(1 for inf in made if inf._bits is None)
    assert unbuilt > 40 and len(made) - unbuilt > 100, (unbuilt, len(made))
    asked = 0
    for inf in made:
        lazy = real(inf.text, inf.reader, inf.facts, inf.sem)
        eager = real(inf.text, inf.reader, inf.facts, inf.sem)
        eager._build()
        for defs in inf.facts.defs.values():
            for d in defs:
                if d.value is None:
                    continue
                node, same = lazy.tree(d.value), eager.tree(d.value)
                assert lazy.expr_type(node) == eager.types.expr_type(same), (inf.facts.owner, d.name)
                assert lazy._bits is not None  # built by that first question
                if isinstance(node, CallExpr):
                    assert lazy.method_operator(node) == eager.types.method_operator(same)
                    assert lazy.callee_of(node) is eager.calls.callee_of(same)
                asked += 1
        for name in inf.facts.defs:
            assert lazy.name_type(name) == eager.types.name_type(name), (inf.facts.owner, name)
    assert asked > 5000, asked
