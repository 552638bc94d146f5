"""The package layout stays true: stages import downward only, never in a cycle, and never
each other's private names.

The imports are read from the source files with ``ast`` by the walker of
``scripts/layout_figures.py`` (module-level and function-local imports alike, and
``importlib.import_module`` of a literal name), so the test imports nothing and sees
imports that run only on some paths.  The stage order is its ``STAGES``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from layout_figures import STAGES, crossing, cycles, edges, figures, graph, modules_of, stage, upward  # noqa: E402

PACKAGE = ROOT / "codeparse"
MODULES = modules_of(PACKAGE)
EDGES = edges(MODULES)


def test_every_module_belongs_to_a_stage():
    assert sorted({stage(m) for m in MODULES} - set(STAGES)) == []


def test_no_import_cycle():
    """No strongly connected component (Tarjan) of more than one module, over the imports
    that run: those under ``if TYPE_CHECKING:`` only name types for annotations."""
    assert cycles(graph(MODULES, EDGES)) == []


def test_no_import_from_a_higher_stage():
    assert upward(EDGES) == []


def test_no_private_name_across_stages():
    assert crossing(EDGES, lambda module, target: stage(module) != stage(target)) == []


@pytest.mark.parametrize("stage", [s for s in STAGES if (PACKAGE / s / "__init__.py").exists()])
def test_each_stage_says_what_it_takes_and_gives(stage):
    """Each subpackage opens with a paragraph on what the stage takes and gives, and imports
    nothing when it is imported (an ``__init__`` that imported its modules would load all of
    them for any one)."""
    tree = ast.parse((PACKAGE / stage / "__init__.py").read_text(encoding="utf-8"))
    assert len((ast.get_docstring(tree) or "").split()) > 20
    assert [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))] == []


def test_the_walker_finds_each_kind_of_fault(tmp_path):
    """A package with one of each fault the tests above look for: a cycle between two
    modules (one import inside a function), an import from a higher stage, a private name
    read across stages, and a typing-only import that is no cycle."""
    package = tmp_path / "codeparse"
    files = {
        "__init__.py": "",
        "parse/__init__.py": "",
        "parse/a.py": "from . import b\n",
        "parse/b.py": "def f():\n    from .a import x\n",
        "infer/__init__.py": "",
        "infer/c.py": "from ..parse import a\nx = a._hidden\n",
        "infer/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .e import T\n",
        "infer/e.py": "from .d import U\n",
        "grammar/__init__.py": "",
        "grammar/g.py": "import importlib\nm = importlib.import_module('codeparse.infer.c')\n",
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text, encoding="utf-8")
    modules = modules_of(package)
    found = edges(modules)
    assert cycles(graph(modules, found)) == [["codeparse.parse.a", "codeparse.parse.b"]]
    assert upward(found) == ["codeparse.grammar.g:2 imports codeparse.infer.c"]
    assert crossing(found, lambda module, target: stage(module) != stage(target)) == [
        "codeparse.infer.c:2 uses codeparse.parse.a._hidden"]
    shown = figures(tmp_path)
    assert (shown["modules"], shown["import cycles"], shown["upward imports (module pairs)"]) == (10, 1, 1)
    # grammar.g -> infer.c -> parse.{a, b}: three levels of modules, and of stages
    assert (shown["levels, in modules"], shown["levels, in stages"]) == (3, 3)
