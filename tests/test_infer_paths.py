"""The quick forms of inference's per-name answers give what the forms they replace give.

Over every function of every code text of ``fixtures/text`` and ``fixtures/archive_code``
(printed by torch), and of
those texts mutated (assignment lines repeated and dropped: names bound twice, chains cut),
each answer is asked of the quick form and of the form it replaces, in the same order, on
fresh objects:

* :meth:`~codeparse.infer.names.Names.name_path` / ``expr_path`` against the recursive
  reading through ``single_def``/``value_of`` (kept below as the reference), and
  ``local_receiver`` (the receiver's root name read off the tree) against the dotted text;
* :meth:`~codeparse.infer.valuetypes.ValueTypes.is_tensor` (a parameter or a name typed
  for good answered from its type) against typing every operand (``_typed_tensor``);
* :meth:`~codeparse.infer.datadep.FunctionDataDependence.shape` (one walk, a call's
  operator asked once) against the walk through ``past_first_dimension`` (the reference),
  and asked alone, in text order and in reverse;
* ``tensor`` and ``value_conversions`` (a set made only where two answers hold spans)
  against the form with a generator and a set per union; and, on models torch prints with
  values swapped round a loop, a size read answers alike whichever is read first;
* :meth:`~codeparse.infer.datadep.FunctionDataDependence.literal` (a name's answer
  remembered with the depth it holds from) against a walk per question, asked at depths
  near the bound and far from it.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Optional

import pytest

import codeparse
from codeparse.infer.datadep import FunctionDataDependence, past_first_dimension
from codeparse.infer.names import _MAX_PATH, MAX_RESOLVE_DEPTH, Names, dotted, unquote
from codeparse.infer.valuetypes import ValueTypes
from codeparse.parse.expressions import Attr, CallExpr, Const, Index, Name, Seq
from codeparse.text import extract

ROOT = Path(__file__).resolve().parent.parent
TEXTS = sorted((ROOT / "fixtures" / "text").glob("*/script.code"))
# The code files of the fixture archives, as written out (torch.nn's functional among them).
ARCHIVE_CODE = sorted((ROOT / "fixtures" / "archive_code").rglob("*.py"))


def _inferences(texts: list[str]) -> list:
    """The Inference of every function of each text, after the text is parsed."""
    made: list = []
    real = extract.Inference

    def keep(*args):
        inf = real(*args)
        made.append(inf)
        return inf

    extract.Inference = keep
    release = extract.Extractor.release
    extract.Extractor.release = lambda self: None  # keep each function's links (calls, types)
    try:
        for text in texts:
            codeparse.parse_text(text, as_dict=True)
    finally:
        extract.Inference = real
        extract.Extractor.release = release
    return made


def _mutated(text: str, seed: int) -> str:
    """``text`` with some assignment lines repeated (a name bound twice, a tuple target
    bound again) and some dropped (a chain cut: a name with no definition)."""
    rng = random.Random(seed)
    out = []
    for line in text.split("\n"):
        if " = " in line and line.startswith("    ") and not line.lstrip().startswith(("def ", "class ")):
            roll = rng.random()
            if roll < 0.08:
                continue
            if roll < 0.16:
                out.append(line)
        out.append(line)
    return "\n".join(out)


@pytest.fixture(scope="module")
def inferences() -> list:
    texts = [p.read_text(encoding="utf-8") for p in TEXTS + ARCHIVE_CODE]
    mutated = [_mutated(t, seed) for seed, t in enumerate(texts)]
    return _inferences(texts + mutated)


class _ReferencePaths:
    """name_path / expr_path as they were read before the quick form: recursively through
    single_def and value_of, with their own memo."""

    def __init__(self, names: Names):
        self.names = names
        self.paths: dict[str, Optional[str]] = {}
        if names.facts.self_name in names.facts.params:
            self.paths[names.facts.self_name] = names.facts.self_name

    def name_path(self, name: str, depth: int = 0) -> Optional[str]:
        found = self.paths.get(name, False)
        if found is not False:
            return found
        self.paths[name] = None
        names = self.names
        d = names.single_def(name)
        if d is None:
            plain = [e for e in names.facts.defs.get(name, ()) if e.kind not in ("init", "setattr", "call")]
            if len(plain) == 1 and plain[0].kind == "assign":
                d = plain[0]
        path = None
        if d is not None and depth < MAX_RESOLVE_DEPTH:
            node = names.value_of(d)
            if d.element is None or node is not names.tree(d.value):
                path = self.expr_path(node, depth + 1) if node is not None else None
        self.paths[name] = path
        return path

    def expr_path(self, node, depth: int = 0) -> Optional[str]:
        if isinstance(node, Name):
            return self.name_path(node.id, depth)
        if isinstance(node, Attr):
            return _joined(self.expr_path(node.value, depth), node.attr)
        if isinstance(node, CallExpr) and isinstance(node.func, Name) and node.func.id == "getattr":
            if len(node.args) == 2 and isinstance(node.args[1], Const) and node.args[1].kind == "string":
                return _joined(self.expr_path(node.args[0], depth), unquote(node.args[1].text))
        return None


def _joined(base, attr: str):
    """``base.attr``, or None without a base or past ``_MAX_PATH`` characters (as a path was
    joined before)."""
    if not base or len(base) + len(attr) >= _MAX_PATH:
        return None
    return f"{base}.{attr}"


def _reference_local(names: Names, func: Attr) -> bool:
    """Whether ``name.method`` has a local receiver, as it was read before: by the dotted text."""
    text = dotted(func)
    if text is None:
        return True
    root = text.partition(".")[0]
    sem = names.sem
    if root in ("torch", sem.ops_root, sem.root, sem.constants_object) or text in sem.intrinsics:
        return False
    return root in names.facts.params or root in names.facts.defs


def _nodes(node) -> list:
    """Every node of a tree, parents first."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.children()))
    return out


def _trees(inf) -> list:
    """The trees of every definition's value and every if's and loop's test, in text order."""
    spans = inf.names.value_spans()
    return [inf.tree(span) for span in spans]


def test_paths_are_the_ones_the_recursive_reading_gives(inferences):
    asked = with_path = locals_ = 0
    for inf in inferences:
        quick = Names(inf.text, inf.reader, inf.facts, inf.sem)
        reference = _ReferencePaths(Names(inf.text, inf.reader, inf.facts, inf.sem))
        for name in inf.facts.defs:
            assert quick.name_path(name) == reference.name_path(name), name
        for tree in _trees(inf):
            for node in _nodes(tree):
                found = quick.expr_path(node)
                assert found == reference.expr_path(node), inf.text[node.start:node.end]
                asked += 1
                with_path += found is not None
                if isinstance(node, CallExpr) and isinstance(node.func, Attr):
                    local = quick.local_receiver(node.func) is not None
                    assert local == _reference_local(quick, node.func), inf.text[node.start:node.end]
                    locals_ += local
    assert asked > 20000
    assert with_path > 3000  # `self.layers`, `getattr(layers, "3")`, `layer1.conv`...
    assert locals_ > 1000  # `(_3).forward(x)`, `lengths.tolist()`


def test_paths_the_scan_read_are_the_ones_the_trees_give(inferences):
    """``Names.getattr_paths``, which the reference scan fills from its match of each
    ``getattr(obj, "n")``, holds the path the value's tree reads; ``name_path`` and the types
    of path-bound names (``ValueTypes.type_paths``) taken from it equal those read from the
    trees, names asked in text order and in reverse."""
    entries = bound = 0
    for inf in inferences:
        scanned = inf.names.getattr_paths
        for span, path in scanned.items():
            fresh = Names(inf.text, inf.reader, inf.facts, inf.sem)
            assert fresh.expr_path(inf.reader.read(*span)) == path, inf.text[span[0]:span[1]]
            entries += 1
        if not scanned:
            continue
        for order in (list(inf.facts.defs), list(reversed(inf.facts.defs))):
            quick = Names(inf.text, inf.reader, inf.facts, inf.sem)
            quick.getattr_paths.update(scanned)
            plain = Names(inf.text, inf.reader, inf.facts, inf.sem)
            for name in order:
                assert quick.name_path(name) == plain.name_path(name), name
                bound += quick.name_path(name) is not None
            quick_types, plain_types = ValueTypes(quick), ValueTypes(plain)
            quick_types.type_paths()
            plain_types.type_paths()
            assert quick_types._types == plain_types._types
    assert entries > 8000  # `_3 = getattr(layers, "3")`, `getattr(self.first_layer, "8000")`
    assert bound > 15000


def test_tensor_operands_are_the_ones_typing_gives(inferences):
    asked = tensors = 0
    for inf in inferences:
        quick = ValueTypes(Names(inf.text, inf.reader, inf.facts, inf.sem))
        typed = ValueTypes(Names(inf.text, inf.reader, inf.facts, inf.sem))
        for tree in _trees(inf):
            for node in _nodes(tree):
                if isinstance(node, Name):
                    found = quick.is_tensor(node)
                    assert found == typed._typed_tensor(node), inf.text[node.start:node.end]
                    asked += 1
                    tensors += found
    assert asked > 10000
    assert tensors > 1500


def _reference_shape(dd: FunctionDataDependence, node) -> Optional[frozenset]:
    """shape as it walked before: past_first_dimension asked of every node, then the call's
    operator again."""
    dd.shape_operands = []
    found: set = set()
    hit = False
    seen: set = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Name):
            for d in dd._defs(n.id):
                value = dd.inf.value_of(d)
                if value is not None and id(value) not in seen:
                    seen.add(id(value))
                    stack.append(value)
            continue
        beyond = past_first_dimension(n, dd._operator_name)
        if beyond is not None and dd.first_dim_only(beyond):
            continue
        if isinstance(n, CallExpr):
            kind, name = dd._op(n)
            if kind == "operator" and name in dd.table.shape_reads and n.args:
                read = n.args[0]
                if name in dd.inf.sem.tensor_only and not dd._is_tensor_operand(read):
                    read = dd._listed_from(read, 0)
                if read is not None:
                    r = dd.tensor(read, 0)
                    if r is not None:
                        hit = True
                        found.update(r)
                        text = dd.inf.text[read.start:read.end]
                        if text not in dd.shape_operands:
                            dd.shape_operands.append(text)
                    continue
        stack.extend(n.children())
    return frozenset(found) if hit else None


def test_shape_reads_are_the_ones_the_walk_through_every_node_gives(inferences):
    asked = producers = pruned = 0
    for inf in inferences:
        # Every if's and loop's test and every return value.
        tests = _shape_tests(inf)
        if not tests:
            continue
        quick, reference = FunctionDataDependence(inf), FunctionDataDependence(inf)
        for test in tests:
            node = inf.tree(test)
            found = quick.shape(node)
            assert found == _reference_shape(reference, node), inf.text[test[0]:test[1]]
            assert quick.shape_operands == reference.shape_operands
            asked += 1
            producers += found is not None
            pruned += bool(quick._rows)
    assert asked > 3000
    assert producers > 25  # `nonzero`, `x[mask]`, ... read by a size
    assert pruned > 5  # functions where a read of dimensions 1 and up asked first_dim_only


def _shape_tests(inf) -> list:
    """Every if's and loop's test and every return value of a function, in text order."""
    return sorted({scope.test for defs in inf.facts.defs.values() for d in defs for scope in d.scopes}
                  | {span for span, _ in inf.facts.returns})


def test_shape_answers_do_not_depend_on_the_order_asked(inferences):
    """shape's answers rest on answers remembered per name (tensor, first_dim_only, ...):
    each question asked alone (a fresh object), all asked in text order and all in reverse
    give the same producers and operands."""
    asked = 0
    for inf in inferences:
        tests = _shape_tests(inf)
        if not tests:
            continue
        forward, backward = FunctionDataDependence(inf), FunctionDataDependence(inf)
        ahead = [(forward.shape(inf.tree(t)), sorted(forward.shape_operands)) for t in tests]
        behind = [(backward.shape(inf.tree(t)), sorted(backward.shape_operands)) for t in reversed(tests)][::-1]
        for test, one, other in zip(tests, ahead, behind):
            alone = FunctionDataDependence(inf)
            assert (alone.shape(inf.tree(test)), sorted(alone.shape_operands)) == one == other, \
                inf.text[test[0]:test[1]]
            asked += 1
    assert asked > 3000


class _ReferenceDataDependence(FunctionDataDependence):
    """tensor and value_conversions as they were written before: a generator per union, a
    guard per name (its answer remembered, also when taken inside a loop it lies on)."""

    cuts = 0

    def tensor(self, node, depth):
        if depth > 32:
            self.cuts += 1
            return None
        if isinstance(node, Name):
            if self.parameters and node.id in self.inf.facts.params and node.id not in self.static:
                return frozenset({("parameter", node.id)})
            key = ("name", node.id)
            if key in self.reference_memo:
                return self.reference_memo[key]
            self.reference_memo[key] = None
            found, hit = set(), False
            for d in self._defs(node.id):
                value = self.inf.value_of(d)
                r = self.tensor(value, depth + 1) if value is not None else None
                if r is not None:
                    hit = True
                    found.update(r)
            result = self.reference_memo[key] = frozenset(found) if hit else None
            return result
        if isinstance(node, (Index, Seq)):
            return _reference_union(self.tensor(c, depth + 1) for c in node.children())
        if isinstance(node, CallExpr):
            return self._call(node, depth)
        return None

    def value_conversions(self, node, depth=0):
        if depth > 32:
            self.cuts += 1
            return None
        if isinstance(node, Name):
            key = ("value", node.id)
            if key in self.reference_memo:
                return self.reference_memo[key]
            self.reference_memo[key] = None
            result = _reference_union(self.value_conversions(self.inf.value_of(d), depth + 1)
                                      for d in self._defs(node.id) if self.inf.value_of(d) is not None)
            self.reference_memo[key] = result
            return result
        if isinstance(node, (Index, Seq)):
            return _reference_union(self.value_conversions(c, depth + 1) for c in node.children())
        if isinstance(node, CallExpr):
            kind, name = self._op(node)
            inner = _reference_union(self.value_conversions(c, depth + 1)
                                     for c in [*node.args, *(v for _, v in node.keywords)])
            if kind == "operator" and name and name in self.inf.sem.value_ops:
                if name not in self.inf.sem.conversions or (node.args and self._is_tensor_operand(node.args[0])):
                    return frozenset({(node.start, node.end), *(inner or ())})
            return inner
        if isinstance(node, Attr):
            return self.value_conversions(node.value, depth + 1)
        return None


def _reference_union(results):
    out, hit = set(), False
    for r in results:
        if r is not None:
            hit = True
            out.update(r)
    return frozenset(out) if hit else None


@pytest.fixture(scope="module")
def printed() -> list:
    """The Inference of every function of the fixture texts as torch printed them."""
    return _inferences([p.read_text(encoding="utf-8") for p in TEXTS + ARCHIVE_CODE])


class _Cuts(FunctionDataDependence):
    """FunctionDataDependence counting the walks the depth bound cut: an answer taken so
    depends on the depth its name was first reached at, whatever else is remembered."""

    cuts = 0

    def tensor(self, node, depth):
        self.cuts += depth > 32
        return super().tensor(node, depth)

    def value_conversions(self, node, depth=0):
        self.cuts += depth > 32
        return super().value_conversions(node, depth)


def test_tensor_and_value_conversions_of_names_are_the_ones_a_walk_per_name_gives(printed):
    """tensor / value_conversions of every name with a definition, asked of one object in
    text order and of another in reverse, against the form with a generator and a set per
    union asked of a fresh object per name (a name asked first is walked whole: no answer
    taken inside a loop it lies on is remembered yet), in every function whose walks the
    depth bound did not cut."""
    asked = sizes = conversions = cut = 0
    for inf in printed:
        names = sorted(inf.facts.defs)
        if not names:
            continue
        ahead, behind = _Cuts(inf), _Cuts(inf)
        first = [(ahead.tensor(Name(n, 0, 0), 0), ahead.value_conversions(Name(n, 0, 0))) for n in names]
        last = [(behind.tensor(Name(n, 0, 0), 0), behind.value_conversions(Name(n, 0, 0)))
                for n in reversed(names)][::-1]
        fresh = []
        cuts = ahead.cuts + behind.cuts
        for name in names:
            reference = _ReferenceDataDependence(inf)
            reference.reference_memo = {}
            found = reference.tensor(Name(name, 0, 0), 0)
            reference.reference_memo = {}
            fresh.append((found, reference.value_conversions(Name(name, 0, 0))))
            cuts += reference.cuts
        if cuts:
            cut += 1
            continue
        for name, one, other, alone in zip(names, first, last, fresh):
            assert one == other == alone, (inf.text[:80], name)
            asked += 1
            sizes += alone[0] is not None
            conversions += alone[1] is not None
    assert asked > 9000
    assert sizes > 80
    assert conversions > 120
    assert cut < 30


_SWAP_MODEL = """
import torch


class Swap(torch.nn.Module):
    def forward(self, x: torch.Tensor, n: int) -> torch.Tensor:
        a = x
        b = x
        c = x
        y = x
        for i in range(n):
            a, b, c = {carried}
            if i == 2:
                {made} = torch.nonzero(x)
{reads}        return y
"""


@pytest.mark.torch
def test_sizes_carried_round_a_loop_answer_alike_whichever_is_read_first(tmp_path, monkeypatch):
    """Values carried round a loop and swapped there (``a, b, c = b, relu(c), a``), one of
    them set to ``nonzero(x)`` on some pass, their sizes read after the loop: as torch
    prints each model, every read answers ``data_dependent_shape`` alike whichever order
    the text reads them in (and as read alone).  Where a value reaches the ``nonzero`` round
    the loop, its size is data-dependent (``a``, ``b`` and ``c`` of ``b, relu(c), a`` all
    do)."""
    import importlib

    import torch

    monkeypatch.syspath_prepend(str(tmp_path))
    cases = 0

    def answers(carried: str, made: str, order: str) -> dict:
        nonlocal cases
        reads = "".join(f"        if {v}.size(0) > 1:\n            y = y + {k + 1}\n"
                        for k, v in enumerate(order))
        name = f"swap_{cases}"
        cases += 1
        (tmp_path / f"{name}.py").write_text(_SWAP_MODEL.format(carried=carried, made=made, reads=reads))
        code = torch.jit.script(importlib.import_module(name).Swap()).code
        ifs = codeparse.parse_text(code, as_dict=True)["functions"][0]["ifs"]
        return {i["condition"]["text"]: i["condition"]["data_dependent_shape"] for i in ifs
                if "torch.size" in i["condition"]["text"]}

    dependent = 0
    for carried in ("b, torch.relu(c), a", "c, a, torch.relu(b)", "torch.relu(b), c, a"):
        for made in "abc":
            alone: dict = {}
            for v in "abc":
                alone.update(answers(carried, made, v))
            assert len(alone) == 3
            for order in ("abc", "cba", "bca"):
                assert answers(carried, made, order) == alone, (carried, made, order)
            dependent += sum(alone.values())
    assert dependent == 27  # each value reaches the nonzero round the loop


def test_a_tuple_element_and_a_chain_past_the_depth_bound():
    """The edges of name_path: a tuple target's element, a tuple that is no display, and
    a chain of getattr longer than the bound (cut, remembered as no path)."""
    chain = "\n".join(f"    a{i} = getattr(a{i - 1}, \"b\")" for i in range(1, 40))
    text = ("class M(Module):\n  __parameters__ = []\n  __buffers__ = []\n  training : bool\n"
            "  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
            "    p, q = (self.sub, x)\n    r, s = x.chunk(2)\n    a0 = self.root\n"
            f"{chain}\n"
            "    if torch.gt(a39, 0):\n      x = p\n    return x\n")
    (inf,) = _inferences([text])
    quick = Names(inf.text, inf.reader, inf.facts, inf.sem)
    reference = _ReferencePaths(Names(inf.text, inf.reader, inf.facts, inf.sem))
    for name in ("a39", "a15", "a14", "p", "q", "r", "s", "a0"):
        assert quick.name_path(name) == reference.name_path(name)
    assert quick.name_path("p") == "self.sub"
    assert quick.name_path("q") is None and quick.name_path("r") is None
    assert quick.name_path("a0") == "self.root"
    assert quick.name_path("a39") is None  # 39 links: past the bound from a39
    assert quick.name_path("a15") is None  # where the bound cut it: remembered
    assert quick.name_path("a14") == "self.root" + ".b" * 14  # never reached from a39
    fresh = Names(inf.text, inf.reader, inf.facts, inf.sem)
    assert fresh.name_path("a15") == "self.root" + ".b" * 15
    assert isinstance(inf.tree(inf.facts.defs["p"][0].value), Seq)


def _reference_literal(dd: FunctionDataDependence, node, depth: int) -> bool:
    """literal as it was read before its answers were remembered: a walk per question."""
    if depth > 32:
        return False
    if isinstance(node, Const):
        return True
    if isinstance(node, Name):
        if node.id in dd.inf.sem.literals:
            return True
        if node.id in dd.mutated_in_place():
            return False
        defs = dd._defs(node.id)
        return bool(defs) and all(_reference_literal(dd, dd.inf.value_of(d), depth + 1) for d in defs
                                  if dd.inf.value_of(d) is not None)
    if isinstance(node, Seq):
        return all(_reference_literal(dd, i, depth + 1) for i in node.items)
    if isinstance(node, CallExpr):
        kind, _ = dd._op(node)
        if kind not in ("operator", "intrinsic"):
            return False
        receiver = [node.func.value] if dd.inf.method_operator(node) is not None else []
        return all(_reference_literal(dd, a, depth + 1) for a in [*receiver, *node.args, *(v for _, v in node.keywords)])
    return False


def _literal_questions(inf, rng: random.Random) -> list:
    """Every name of a function asked at a depth drawn near the bound and far from it, in a
    shuffled order, and every definition's value at depth 0."""
    out = [(Name(name, 0, len(name)), rng.choice((0, 1, 5, 20, 28, 31, 32, 33))) for name in inf.facts.defs]
    out += [(inf.tree(d.value), 0) for defs in inf.facts.defs.values() for d in defs if d.value is not None]
    rng.shuffle(out)
    return out


def test_literal_answers_are_the_ones_a_walk_per_question_gives(inferences):
    rng = random.Random(7)
    asked = literal = 0
    for inf in inferences:
        quick, reference = FunctionDataDependence(inf), FunctionDataDependence(inf)
        for node, depth in _literal_questions(inf, rng):
            found = quick.literal(node, depth)
            assert found == _reference_literal(reference, node, depth), (inf.text[node.start:node.end], depth)
            asked += 1
            literal += found
    assert asked > 20000
    assert literal > 2000


def test_literal_along_a_chain_longer_than_the_depth_bound():
    """`a0 = torch.tensor(1.)`, `a{i} = torch.add(a{i-1}, 1)`: asked from the end first
    (cut by the bound), then from the middle and the start at depths near the bound."""
    chain = "\n".join(f"    a{i} = torch.add(a{i - 1}, 1)" for i in range(1, 45))
    text = ("def f(x: Tensor) -> int:\n    a0 = torch.tensor(1.)\n"
            f"{chain}\n    if bool(torch.gt(a44, x)):\n      x = torch.neg(x)\n    return int(a44)\n")
    (inf,) = _inferences([text])
    quick, reference = FunctionDataDependence(inf), FunctionDataDependence(inf)
    questions = [("a44", 0), ("a14", 0), ("a15", 0), ("a16", 0), ("a10", 10), ("a10", 11), ("a5", 20),
                 ("a5", 21), ("a14", 1), ("a14", 3), ("a0", 30), ("a0", 31), ("a20", 0), ("a12", 4)]
    for name, depth in questions:
        found = quick.literal(Name(name, 0, len(name)), depth)
        assert found == _reference_literal(reference, Name(name, 0, len(name)), depth), (name, depth)
        # a_i's walk reaches the literal 1. at depth + 2 i + 2: within the bound or cut
        assert found == (depth + 2 * int(name[1:]) + 2 <= 32), (name, depth)
