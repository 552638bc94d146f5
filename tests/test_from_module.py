"""Parsing straight from a live nn.Module (needs torch)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import codeparse

pytestmark = pytest.mark.torch

MODELS = Path(__file__).resolve().parent.parent / "fixtures" / "models.py"


def fixture_models():
    spec = importlib.util.spec_from_file_location("codeparse_fixture_models_live", MODELS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_from_module_scripts_and_parses_every_module_type():
    models = fixture_models()
    files = codeparse.from_module(models.CustomModel())
    top = files[0]
    assert top.path.startswith("<module __torch__.") and top.path.endswith("CustomModel>")
    (forward,) = top.functions
    assert forward.qualified_name.endswith("CustomModel.forward")
    assert [i.condition.kind for i in forward.ifs] == ["tensor_value", "attribute", "attribute"]
    names = {f.path for f in files}
    assert any("Conv2d" in n for n in names) and any("BatchNorm2d" in n for n in names)
    assert all(cf.diagnostics == [] for cf in files)


# The model branches on a tensor value on purpose: the trace drops that branch, and torch says so.
@pytest.mark.filterwarnings("ignore:Converting a tensor to a Python boolean:torch.jit.TracerWarning")
def test_from_module_traced_has_no_ifs():
    models = fixture_models()
    model = models.CustomModel().eval()
    files = codeparse.from_module(model, trace_inputs=(torch.randn(1, 3, 256, 256),))
    assert files[0].functions[0].ifs == []


def test_offline_path_never_imports_torch():
    code = (
        "import sys, codeparse\n"
        "codeparse.parse_file(sys.argv[1])\n"
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if 'torch' in m)\n"
    )
    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "text" / "custom_model" / "script.code"
    subprocess.run([sys.executable, "-c", code, str(fixture)], check=True)
