"""Real values from real printer output: what codeparse reports for the fixture models.

Every expectation here was read off the fixture text by a person (fixtures/text/*),
which torch 2.13 printed from the models in fixtures/models.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codeparse import parse_file

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def text_forward(case: str, method: str = "script.code"):
    cf = parse_file(FIXTURES / "text" / case / method)
    assert cf.diagnostics == []
    (fn,) = cf.functions
    return fn


def archive(case: str, relative: str = "__torch__.py"):
    cf = parse_file(FIXTURES / "archive_code" / case / relative)
    assert cf.diagnostics == []
    return cf


def summary(fn):
    return [
        (i.span.line, i.depth, i.condition.kind, [(s.ref, s.kind, s.type) for s in i.condition.sources])
        for i in fn.ifs
    ]


def short(calls):
    return [c.receiver if c.kind in ("submodule", "self_method") else c.target for c in calls]


def test_custom_model_script_text():
    fn = text_forward("custom_model")
    assert fn.qualified_name == "forward"
    assert [(p.name, p.annotation) for p in fn.signature.params] == [("self", None), ("x", "Tensor")]
    assert fn.signature.returns == "Tensor"
    assert summary(fn) == [
        (6, 0, "tensor_value", [("x", "tensor_value", "Tensor")]),
        (12, 0, "attribute", [("self.branch_testing", "attribute", "bool")]),
        (27, 0, "attribute", [("self.condition_testing", "attribute", "bool")]),
    ]
    first, second, third = fn.ifs
    assert first.condition.text == "_2"
    assert first.condition.resolved == (
        "bool(torch.eq(torch.remainder(torch.select(torch.select(torch.select(torch.select("
        "x, 0, 0), 0, 0), 0, 0), 0, 0), 2), 0))"
    )
    assert second.condition.resolved == "torch.eq(self.branch_testing, True)"
    assert short(first.then_calls) == ["self.custom_layer"] and first.else_calls == []
    assert short(second.then_calls) == ["self.custom_layer1"]
    assert short(second.else_calls) == ["self.custom_layer2"]
    assert short(third.then_calls) == ["self.condition_func1"]
    assert short(third.else_calls) == ["self.condition_func2"]
    assert [r.path for r in fn.self_refs] == [
        "self.custom_layer", "self.branch_testing", "self.custom_layer1", "self.custom_layer2",
        "self.layer1", "self.layer2", "self.flatten", "self.fc1", "self.condition_testing",
        "self.condition_func1", "self.condition_func2",
    ]
    submodule_calls = [c for c in fn.calls if c.kind == "submodule"]
    assert {c.method for c in submodule_calls} == {"forward"}
    assert len(submodule_calls) == 9


def test_custom_model_trace_text_has_no_ifs():
    fn = text_forward("custom_model", "trace.code")
    assert fn.ifs == []
    # The trace took the branches of the example input: custom_layer was not taken.
    # Calls are in textual order: an outer call starts before the call in its argument.
    assert short([c for c in fn.calls if c.kind == "submodule"]) == [
        "self.layer1", "self.custom_layer1", "self.flatten", "self.layer2",
        "self.condition_func1", "self.fc1",
    ]


def test_custom_model_archive_declarations_give_roles_and_types():
    cf = archive("custom_model.script")
    (cls,) = cf.classes
    assert (cls.name, cls.qualified_name, cls.kind) == ("CustomModel", "__torch__.CustomModel", "module")
    assert cls.parameters == [] and cls.buffers == []
    declared = {a.name: a.type for a in cls.attributes}
    assert declared["branch_testing"] == "bool"
    assert declared["layer2"] == "__torch__.torch.nn.modules.container.___torch_mangle_2.Sequential"
    (fn,) = cls.methods
    assert fn.qualified_name == "__torch__.CustomModel.forward"
    assert fn.signature.params[0].annotation == "__torch__.CustomModel"
    roles = {r.path: (r.role, r.declared_type) for r in fn.self_refs}
    assert roles["self.branch_testing"] == ("attribute", "bool")
    assert roles["self.fc1"] == ("submodule", "__torch__.torch.nn.modules.linear.Linear")
    assert [i.condition.kind for i in fn.ifs] == ["tensor_value", "attribute", "attribute"]


def test_params_many_arguments():
    fn = text_forward("params")
    assert [p.annotation for p in fn.signature.params[1:]] == [
        "Tensor", "Tensor", "bool", "str", "list", "float", "int", "tuple",
    ]
    assert summary(fn) == [
        (11, 0, "attribute", [("self.is_bool", "attribute", "bool")]),
        (15, 1, "attribute", [("self.is_float", "attribute", "unknown")]),
        # Sources of the same kind in the order the resolved text names them (rule 9).
        (21, 2, "attribute", [("self.is_integer", "attribute", "unknown"), ("self.is_List", "attribute", "unknown")]),
        (24, 3, "argument", [("is_str", "argument", "str")]),
        (27, 4, "tensor_shape", [("x", "tensor_shape", "Tensor")]),
    ]
    # In the archive, the class declares the attribute types.
    (cls,) = archive("params.script").classes
    types = [[s.type for s in i.condition.sources] for i in cls.methods[0].ifs[:3]]
    assert types == [["bool"], ["float"], ["int", "List[int]"]]


@pytest.mark.parametrize(
    "case, expected",
    [
        ("cond_tensor_value", ["tensor_value"] * 6),
        ("cond_tensor_shape", ["tensor_shape"] * 9),
        ("cond_argument", ["argument"] * 7),
        ("cond_optional_arg", ["argument"]),
        ("cond_attribute", ["attribute"] * 5 + ["tensor_value", "tensor_shape"]),
        ("cond_runtime", ["runtime"] * 3),
        ("cond_constant", ["constant"] * 2),
        ("nested_ifs", ["argument", "tensor_shape", "attribute", "tensor_value", "constant"]),
        # The third reads the size of a tensor produced under a tensor-value branch: the
        # shape read is the mark nearest the condition (rule 8).
        ("if_assigned_value", ["argument", "tensor_value", "tensor_shape"]),
        ("enum", ["attribute", "argument", "argument"]),
    ],
)
def test_condition_kinds(case, expected):
    assert [i.condition.kind for i in text_forward(case).ifs] == expected


def test_none_checks_and_argument_types():
    fn = text_forward("cond_argument")
    assert [i.condition.none_check for i in fn.ifs] == [False] * 5 + [True, True]
    assert [i.condition.sources[0].type for i in fn.ifs] == [
        "str", "str", "int", "bool", "float", "Optional[Tensor]", "Optional[Tensor]",
    ]
    assert fn.signature.params[-1].default == "None"


def test_runtime_sources_are_named():
    fn = text_forward("cond_runtime")
    assert [i.condition.sources[0].ref for i in fn.ifs] == [
        "torch.is_grad_enabled", "torch.is_autocast_enabled", "__torch__.torch.jit._trace.is_tracing",
    ]


def test_locals_chain_resolves_to_self_paths():
    fn = text_forward("self_locals_chain")
    assert [(c.receiver, c.method) for c in fn.calls if c.kind == "submodule"] == [
        ("self.layer1.conv", "forward"), ("self.layer1.act.0", "forward"), ("self.layer1.act.1", "forward"),
    ]
    roles = {r.path: r.role for r in fn.self_refs}
    assert roles == {
        "self.layer1": "submodule", "self.layer1.conv": "submodule", "self.layer1.act": "submodule",
        "self.layer1.act.0": "submodule", "self.layer1.act.1": "submodule", "self.layer1.gain": "attribute",
    }
    (if_,) = fn.ifs
    assert if_.condition.resolved == "torch.gt(self.layer1.gain, 1.)"


def test_loops_and_depth():
    fn = text_forward("loops")
    assert [(l.kind, l.target, l.iter, l.depth) for l in fn.loops] == [
        ("for", "i", "range(torch.size(x, 0))", 0), ("while", None, "_2", 0),
        ("while", None, "_6", 0), ("for", "k", "range(3)", 0),
    ]
    assert [i.depth for i in fn.ifs] == [1, 2, 1]


def test_call_kinds():
    exported = text_forward("exported_method")
    assert [(c.kind, c.receiver, c.method, c.target) for c in exported.calls] == [
        ("operator", None, None, "aten::add"),
        ("self_method", "self", "encode", None), ("self_method", "self", "helper", None),
    ]
    functions = [c.target for c in text_forward("free_function").calls if c.kind == "function"]
    assert functions == [
        "__torch__.scale_add", "__torch__.clamp_positive", "__torch__.torch.nn.functional.relu",
        "__torch__.torch.nn.functional.dropout", "__torch__.torch.nn.functional.normalize",
    ]
    script_class = text_forward("script_class")
    assert [(c.kind, c.method) for c in script_class.calls if c.kind != "operator"] == [
        ("function", None), ("method", "__init__"), ("method", "add"), ("method", "add"), ("method", "mean"),
    ]
    ops = {c.callee: c.target for c in text_forward("cond_tensor_shape").calls}
    assert ops["torch.size"] == "aten::size" and ops["ops.prim.dtype"] == "prim::dtype"


def test_class_kinds_and_declarations():
    kinds = {}
    for case in ("enum.script", "namedtuple_return.script", "interface.script", "script_class.script"):
        for cls in archive(case).classes:
            kinds[cls.name] = cls.kind
    assert kinds["Color"] == "enum"
    assert kinds["Pair"] == "namedtuple"
    assert kinds["ActivationInterface"] == "interface"
    assert kinds["Accumulator"] == "class"
    (color,) = [c for c in archive("enum.script").classes if c.name == "Color"]
    assert [(a.name, a.value) for a in color.attributes] == [("RED", "1"), ("GREEN", "2"), ("BLUE", "3")]
    conv = archive("custom_model.script", "__torch__/torch/nn/modules/conv.py").classes[0]
    assert conv.parameters == ["weight", "bias"]
    consts = {a.name: (a.type, a.value) for a in conv.attributes if a.final}
    assert consts["kernel_size"] == ("Tuple[int, int]", "(3, 3)")
    assert consts["padding_mode"] == ("str", '"zeros"')
    seq = archive("custom_model.script", "__torch__/torch/nn/modules/container.py").classes[0]
    assert [(a.name, a.type) for a in seq.attributes if a.name.isdigit()] == [
        ("0", "__torch__.torch.nn.modules.conv.___torch_mangle_0.Conv2d"),
        ("1", "__torch__.torch.nn.modules.activation.ReLU"),
    ]
    bn = archive("custom_model.script", "__torch__/torch/nn/modules/batchnorm.py").classes[0]
    assert bn.buffers == ["running_mean", "running_var", "num_batches_tracked"]
    assert {a.name: a.value for a in bn.attributes if a.final}["momentum"] == "0.10000000000000001"


def test_free_function_file():
    cf = archive("custom_model.script", "__torch__/torch/nn/functional.py")
    names = [f.qualified_name for f in cf.functions]
    assert "__torch__.torch.nn.functional.relu" in names and cf.classes == []
    relu = next(f for f in cf.functions if f.name == "relu")
    assert [(p.name, p.annotation, p.default) for p in relu.signature.params] == [
        ("input", "Tensor", None), ("inplace", "bool", "False"),
    ]
    assert [(i.condition.text, i.condition.kind) for i in relu.ifs] == [("inplace", "argument")]


def test_class_lists_read_again_are_new_lists():
    # `__parameters__`, `__buffers__` and bases are remembered per line text across files:
    # each result still gets lists of its own.
    path = FIXTURES / "archive_code" / "custom_model.script" / "__torch__/torch/nn/modules/batchnorm.py"
    first, second = (parse_file(path, as_dict=True)["classes"][0] for _ in range(2))
    for key in ("bases", "parameters", "buffers"):
        assert first[key] == second[key] and first[key] is not second[key]
    assert first["bases"] == ["Module"] and first["parameters"] == ["weight", "bias"]
    first["buffers"].append("changed")
    assert parse_file(path, as_dict=True)["classes"][0]["buffers"] == [
        "running_mean", "running_var", "num_batches_tracked"]


def test_a_rule_captures_a_declared_type_where_its_statements_matches_name_one():
    """The walk reads an assignment's annotation where its rule captures ``type``
    (asked of the rule, once per grammar): what the group names of each statement's own
    match tell, on every fixture text under every grammar."""
    from codeparse.grammar.engine import available_grammars, load_grammar
    from codeparse.parse.source import SourceText
    from codeparse.parse.statements import parse_statements

    def walk(stmts):
        for s in stmts:
            yield s
            yield from walk(s.body)
            if s.orelse and s.else_stmt is not None and s.else_stmt.kind == "else":
                yield from walk(s.orelse)
            elif s.else_stmt is not None:
                yield from walk([s.else_stmt])

    paths = [*FIXTURES.glob("text/*/*.code"), *FIXTURES.glob("archive_code/**/*.py")]
    checked = typed = 0
    for grammar in (load_grammar(g.id) for g in available_grammars()):
        for path in paths[::2]:
            text = path.read_text(encoding="utf-8")
            for s in walk(parse_statements(SourceText(text, str(path)), grammar).body):
                if s.kind == "assign":
                    has = "type" in s.match.re.groupindex
                    assert s.rule.captures("type") == has, (path, s)
                    checked += 1
                    typed += has
    assert checked > 20_000 and typed > 0
