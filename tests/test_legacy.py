"""Legacy formats: the archives of PyTorch 1.0 – 2.x in ``fixtures/legacy``.

Every archive that holds code parses with no diagnostic about reading the text
(CP101 unparsed, CP112 unbalanced, CP303 grammar mismatch, ...) and with the grammar
its era's printer wrote; model.json archives get their declarations from the JSON;
mobile archives give their bytecode version and operators; the pre-zip container is
recognised.  The archives are read here with the standard library's ``zipfile``.
"""

from __future__ import annotations

import zipfile
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeparse import CodeFile, parse_text
from codeparse.text.reader import detect_grammar
from codeparse.grammar.engine import available_grammars, load_grammar
from codeparse.archive.legacy import LegacyError, constant_tensor, declarations, grammar_for_layout, parse_method_file, parse_model_json_archive, read_bytecode, read_model_json, read_version, sniff_container

ROOT = Path(__file__).resolve().parent.parent
LEGACY = ROOT / "fixtures" / "legacy"
ARCHIVES = sorted(p for p in LEGACY.iterdir() if p.is_file() and p.name != "README.md")
# Archives saved here with old torch releases (fixtures/legacy/generated/README.md).
GENERATED = sorted((LEGACY / "generated").glob("*.pt"))

V10, V13, V2 = "torchscript-v1.0", "torchscript-v1.3", "torchscript-v2"
# The grammar each archive's printer wrote (fixtures/legacy/README.md, "format" and
# "torch era" columns): model.json archives are 1.0-1.2, `op_version_set = 1` class
# files 1.3/1.4, the rest 1.6 and later.  None: no code (the pre-zip container).
EXPECTED_GRAMMAR = {
    "torch-js__torch-js__test_model-7f2acda.pt": None,
    "LaurentMazare__ocaml-torch__foo.pt": V10,
    "LaurentMazare__ocaml-torch__foo2.pt": V10,
    "LaurentMazare__ocaml-torch__foo3.pt": V10,
    "torch-js__torch-js__test_model-d5164c2.pt": V10,
    "LaurentMazare__tch-rs__foo.pt": V10,
    "LaurentMazare__tch-rs__foo1.pt": V10,
    "LaurentMazare__tch-rs__foo2.pt": V10,
    "LaurentMazare__tch-rs__foo3.pt": V10,
    "openmm__openmm-torch__central.pt": V10,
    "openmm__openmm-torch__periodic-81e5775.pt": V10,
    "pytorch__java-demo__demo-model.pt1": V13,
    "LaurentMazare__tch-rs__foo4.pt": V13,
    "LaurentMazare__tch-rs__foo5.pt": V13,
    "vvmnnnkv__libtorchjs__mul2.pt": V13,
    "fbelderink__flutter_pytorch_mobile__custom_model.pt": V13,
    "RedisAI__redisai-go__pt-minimal.pt": V13,
    "pytorch__text__jit_pipeline-4b1d173.pt": V2,
    "pytorch__text__jit_pipeline-3b47de6.pt": V2,
    "openmm__openmm-torch__global.pt": V2,
    "mlverse__torch__linear.pt": V2,
    "lighttransport__c-libtorch__jit-test.pt": V2,
    "snakers4__silero-vad__silero_vad.jit": V2,
    "LaurentMazare__tch-rs__foo6.pt": V2,
    "LaurentMazare__tch-rs__foo7.pt": V2,
    "openmm__openmm-torch__periodic-6b55791.pt": V2,
    "dotnet__TorchSharp__linrelu.script.dat": V2,
    "dotnet__TorchSharp__scripted.script.dat": V2,
    "facebookresearch__playtorch__dummy_test_model-31dead3.ptl": V2,
    "facebookresearch__playtorch__dummy_test_model-f270d5c.ptl": V2,
    "dotnet__TorchSharp__exported.method.dat": V2,
    "deepjavalibrary__djl__deepar.pt": V2,
    "LaurentMazare__tch-rs__foo8.pt": V2,
    "dotnet__TorchSharp__shakespeare.pt.zip": V2,
}
# The grammar of each torch release that wrote a generated archive.
GENERATED_GRAMMAR = {"1.2.0": V10, "1.4.0": V13, "1.5.1": V2, "1.8.1": V2, "1.12.1": V2}


def generated_release(path: Path) -> str:
    return path.name.split("__", 1)[0][len("torch-"):]


# An empty code file (the printer writes one for a module of custom classes only).
EMPTY_ENTRIES = {("pytorch__text__jit_pipeline-3b47de6.pt", "jit_pipeline/code/__torch__/torch/classes/torchtext.py")}


def shown(archive: Path, entry: str) -> str:
    return f"fixtures/legacy/{archive.name}!{entry}"


@lru_cache(maxsize=None)
def entries(name: str) -> dict[str, bytes]:
    with zipfile.ZipFile(LEGACY / name) as z:  # `generated/<file>` for the generated ones
        return {n: z.read(n) for n in z.namelist()}


def is_code(entry: str) -> bool:
    return "/code/" in f"/{entry}" and entry.endswith(".py") or entry.endswith("/libs.py")


@lru_cache(maxsize=None)
def parsed(name: str) -> tuple[CodeFile, ...]:
    """Every code file of an archive, parsed as the archive reader does."""
    data = entries(name)
    if grammar_for_layout(data):
        return tuple(parse_model_json_archive(data, f"fixtures/legacy/{name}")[1])
    return tuple(
        parse_text(data[n].decode("utf-8"), path=shown(LEGACY / name, n))
        for n in data if is_code(n)
    )


def code_texts() -> list[tuple[str, str, str]]:
    """``(archive, entry, text)`` of every non-empty code entry, generated archives too."""
    out = []
    for archive in ARCHIVES + GENERATED:
        if not zipfile.is_zipfile(archive):
            continue
        name = archive.relative_to(LEGACY).as_posix()
        for n, data in entries(name).items():
            if is_code(n) and data.strip():
                out.append((name, n, data.decode("utf-8")))
    return out


# ---------------------------------------------------------------------------------------
# Every archive: the grammar of its era, nothing left unread
# ---------------------------------------------------------------------------------------


def test_every_fixture_has_an_expected_grammar():
    assert sorted(EXPECTED_GRAMMAR) == [p.name for p in ARCHIVES]
    assert len(ARCHIVES) == 34


@pytest.mark.parametrize("archive", [a for a in ARCHIVES if EXPECTED_GRAMMAR[a.name]], ids=lambda p: p.name)
def test_archive_parses_clean_with_the_grammar_of_its_era(archive):
    files = parsed(archive.name)
    assert files, "no code files read"
    for cf in files:
        entry = cf.path.split("!", 1)[1]
        assert cf.grammar == EXPECTED_GRAMMAR[archive.name], cf.path
        codes = [d.code for d in cf.diagnostics]
        if (archive.name, entry) in EMPTY_ENTRIES:
            assert codes == ["CP109"]  # empty file: a warning, nothing unread
        else:
            assert codes == [], (cf.path, [d.message for d in cf.diagnostics])
        # the text grammar, detected from the text alone, agrees with the layout
        text = entries(archive.name)[entry].decode("utf-8")
        if text.strip():
            assert detect_grammar(text) == EXPECTED_GRAMMAR[archive.name]


def test_every_release_generated_here_is_known():
    assert GENERATED, "no archives in fixtures/legacy/generated"
    assert {generated_release(p) for p in GENERATED} == set(GENERATED_GRAMMAR)


@pytest.mark.parametrize("archive", GENERATED, ids=lambda p: p.name)
def test_generated_archive_parses_clean_with_the_grammar_of_its_release(archive):
    from codeparse.archive.torchscript import open_archive

    read = open_archive(archive)
    expected = GENERATED_GRAMMAR[generated_release(archive)]
    assert read.layout == ("model.json" if expected == V10 else "zip")
    assert read.files
    for cf in read.files:
        assert (cf.grammar, [d.code for d in cf.diagnostics]) == (expected, []), cf.path
        entry = cf.path.rsplit("!", 1)[1]
        assert detect_grammar(entries("generated/" + archive.name)[entry].decode()) == expected


def test_pre_zip_container_is_recognised_not_parsed():
    head = (LEGACY / "torch-js__torch-js__test_model-7f2acda.pt").read_bytes()[:16]
    assert not zipfile.is_zipfile(LEGACY / "torch-js__torch-js__test_model-7f2acda.pt")
    assert sniff_container(head) == "pytorch1"
    assert sniff_container(b"PK\x03\x04") is None


def test_version_records():
    got = {}
    for archive in ARCHIVES:
        if not zipfile.is_zipfile(archive):
            continue
        data = entries(archive.name)
        record = next(n for n in data if n.endswith("/version"))
        got[archive.name] = read_version(data[record])
    assert got["LaurentMazare__ocaml-torch__foo.pt"] == 1
    assert got["pytorch__java-demo__demo-model.pt1"] == 1
    assert got["snakers4__silero-vad__silero_vad.jit"] == 4
    assert got["dotnet__TorchSharp__shakespeare.pt.zip"] == 10  # `.data/version`
    assert read_version(b"x") is None


# ---------------------------------------------------------------------------------------
# Grammars: ordering, detection, what each lists
# ---------------------------------------------------------------------------------------


def test_grammars_are_listed_newest_first_with_versions_and_features():
    infos = available_grammars()
    assert [g.id for g in infos][:3] == [V2, V13, V10]
    by_id = {g.id: g for g in infos}
    assert by_id[V10].torch_versions == "1.0 – 1.2" and by_id[V10].version_records == (1,)
    assert by_id[V13].torch_versions == "1.3 – 1.4" and by_id[V13].version_records == (1,)
    assert "op_version_set" in by_id[V10].detect and "op_version_set" in by_id[V13].detect


def test_version_sort_is_numeric():
    from codeparse.grammar.engine import _version_key

    ids = ["torchscript-v1.3", "torchscript-v1.10", "torchscript-v2", "torchscript-v1.0"]
    assert sorted(ids, key=_version_key, reverse=True) == [
        "torchscript-v2", "torchscript-v1.10", "torchscript-v1.3", "torchscript-v1.0"]


def test_detection_by_text_features():
    method_1_2 = "op_version_set = 1\ndef forward(self,\n    x: Tensor) -> Tensor:\n  return x\n"
    class_1_3 = ("op_version_set = 1\nclass M(Module):\n  __parameters__ = []\n  training : bool\n"
                 "  def forward(self: __torch__.M,\n    x: Tensor) -> Tensor:\n    return x\n")
    function_1_3 = "op_version_set = 1\ndef relu(input: Tensor) -> Tensor:\n  return torch.relu(input)\n"
    assert detect_grammar(method_1_2) == V10
    assert detect_grammar(method_1_2.replace("= 1", "= 0")) == V10
    assert detect_grammar(class_1_3) == V13
    assert detect_grammar(function_1_3) == V13
    assert detect_grammar(class_1_3.split("\n", 1)[1]) == V2


def test_forced_grammar_reports_the_mismatch_and_what_differs():
    text = entries("pytorch__java-demo__demo-model.pt1")["demo-model/code/__torch__.py"].decode()
    forced = parse_text(text, grammar=V2)
    assert [d.code for d in forced.diagnostics] == ["CP303"]
    # v1.0 has no module metadata rules: `__annotations__["0"] = T` (1.3 on) is not
    # part of that format (`__parameters__ = []` still reads as a plain assignment)
    sequential = text.replace("  training : bool\n", '  training : bool\n  __annotations__["0"] = __torch__.M\n')
    assert parse_text(sequential).diagnostics == []
    older = parse_text(sequential, grammar=V10)
    assert [d.code for d in older.diagnostics] == ["CP101"]
    assert "__annotations__" in older.diagnostics[0].message
    # v1.3 has no `Final` class constants (1.9 on): a 2022 class file read as 1.3
    # leaves those lines unread
    modern = entries("dotnet__TorchSharp__scripted.script.dat")["foo/code/__torch__/torch/nn/modules/linear.py"].decode()
    as_13 = parse_text("op_version_set = 1\n" + modern, grammar=V13)
    assert [d.code for d in as_13.diagnostics] == ["CP101", "CP101"]
    assert "in_features : Final[int] = 2" in as_13.diagnostics[0].message


def test_legacy_grammars_read_headers_and_imports_as_headers():
    text = ("op_version_set = 1\nimport __torch__.foo\nclass Pair(NamedTuple):\n  a : Tensor\n"
            "  b : int\n")
    cf = parse_text(text, path="libs/__torch__/foo.py")
    assert cf.grammar == V13 and cf.diagnostics == []
    assert cf.classes[0].kind == "namedtuple"
    assert [(a.name, a.type) for a in cf.classes[0].attributes] == [("a", "Tensor"), ("b", "int")]


# ---------------------------------------------------------------------------------------
# model.json archives
# ---------------------------------------------------------------------------------------


def test_model_json_reads_attributes_tensors_and_code_keys():
    model = read_model_json(entries("LaurentMazare__tch-rs__foo.pt")["foo/model.json"].decode())
    assert model.proto_version == 3 and model.producer_version == "1.0"
    assert model.main.name == "foo" and model.main.code_key == "code/foo.py"
    assert [(a.name, a.type, a.id) for a in model.main.attributes] == [("value", "Tensor", 0)]
    assert [(t.dtype, t.dims, t.key) for t in model.tensors] == [("FLOAT", (1,), "tensors/0")]
    central = read_model_json(entries("openmm__openmm-torch__central.pt")["central/model.json"].decode())
    assert central.proto_version == 5 and central.main.debug_key == "debug/central.pkl"
    assert central.tensors == ()


def test_model_json_nested_modules_and_parameters():
    # the protoVersion 2 layout torch 1.0-1.2 write, with a submodule
    text = ('{"protoVersion":"2","mainModule":{"torchscriptArena":{"key":"code/m.py"},"name":"m",'
            '"parameters":[{"isBuffer":false,"tensorId":"0","name":"w"},{"isBuffer":true,"tensorId":"1","name":"rm"}],'
            '"attributes":[{"type":"List[int]","name":"my_list","id":"1"}],'
            '"submodules":[{"name":"sub","torchscriptArena":{"key":"code/m_sub.py"},'
            '"parameters":[{"isBuffer":false,"tensorId":"2","name":"weight"}]}]},'
            '"producerName":"pytorch","producerVersion":"1.0","libs":{"torchscriptArena":{"key":"libs.py"}},'
            '"tensors":[{"dataType":"FLOAT"},{"dataType":"FLOAT"},{"dataType":"FLOAT"}]}')
    model = read_model_json(text)
    assert model.libs_key == "libs.py"
    assert declarations(model.main) == {
        "w": ("parameter", "Tensor"), "rm": ("buffer", "Tensor"),
        "my_list": ("attribute", "List[int]"), "sub": ("submodule", "__torch__.m.sub"),
    }
    assert model.module_for_code("code/m_sub.py").path == ("sub",)
    code = ("op_version_set = 0\ndef forward(self,\n    x: Tensor) -> Tensor:\n"
            "  if bool(torch.gt(torch.sum(self.rm), 0)):\n    _0 = torch.add(x, self.w, alpha=1)\n"
            "  else:\n    _0 = x\n  if torch.gt(torch.len(self.my_list), 1):\n    _1 = torch.mul(_0, self.sub.weight)\n"
            "  else:\n    _1 = _0\n  return torch.mul(_1, CONSTANTS.c7)\n")
    cf = parse_method_file(code, "m.pt!m/code/m.py", model.main, model=model)
    assert cf.grammar == V10
    cls = cf.classes[0]
    assert (cls.name, cls.qualified_name, cls.kind, cls.parameters, cls.buffers) == (
        "m", "__torch__.m", "module", ["w"], ["rm"])
    fn = cls.methods[0]
    assert fn.qualified_name == "__torch__.m.forward"
    assert [(r.path, r.role, r.declared_type) for r in fn.self_refs] == [
        ("self.rm", "buffer", "Tensor"), ("self.w", "parameter", "Tensor"),
        ("self.my_list", "attribute", "List[int]"), ("self.sub", "submodule", "__torch__.m.sub"),
        ("self.sub.weight", "parameter", "Tensor")]  # through the module tree
    assert [(i.condition.kind, [(s.ref, s.kind, s.type) for s in i.condition.sources]) for i in fn.ifs] == [
        ("tensor_value", [("self.rm", "tensor_value", "Tensor")]),
        ("attribute", [("self.my_list", "attribute", "List[int]")]),
    ]
    # CONSTANTS.c7 is not in the three-row tensor table
    assert [(d.code, d.args["name"]) for d in cf.diagnostics] == [("CP350", "CONSTANTS.c7")]
    assert constant_tensor(model, "CONSTANTS.c2").index == 2


def test_constants_resolve_through_the_json_table():
    data = entries("LaurentMazare__tch-rs__foo1.pt")
    model = read_model_json(data["foo1/model.json"].decode())
    t = constant_tensor(model, "CONSTANTS.c0")
    assert (t.dtype, t.dims, t.key) == ("FLOAT", (1,), "tensors/0")
    assert "foo1/tensors/0" in data
    cf = parse_model_json_archive(data, "foo1.pt")[1][0]
    assert cf.diagnostics == []


def test_self_attribute_from_model_json_has_its_role():
    cf = parsed("LaurentMazare__tch-rs__foo.pt")[0]
    cls = cf.classes[0]
    assert [(a.name, a.type) for a in cls.attributes] == [("value", "Tensor")]
    assert [(r.path, r.role, r.declared_type) for r in cls.methods[0].self_refs] == [
        ("self.value", "attribute", "Tensor")]


def test_bad_model_json_is_a_clear_error():
    with pytest.raises(LegacyError, match="not JSON"):
        read_model_json("{")
    with pytest.raises(LegacyError, match="no mainModule"):
        read_model_json("{}")


# ---------------------------------------------------------------------------------------
# Mobile bytecode
# ---------------------------------------------------------------------------------------


def test_bytecode_version_and_operators():
    v7 = read_bytecode(entries("facebookresearch__playtorch__dummy_test_model-31dead3.ptl")["dummy_test_model/bytecode.pkl"])
    assert v7.version == 7
    assert v7.methods == tuple(f"__torch__.___torch_mangle_5.DummyTestModel.{m}" for m in ("forward", "bump", "get_pi"))
    assert v7.operators == ("aten::eq.str", "aten::str", "aten::add.str", "aten::add.int")
    v8 = read_bytecode(entries("facebookresearch__playtorch__dummy_test_model-f270d5c.ptl")["dummy_test_model/bytecode.pkl"])
    assert v8.version == 8 and len(v8.methods) == 9
    assert "aten::_set_item.str" in v8.operators and "aten::join" in v8.operators


def test_bytecode_reader_imports_nothing():
    import pickle

    class Boom:
        def __reduce__(self):
            return (print, ("side effect",))

    evil = pickle.dumps((5, Boom()), protocol=2)
    info = read_bytecode(evil)  # `builtins.print` becomes an opaque stand-in, never called
    assert info.version == 5 and info.operators == ()
    with pytest.raises(LegacyError):
        read_bytecode(b"not a pickle")
    with pytest.raises(LegacyError, match="version"):
        read_bytecode(pickle.dumps(("x",)))


def line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def check_span(text: str, span) -> str:
    """As tests/test_spans.py: line and column agree with the offsets; the sliced text."""
    assert (span.line, span.column) == line_col(text, span.start)
    assert (span.end_line, span.end_column) == line_col(text, span.end)
    return text[span.start:span.end]


# ---------------------------------------------------------------------------------------
# The same property and span checks as for today's text, on every grammar
# ---------------------------------------------------------------------------------------

TEXTS = code_texts()
SMALL = [t for _, _, t in TEXTS if len(t) < 8000]


@pytest.fixture(params=[V10, V13, V2])
def grammar_version(request):
    return request.param


def test_each_grammar_version_has_legacy_texts(grammar_version):
    assert any(detect_grammar(t) == grammar_version for _, _, t in TEXTS)
    assert load_grammar(grammar_version).id == grammar_version


@pytest.mark.parametrize("archive, entry, text", TEXTS, ids=[f"{a}!{e.split('/code/')[-1]}" for a, e, _ in TEXTS])
def test_legacy_spans_slice_back_to_the_node_text(archive, entry, text):
    cf = parse_text(text, path=entry)
    assert cf.diagnostics == []
    for cls in cf.classes:
        assert check_span(text, cls.span).startswith(f"class {cls.name}")
        for attr in cls.attributes:
            assert check_span(text, attr.span).startswith((attr.name, f'__annotations__["{attr.name}"]'))
    for fn in list(cf.functions) + [m for c in cf.classes for m in c.methods]:
        assert check_span(text, fn.span).startswith(f"def {fn.name}(")
        for param in fn.signature.params:
            assert check_span(text, param.span).startswith(param.name)
        for if_ in fn.ifs:
            assert check_span(text, if_.span) == f"if {if_.condition.text}:"
        for call in fn.calls:
            call_text = check_span(text, call.span)
            assert call_text.startswith(call.callee) and call_text.endswith(")")
        for ref in fn.self_refs:
            last = ref.path.rsplit(".", 1)[1]
            ref_text = check_span(text, ref.span)
            assert ref_text.endswith(last) or ref_text.endswith(f'"{last}")'), (ref_text, ref.path)


# As tests/test_property.py: characters that matter to the grammar, and some never printed.
ALPHABET = st.sampled_from(list('()[]{}.,:="\'\\ \n\t#-_0123456789aezTx') + ["\u00e9", "\u2028", "\x7f"])


def spans(model):
    """Every Span inside a model, recursively."""
    from pydantic import BaseModel

    from codeparse import Span

    if isinstance(model, list):
        for item in model:
            yield from spans(item)
    elif isinstance(model, Span):
        yield model
    elif isinstance(model, BaseModel):
        for name in type(model).model_fields:
            yield from spans(getattr(model, name))


@st.composite
def mutated_legacy(draw) -> tuple[str, str]:
    """A legacy text, mutated, and the grammar to force (None: detect)."""
    text = draw(st.sampled_from(SMALL))
    for _ in range(draw(st.integers(1, 5))):
        if not text:
            break
        at = draw(st.integers(0, len(text) - 1))
        action = draw(st.sampled_from(["delete", "insert", "drop_line", "indent"]))
        if action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 20)):]
        elif action == "insert":
            text = text[:at] + draw(st.text(ALPHABET, min_size=1, max_size=8)) + text[at:]
        else:
            lines = text.splitlines(keepends=True)
            i = at % len(lines)
            if action == "drop_line":
                del lines[i]
            else:
                lines[i] = "  " + lines[i]
            text = "".join(lines)
    return text, draw(st.sampled_from([V10, V13, V2, None]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_legacy())
def test_mutated_legacy_text_never_raises_in_any_grammar(case):
    text, grammar = case
    cf = parse_text(text, "mutated.code", grammar=grammar)
    for span in spans(cf):
        assert 0 <= span.start <= span.end <= len(text)
    assert CodeFile.model_validate_json(cf.model_dump_json()) == cf


# ---------------------------------------------------------------------------------------
# Through the archive reader (codeparse.open_archive and its model.json / mobile seam)
# ---------------------------------------------------------------------------------------


def test_model_json_archive_through_the_archive_reader():
    from codeparse.archive.torchscript import open_archive

    archive = open_archive(LEGACY / "LaurentMazare__tch-rs__foo.pt")
    assert (archive.layout, archive.version, archive.root_class) == ("model.json", 1, "__torch__.foo")
    assert [(cf.path.rsplit("!", 1)[1], cf.grammar) for cf in archive.files] == [("foo/code/foo.py", V10)]
    cls = archive.files[0].classes[0]
    assert cls.methods[0].self_refs[0].role == "attribute"
    assert "__torch__.foo.forward" in archive.functions


def test_mobile_archive_reports_its_bytecode():
    from codeparse.archive.torchscript import open_archive

    archive = open_archive(LEGACY / "facebookresearch__playtorch__dummy_test_model-f270d5c.ptl")
    found = [f for f in archive.findings if f.code == "CP351"]
    assert len(found) == 1
    args = found[0].args
    assert (args["version"], args["methods"], args["count"]) == ("8", "9", "14")
    assert args["operators"].startswith("aten::eq.str, aten::str, aten::add.str")
    assert {cf.grammar for cf in archive.files} == {V2}


def test_bad_bytecode_is_a_warning_not_a_crash():
    from codeparse.archive.legacy import bytecode_diagnostic

    d = bytecode_diagnostic(b"\x80\x02K", "m.ptl", "m/bytecode.pkl")
    assert (d["code"], d["severity"]) == ("CP352", "warning")


def test_pre_zip_container_is_an_unsupported_format():
    from codeparse import InputError
    from codeparse.archive.torchscript import open_archive

    with pytest.raises(InputError) as info:
        open_archive(LEGACY / "torch-js__torch-js__test_model-7f2acda.pt")
    assert info.value.code == "CP306" and "PYTORCH1" in info.value.message


def test_generated_1_2_custom_model_inlined_reads_like_today():
    """The reference CustomModel saved by torch 1.2 (model.json, submodules inlined):
    the three reference conditions keep their kinds, and every `self` path, however
    deep, gets its role and type from the model.json module tree."""
    files = parsed("generated/torch-1.2.0__custom_model_compat.script.pt")
    main = "__torch__.torch-1.2.0__custom_model_compat.script"
    assert [cf.classes[0].qualified_name for cf in files][:3] == [
        main, main + ".custom_layer", main + ".custom_layer1"]
    assert all(cf.diagnostics == [] and cf.grammar == V10 for cf in files)
    forward = files[0].classes[0].methods[0]
    assert len(forward.ifs) == 159  # the inlined submodules' ifs too
    reference = ("_3", "self.branch_testing", "self.condition_testing")
    top = [(i.condition.text, i.condition.kind, [(s.ref, s.kind, s.type) for s in i.condition.sources])
           for i in forward.ifs if i.depth == 0 and i.condition.text in reference]
    assert top == [
        ("_3", "tensor_value", [("x", "tensor_value", "Tensor")]),
        ("self.branch_testing", "attribute", [("self.branch_testing", "attribute", "bool")]),
        ("self.condition_testing", "attribute", [("self.condition_testing", "attribute", "bool")]),
    ]
    roles = {(r.path, r.role, r.declared_type) for r in forward.self_refs}
    assert ("self.custom_layer.weight", "parameter", "Tensor") in roles
    # 1.2 saves buffers as model.json attributes of type Tensor, not as parameters
    assert ("self.layer2.1.running_mean", "attribute", "Tensor") in roles
    assert ("self.layer2.0", "submodule", main + ".layer2.0") in roles
    assert ("self.layer1", "submodule", main + ".layer1") in roles
    assert not [r for r in forward.self_refs if r.role == "unknown"]


@pytest.mark.parametrize("release", sorted(GENERATED_GRAMMAR, key=lambda v: tuple(map(int, v.split(".")))))
def test_same_model_same_condition_kinds_in_every_release(release):
    """OptionalArg saved by five releases, read by three grammars: the same answers."""
    cf = parsed(f"generated/torch-{release}__optional_arg.script.pt")[0]
    assert cf.grammar == GENERATED_GRAMMAR[release]
    forward = [m for c in cf.classes for m in c.methods if m.name == "forward"][0]
    got = [(i.condition.kind, i.condition.none_check, [(s.ref, s.kind, s.type) for s in i.condition.sources])
           for i in forward.ifs]
    assert got == [
        ("argument", True, [("bias", "argument", "Optional[Tensor]")]),
        ("attribute", False, [("self.training", "attribute", "bool")]),
        ("tensor_value", False, [("self.running", "tensor_value", "Tensor")]),
    ]


def test_cli_parse_and_grammars_list_the_legacy_formats(capsys):
    import json

    from codeparse.cli.app import main

    assert main(["parse", str(LEGACY / "LaurentMazare__tch-rs__foo.pt"), "--format", "jsonl"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    cf = json.loads(line)
    assert cf["grammar"] == V10 and cf["path"].endswith(".pt!foo/code/foo.py")
    assert [(c["qualified_name"], [a["name"] for a in c["attributes"]]) for c in cf["classes"]] == [
        ("__torch__.foo", ["value"])]
    assert main(["grammars"]) == 0
    out = capsys.readouterr().out
    for gid, versions in ((V2, "1.5 – 2.x"), (V13, "1.3 – 1.4"), (V10, "1.0 – 1.2")):
        assert gid in out and versions in out
    assert out.index(V2) < out.index(V13) < out.index(V10)
