"""The package layout stays true: stages import downward only, never in a cycle, and never
each other's private names.

The imports are read from the source files with ``ast`` (module-level and function-local
imports alike, and ``importlib.import_module`` of a literal name), so the test imports
nothing and sees imports that run only on some paths.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "codeparse"

# The stages, lowest first: a module may import from its own stage and from the stages
# before it.  The modules at the package root come last: ``api`` (the public functions),
# ``__main__`` and the package itself (its lazy public names, read from anywhere, since
# Python imports the package before any of its modules).
STAGES = (
    "contract",  # models, codes, plain records: what every stage hands on
    "grammar",  # grammars as data, the engine that compiles them
    "files",  # walking directories, recognising files, the bounded zip reader
    "parse",  # text to statements and expressions
    "infer",  # what names and conditions depend on
    "text",  # a code file read and parsed; an archive's files resolved as one program
    "rules",  # export findings from the program; what each code means
    "pickles",  # pickles read without unpickling
    "archive",  # the TorchScript archive layouts
    "gate",  # the check: inputs, policy, budget, baseline
    "output",  # renderers and escaping
    "trace",  # trace against script
    "report",  # the HTML report
    "api",  # the public functions
    "cli",  # the command line
    "__main__",
    "__init__",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _stage(module: str) -> str:
    """``codeparse.gate.run`` -> ``gate``; the package itself -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if MODULES[module].name != "__init__.py":
        base.pop()
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str):
    """(imported module, imported name or None, line, only for type checking) for every
    import of a codeparse module in ``module``, and for each ``mod._name`` read from a
    module bound by an import."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            guarded.update(id(sub) for sub in ast.walk(node))
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        typing_only = id(node) in guarded
        if isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            if not source.startswith("codeparse"):
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if full in MODULES:
                    bound[alias.asname or alias.name] = full
                    yield full, None, node.lineno, typing_only
                else:
                    yield source, alias.name, node.lineno, typing_only
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("codeparse"):
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    yield alias.name, None, node.lineno, typing_only
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module") and node.args \
                and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("codeparse."):
            yield node.args[0].value, None, node.lineno, typing_only
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            yield bound[node.value.id], node.attr, node.lineno, id(node) in guarded


def _private(name: str | None) -> bool:
    return bool(name) and name.startswith("_") and not name.startswith("__")


EDGES = [(module, *edge) for module in MODULES for edge in _imports(module)]


def test_every_module_belongs_to_a_stage():
    assert sorted({_stage(m) for m in MODULES} - set(STAGES)) == []


def test_no_import_cycle():
    """No strongly connected component (Tarjan) of more than one module, over the imports
    that run: those under ``if TYPE_CHECKING:`` only name types for annotations."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, target, _name, _line, typing_only in EDGES:
        if not typing_only and target in MODULES and target != module:
            graph[module].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert cycles == []


def test_no_import_from_a_higher_stage():
    rank = {stage: i for i, stage in enumerate(STAGES)}
    upward = sorted({f"{module}:{line} imports {target}" for module, target, _name, line, _typing in EDGES
                     if target.startswith("codeparse.") and rank[_stage(target)] > rank[_stage(module)]})
    assert upward == []


def test_no_private_name_across_stages():
    crossing = sorted({f"{module}:{line} uses {target}.{name}" for module, target, name, line, _typing in EDGES
                       if _private(name) and _stage(target) != _stage(module)})
    assert crossing == []


@pytest.mark.parametrize("stage", [s for s in STAGES if (PACKAGE / s / "__init__.py").exists()])
def test_each_stage_says_what_it_takes_and_gives(stage):
    """Each subpackage opens with a paragraph on what the stage takes and gives, and imports
    nothing when it is imported (an ``__init__`` that imported its modules would load all of
    them for any one)."""
    tree = ast.parse((PACKAGE / stage / "__init__.py").read_text(encoding="utf-8"))
    assert len((ast.get_docstring(tree) or "").split()) > 20
    assert [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))] == []
