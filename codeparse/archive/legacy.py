"""Legacy archive formats (PyTorch 1.0 – 1.2 ``model.json`` archives, mobile ``.ptl``).

Pure functions over data that has already been read: nothing here opens a file or a
zip.  The archive reader (``codeparse.archive.torchscript``) or a test hands in the bytes of the
entries it read.

``model.json`` archives (1.0 – 1.2) store one *method file* per module
(``<root>/code/<module>.py``: top-level ``def forward(self, ...)`` with ``self``
untyped) and describe the module itself in JSON: its parameters (``isBuffer``,
``tensorId``), attributes (``name``, ``type``), submodules (recursively) and the
``tensors`` table that ``CONSTANTS.cN`` indexes.  :func:`read_model_json` reads that
JSON into a :class:`LegacyModel`; :func:`parse_method_file` parses one method file
with the declarations synthesised from it, so that ``self`` attributes get the roles
and types that class declarations give them in newer archives, and returns the
methods inside one synthesised :class:`~codeparse.contract.text.ClassDef`.

Mobile archives (``.ptl``) carry a ``bytecode.pkl`` beside their ``code/`` tree:
:func:`read_bytecode` reads its version and operator list with a restricted
unpickler that builds only plain values (no class is ever imported).

The pre-zip ``PYTORCH1`` container of the 1.0 preview holds no TorchScript source:
:func:`sniff_container` recognises it, so that it can be reported as unsupported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from posixpath import basename, dirname
from typing import Any, Iterable, Mapping, Optional

from ..pickles.safepickle import JSON_SAFE, OpaqueUnpickler, PickleLimit, safe_int

__all__ = [
    "LEGACY_GRAMMAR",
    "PYTORCH1_MAGIC",
    "LegacyError",
    "TensorDef",
    "LegacyParameter",
    "LegacyAttribute",
    "LegacyModule",
    "LegacyModel",
    "BytecodeInfo",
    "sniff_container",
    "read_version",
    "read_model_json",
    "declarations",
    "constant_tensor",
    "constant_refs",
    "grammar_for_layout",
    "parse_method_file",
    "parse_model_json_archive",
    "read_bytecode",
    "bytecode_diagnostic",
]

#: The grammar of every code file in a ``model.json`` archive.
LEGACY_GRAMMAR = "torchscript-v1.0"
#: First bytes of the pre-zip container written by the 1.0 preview.
PYTORCH1_MAGIC = b"PYTORCH1"


class LegacyError(ValueError):
    """Legacy data that cannot be read (malformed JSON, an unexpected pickle)."""


# ---------------------------------------------------------------------------------------
# model.json
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorDef:
    """One row of the model.json ``tensors`` table (``CONSTANTS.c<index>``, parameters)."""

    index: int
    dtype: str  # caffe2 data type name: FLOAT, INT64, ...
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    requires_grad: bool
    key: Optional[str]  # entry holding the storage, relative to the archive root
    device: str


@dataclass(frozen=True)
class LegacyParameter:
    name: str
    is_buffer: bool
    tensor_id: Optional[int]


@dataclass(frozen=True)
class LegacyAttribute:
    name: str
    type: str
    id: Optional[int]  # index into attributes.pkl; -1 when __getstate__ provides it


@dataclass(frozen=True)
class LegacyModule:
    """One module of the tree in model.json."""

    name: str
    path: tuple[str, ...]  # attribute names from the main module: () for it, ("sub",) ...
    code_key: Optional[str]  # `code/foo.py`, relative to the archive root
    debug_key: Optional[str]
    parameters: tuple[LegacyParameter, ...] = ()
    attributes: tuple[LegacyAttribute, ...] = ()
    submodules: tuple["LegacyModule", ...] = ()
    root: str = ""  # the main module's name

    @property
    def qualified_name(self) -> str:
        """The name given to its synthesised class: ``__torch__.<main>.<sub>...``.

        model.json modules have no class names; this names them by their place in
        the module tree, under the main module's name (the archive's folder name).
        """
        return ".".join(("__torch__", self.root or self.name, *self.path))

    def walk(self) -> Iterable["LegacyModule"]:
        """This module and every submodule, depth first, in declaration order (iterative)."""
        stack = [self]
        while stack:
            module = stack.pop()
            yield module
            stack.extend(reversed(module.submodules))


@dataclass(frozen=True)
class LegacyModel:
    """What model.json says about an archive."""

    proto_version: int
    producer_name: str
    producer_version: str
    main: LegacyModule
    tensors: tuple[TensorDef, ...] = ()
    libs_key: Optional[str] = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def modules(self) -> list[LegacyModule]:
        return list(self.main.walk())

    def module_for_code(self, key: str) -> Optional[LegacyModule]:
        """The module whose method file is ``key`` (relative to the archive root)."""
        index = self.__dict__.get("_code_index")
        if index is None:  # built once: files x modules would be quadratic
            index = {}
            for module in self.main.walk():
                if module.code_key is not None:
                    index.setdefault(module.code_key, module)
            object.__setattr__(self, "_code_index", index)  # a cache on a frozen dataclass
        return index.get(key)


def _int(value: Any, default: Optional[int] = None) -> Optional[int]:
    # protobuf's JSON mapping writes int64 fields as strings ("0", "-1").  Numbers a JSON
    # reader cannot keep exactly are not numbers codeparse passes on.
    try:
        number = int(value) if not isinstance(value, str) or len(value) <= 20 else None
    except (TypeError, ValueError):
        return default
    return number if number is not None and -JSON_SAFE <= number <= JSON_SAFE else default


def _key(record: Any) -> Optional[str]:
    if isinstance(record, Mapping) and isinstance(record.get("key"), str):
        return record["key"]
    return None


def _module(raw: Mapping[str, Any], path: tuple[str, ...], root: Optional[str] = None) -> LegacyModule:
    name = str(raw.get("name", ""))
    root = name if root is None else root
    params = tuple(
        LegacyParameter(str(p.get("name", "")), bool(p.get("isBuffer", False)), _int(p.get("tensorId")))
        for p in raw.get("parameters", ()) if isinstance(p, Mapping)
    )
    attrs = tuple(
        LegacyAttribute(str(a.get("name", "")), str(a.get("type", "")), _int(a.get("id")))
        for a in raw.get("attributes", ()) if isinstance(a, Mapping)
    )
    subs = tuple(
        _module(s, path + (str(s.get("name", "")),), root)
        for s in raw.get("submodules", ()) if isinstance(s, Mapping)
    )
    return LegacyModule(
        name=name,
        path=path,
        code_key=_key(raw.get("torchscriptArena")),
        debug_key=_key(raw.get("torchscriptDebugArena")),
        parameters=params,
        attributes=attrs,
        submodules=subs,
        root=root,
    )


def _main_module(raw: Mapping[str, Any]) -> LegacyModule:
    try:
        return _module(raw, ())
    except RecursionError:
        raise LegacyError("model.json nests its modules too deeply") from None


def read_model_json(json_text: str) -> LegacyModel:
    """Read a model.json (protoVersion 1 – 6) into a :class:`LegacyModel`."""
    try:
        data = json.loads(json_text)
    except json.JSONDecodeError as exc:
        raise LegacyError(f"model.json is not JSON: {exc}") from None
    except RecursionError:
        raise LegacyError("model.json is nested too deeply") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("mainModule"), Mapping):
        raise LegacyError("model.json has no mainModule")
    tensors = []
    for index, t in enumerate(data.get("tensors", ())):
        if not isinstance(t, Mapping):
            continue
        tensors.append(TensorDef(
            index=index,
            dtype=str(t.get("dataType", "")),
            dims=tuple(_int(d, 0) for d in t.get("dims", ())),
            strides=tuple(_int(s, 0) for s in t.get("strides", ())),
            offset=_int(t.get("offset"), 0) or 0,
            requires_grad=bool(t.get("requiresGrad", False)),
            key=_key(t.get("data")),
            device=str(t.get("device", "")),
        ))
    known = {"protoVersion", "producerName", "producerVersion", "mainModule", "tensors", "libs"}
    return LegacyModel(
        proto_version=_int(data.get("protoVersion"), 0) or 0,
        producer_name=str(data.get("producerName", "")),
        producer_version=str(data.get("producerVersion", "")),
        main=_main_module(data["mainModule"]),
        tensors=tuple(tensors),
        libs_key=_key(data.get("libs", {}).get("torchscriptArena")) if isinstance(data.get("libs"), Mapping) else None,
        extra={k: v for k, v in data.items() if k not in known},
    )


def constant_tensor(model: LegacyModel, name: str) -> Optional[TensorDef]:
    """The tensor that ``CONSTANTS.c<N>`` (or ``c<N>``) names, from the JSON table."""
    tail = name.rsplit(".", 1)[-1]
    if not tail.startswith("c") or not tail[1:].isdigit():
        return None
    index = int(tail[1:])
    return model.tensors[index] if index < len(model.tensors) else None


def declarations(module: LegacyModule) -> dict[str, tuple[str, Optional[str]]]:
    """Role and type of each ``self`` attribute of ``module``, as a class would declare them.

    Parameters and buffers are ``Tensor``; attributes keep their JSON type (a Tensor
    attribute such as tch-rs' ``value`` is an attribute, as ``register_attribute``
    made it); submodules get the qualified name of their synthesised class.
    """
    out: dict[str, tuple[str, Optional[str]]] = {}
    for p in module.parameters:
        out[p.name] = ("buffer" if p.is_buffer else "parameter", "Tensor")
    for a in module.attributes:
        out.setdefault(a.name, ("attribute", a.type or None))
    for sub in module.submodules:
        out.setdefault(sub.name, ("submodule", sub.qualified_name))
    return out


def _class_attributes(module: LegacyModule, span: dict) -> list[dict]:
    attrs = []
    for name, (role, typ) in declarations(module).items():
        attrs.append({"name": name, "type": typ, "final": False, "value": None, "span": span})
    return attrs


# ---------------------------------------------------------------------------------------
# Layouts and version records
# ---------------------------------------------------------------------------------------


def sniff_container(head: bytes) -> Optional[str]:
    """``"pytorch1"`` for the pre-zip container of the 1.0 preview, else None."""
    return "pytorch1" if head.startswith(PYTORCH1_MAGIC) else None


def read_version(data: bytes) -> Optional[int]:
    """The number in a ``version`` / ``.data/version`` record, or None."""
    text = data.decode("ascii", errors="replace").strip()
    return int(text) if text.isdigit() and len(text) <= 15 else None


def grammar_for_layout(names: Iterable[str]) -> Optional[str]:
    """The grammar an archive's layout pins, if it does: model.json archives are 1.0 – 1.2.

    Every other layout leaves the choice to the text (``detect_grammar``): the
    ``version`` record does not date an archive (torch 2.x still writes 3).
    """
    return LEGACY_GRAMMAR if any(basename(n) == "model.json" for n in names) else None


# ---------------------------------------------------------------------------------------
# Parsing method files with synthesised declarations
# ---------------------------------------------------------------------------------------


def parse_method_file(text: str, path: str, module: Optional[LegacyModule] = None,
                      grammar: Optional[str] = None, model: Optional[LegacyModel] = None):
    """Parse one model.json-era method file; its methods go into a synthesised class.

    ``module`` gives the declarations (from :func:`read_model_json`); without it the
    file is parsed as plain method text.  ``grammar`` forces one (default: detected,
    which for these files is ``torchscript-v1.0``).  The synthesised class is named
    after the module (``kind`` module, ``bases`` empty, attributes in model.json
    order, every span the span of the whole text since the text declares nothing).
    """
    from ..infer.semantics import shared_semantics
    from ..text import reader  # deferred: the reader imports the parser, which this module does not need
    from ..text.extract import Extractor
    from ..contract.text import CodeFile

    if module is None:
        return reader.parse_text(text, path=path, grammar=grammar)
    # The text's first stage as any code text's (grammar, statements, CP303/CP109), with
    # the legacy printer's grammar where detection finds none.
    prepared = reader.prepare_text(text, path, grammar, fallback=LEGACY_GRAMMAR)
    g, source, diagnostics = prepared.grammar, prepared.source, list(prepared.diagnostics)
    qualified = module.qualified_name
    extractor = Extractor(source, g, shared_semantics(), None, qualified)
    declared = declarations(module)
    classes: list[dict] = []
    methods: list[dict] = []
    tree = _Tree()
    for stmt in prepared.statements:
        if stmt.kind == "class":  # a TorchScript class in a libs file
            classes.append(extractor.class_def(stmt))
        elif stmt.kind == "def":
            methods.append(_fill_nested(extractor.function(stmt, qualified, declared), module, tree))
    if model is not None:
        diagnostics.extend(_constant_diagnostics(model, source, g, path))
    diagnostics.extend(extractor.limit_diagnostics(path))
    whole = source.span(0, len(text.rstrip("\n")) if text.strip() else 0)
    synthesised = {
        "name": module.name,
        "qualified_name": qualified,
        "kind": "module",
        "bases": [],
        "parameters": [p.name for p in module.parameters if not p.is_buffer],
        "buffers": [p.name for p in module.parameters if p.is_buffer],
        "attributes": _class_attributes(module, whole),
        "methods": methods,
        "span": whole,
    }
    diagnostics.sort(key=lambda d: (d["span"] or {}).get("start", -1))
    return CodeFile.model_validate({
        "path": path,
        "grammar": g.id,
        "classes": [synthesised, *classes],
        "functions": [],
        "diagnostics": diagnostics,
    })


def constant_refs(text: str, grammar) -> list[tuple[str, int, int]]:
    """Every ``CONSTANTS.cN`` read in ``text``: ``(name, start, end)``, found with the
    grammar's ``[scan].references`` pattern (strings skipped)."""
    from ..infer.semantics import shared_semantics

    root = shared_semantics().constants_object
    out = []
    for m in grammar.scan["references"].finditer(text):
        if m.start("attr_base") >= 0 and m.group("attr_base") == root:
            out.append((m.group("attr_base") + m.group("attr_chain"), m.start(), m.end()))
    return out


class _Tree:
    """Declarations and submodules of a model.json module tree, each module's built once
    (a method reading 5,000 paths of a module with 50,000 attributes costs 55,000, not 250M)."""

    def __init__(self) -> None:
        self._decls: dict[int, dict[str, tuple[str, Optional[str]]]] = {}
        self._subs: dict[int, dict[str, LegacyModule]] = {}

    def declarations(self, module: LegacyModule) -> dict[str, tuple[str, Optional[str]]]:
        found = self._decls.get(id(module))
        if found is None:
            found = self._decls[id(module)] = declarations(module)
        return found

    def submodule(self, module: LegacyModule, name: str) -> Optional[LegacyModule]:
        found = self._subs.get(id(module))
        if found is None:
            found = self._subs[id(module)] = {}
            for sub in module.submodules:
                found.setdefault(sub.name, sub)
        return found.get(name)

    def declared_path(self, module: LegacyModule, path: str) -> Optional[tuple[str, Optional[str]]]:
        """Role and type of ``self.a.b...`` through the module tree, if declared."""
        parts = path.split(".")[1:]
        for i, part in enumerate(parts):
            decl = self.declarations(module).get(part)
            if decl is None:
                return None
            if i == len(parts) - 1:
                return decl
            sub = self.submodule(module, part)
            if sub is None:
                return None
            module = sub
        return None


def _declared_path(module: LegacyModule, path: str) -> Optional[tuple[str, Optional[str]]]:
    """Role and type of ``self.a.b...`` through the model.json module tree, if declared."""
    return _Tree().declared_path(module, path)


def _fill_nested(function: dict, module: LegacyModule, tree: Optional[_Tree] = None) -> dict:
    """Roles and types of deeper ``self`` paths (``self.conv.weight``) from the module tree.

    1.0 - 1.2 inline submodule methods into their caller, so reads such as
    ``_4 = self.custom_layer`` then ``_4.weight`` are common; the extractor's class
    declarations cover one step from ``self``, model.json covers the whole tree.
    """
    tree = tree or _Tree()
    for ref in function.get("self_refs", ()):
        if ref.get("role") == "unknown" or ref.get("declared_type") is None:
            decl = tree.declared_path(module, ref["path"])
            if decl is not None:
                ref["role"], ref["declared_type"] = decl
    for if_ in function.get("ifs", ()):
        for source in if_["condition"].get("sources", ()):
            if source.get("type") == "unknown" and source["ref"].startswith("self."):
                decl = tree.declared_path(module, source["ref"])
                if decl is not None and decl[1]:
                    source["type"] = decl[1]
    return function


def _constant_diagnostics(model: LegacyModel, source, grammar, path: str) -> list[dict]:
    """CP350 for each ``CONSTANTS.cN`` that the JSON tensor table does not hold."""
    from ..contract.codes import diagnostic

    out = []
    for name, start, end in constant_refs(source.text, grammar):
        if constant_tensor(model, name) is None:
            out.append(diagnostic("CP350", path, source.span(start, end), name=name,
                                  count=len(model.tensors)))
    return out


def parse_model_json_archive(entries: Mapping[str, bytes], archive_path: str,
                             grammar: Optional[str] = None) -> tuple[Optional[LegacyModel], list]:
    """Parse every code file of a model.json archive, given its entries by name.

    ``entries`` maps each zip entry name (``foo/code/foo.py``) to its bytes; only
    ``model.json``, the method files it names, ``libs.py`` and ``libs/...py`` are read.
    Returns the model and one :class:`CodeFile` per code file, in stored order,
    each with the path ``archive!entry``.
    """
    from ..text import reader

    json_name = next((n for n in entries if basename(n) == "model.json"), None)
    if json_name is None:
        raise LegacyError("no model.json in the archive")
    root = dirname(json_name)
    prefix = root + "/" if root else ""
    model = read_model_json(entries[json_name].decode("utf-8", errors="replace"))
    files = []
    for name, data in entries.items():
        rel = name[len(prefix):] if name.startswith(prefix) else name
        is_code = rel.startswith("code/") and rel.endswith(".py")
        is_lib = rel == "libs.py" or (rel.startswith("libs/") and rel.endswith(".py"))
        if not (is_code or is_lib):
            continue
        shown = f"{archive_path}!{name}"
        text = data.decode("utf-8", errors="replace")
        module = model.module_for_code(rel) if is_code else None
        if module is not None:
            files.append(parse_method_file(text, shown, module, grammar or LEGACY_GRAMMAR, model))
        else:
            files.append(reader.parse_text(text, path=shown, grammar=grammar or LEGACY_GRAMMAR))
    return model, files


# ---------------------------------------------------------------------------------------
# Mobile bytecode
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BytecodeInfo:
    """What ``bytecode.pkl`` of a lite-interpreter archive says."""

    version: int
    methods: tuple[str, ...]  # qualified names, `__torch__.M.forward`
    operators: tuple[str, ...]  # `aten::add.Tensor`, each once, in first-use order


#: Objects a ``bytecode.pkl`` may build (opcodes included); a real one builds a few per
#: byte, and a 30 MB pickle of memoised globals stops here in a second or two.
MAX_BYTECODE_OBJECTS = 2_000_000
#: Distinct globals a ``bytecode.pkl`` may name (each becomes one opaque class).
MAX_BYTECODE_GLOBALS = 10_000


def _plain_load(data: bytes) -> Any:
    try:
        return OpaqueUnpickler(data, MAX_BYTECODE_OBJECTS, MAX_BYTECODE_GLOBALS).load()
    except PickleLimit:
        raise
    except RecursionError:
        raise LegacyError("bytecode.pkl cannot be read: nested too deeply") from None
    except Exception as exc:  # any malformed pickle is one clear error
        raise LegacyError(f"bytecode.pkl cannot be read: {type(exc).__name__}: {str(exc)[:80]}") from None


def _named(table: Any, name: str) -> Any:
    """The value of ``(name, value)`` in a bytecode method table, or None."""
    if isinstance(table, tuple):
        for item in table:
            if isinstance(item, tuple) and len(item) == 2 and item[0] == name:
                return item[1]
    return None


def read_bytecode(data: bytes) -> BytecodeInfo:
    """Version, methods and operators of a mobile ``bytecode.pkl`` (versions 3 – 8).

    Layout: ``(version, (qualified_name, (("instructions", ...), ("operators",
    ((name, overload[, num_args]), ...)), ...), ...)...)``; from version 5 each method
    is ``(name, code_table, debug_table)``.
    """
    value = _plain_load(data)
    if not isinstance(value, tuple) or not value or not isinstance(value[0], int):
        raise LegacyError("bytecode.pkl does not start with a version number")
    if not safe_int(value[0], 0, 1 << 31):
        raise PickleLimit("the version number is out of range")
    methods: list[str] = []
    operators: list[str] = []
    seen: set[str] = set()
    walked: set[int] = set()  # code tables and operator lists shared by reference: walked once
    for method in value[1:]:
        if not isinstance(method, tuple) or not method or not isinstance(method[0], str):
            continue
        methods.append(method[0])
        code = method[1] if len(method) > 1 else None
        if id(code) in walked:
            continue
        walked.add(id(code))
        # v5+: the code table is itself (("instructions", ...), ("operators", ...), ...)
        ops = _named(code, "operators")
        if ops is None and isinstance(code, tuple):
            ops = _named(code[1] if len(code) > 1 else None, "operators")
        if isinstance(ops, tuple) and ops and ops[0] == "operators":
            ops = ops[1]
        if id(ops) in walked:
            continue
        walked.add(id(ops))
        for op in ops if isinstance(ops, (tuple, list)) else ():
            if isinstance(op, tuple) and op and isinstance(op[0], str) and id(op) not in walked:
                walked.add(id(op))
                overload = op[1] if len(op) > 1 and isinstance(op[1], str) else ""
                full = f"{op[0]}.{overload}" if overload else op[0]
                if full not in seen:
                    seen.add(full)
                    operators.append(full)
    return BytecodeInfo(version=value[0], methods=tuple(methods), operators=tuple(operators))


def bytecode_diagnostic(data: bytes, archive_path: str, entry: str) -> dict:
    """The finding for a mobile archive's ``bytecode.pkl``: CP351 with its version and
    operators (info), or CP352 when it cannot be read (warning)."""
    from ..contract.codes import diagnostic

    try:
        info = read_bytecode(data)
    except PickleLimit as exc:
        return diagnostic("CP343", archive_path, None, entry=entry, reason=str(exc))
    except LegacyError as exc:
        return diagnostic("CP352", archive_path, None, entry=entry, reason=str(exc))
    return diagnostic("CP351", archive_path, None, entry=entry, version=info.version,
                      methods=len(info.methods), count=len(info.operators),
                      operators=", ".join(info.operators))
