"""`codeparse capture`: script and trace a live module, then diff (needs torch)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.torch
import torch  # noqa: E402 - a torch-marked test module: torch is installed wherever it runs

from codeparse.trace.capture import capture, load_factory  # noqa: E402
from codeparse.cli.app import main  # noqa: E402
from codeparse.trace.compare import diff_paths  # noqa: E402

MODELS = Path(__file__).resolve().parent.parent / "fixtures" / "models.py"
MODEL_LINES = MODELS.read_text(encoding="utf-8").splitlines()


def load_factory_pair(target: str):
    spec = load_factory(target)
    return spec.module, spec.inputs


def line_of(text: str, after: int = 0) -> int:
    """1-based line of the first model source line containing ``text`` (after line ``after``)."""
    for number, line in enumerate(MODEL_LINES, 1):
        if number > after and text in line:
            return number
    raise AssertionError(text)


@pytest.fixture(scope="module")
def custom_model_cli(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("capture")
    return out_dir


def test_capture_custom_model_cli_reports_branches_warning_and_saves(custom_model_cli, capsys):
    save = custom_model_cli / "saved"
    status = main(["capture", f"{MODELS}:_custom_model", "--save", str(save), "--format", "json"])
    assert status == 1  # the TracerWarning is a finding
    data = json.loads(capsys.readouterr().out)
    ifs = [(i["module"], i["kind"], i["taken"]) for i in data["diff"]["ifs"] if i["module"] == "self"]
    assert ifs == [("self", "tensor_value", "else"), ("self", "attribute", "then"), ("self", "attribute", "then")]
    warning_line = line_of("if x[0][0][0][0] % 2 == 0:")
    warnings = [(Path(w["file"]).name, w["line"]) for w in data["tracer_warnings"]]
    assert ("models.py", warning_line) in warnings
    assert data["tracer_warnings"][0]["message"].startswith("Converting a tensor to a Python boolean")
    assert sorted(p.name for p in save.iterdir()) == ["script.code", "script.pt", "trace.code", "trace.pt"]
    assert (save / "trace.code").read_text(encoding="utf-8") == data["trace_code"]
    # the saved archives give the same answer offline
    again = diff_paths(str(save / "script.pt"), str(save / "trace.pt"))
    assert [(i.module, i.taken) for i in again.ifs] == [(i["module"], i["taken"]) for i in data["diff"]["ifs"]]
    assert [c.call for c in again.lost_calls] == [
        "self.custom_layer.forward", "self.custom_layer2.forward", "self.condition_func2.forward"]


def test_capture_table_output(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["capture", f"{MODELS}:_known_rnn_loop", "--no-color"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "models.MyRNNLoop"
    assert "for i in range(torch.size(xs, 0))" in out and "kept" in out


def test_script_error_keeps_message_and_location():
    module, inputs = load_factory_pair(f"{MODELS}:_known_rnn_loop")  # registers fixtures/models.py as `models`
    import models  # noqa: F401  (the module load_factory registered)

    report = capture(models.Closure(), (torch.randn(2, 3),))
    err = report.script_error
    assert err is not None and report.diff is None
    assert err.message == "UnsupportedNodeError: function definitions aren't supported:"
    assert Path(err.file).name == "models.py"
    assert err.line == line_of("def double(t: Tensor) -> Tensor:", after=line_of("class Closure"))  # the nested def
    assert report.trace_code is not None  # tracing still works
    assert [d.code for d in report.diagnostics] == ["CP221"]


def test_mixed_tutorial_models_capture():
    module, inputs = load_factory_pair(f"{MODELS}:_known_wrap_rnn")
    report = capture(module, inputs)
    assert report.script_error is None and report.trace_error is None
    d = report.diff
    assert [(lp.module, lp.kept) for lp in d.unrolled_loops] == [("self.loop", True)]
    assert [(i.module, i.taken) for i in d.ifs] == [("self.loop.cell.dg", "kept")]
    module, inputs = load_factory_pair(f"{MODELS}:_known_rnn_loop")
    d = capture(module, inputs).diff
    assert [(lp.module, lp.iterations) for lp in d.unrolled_loops] == [("self", 6)]


def test_bad_factory_is_one_line(capsys):
    assert main(["capture", f"{MODELS}:no_such_factory"]) == 2
    assert capsys.readouterr().err.strip() == f"{MODELS}:no_such_factory: CP301 {MODELS} has no callable 'no_such_factory'"
    assert main(["capture", "nofile.py"]) == 2
    assert capsys.readouterr().err.strip() == "nofile.py: CP301 expected FILE.py:FACTORY"


def test_trace_error_and_finding_codes():
    load_factory(f"{MODELS}:_custom_model")
    import models

    module, inputs = models.CASES["cond_argument"].factory()  # a str argument: tracing refuses it
    report = capture(module, inputs)
    assert report.trace_error.message.startswith("RuntimeError: Type 'Tuple[Tensor, str, int, bool, float")
    assert report.script_code is not None and report.diff is None
    assert [d.code for d in report.diagnostics] == ["CP223"]
    module, inputs = models.CASES["tutorial_decision_gate"].factory()
    report = capture(module, inputs)
    assert {d.code for d in report.diagnostics} == {"CP222"}
    (w,) = [w for w in report.tracer_warnings if Path(w.file).name == "models.py"]
    assert w.line == line_of("if x.sum() > 0:", after=line_of("class MyDecisionGate"))
    assert [(i.kind, i.taken) for i in report.diff.ifs] == [("tensor_value", "then" if inputs[0].sum() > 0 else "else")]


DIFF_MODELS = MODELS.parent / "models_diff.py"
DIFF_LINES = DIFF_MODELS.read_text(encoding="utf-8").splitlines()


def test_factory_contract_dict_form_and_default_wrapper(capsys):
    spec = load_factory(f"{DIFF_MODELS}:detection_factory")
    assert spec.source.endswith("models_diff.py:detection_factory")
    assert isinstance(spec.inputs, tuple) and len(spec.inputs) == 1 and len(spec.inputs[0]) == 2
    assert spec.dynamic_shapes is None and spec.wrap_outputs is None
    assert len(spec.check_inputs) == 1 and isinstance(spec.check_inputs[0], tuple)
    report = capture(spec)
    assert report.trace_error is None and report.outputs_wrapped == "default"
    # the compared trace is the model inside the wrapper; the scripted helper's if stays live
    assert "__torch__.models_diff.keep_confident(" in report.trace_code
    # the scripted post-processing helper is still a call in the trace: its if is kept, and it
    # names its original line (from the in-memory archive's .debug_pkl)
    (kept,) = report.diff.ifs
    assert (kept.function, kept.taken, kept.reason) == ("__torch__.models_diff.keep_confident", "kept", "kept")
    assert (Path(kept.origin.path).name, kept.origin.line) == (
        "models_diff.py", DIFF_LINES.index("    if bool(keep.any()):") + 1)
    assert report.diff.diagnostics == []
    # the plain CLI says the outputs were wrapped
    assert main(["capture", f"{DIFF_MODELS}:detection_factory", "--no-color", "--no-check-trace"]) in (0, 1)
    assert "outputs wrapped (default) for the trace" in capsys.readouterr().out


def test_factory_contract_own_wrapper_and_no_wrapping():
    spec = load_factory(f"{DIFF_MODELS}:detection_scores_factory")
    report = capture(spec, check_trace=False)
    assert report.outputs_wrapped == "factory" and report.trace_error is None
    assert report.trace_code.endswith("return (scores, scores0)\n")
    plain = capture(spec, wrap_outputs=False)  # an explicit argument wins over the spec
    assert plain.outputs_wrapped is None
    assert plain.trace_error.message.startswith("RuntimeError: Only tensors, lists, tuples of tensors")


def test_factory_folder_on_sys_path_and_bad_shapes(tmp_path, capsys):
    (tmp_path / "neighbour_layers.py").write_text(
        "import torch\nclass Double(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n")
    (tmp_path / "entry.py").write_text(
        "import torch\nfrom neighbour_layers import Double\n"
        "def make():\n    return Double(), torch.ones(2)\n"
        "def make_dict():\n    return {'module': Double(), 'inputs': (torch.ones(2),),\n"
        "            'dynamic_shapes': {'x': {0: 'batch'}}, 'check_inputs': [torch.ones(3)]}\n"
        "def bad_key():\n    return {'module': Double(), 'inputs': (), 'inptus': 1}\n"
        "def bad_shape():\n    return [Double()]\n")
    spec = load_factory(f"{tmp_path / 'entry.py'}:make")
    assert spec.inputs[0].shape == (2,) and spec.check_inputs is None
    spec = load_factory(f"{tmp_path / 'entry.py'}:make_dict")
    assert spec.dynamic_shapes == {"x": {0: "batch"}} and spec.check_inputs[0][0].shape == (3,)
    report = capture(spec)
    assert report.trace_error is None and report.diagnostics == []
    assert main(["capture", f"{tmp_path / 'entry.py'}:bad_key"]) == 2
    assert "unknown factory key(s) 'inptus'" in capsys.readouterr().err
    assert main(["capture", f"{tmp_path / 'entry.py'}:bad_shape"]) == 2
    assert "must return (module, inputs) or a dict" in capsys.readouterr().err


def test_check_inputs_reach_the_trace_and_no_check_trace_turns_the_check_off(tmp_path, capsys):
    """A factory's check_inputs take the other branch of a tensor-value if: torch.jit.trace's
    check (run on them) fails; --no-check-trace (check_trace=False) traces without it."""
    (tmp_path / "branchy_model.py").write_text(
        "import torch\n\n\nclass Branchy(torch.nn.Module):\n    def forward(self, x):\n"
        "        if x.sum() > 0:\n            return x * 2\n        return torch.relu(x) - 1\n\n\n"
        "def make():\n    return {'module': Branchy(), 'inputs': (torch.ones(2),), 'check_inputs': [(-torch.ones(2),)]}\n")
    target = f"{tmp_path / 'branchy_model.py'}:make"
    checked = capture(load_factory(target))
    assert checked.trace_error.message == "TracingCheckError: Tracing failed sanity checks!"
    assert "Graphs differed across invocations" in checked.trace_error.detail
    assert "CP223" in [d.code for d in checked.diagnostics] and checked.diff is None
    assert main(["capture", target, "--no-check-trace", "--format", "json"]) == 1  # CP222: a TracerWarning
    data = json.loads(capsys.readouterr().out)
    assert data.get("trace_error") is None and [d["code"] for d in data["diagnostics"]] == ["CP222"]
    assert [(i["kind"], i["taken"], i["reason"]) for i in data["diff"]["ifs"]] == [("tensor_value", "then", "present")]
