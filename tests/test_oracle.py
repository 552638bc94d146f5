"""The IR oracle: codeparse's reading of code text against TorchScript's own graph.

For every saved archive in ``fixtures/archives`` the graph of every method and compiled
function (``tests/ir_oracle.py``, which never imports codeparse) is compared with what
codeparse reads from the archive's extracted code (``fixtures/archive_code/<stem>/``):
the ``if`` statements with their condition kinds and attribute/argument sources, the
attribute reads rooted at ``self``, and the receivers of ``(x).m(...)`` calls.  The method
texts in ``fixtures/text/<case>/script.code`` are compared with the same graphs.

How the two sides are matched:

* Ifs of archive code are matched by line: the loaded graph records where in the code
  text each ``prim::If`` came from.  Text ifs are compared in order otherwise.
* An ``if`` that the text has and the graph lacks is accepted only when codeparse calls
  its condition ``constant``: TorchScript drops a statically decided ``if`` when it
  compiles the text back (``if torch.__is__(None, None):`` prints, then folds away).
* Condition sources are compared for named attribute and argument sources only
  (``self...`` refs and parameter names), one kind per ref, the highest-priority one.

The last section tests the oracle itself on modules scripted here, independently of the
parser.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import sys
import zipfile
from collections import Counter
from pathlib import Path
from typing import Optional

import pytest
import torch
from torch import Tensor, nn

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import ir_oracle  # noqa: E402

pytestmark = [
    pytest.mark.torch,
    # torch 2.13 deprecates torch.jit.script/save/load; the oracle needs them regardless.
    pytest.mark.filterwarnings("ignore:`torch.jit.*is deprecated:DeprecationWarning"),
]

ROOT = HERE.parent
FIXTURES = ROOT / "fixtures"
ARCHIVES = sorted((FIXTURES / "archives").glob("*.pt"))
SCRIPT_TEXTS = sorted((FIXTURES / "text").glob("*/script.code"))

_PRIORITY = {k: i for i, k in enumerate(ir_oracle.KIND_PRIORITY)}


# ---------------------------------------------------------------------------------------
# Loading (cached: both comparison tests use the script archives)
# ---------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _register_fixture_ops() -> None:
    """Register the custom ops that fixture archives call (``ops.codeparse_fixture.*``).

    They are defined in ``fixtures/models.py``; importing it only defines classes.
    """
    path = FIXTURES / "models.py"
    spec = importlib.util.spec_from_file_location("codeparse_fixture_models", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # TorchScript reads class sources through the module
    spec.loader.exec_module(module)
    module.register_fixture_ops()


@functools.lru_cache(maxsize=None)
def _loaded(stem: str):
    path = FIXTURES / "archives" / f"{stem}.pt"
    try:
        return ir_oracle.load_archive(path)
    except RuntimeError as exc:
        if "Unknown builtin op" not in str(exc):
            raise
        _register_fixture_ops()
        return ir_oracle.load_archive(path)


@functools.lru_cache(maxsize=None)
def _archive(stem: str, follow: bool = True):
    """``(loaded module, {qualified name: MethodFacts})`` for ``fixtures/archives/<stem>.pt``.

    ``follow``: calls are followed into their callees' graphs, as codeparse follows them
    when the callee's body is in the archive; method text holds no callee body, so it is
    compared with ``follow=False``."""
    module, cu = _loaded(stem)
    return module, ir_oracle.module_facts(module, cu, follow)


def _parse_code_dir(code_dir: Path):
    """``{qualified name: (Function, path under the code dir)}`` for every ``.py``, the
    directory parsed as one program (as ``codeparse check`` reads an archive), and the
    ``(path, line)`` of every condition codeparse abstains on at its depth limit (CP113)."""
    from codeparse.text.program import parse_program

    index: dict[str, tuple[object, str]] = {}
    duplicates: list[str] = []
    paths = sorted(code_dir.rglob("*.py"))
    entries = [(f"{code_dir.name}/code/{p.relative_to(code_dir).as_posix()}", p.read_bytes()) for p in paths]
    files, _ = parse_program(entries)
    abstained: set[tuple[str, int]] = set()
    for path, parsed in zip(paths, files):
        rel = path.relative_to(code_dir).as_posix()
        abstained.update((rel, d.span.line) for d in parsed.diagnostics if d.code == "CP113")
        functions = list(parsed.functions)
        for cls in parsed.classes:
            functions.extend(cls.methods)
        for fn in functions:
            if fn.qualified_name in index:
                duplicates.append(f"{fn.qualified_name} (in {index[fn.qualified_name][1]} and {rel})")
            index[fn.qualified_name] = (fn, rel)
    return index, duplicates, abstained


# ---------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------


def _best_per_ref(pairs) -> dict[str, str]:
    best: dict[str, str] = {}
    for ref, kind in pairs:
        if ref not in best or _PRIORITY.get(kind, 99) < _PRIORITY.get(best[ref], 99):
            best[ref] = kind
    return best


def _parsed_sources(fn, stmt) -> dict[str, str]:
    """The parsed condition's attribute/argument sources, one (best) kind per ref."""
    params = {p.name for p in fn.signature.params}
    named = [
        (s.ref, s.kind)
        for s in stmt.condition.sources
        if s.ref == "self" or s.ref.startswith("self.") or s.ref in params
    ]
    return _best_per_ref(named)


def _fmt_sources(sources: dict[str, str]) -> str:
    return "{" + ", ".join(f"{r}: {k}" for r, k in sorted(sources.items())) + "}"


def _fmt_counter(counter: Counter) -> str:
    return ", ".join(f"{k}×{n}" if n > 1 else str(k) for k, n in sorted(counter.items(), key=str))


def _compare_if(label: str, ir_kind: str, ir_sources: set, fn, stmt) -> list[str]:
    problems = []
    if stmt.condition.kind != ir_kind:
        problems.append(
            f"{label} `{stmt.condition.text}`: kind: graph says {ir_kind}, parse says {stmt.condition.kind}"
        )
    ir_src = dict(ir_sources)
    parsed_src = _parsed_sources(fn, stmt)
    if parsed_src != ir_src:
        problems.append(
            f"{label} `{stmt.condition.text}`: sources: graph says {_fmt_sources(ir_src)}, "
            f"parse says {_fmt_sources(parsed_src)}"
        )
    return problems


def _compare_ifs_by_line(facts: ir_oracle.MethodFacts, fn, rel: str, abstained=frozenset()) -> list[str]:
    problems = []
    parsed_by_line = {stmt.span.line: stmt for stmt in fn.ifs}
    matched: set[int] = set()
    for kind, sources, loc in zip(facts.if_kinds, facts.if_sources, facts.if_lines):
        line = loc[1]
        stmt = parsed_by_line.get(line)
        if stmt is None:
            problems.append(f"line {line}: graph has an if (kind {kind}), parse has none on that line")
            continue
        matched.add(line)
        if line in abstained and stmt.condition.kind == "unknown":
            continue
        problems += _compare_if(f"line {line}", kind, sources, fn, stmt)
    for line, stmt in sorted(parsed_by_line.items()):
        if line not in matched and stmt.condition.kind != "constant":
            problems.append(
                f"line {line}: parse has an if `{stmt.condition.text}` (kind {stmt.condition.kind}) "
                "that the graph does not (only a constant condition may be folded away)"
            )
    return problems


def _compare_ifs_in_order(facts: ir_oracle.MethodFacts, fn, abstained=frozenset()) -> list[str]:
    problems = []
    parsed = list(fn.ifs)
    ir = list(zip(facts.if_kinds, facts.if_sources))
    spare = len(parsed) - len(ir)  # constant ifs the graph may have folded away
    if spare < 0:
        problems.append(f"number of ifs: graph has {len(ir)}, parse has {len(parsed)}")
    i = 0
    for n, stmt in enumerate(parsed, 1):
        if i >= len(ir):
            if stmt.condition.kind != "constant":
                problems.append(f"if #{n} (line {stmt.span.line}): parse has an if the graph does not")
            continue
        kind, sources = ir[i]
        if spare > 0 and stmt.condition.kind == "constant" and kind != "constant":
            spare -= 1  # folded away when compiled
            continue
        if stmt.span.line in abstained and stmt.condition.kind == "unknown":
            i += 1
            continue
        problems += _compare_if(f"if #{n} (line {stmt.span.line})", kind, sources, fn, stmt)
        i += 1
    if i < len(ir) and spare >= 0:
        problems.append(f"graph has {len(ir) - i} more if(s) than the parse matched: kinds {facts.if_kinds[i:]}")
    return problems


def _compare_counters(what: str, ir: Counter, parsed: Counter, foldable: Counter = Counter()) -> list[str]:
    """Equal multisets, except that the graph may lack what sits in ``foldable``."""
    if ir == parsed:
        return []
    graph_only, parse_only = ir - parsed, parsed - ir
    if not graph_only and not (parse_only - foldable):
        return []
    return [
        f"{what}: graph only [{_fmt_counter(graph_only)}], parse only [{_fmt_counter(parse_only)}]"
    ]


def _inside_constant_ifs(fn, items, start_of) -> Counter:
    """Items textually inside a ``constant`` if: compiling the text back folds such an if
    (``if torch.eq("zeros", "circular"):``) and drops the branch not taken, reads and
    calls included, so the graph may lack them.  Nothing else is tolerated."""
    ranges = [(i.span.end, i.block_span.end) for i in fn.ifs if i.condition.kind == "constant"]
    return Counter(
        key for key, start in ((k, start_of(item)) for k, item in items)
        if any(lo <= start < hi for lo, hi in ranges)
    )


def compare_function(facts: ir_oracle.MethodFacts, fn, rel: Optional[str], abstained=frozenset()) -> list[str]:
    """Every disagreement between the graph's facts and a parsed ``Function``; ``abstained``:
    the lines of the function's file whose condition codeparse reports as past its depth
    limit (CP113, kind ``unknown``), an abstention with a reason, not an answer to compare."""
    problems = []
    lines = [stmt.span.line for stmt in fn.ifs]
    if lines != sorted(lines):
        problems.append(f"parsed ifs are not in textual order: lines {lines}")
    if rel is not None and facts.if_lines and all(
        loc is not None and loc[0] == rel for loc in facts.if_lines
    ):
        problems += _compare_ifs_by_line(facts, fn, rel, abstained)
    else:
        problems += _compare_ifs_in_order(facts, fn, abstained)
    method_calls = [c for c in fn.calls if c.method is not None]
    problems += _compare_counters(
        "self refs", facts.self_getattr_paths, Counter(r.path for r in fn.self_refs),
        _inside_constant_ifs(fn, [(r.path, r) for r in fn.self_refs], lambda r: r.span.start),
    )
    problems += _compare_counters(
        "method-call receivers",
        facts.callmethod_receivers,
        Counter(c.receiver for c in method_calls),
        _inside_constant_ifs(fn, [(c.receiver, c) for c in method_calls], lambda c: c.span.start),
    )
    return problems


def _report(title: str, per_method: dict[str, list[str]]) -> str:
    out = [title]
    for name, problems in per_method.items():
        out.append(f"  {name}:")
        out += [f"    - {p}" for p in problems]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# The comparison tests
# ---------------------------------------------------------------------------------------


def test_fixtures_present():
    assert ARCHIVES, f"no archives in {FIXTURES / 'archives'}: run fixtures/generate.py"
    assert SCRIPT_TEXTS, f"no script texts in {FIXTURES / 'text'}: run fixtures/generate.py"


@pytest.mark.parametrize("archive", ARCHIVES, ids=[p.name[: -len(".pt")] for p in ARCHIVES])
def test_archive_code_agrees_with_graph(archive: Path):
    stem = archive.name[: -len(".pt")]
    _, facts = _archive(stem)
    code_dir = FIXTURES / "archive_code" / stem
    assert code_dir.is_dir(), f"{code_dir} is missing: run fixtures/generate.py"
    parsed, duplicates, abstained = _parse_code_dir(code_dir)
    per_method: dict[str, list[str]] = {}
    if duplicates:
        per_method["(parse)"] = [f"qualified name defined twice: {d}" for d in duplicates]
    for name, method in sorted(facts.items()):
        if name not in parsed:
            near = sorted(q for q in parsed if q.rsplit(".", 1)[-1] == name.rsplit(".", 1)[-1])
            per_method[name] = [f"graph has it, parse has no function of that qualified name (same name: {near})"]
            continue
        fn, rel = parsed[name]
        problems = compare_function(method, fn, rel, {line for r, line in abstained if r == rel})
        if problems:
            per_method[f"{name} ({rel})"] = problems
    assert not per_method, _report(f"{stem}: codeparse disagrees with the TorchScript graph", per_method)


@pytest.mark.parametrize(
    "code_path", SCRIPT_TEXTS, ids=[p.parent.name for p in SCRIPT_TEXTS]
)
def test_script_text_agrees_with_graph(code_path: Path):
    import codeparse

    case = code_path.parent.name
    archive = FIXTURES / "archives" / f"{case}.script.pt"
    assert archive.is_file(), f"{archive} is missing for {code_path}: run fixtures/generate.py"
    module, facts = _archive(archive.name[: -len(".pt")], follow=False)
    key = f"{module._c._type().qualified_name()}.forward"
    method = facts[key]
    parsed = codeparse.parse_text(code_path.read_text(encoding="utf-8"), path=str(code_path))
    forwards = [fn for fn in parsed.functions if fn.name == "forward"]
    assert len(forwards) == 1, f"{code_path}: expected one `forward`, parse has {[f.name for f in parsed.functions]}"
    fn = forwards[0]
    problems = []
    if fn.qualified_name != "forward":
        problems.append(f"qualified_name of bare method text: expected 'forward', parse says {fn.qualified_name!r}")
    abstained = {d.span.line for d in parsed.diagnostics if d.code == "CP113"}
    problems += compare_function(method, fn, None, abstained)
    assert not problems, _report(f"{case}: script.code disagrees with the graph", {key: problems})


# ---------------------------------------------------------------------------------------
# The oracle itself, on modules scripted here (no parser involved)
# ---------------------------------------------------------------------------------------


class CustomModel(nn.Module):
    """The reference model: a condition on a tensor's values and two on flag attributes."""

    def __init__(self, condition_testing=True, branch_testing=True):
        super().__init__()
        self.condition_testing = condition_testing
        self.branch_testing = branch_testing
        self.custom_layer = nn.Conv2d(3, 3, 3, padding=1)
        self.custom_layer1 = nn.Conv2d(3, 3, 3, padding=1)
        self.custom_layer2 = nn.Conv2d(3, 3, 3, padding=1)
        self.layer1 = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU())
        self.layer2 = nn.Sequential(nn.Conv2d(8, 8, 3, stride=2), nn.BatchNorm2d(8), nn.ReLU())
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(8 * 63 * 63, 10)
        self.condition_func1 = nn.Softmax(dim=1)
        self.condition_func2 = nn.LogSoftmax(dim=1)

    def forward(self, x):
        if x[0][0][0][0] % 2 == 0:
            x = self.custom_layer(x)
        if self.branch_testing == True:  # noqa: E712
            x = self.custom_layer1(x)
        else:
            x = self.custom_layer2(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.flatten(x)
        x = self.fc1(x)
        if self.condition_testing == True:  # noqa: E712
            x = self.condition_func1(x)
        else:
            x = self.condition_func2(x)
        return x


class Params(nn.Module):
    """The reference model with attributes and arguments of every scalar type, each in a condition."""

    def __init__(self):
        super().__init__()
        self.is_bool = True
        self.is_float = 0.5
        self.is_integer = 3
        self.is_List = [1, 2]

    def forward(
        self,
        x: Tensor,
        y: Tensor,
        is_bool: bool,
        is_str: str,
        is_List: list,
        is_float: float,
        is_integer: int,
        is_tuple: tuple,
    ):
        if self.is_bool == True:  # noqa: E712
            return x
        if self.is_float < 0:
            return y
        if self.is_integer > sum(self.is_List):
            return x
        if is_str == "a":
            return y
        if x.size(0) > 2:
            return y
        return x


def _oracle_helper(x: Tensor, n: int) -> bool:
    return x.dim() > n


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.flag = True
        self.scale = 2

    def forward(self, x: Tensor) -> Tensor:
        return x * self.scale


class Rules(nn.Module):
    """One ``if`` per rule of the oracle, in order (see ``test_ir_oracle_rules``)."""

    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.seq = nn.Sequential(nn.ReLU())
        self.count = 3
        self.register_buffer("buf", torch.zeros(2))

    def forward(self, x: Tensor, n: int, items: list[int]) -> Tensor:
        # Bodies mutate in place, so that no if has outputs (which would make later
        # conditions depend on earlier ones, by the control-dependence rule).
        if torch.is_grad_enabled():  # 1 runtime
            x.add_(1)
        if self.inner.flag:  # 2 attribute through a chain
            x.add_(2)
        if bool(n):  # 3 bool() of an int is not a tensor value
            x.add_(3)
        if int(x.sum()) > 1:  # 4 tensor_value
            x.add_(4)
        if len(items) > 1:  # 5 len of a list: argument
            x.add_(5)
        if len(x) > 1:  # 6 len of a Tensor: tensor_shape
            x.add_(6)
        if self.buf.is_floating_point():  # 7 tensor_shape through is_*
            x.add_(7)
        if bool(self.inner(x).sum() > 0):  # 8 the receiver is a source; its forward is followed
            x.add_(8)
        m = 0
        for i in range(n):  # a loop's outputs depend on its trip count
            m = m + i
        if m > 2:  # 9 argument (n, through the loop)
            x.add_(9)
        if n > 0:  # 10
            k = self.count
        else:
            k = 1
        if k > 1:  # 11 control dependence: n (argument) outranks self.count (attribute)
            x.add_(11)
        if _oracle_helper(x, self.count):  # 12 the helper's body is followed: x reaches it through dim
            x.add_(12)
        if len([1, 2]) == 2:  # 13 constant (literals only; `if 1 > 2` would be folded away)
            x.add_(13)
        return getattr(self.seq, "0")(x)


class _Pair:
    """A TorchScript class: objects of it are built in the code (``prim::CreateObject``)."""

    def __init__(self, a: Tensor, b: int):
        self.a = a
        self.b = b

    def set_b(self, b: int):
        self.b = b

    def times(self, k: int) -> int:
        return self.b * k


class LoopFlow(nn.Module):
    """One ``if`` per rule of data flow through loops (see ``test_ir_oracle_loops``)."""

    def __init__(self):
        super().__init__()
        self.limit = 3

    def forward(self, x: Tensor, n: int, keys: list[str]) -> Tensor:
        for i in range(x.size(0)):
            if self.limit > 2:  # 1 invariant in the loop: attribute
                x.add_(1)
            if i > n:  # 2 the counter: tensor_shape (and n)
                x.add_(2)
        k = 0
        going = bool(x.sum() > 0)
        while going:
            if k > 1:  # 3 carried round a while whose test the body computes again
                x.add_(3)
            k += 1
            going = bool(x.sum() > k)
        seen: dict[str, int] = {}
        for key in keys:
            if key in seen:  # 4 a dict filled later in the body, read at the next pass
                x.add_(4)
            seen[key] = x.size(0)
        return x


class Mutations(nn.Module):
    """One ``if`` per rule of container mutations (see ``test_ir_oracle_mutations``)."""

    def forward(self, x: Tensor, n: int, steps: int) -> Tensor:
        info: dict[str, int] = {"n": n}
        if "size" not in info:  # 1 the item set in its own then-block defines nothing here
            info["size"] = x.size(0)
        if info["size"] > 1:  # 2 after the mutation: it defines the dict
            x.add_(2)
        seen: list[int] = []
        for _ in range(steps):
            if len(seen) > 2:  # 3 an append later in the loop body runs before the next pass
                x.add_(3)
            seen.append(x.size(1))
        return x


def _made_pair(a: Tensor) -> _Pair:
    return _Pair(a, 0)


class Objects(nn.Module):
    """One ``if`` per rule of objects built in the code (see ``test_ir_oracle_objects``)."""

    def forward(self, x: Tensor, n: int) -> Tensor:
        p = _Pair(x, n)
        if p.b > 1:  # 1 __init__ defines the object
            x.add_(5)
        q = _Pair(x, 1)
        q.b = n
        if q.b > 2:  # 2 so does an attribute set
            x.add_(6)
        r = _Pair(torch.zeros(1), 2)
        if r.b > 1:  # 3 built from literals only
            x.add_(7)
        s = _Pair(torch.zeros(1), 2)
        s.set_b(n)
        if s.b > 1:  # 4 a method that sets an attribute defines the object
            x.add_(8)
        t = _Pair(torch.zeros(1), 2)
        k = t.times(n)
        if t.b > 1:  # 5 one that sets none does not
            x.add_(k)
        u = _made_pair(torch.zeros(1))
        u.b = n
        if u.b > 2:  # 6 an object a function returns: an attribute set defines it too
            x.add_(9)
        return x


class SelfSets(nn.Module):
    """One ``if`` per rule of attributes of self the method sets (see ``test_ir_oracle_self_sets``)."""

    def __init__(self):
        super().__init__()
        self.count = 0
        self.seen = 0

    def forward(self, x: Tensor, n: int) -> Tensor:
        if self.seen > 2:  # 1 a read before any set: the attribute
            x.add_(1)
        for i in range(x.size(0)):
            self.count = i
        if self.count > 2:  # 2 set in a loop before the read: the counter (and the attribute)
            x.add_(2)
        self.seen = int(x.sum())
        if self.seen > 0:  # 3 set before the read: what was set
            x.add_(3)
        return x


def _forward_facts(module: nn.Module) -> ir_oracle.MethodFacts:
    scripted = torch.jit.script(module)
    facts = ir_oracle.module_facts(scripted)
    return facts[f"{scripted._c._type().qualified_name()}.forward"]


def test_ir_oracle_params():
    facts = _forward_facts(Params())
    assert facts.if_kinds == ["attribute", "attribute", "attribute", "argument", "tensor_shape"]
    assert facts.if_sources == [
        {("self.is_bool", "attribute")},
        {("self.is_float", "attribute")},
        {("self.is_integer", "attribute"), ("self.is_List", "attribute")},
        {("is_str", "argument")},
        {("x", "tensor_shape")},
    ]
    assert facts.self_getattr_paths == Counter(
        {"self.is_bool": 1, "self.is_float": 1, "self.is_integer": 1, "self.is_List": 1}
    )
    assert facts.callmethod_receivers == Counter()
    assert facts.arg_names[:3] == ["self", "x", "y"]


def test_ir_oracle_custom_model():
    scripted = torch.jit.script(CustomModel())
    all_facts = ir_oracle.module_facts(scripted)
    facts = all_facts[f"{scripted._c._type().qualified_name()}.forward"]
    assert facts.if_kinds == ["tensor_value", "attribute", "attribute"]
    assert facts.if_sources == [
        {("x", "tensor_value")},
        {("self.branch_testing", "attribute")},
        {("self.condition_testing", "attribute")},
    ]
    submodules = [
        "custom_layer", "custom_layer1", "custom_layer2", "layer1", "layer2",
        "flatten", "fc1", "condition_func1", "condition_func2",
    ]
    assert facts.self_getattr_paths == Counter(
        [f"self.{n}" for n in submodules] + ["self.branch_testing", "self.condition_testing"]
    )
    assert facts.callmethod_receivers == Counter(f"self.{n}" for n in submodules)
    # Submodule types and the compiled functions they call are there too.
    assert "__torch__.torch.nn.modules.batchnorm.BatchNorm2d.forward" in all_facts
    assert "__torch__.torch.nn.functional.relu" in all_facts
    bn = all_facts["__torch__.torch.nn.modules.batchnorm.BatchNorm2d.forward"]
    assert bn.callmethod_receivers == Counter({"self": 1})  # self._check_input_dim(input)
    relu = all_facts["__torch__.torch.nn.functional.relu"]
    assert not relu.is_method and relu.if_sources == [{("inplace", "argument")}]


def test_ir_oracle_rules():
    facts = _forward_facts(Rules())
    assert facts.if_kinds == [
        "runtime",
        "attribute",
        "argument",
        "tensor_value",
        "argument",
        "tensor_shape",
        "tensor_shape",
        "tensor_value",
        "argument",
        "argument",
        "argument",
        "tensor_shape",
        "constant",
    ]
    assert facts.if_sources == [
        set(),
        {("self.inner.flag", "attribute")},
        {("n", "argument")},
        {("x", "tensor_value")},
        {("items", "argument")},
        {("x", "tensor_shape")},
        {("self.buf", "tensor_shape")},
        {("self.inner", "tensor_value"), ("self.inner.scale", "tensor_value"), ("x", "tensor_value")},
        {("n", "argument")},
        {("n", "argument")},
        {("n", "argument"), ("self.count", "attribute")},
        {("x", "tensor_shape"), ("self.count", "attribute")},
        set(),
    ]
    assert facts.self_getattr_paths == Counter(
        {
            "self.inner": 2,
            "self.inner.flag": 1,
            "self.buf": 1,
            "self.count": 2,
            "self.seq": 1,
            "self.seq.0": 1,
        }
    )
    assert facts.callmethod_receivers == Counter({"self.inner": 1, "self.seq.0": 1})
    assert all(loc is None or not loc[0].startswith("__torch__") for loc in facts.if_lines)


def test_ir_oracle_loops():
    facts = _forward_facts(LoopFlow())
    assert facts.if_kinds == ["attribute", "tensor_shape", "tensor_value", "tensor_shape"]
    assert facts.if_sources == [
        {("self.limit", "attribute")},
        {("x", "tensor_shape"), ("n", "argument")},
        {("x", "tensor_value")},
        {("x", "tensor_shape"), ("keys", "argument")},
    ]


def test_ir_oracle_mutations():
    facts = _forward_facts(Mutations())
    assert facts.if_kinds == ["argument", "tensor_shape", "tensor_shape"]
    assert facts.if_sources == [
        {("n", "argument")},
        {("x", "tensor_shape"), ("n", "argument")},
        {("x", "tensor_shape"), ("steps", "argument")},
    ]


def test_ir_oracle_objects():
    facts = _forward_facts(Objects())
    assert facts.if_kinds == ["argument", "argument", "constant", "argument", "constant", "argument"]
    assert facts.if_sources == [
        {("x", "argument"), ("n", "argument")},
        {("x", "argument"), ("n", "argument")},
        set(),
        {("n", "argument")},
        set(),
        {("n", "argument")},
    ]


def test_ir_oracle_self_sets():
    facts = _forward_facts(SelfSets())
    assert facts.if_kinds == ["attribute", "tensor_shape", "tensor_value"]
    assert facts.if_sources == [
        {("self.seen", "attribute")},
        {("x", "tensor_shape"), ("self.count", "attribute")},
        {("x", "tensor_value"), ("self.seen", "attribute")},
    ]


def _strip_storages(data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            parts = info.filename.split("/")
            if len(parts) == 3 and parts[1] == "data" and parts[2].isdigit():
                continue
            dst.writestr(info.filename, src.read(info.filename))
    return out.getvalue()


def test_ir_oracle_load_archive_roundtrip(tmp_path):
    """A saved archive, tensor data stripped, loads back with the same facts and code lines."""
    scripted = torch.jit.script(Params())
    buf = io.BytesIO()
    torch.jit.save(scripted, buf)
    path = tmp_path / "params.pt"
    path.write_bytes(_strip_storages(buf.getvalue()))
    with zipfile.ZipFile(path) as z:
        assert not any("/data/" in n for n in z.namelist())
        entry = next(n for n in z.namelist() if "/code/" in n and n.endswith(".py"))
        code = z.read(entry).decode()
    loaded, cu = ir_oracle.load_archive(path)
    facts = ir_oracle.module_facts(loaded, cu)
    key = f"{loaded._c._type().qualified_name()}.forward"
    original = _forward_facts(Params())
    assert facts[key].if_kinds == original.if_kinds
    assert facts[key].if_sources == original.if_sources
    assert facts[key].self_getattr_paths == original.self_getattr_paths
    lines = code.splitlines()
    for loc in facts[key].if_lines:
        assert loc is not None and entry.endswith("/code/" + loc[0])
        assert lines[loc[1] - 1].lstrip().startswith("if "), lines[loc[1] - 1]


def test_ir_oracle_hide_escapes_keeps_length():
    text = 'x = "a\\001\\r" + "\\\\n" + "\\"q\\""'
    hidden = ir_oracle._hide_escapes(text)
    assert len(hidden) == len(text)
    assert hidden == 'x = "a_001_r" + "\\\\n" + "\\"q\\""'


def test_ir_oracle_best_kind():
    assert ir_oracle.best_kind([]) == "constant"
    assert ir_oracle.best_kind(["attribute", "argument", "unknown"]) == "argument"
    assert ir_oracle.best_kind(["constant", "unknown"]) == "unknown"


def test_comparison_reports_disagreements():
    """The comparison is not vacuous: altered graph facts against a real parse disagree."""
    import dataclasses

    import codeparse

    text = torch.jit.script(Params()).code
    fn = next(f for f in codeparse.parse_text(text).functions if f.name == "forward")
    facts = _forward_facts(Params())
    assert compare_function(facts, fn, None) == []
    altered = dataclasses.replace(
        facts,
        if_kinds=["tensor_value"] + facts.if_kinds[1:],
        if_sources=[{("self.other", "attribute")}] + facts.if_sources[1:],
        self_getattr_paths=facts.self_getattr_paths + Counter({"self.extra": 1}),
        callmethod_receivers=Counter({"self.sub": 1}),
    )
    problems = "\n".join(compare_function(altered, fn, None))
    assert "kind: graph says tensor_value, parse says attribute" in problems
    assert "graph says {self.other: attribute}, parse says {self.is_bool: attribute}" in problems
    assert "self refs: graph only [self.extra]" in problems
    assert "method-call receivers: graph only [self.sub]" in problems


# ---------------------------------------------------------------------------------------
# The torch.nn corpus: every scriptable torch.nn module class of torch 2.13
# ---------------------------------------------------------------------------------------

NN_CORPUS = sorted((FIXTURES / "nn_corpus").glob("*.pt"))


def _corpus_problems(path: Path) -> tuple[int, int, dict[str, list[str]]]:
    """(ifs in the graphs, ifs whose kind and sources agree, disagreements) for one archive."""
    from codeparse.archive.torchscript import open_archive

    module, cu = ir_oracle.load_archive(path)
    facts = ir_oracle.module_facts(module, cu)
    archive = open_archive(str(path))
    root = path.name[: -len(".pt")] + "/code/"
    parsed = {}
    for cf in archive.files:
        rel = cf.path.split("!", 1)[1][len(root):]
        for fn in [*cf.functions, *(m for c in cf.classes for m in c.methods)]:
            parsed[fn.qualified_name] = (fn, rel)
    total = agreed = 0
    per_method: dict[str, list[str]] = {}
    for name, method in sorted(facts.items()):
        total += len(method.if_kinds)
        if name not in parsed:
            per_method[name] = ["graph has it, parse has no function of that qualified name"]
            continue
        fn, rel = parsed[name]
        problems = compare_function(method, fn, rel)
        if problems:
            per_method[f"{name} ({rel})"] = problems
        bad_lines = {int(p.split()[1].rstrip(":")) for p in problems if p.startswith("line ")}
        agreed += sum(1 for loc in method.if_lines if loc is not None and loc[1] not in bad_lines)
    return total, agreed, per_method


def test_nn_corpus_present():
    import json

    manifest = json.loads((FIXTURES / "nn_corpus" / "manifest.json").read_text())
    assert manifest["torch_version"].startswith("2.13")
    assert sorted(p.name[: -len(".pt")] for p in NN_CORPUS) == sorted(manifest["scripted"])
    assert len(NN_CORPUS) >= 130


@pytest.mark.parametrize("path", NN_CORPUS, ids=[p.name[: -len(".pt")] for p in NN_CORPUS])
def test_nn_corpus_agrees_with_graph(path: Path):
    total, agreed, per_method = _corpus_problems(path)
    assert not per_method, _report(f"{path.name}: codeparse disagrees with the TorchScript graph", per_method)
    assert agreed == total
