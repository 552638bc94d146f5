"""A visit's result as bits (sources.SourceBits) combines as the sets it stands for.

The visits of :mod:`~codeparse.infer.conditions` hold their results as ints; the sets
(:func:`~codeparse.infer.sources.union`, :func:`~codeparse.infer.sources.remark`, set
difference for what rule 2 made) are what they replace.  Each operation on bits is checked
against the same operation on the sets: on random results, and on the results the visits
give for every condition of every fixture text.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import codeparse
from codeparse.infer import conditions
from codeparse.infer.sources import EMPTY, VALUE_MARKS, SourceBits, remark, union

ROOT = Path(__file__).resolve().parent.parent
TEXTS = sorted((ROOT / "fixtures" / "text").glob("*/script.code"))

MARKS = (None, "tensor_value", "tensor_shape")
_refs = st.sampled_from(["x", "y", "self.w", "torch.size(x, 0)", "aten::is_scripting"])
_types = st.sampled_from([None, "Tensor", "int", "bool"])
_source = st.tuples(_refs, st.sampled_from(MARKS),
                    st.sampled_from(["argument", "attribute", "runtime", "unknown"]), _types)
_pin = st.tuples(_refs, st.sampled_from(["Tensor", "bool", "float"]))
_result = st.tuples(st.frozensets(_source, max_size=8), st.frozensets(_pin, max_size=3))


def _check(bits: SourceBits, a: tuple, b: tuple) -> None:
    x, y = bits.of_sets(a), bits.of_sets(b)
    assert bits.sets(x) == a and bits.sets(y) == b
    assert bits.sets(x | y) == tuple(union([a, b]))
    assert ((x & y) == x) == (a[0] <= b[0] and a[1] <= b[1])
    for mark in MARKS:
        assert bits.sets(bits.remark(x, mark)) == (remark(a[0], mark), a[1])
    for ref, _, _, _ in a[0]:  # what rule 2 makes of an operand, with each value mark, taken out
        made = frozenset((ref, mark, "unknown", "Tensor") for mark in VALUE_MARKS)
        assert bits.sets(x & ~bits.value_marked(ref, "unknown", "Tensor")) == (a[0] - made, a[1])


@given(st.lists(_result, min_size=2, max_size=4))
def test_bits_combine_as_the_sets(results):
    bits = SourceBits()
    for a in results:
        for b in results:
            _check(bits, a, b)
    assert bits.sets(0) == EMPTY


def test_bits_combine_as_the_sets_of_every_fixture_condition(monkeypatch):
    """The (sources, pins) of every condition of every fixture text, paired with the next
    ones (in one table of slots, as one function's visits share one)."""
    found: list = []
    real_answer = conditions.Inference._answer

    def answer(self, node, scopes):
        result = real_answer(self, node, scopes)
        found.append(self._bits.sets(result))
        return result

    monkeypatch.setattr(conditions.Inference, "_answer", answer)
    for path in TEXTS:
        codeparse.parse_file(path, as_dict=True)
    results = [r for r in found if r[0] or r[1]]
    assert len(results) > 300
    assert any(m for r in results for _, m, _, _ in r[0])  # marked sources met
    assert any(r[1] for r in results)  # pins met
    bits = SourceBits()
    for a, b in zip(results, results[1:] + results[:1]):
        _check(bits, a, b)
