"""The package layout in figures, read from the source files of a tree:

    python scripts/layout_figures.py [TREE ...]

For each TREE (a checkout, default this one) prints: the number of modules, the largest
file in lines, the import cycles, the imports from a lower stage up to a higher one, the
levels of the import graph (the longest chain of modules, and of stages, each import
pointing one level down), and the private names imported from another module and from
another stage.  ``git archive REV | tar -x -C DIR`` gives the tree of an older revision.

The imports are read with ``ast`` (module-level and function-local imports alike, and
``importlib.import_module`` of a literal name), so nothing of the tree is imported;
imports under ``if TYPE_CHECKING:`` only name types and do not count for cycles and
levels.  ``tests/test_layout.py`` walks this tree with the same functions and fails on a
cycle, an upward import or a private name crossing stages.

A stage is a subpackage of ``codeparse`` (``STAGES``, lowest first).  A tree from before
the subpackages (flat modules side by side) is placed by ``FLAT``: each module in the
stage it moved to.  Upward imports count distinct pairs (module, module it imports);
private names count once however many modules read them.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Iterator, Optional

ROOT = Path(__file__).resolve().parent.parent

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

# The flat modules of the package before its stage subpackages, each in the stage it
# moved to (a module split over several stages is placed where most of it went).
FLAT = {
    "contract": ("codes", "models", "plain", "checkdata"),
    # `api` held the text reader then (parse_text, decode, detect the grammar), besides
    # InputError and the shared semantics, which moved lower still.
    "grammar": ("grammar", "patterns", "locations"),
    "files": ("walk", "filekind"),
    "parse": ("source", "parser", "expressions"),
    "infer": ("inference", "datadep", "operators"),
    "text": ("api", "extract", "resolve", "cache"),
    "rules": ("rules", "export"),
    "pickles": ("safepickle", "picklescan", "scan"),
    "archive": ("archive", "legacy", "debuginfo"),
    "gate": ("check", "budget", "baseline", "scale"),
    "output": ("render", "reporters", "sarif", "escaping"),
    "trace": ("tracediff", "capturing", "diffsides", "diffevents", "diffalign", "diffevidence", "exportcheck"),
    "cli": ("cli", "cli_check", "cli_diff", "cli_report", "cli_output"),
}
_FLAT_STAGE = {module: stage for stage, modules in FLAT.items() for module in modules}


def modules_of(package: Path) -> dict[str, Path]:
    """Dotted module name -> source file, for every ``.py`` file under ``package``."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts.pop()
        out[".".join(parts)] = path
    return out


def stage(module: str) -> str:
    """``codeparse.gate.run`` -> ``gate``; the package itself -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def flat_stage(module: str) -> str:
    """:func:`stage` in a tree of flat modules: each placed by ``FLAT``."""
    parts = module.split(".")
    return _FLAT_STAGE.get(parts[1], parts[1]) if len(parts) == 2 else stage(module)


def _absolute(modules: dict[str, Path], module: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if modules[module].name != "__init__.py":
        base.pop()
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports(modules: dict[str, Path], module: str) -> Iterator[tuple[str, Optional[str], int, bool]]:
    """(imported module, imported name or None, line, only for type checking) for every
    import of a package module in ``module``, and for each ``mod._name`` read from a
    module bound by an import."""
    root = module.split(".")[0]
    tree = ast.parse(modules[module].read_text(encoding="utf-8"))
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            guarded.update(id(sub) for sub in ast.walk(node))
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        typing_only = id(node) in guarded
        if isinstance(node, ast.ImportFrom):
            source = _absolute(modules, module, node)
            if not source.startswith(root):
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if full in modules:
                    bound[alias.asname or alias.name] = full
                    yield full, None, node.lineno, typing_only
                else:
                    yield source, alias.name, node.lineno, typing_only
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(root):
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    yield alias.name, None, node.lineno, typing_only
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module") and node.args \
                and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith(root + "."):
            yield node.args[0].value, None, node.lineno, typing_only
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            yield bound[node.value.id], node.attr, node.lineno, id(node) in guarded


def edges(modules: dict[str, Path]) -> list[tuple[str, str, Optional[str], int, bool]]:
    """(module, imported module, name, line, only for type checking) over the package."""
    return [(module, *edge) for module in modules for edge in imports(modules, module)]


def private(name: Optional[str]) -> bool:
    return bool(name) and name.startswith("_") and not name.startswith("__")


def graph(modules: dict[str, Path], found: list) -> dict[str, set[str]]:
    """Module -> the modules it imports at run time (not only for type checking)."""
    out: dict[str, set[str]] = {m: set() for m in modules}
    for module, target, _name, _line, typing_only in found:
        if not typing_only and target in modules and target != module:
            out[module].add(target)
    return out


def components(nodes: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components (Tarjan), each sorted, deepest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(nodes[node]):
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
            out.append(sorted(component))

    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return out


def cycles(nodes: dict[str, set[str]]) -> list[list[str]]:
    """The components of more than one node: each an import cycle."""
    return [c for c in components(nodes) if len(c) > 1]


def levels(nodes: dict[str, set[str]]) -> int:
    """The longest chain of imports, in nodes (a cycle counts as one node)."""
    where: dict[str, int] = {}
    depth: list[int] = []
    for number, component in enumerate(components(nodes)):  # every import points to an earlier one
        for node in component:
            where[node] = number
        below = [depth[where[n]] for node in component for n in nodes[node] if where.get(n, number) != number]
        depth.append(1 + max(below, default=0))
    return max(depth, default=0)


def upward(found: list, place=stage) -> list[str]:
    """The imports from a lower stage up to a higher one (``module:line imports target``)."""
    rank = {s: i for i, s in enumerate(STAGES)}
    return sorted({f"{module}:{line} imports {target}" for module, target, _name, line, _typing in found
                   if "." in target and rank.get(place(target), -1) > rank.get(place(module), -1)})


def crossing(found: list, apart) -> list[str]:
    """The private names imported where ``apart(module, target)`` (``module:line uses target.name``)."""
    return sorted({f"{module}:{line} uses {target}.{name}" for module, target, name, line, _typing in found
                   if private(name) and apart(module, target)})


def _pairs(lines: list[str]) -> int:
    """Distinct (module, module it imports) among ``module:line imports target`` lines."""
    return len({(line.partition(":")[0], line.rpartition(" imports ")[2]) for line in lines})


def _names(lines: list[str]) -> int:
    """Distinct names among ``module:line uses target.name`` lines."""
    return len({line.rpartition(" uses ")[2] for line in lines})


def figures(tree: Path) -> dict[str, object]:
    """The figures of the package in ``tree`` (see the module's docstring)."""
    package = tree / "codeparse"
    modules = modules_of(package)
    place = stage if (package / "gate").is_dir() else flat_stage
    found = edges(modules)
    runtime = graph(modules, found)
    stages: dict[str, set[str]] = {}
    for module, targets in runtime.items():
        stages.setdefault(place(module), set()).update(place(t) for t in targets if place(t) != place(module))
    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in modules.items()}
    largest = max(sizes, key=lambda m: sizes[m])
    return {
        "modules": len(modules),
        "largest file (lines)": f"{sizes[largest]} ({modules[largest].relative_to(tree)})",
        "import cycles": len(cycles(runtime)),
        "upward imports (module pairs)": _pairs(upward(found, place)),
        "levels, in modules": levels(runtime),
        "levels, in stages": levels(stages),
        "private names read from another module": _names(crossing(found, lambda m, t: m != t)),
        "private names read from another stage": _names(crossing(found, lambda m, t: place(m) != place(t))),
    }


def main(argv: list[str]) -> int:
    trees = [Path(a) for a in argv] or [ROOT]
    for tree in trees:
        if not (tree / "codeparse" / "__init__.py").is_file():
            sys.stderr.write(f"{tree}: no codeparse/ package here\n")
            return 2
    table = [figures(tree) for tree in trees]
    width = max(len(k) for k in table[0])
    for key in table[0]:
        sys.stdout.write(f"{key:<{width}}  " + "  |  ".join(str(t[key]) for t in table) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
