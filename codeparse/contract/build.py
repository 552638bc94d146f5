"""Models built from the engine's plain data without validating it again.

The parse and the check produce plain dicts equal to ``model_dump(mode="json")``; these
functions turn them into the frozen models at the library boundary, as ``model_construct``
would, at a fraction of validation's cost.
"""

from __future__ import annotations

from pydantic import BaseModel
from typing import Any

from .check import InputReport, Report
from .text import CodeFile


def code_file_from_plain(data: dict) -> CodeFile:
    """The :class:`CodeFile` of the plain data that ``parse_text(..., as_dict=True)`` returns.

    Equal to ``CodeFile.model_validate(data)`` (the test suite compares them over every
    fixture), built without validating again what the engine guarantees: each dict
    becomes a model whose ``__dict__`` is a copy of it with nested dicts replaced by
    models, as ``model_construct`` does.  A dict reached twice (a call listed in
    ``calls`` and again in an if's ``then_calls``) becomes one shared model, and every
    model of a class shares one ``model_fields_set`` (frozen models never change it;
    ``model_copy`` copies it first), so a built file holds little more than its data.
    ``data`` is not changed.
    """
    return _builder(CodeFile, shared=True)(data, {})


def code_file_taking_plain(data: dict) -> CodeFile:
    """:func:`code_file_from_plain` for data no one else holds (the parse path's own, dropped
    once built): the same models, built without copying.  Each dict becomes its model's
    ``__dict__`` with nested dicts replaced in it by their models, so ``data`` is changed
    and must not be read or built again; a dict reached twice is one model, as there.
    A class no two fields lead to (all but ``Call``, ``Condition`` and ``Function``) is
    built without that memo: each of its dicts is reached once in the engine's data."""
    return _builder(CodeFile, shared=True, taking=True)(data, {})


def report_from_plain(data: dict) -> Report:
    """The :class:`Report` of the plain data ``check`` collects (``Report.model_dump(mode="json")``),
    built as :func:`code_file_from_plain` builds a CodeFile (``codeparse.check`` returns it),
    by a function written for the report's classes (:func:`_builder`); a dict reached twice
    becomes two equal models."""
    return _builder(Report)(data)


def input_report_from_plain(data: dict) -> InputReport:
    """The :class:`InputReport` of one input's plain data, as :func:`report_from_plain`."""
    return _builder(InputReport)(data)


_LIST, _ONE = 0, 1

_Plan = tuple[tuple[str, int, type], ...]

_plans: dict[type, tuple[_Plan, set]] = {}

_object_setattr = object.__setattr__


def _plan(cls: type) -> tuple[_Plan, set]:
    """Which fields of ``cls`` hold models (one, optional or a list of them), and the
    field set every built instance shares."""
    import typing

    found = _plans.get(cls)
    if found is None:
        steps = []
        for name, info in cls.model_fields.items():
            ann = info.annotation
            origin, args = typing.get_origin(ann), typing.get_args(ann)
            if origin is typing.Union and len(args) == 2 and type(None) in args:  # Optional[X]
                ann = args[0] if args[1] is type(None) else args[1]
                origin, args = typing.get_origin(ann), typing.get_args(ann)
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                steps.append((name, _ONE, ann))
            elif origin is list and args and isinstance(args[0], type) and issubclass(args[0], BaseModel):
                steps.append((name, _LIST, args[0]))
            elif any(isinstance(a, type) and issubclass(a, BaseModel) for a in _flatten(ann)):
                raise TypeError(f"{cls.__name__}.{name}: a nested model shape the builder does not know")
        found = _plans[cls] = (tuple(steps), set(cls.model_fields))
    return found


def _flatten(ann) -> list:
    import typing

    out, todo = [], [ann]
    while todo:
        a = todo.pop()
        out.append(a)
        todo.extend(typing.get_args(a))
    return out


_builders: dict[tuple[type, bool, bool], Any] = {}


def _builder(cls: type, shared: bool = False, taking: bool = False) -> Any:
    """A function that builds ``cls`` from its plain data without validating it, written
    out for the class: one function per model class, each field holding models built by a
    direct call, each model's ``__dict__`` a copy of its dict with nested dicts replaced by
    models (as ``model_construct`` does), its slots set through their descriptors, and
    every model of a class sharing one ``model_fields_set``.  A field left to its default
    takes its place in field order, as in a validated model.

    ``shared``: the function takes ``(data, memo)``, and a dict reached twice becomes one
    model (``memo`` maps the dict's id to it); a field left to its default is added after
    the others.

    ``taking`` (with ``shared``): each dict becomes its model's ``__dict__`` itself (see
    :func:`code_file_taking_plain`); only a class two fields lead to keeps the memo, and a
    model of a class with no nested models is built inline where its field is read."""
    found = _builders.get((cls, shared, taking))
    if found is not None:
        return found
    if taking:
        found = _builders[(cls, shared, taking)] = _taking_builder(cls)
        return found
    env: dict[str, Any] = {"_new": object.__new__, "_set": _object_setattr,
                           "_fields_set": BaseModel.__pydantic_fields_set__.__set__,  # type: ignore[attr-defined]
                           "_extra": BaseModel.__pydantic_extra__.__set__,  # type: ignore[attr-defined]
                           "_private": BaseModel.__pydantic_private__.__set__}  # type: ignore[attr-defined]
    lines: list[str] = []
    done: set[type] = set()

    def write(model: type) -> str:
        name = f"_build_{model.__name__}"
        if model in done:
            return name
        done.add(model)
        steps, fields_set = _plan(model)
        env[f"_cls_{model.__name__}"] = model
        env[f"_set_{model.__name__}"] = fields_set
        env[f"_fields_{model.__name__}"] = model.model_fields
        if shared:
            body = [f"def {name}(data, memo):", "    got = memo.get(id(data))",
                    f"    if got is not None and type(got) is _cls_{model.__name__}:", "        return got",
                    "    values = data.copy()", f"    if len(values) != {len(fields_set)}:",
                    f"        for key, info in _fields_{model.__name__}.items():", "            if key not in values:",
                    "                values[key] = info.get_default(call_default_factory=True)"]
        else:
            body = [f"def {name}(data):", "    values = data.copy()",
                    f"    if len(values) != {len(fields_set)}:",
                    "        values = {key: data[key] if key in data else info.get_default(call_default_factory=True)",
                    f"                  for key, info in _fields_{model.__name__}.items()}}"]
        args = ", memo" if shared else ""
        for field, how, sub in steps:
            call = write(sub)
            if how == _LIST:
                body.append(f"    values[{field!r}] = [{call}(v{args}) for v in values[{field!r}]]")
            else:
                body += [f"    v = values[{field!r}]", "    if v is not None:", f"        values[{field!r}] = {call}(v{args})"]
        body += [f"    model = _new(_cls_{model.__name__})", "    _set(model, '__dict__', values)",
                 f"    _fields_set(model, _set_{model.__name__})", "    _extra(model, None)", "    _private(model, None)"]
        if shared:
            body.append("    memo[id(data)] = model")
        body.append("    return model")
        lines.extend(body)
        return name

    top = write(cls)
    exec("\n".join(lines), env)  # noqa: S102 - code written from the models' own fields
    found = _builders[(cls, shared, taking)] = env[top]
    return found


def _taking_builder(cls: type) -> Any:
    """The function :func:`code_file_taking_plain` calls: as :func:`_builder` writes with
    ``shared``, but each dict is its model's ``__dict__`` (defaults added to it), the memo
    kept only for a class that more than one field leads to, and a model of a class with
    no nested models (a span, a condition source) made inline, without a call."""
    env: dict[str, Any] = {"_new": object.__new__, "_dict": vars(BaseModel)["__dict__"].__set__,
                           "_fields_set": BaseModel.__pydantic_fields_set__.__set__,  # type: ignore[attr-defined]
                           "_extra": BaseModel.__pydantic_extra__.__set__,  # type: ignore[attr-defined]
                           "_private": BaseModel.__pydantic_private__.__set__}  # type: ignore[attr-defined]
    classes: list[type] = []
    leads: dict[type, int] = {}
    todo = [cls]
    while todo:
        model = todo.pop()
        if model in classes:
            continue
        classes.append(model)
        for _field, _how, sub in _plan(model)[0]:
            leads[sub] = leads.get(sub, 0) + 1
            todo.append(sub)

    def leaf(model: type) -> bool:
        return not _plan(model)[0]

    def make(model: type, source: str, indent: str, complete: bool = False) -> list[str]:
        """Lines that turn the dict named ``source`` into a model of ``model`` named ``m``
        (``complete``: its defaults are added already)."""
        n = model.__name__
        check = [] if complete else [f"{indent}if len({source}) != {len(_plan(model)[1])}:",
                                     f"{indent}    _defaults({source}, _fields_{n})"]
        return [*check, f"{indent}m = _new(_cls_{n})", f"{indent}_dict(m, {source})", f"{indent}_fields_set(m, _set_{n})",
                f"{indent}_extra(m, None)", f"{indent}_private(m, None)"]

    lines: list[str] = []
    for model in classes:
        n = model.__name__
        steps, fields_set = _plan(model)
        env[f"_cls_{n}"], env[f"_set_{n}"], env[f"_fields_{n}"] = model, fields_set, model.model_fields
        if leaf(model) and model is not cls:
            continue
        memo = leads.get(model, 0) > 1
        body = [f"def _build_{n}(data, memo):"]
        if memo:
            body += ["    got = memo.get(id(data))", f"    if got is not None and type(got) is _cls_{n}:", "        return got"]
        body += [f"    if len(data) != {len(fields_set)}:", f"        _defaults(data, _fields_{n})"]
        for field, how, sub in steps:
            if how == _LIST and leaf(sub):
                body += [f"    out = []", f"    for v in data[{field!r}]:", *make(sub, "v", "        "),
                         "        out.append(m)", f"    data[{field!r}] = out"]
            elif how == _LIST:
                body.append(f"    data[{field!r}] = [_build_{sub.__name__}(v, memo) for v in data[{field!r}]]")
            elif leaf(sub):
                body += [f"    v = data[{field!r}]", "    if v is not None:", *make(sub, "v", "        "),
                         f"        data[{field!r}] = m"]
            else:
                body += [f"    v = data[{field!r}]", "    if v is not None:",
                         f"        data[{field!r}] = _build_{sub.__name__}(v, memo)"]
        body += make(model, "data", "    ", complete=True)
        if memo:
            body.append("    memo[id(data)] = m")
        body.append("    return m")
        lines.extend(body)
    env["_defaults"] = _defaults
    exec("\n".join(lines), env)  # noqa: S102 - code written from the models' own fields
    return env[f"_build_{cls.__name__}"]


def _defaults(data: dict, fields: dict) -> None:
    """Add to ``data`` every field it lacks, with its default, after the others (as
    :func:`_builder`'s ``shared`` functions do)."""
    for key, info in fields.items():
        if key not in data:
            data[key] = info.get_default(call_default_factory=True)
