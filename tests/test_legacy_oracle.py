"""The IR oracle on the legacy archives, as tests/test_oracle.py does for today's.

torch 2.13 loads only some of ``fixtures/legacy``: it refuses every model.json archive
(1.0 - 1.2: "Legacy model format is not supported on mobile"), the pre-zip container,
and the torchtext archive whose custom class ``torch.classes.torchtext.Vocab`` is not
registered.  ``test_the_archives_torch_loads_are_exactly_these`` pins that list, so a
change in what loads is seen rather than skipped; every archive that loads is compared
method by method with what codeparse reads from its code.
"""

from __future__ import annotations

import functools
import sys
import warnings
from pathlib import Path

import pytest

import torch  # noqa: E402 - a torch-marked test module: torch is installed wherever it runs

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import ir_oracle  # noqa: E402
from test_legacy import ARCHIVES, EXPECTED_GRAMMAR, GENERATED, GENERATED_GRAMMAR, generated_release, parsed  # noqa: E402
from test_oracle import _report, compare_function  # noqa: E402

pytestmark = [
    pytest.mark.torch,
    pytest.mark.filterwarnings("ignore:`torch.jit.*is deprecated:DeprecationWarning"),
]

# The legacy archives torch 2.13 loads (checked in test_the_archives_torch_loads_are_exactly_these).
LOADS = [
    "LaurentMazare__tch-rs__foo4.pt",
    "LaurentMazare__tch-rs__foo5.pt",
    "LaurentMazare__tch-rs__foo6.pt",
    "LaurentMazare__tch-rs__foo7.pt",
    "LaurentMazare__tch-rs__foo8.pt",
    "RedisAI__redisai-go__pt-minimal.pt",
    "deepjavalibrary__djl__deepar.pt",
    "dotnet__TorchSharp__exported.method.dat",
    "dotnet__TorchSharp__linrelu.script.dat",
    "dotnet__TorchSharp__scripted.script.dat",
    "dotnet__TorchSharp__shakespeare.pt.zip",
    "facebookresearch__playtorch__dummy_test_model-31dead3.ptl",
    "facebookresearch__playtorch__dummy_test_model-f270d5c.ptl",
    "fbelderink__flutter_pytorch_mobile__custom_model.pt",
    "lighttransport__c-libtorch__jit-test.pt",
    "mlverse__torch__linear.pt",
    "openmm__openmm-torch__global.pt",
    "openmm__openmm-torch__periodic-6b55791.pt",
    "pytorch__java-demo__demo-model.pt1",
    "pytorch__text__jit_pipeline-4b1d173.pt",
    "snakers4__silero-vad__silero_vad.jit",
    "vvmnnnkv__libtorchjs__mul2.pt",
]


@functools.lru_cache(maxsize=None)
def load(name: str):
    """``(module, compilation unit)``; tensors mapped to the CPU (shakespeare saved CUDA ones).

    The generated archives (``generated/<file>``) have their storages stripped, which
    ``ir_oracle.load_archive`` fills with zeros.
    """
    from torch.jit._recursive import wrap_cpp_module

    if name.startswith("generated/"):
        return ir_oracle.load_archive(HERE.parent / "fixtures" / "legacy" / name)
    cu = torch._C.CompilationUnit()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpp = torch._C.import_ir_module(cu, str(HERE.parent / "fixtures" / "legacy" / name),
                                        torch.device("cpu"), {}, False)
    return wrap_cpp_module(cpp), cu


def loads(name: str) -> bool:
    try:
        load(name)
        return True
    except Exception:  # noqa: BLE001 - any refusal counts as "does not load"
        return False


# Of the archives saved here with old releases, torch 2.13 loads all but 1.2's (model.json).
GENERATED_LOADS = sorted(
    "generated/" + p.name for p in GENERATED if GENERATED_GRAMMAR[generated_release(p)] != "torchscript-v1.0")


def test_the_archives_torch_loads_are_exactly_these():
    assert [a.name for a in ARCHIVES if loads(a.name)] == sorted(LOADS)
    assert len(GENERATED_LOADS) == 26
    assert ["generated/" + p.name for p in GENERATED if loads("generated/" + p.name)] == GENERATED_LOADS


@pytest.mark.parametrize(
    "name",
    sorted(LOADS) + GENERATED_LOADS,
)
def test_legacy_archive_code_agrees_with_graph(name):
    module, cu = load(name)
    facts = ir_oracle.module_facts(module, cu)
    index = {}
    for cf in parsed(name):
        rel = cf.path.split("!", 1)[1].split("/code/", 1)[1]
        assert cf.grammar == (EXPECTED_GRAMMAR.get(name) or GENERATED_GRAMMAR[generated_release(Path(name))])
        for fn in list(cf.functions) + [m for c in cf.classes for m in c.methods]:
            index[fn.qualified_name] = (fn, rel)
    per_method = {}
    for qualified, method in sorted(facts.items()):
        if qualified not in index:
            per_method[qualified] = ["graph has it, parse has no function of that qualified name"]
            continue
        fn, rel = index[qualified]
        problems = compare_function(method, fn, rel)
        if problems:
            per_method[f"{qualified} ({rel})"] = problems
    assert facts, "the graph has no methods"
    assert not per_method, _report(f"{name}: codeparse disagrees with the TorchScript graph", per_method)
