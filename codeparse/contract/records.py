"""``check``'s results as plain data, built without pydantic.

``check`` collects findings, input reports and the report as plain dicts equal to
``model_dump(mode="json")`` of :class:`~codeparse.contract.check.Finding`,
:class:`~codeparse.contract.check.InputReport` and :class:`~codeparse.contract.check.Report` (same keys,
in the models' field order, so that ``json.dumps`` writes the bytes ``model_dump_json``
writes), and reads its policy from a :class:`Limits` (the fields of
:class:`~codeparse.contract.check.Policy`, by attribute).  The CLI writes every format from
that data; :func:`codeparse.check` builds its models at the library boundary
(:func:`report_model`).  A test compares both over every fixture.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable, NamedTuple, Optional, Sequence

from .defaults import POLICY_DEFAULTS
from .views import Data
if TYPE_CHECKING:  # the models import pydantic: built only for a Python caller (check, check_input)
    from .check import Policy, Report

__all__ = ["Limits", "Record", "Checked", "finding", "input_report", "report", "report_model", "input_model",
           "policy_model", "limits_of", "dumps", "indented_json"]


class Limits:
    """A checked policy as plain data: the fields of :class:`~codeparse.contract.check.Policy` by
    attribute (``policy.max_entries``), made by :func:`codeparse.gate.policy.policy_with`, which
    checks every value as the model does."""

    __slots__ = tuple(POLICY_DEFAULTS)

    def __init__(self, **values: Any):
        for name, default in POLICY_DEFAULTS.items():
            value = values.pop(name, default)
            if isinstance(value, (list, dict)):
                value = type(value)(value)
            object.__setattr__(self, name, value)
        if values:
            raise TypeError(f"unknown policy field(s): {', '.join(sorted(values))}")
        object.__setattr__(self, "timeout_per_input", float(self.timeout_per_input))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a policy is read-only: use model_copy(update=...)")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Limits) and self.model_dump() == other.model_dump()

    def __repr__(self) -> str:
        return f"Limits({self.model_dump()!r})"

    def model_dump(self, mode: str = "python") -> dict:
        """Equal to ``Policy.model_dump()`` of the same policy (copies of its lists)."""
        out = {}
        for name in POLICY_DEFAULTS:
            value = getattr(self, name)
            if isinstance(value, list):
                value = list(value)
            elif isinstance(value, dict):
                value = {k: list(v) for k, v in value.items()}
            out[name] = value
        return out

    def model_copy(self, update: Optional[dict] = None) -> "Limits":
        return Limits(**{**self.model_dump(), **(update or {})})

    def __reduce__(self) -> tuple:  # to a worker process
        return (_limits, (self.model_dump(),))


def _limits(values: dict) -> Limits:
    return Limits(**values)


def limits_of(policy: Any) -> Limits:
    """A :class:`~codeparse.contract.check.Policy` (or a Limits, or None: the defaults) as Limits."""
    if policy is None:
        return Limits()
    if isinstance(policy, Limits):
        return policy
    return Limits(**policy.model_dump())


def policy_model(policy: Limits) -> Any:
    from .check import Policy

    return Policy.model_validate(policy.model_dump())


def finding(d: dict, origin: Optional[dict] = None) -> dict:
    """A finding from a diagnostic dict (``codes.diagnostic``; a finding's keys may be there
    too), with the original source line ``origin`` (``{"path", "line"}``) when given."""
    get = d.get
    return {
        "code": d["code"], "name": d["name"], "severity": d["severity"], "message": d["message"], "path": d["path"],
        "span": get("span"), "args": get("args") or {}, "origin": origin if origin is not None else get("origin"),
        "sources": get("sources") or [], "related": get("related") or [], "library": get("library", False),
        "guards": get("guards") or [],
    }


class Checked(NamedTuple):
    """What checking one input found, before the policy selects its findings.  Every path
    of the check (code text, archive, other model file, an input that cannot be read)
    gives one; the check core turns it into the input's report once
    (:func:`codeparse.gate.run.reported`)."""

    kind: str  # InputReport.kind
    readable: bool
    findings: Sequence[dict] = ()  # findings as plain data (:func:`finding`)
    files: int = 0
    branches: int = 0
    pickles: Optional[list] = None
    export: Optional[dict] = None  # the export verdict, under ``--target export``


def input_report(path: str, kind: str, readable: bool, files: int = 0, branches: int = 0,
                 findings: Optional[list] = None, pickles: Optional[list] = None, export: Optional[dict] = None) -> dict:
    return {"path": path, "kind": kind, "readable": readable, "files": files, "branches": branches,
            "findings": findings if findings is not None else [], "pickles": pickles if pickles is not None else [],
            "export": export}


def report(inputs: list[dict], policy: Limits, counts: dict[str, int], exit_code: int) -> dict:
    return {"inputs": inputs, "policy": policy.model_dump(), "counts": counts, "exit_code": exit_code}


# The JSON shape of an InputReport, field by field (tests/test_check.py compares it with the
# models): a type, ("opt", shape) for None or shape, [shape] for a list, ("map", shape) for a
# dict of strings to shape, a frozenset of the allowed values, or a dict (exactly these keys,
# in this order).
_SPAN = {"start": int, "end": int, "line": int, "column": int, "end_line": int, "end_column": int}
_LOCATION = {"path": str, "line": int}
_KINDS = frozenset({"tensor_value", "tensor_shape", "argument", "attribute", "runtime", "unknown", "constant"})
_GUARD = {"condition": str, "kind": _KINDS, "branch": frozenset({"then", "else"}), "path": str, "line": int,
          "decided": ("opt", str)}
_FINDING = {"code": str, "name": str, "severity": frozenset({"error", "warning", "info"}), "message": str, "path": str,
            "span": ("opt", _SPAN), "args": ("map", str), "origin": ("opt", _LOCATION),
            "sources": [{"ref": str, "kind": _KINDS, "type": str}], "related": [_LOCATION], "library": bool,
            "guards": [_GUARD]}
_PICKLE = {"entry": str, "globals": [str], "opcodes": int, "dangerous": [str], "unknown": [str], "error": ("opt", str)}
_VERDICT = {"verdict": frozenset({"exports", "exports_with_specializations", "blocked", "cannot_tell"}),
            "blocked": [_LOCATION], "specializations": int, "unknown": int, "reason": str,
            "blocked_when": [{"when": str, "guard": _GUARD, "at": _LOCATION, "code": str}],
            "library_specializations": int}
INPUT_SHAPE = {"path": str, "kind": frozenset({"archive", "code", "checkpoint", "pickle", "pt2", "lfs_pointer", "other"}),
               "readable": bool, "files": int, "branches": int, "findings": [_FINDING], "pickles": [_PICKLE],
               "export": ("opt", _VERDICT)}


def _test(shape: Any, var: str, depth: int, names: dict) -> str:
    """A Python expression that is true when the value of ``var`` has ``shape``."""
    kind = type(shape)
    if kind is type:
        return f"type({var}) is {shape.__name__}"
    if kind is frozenset:
        names[f"_v{len(names)}"] = shape
        return f"(type({var}) is str and {var} in _v{len(names) - 1})"
    inner = f"_{depth}"
    if kind is dict:
        names[f"_v{len(names)}"] = tuple(shape)
        keys = f"_v{len(names) - 1}"
        parts = [f"type({var}) is dict", f"tuple({var}) == {keys}"]
        parts += [_test(sub, f"{var}[{key!r}]", depth + 1, names) for key, sub in shape.items()]
        return "(" + " and ".join(parts) + ")"
    if kind is list:
        return f"(type({var}) is list and all({_test(shape[0], inner, depth + 1, names)} for {inner} in {var}))"
    if shape[0] == "opt":
        return f"({var} is None or {_test(shape[1], var, depth, names)})"
    return (f"(type({var}) is dict and all(type(_k{depth}) is str and {_test(shape[1], inner, depth + 1, names)} "
            f"for _k{depth}, {inner} in {var}.items()))")


def _checker(shape: Any) -> Any:
    """A function that tells whether a value (JSON data) has ``shape``, written out as one
    expression (a walk of the shape per value took as long as reading the JSON)."""
    names: dict = {}
    body = _test(shape, "value", 0, names)
    return eval(f"lambda value: {body}", names)  # noqa: S307 - code made from the literal shapes above


_input_fits = None


def input_report_ok(data: Any, path: str) -> bool:
    """Whether ``data`` is an input report of ``path`` as plain data, read back from a file
    (:class:`codeparse.text.cache.InputCache`): every field of the shape ``check`` makes."""
    global _input_fits
    if _input_fits is None:
        _input_fits = _checker(INPUT_SHAPE)
    return bool(_input_fits(data)) and data["path"] == path


def input_model(data: dict) -> Any:
    """The :class:`~codeparse.contract.check.InputReport` of one input's plain data (built as the
    data is, without validating it again: ``check`` made it)."""
    from .build import input_report_from_plain

    return input_report_from_plain(data)


def report_model(data: dict, inputs: Optional[Iterable[Any]] = None) -> Any:
    """The :class:`~codeparse.contract.check.Report` of a plain report (``inputs``: its input
    reports already built as models, in order)."""
    from .check import Policy, Report
    from .build import report_from_plain

    if inputs is None:
        return report_from_plain(data)
    return Report(inputs=list(inputs), policy=Policy.model_validate(data["policy"]), counts=data["counts"],
                  exit_code=data["exit_code"])


# The fields of the report models that are dicts by contract (read as dicts, not records).
_MAPPINGS = frozenset({"args", "counts", "per_file_ignores"})


class Record(Data):
    """Read-only attribute access to a report, input report or finding as plain data, as
    the renderers read the models (``report.inputs[0].findings[0].span.line``); the
    dict fields (``args``, ``counts``) stay dicts.  A field is wrapped on its first read
    and kept (later reads are plain attribute reads)."""

    __slots__ = ("__dict__",)
    _mappings = _MAPPINGS

    def __getattr__(self, name: str) -> Any:
        value = Data.__getattr__(self, name)
        object.__setattr__(self, name, value)
        return value


def dumps(data: Any, indent: Optional[int] = None) -> str:
    """``data`` as the JSON text pydantic's ``model_dump_json(indent=...)`` writes for the
    matching model.  A lone surrogate in a string (a file name that is not UTF-8, as Python
    gives it), which pydantic refuses and UTF-8 cannot carry, is written as its JSON escape
    (``\\udcff``): ``json.loads`` gives the same string back."""
    text = None
    if indent:
        try:
            text = _indented(data, " " * indent)
        except TypeError:  # not plain JSON data: json decides
            text = None
    if text is None:
        text = json.dumps(data, ensure_ascii=False, indent=indent, separators=None if indent else (",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # only inside strings, where `\\uXXXX` is the JSON escape of the same code point
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def indented_json(value: Any, indent: int = 2) -> str:
    """``json.dumps(value, indent=indent)`` (ASCII, as the SARIF log is written), by
    :func:`_indented` where ``value`` is plain JSON data."""
    try:
        return _indented(value, " " * indent, ascii=True)
    except TypeError:
        return json.dumps(value, indent=indent)


def _indented(value: Any, step: str, ascii: bool = False) -> str:
    """``json.dumps(value, indent=len(step), ensure_ascii=ascii)`` for plain JSON data (dicts
    with string keys, lists, strings, ints, finite floats, booleans, None), written about
    2.5 times faster: the standard library indents with its pure-Python encoder (a report of
    a model zoo: 110 -> 45 ms).  TypeError for anything else."""
    from json.encoder import encode_basestring, encode_basestring_ascii  # the C functions, where there are

    string = encode_basestring_ascii if ascii else encode_basestring

    out: list[str] = []
    append = out.append
    int_text, float_text = int.__repr__, float.__repr__
    infinity = float("inf")

    def write(value: Any, pad: str) -> None:
        kind = type(value)
        if kind is str:
            append(string(value))
        elif kind is dict:
            if not value:
                append("{}")
                return
            inner = pad + step
            head = "{\n" + inner
            for key, item in value.items():
                if type(key) is not str:
                    raise TypeError(key)
                append(head + string(key) + ": ")
                head = ",\n" + inner
                write(item, inner)
            append("\n" + pad + "}")
        elif kind is list:
            if not value:
                append("[]")
                return
            inner = pad + step
            head = "[\n" + inner
            for item in value:
                append(head)
                head = ",\n" + inner
                write(item, inner)
            append("\n" + pad + "]")
        elif value is None:
            append("null")
        elif value is True:
            append("true")
        elif value is False:
            append("false")
        elif kind is int:
            append(int_text(value))
        elif kind is float and value == value and -infinity < value < infinity:
            append(float_text(value))
        else:
            raise TypeError(kind)

    write(value, "")
    return "".join(out)


def is_library(finding: dict) -> bool:
    """In torch's own library code (a finding as plain data): an entry under
    ``__torch__/torch/`` whose original source (when recorded) lies under a ``torch/`` folder
    or is no file (``<string>``: torch's own code compiled from a string)."""
    path = finding["path"]
    if "!" not in path or "/__torch__/torch/" not in path.split("!", 1)[1]:
        return False
    origin = finding["origin"]
    if origin is None or origin["path"].startswith("<"):  # `<string>`: code torch compiled from a string
        return True
    return "/torch/" in "/" + origin["path"].replace("\\", "/")
