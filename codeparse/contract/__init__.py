"""The public contract: what every stage hands on, and nothing that computes it.

Takes nothing from the other stages.  Gives the stable finding codes (``codes``), the frozen
pydantic models of a parse (``text``), a check (``check``) and a trace diff (``diff``), the
same results as plain dicts with read-only views over them (``records``, ``views``), the
builders from plain data to models (``build``), the policy defaults (``defaults``) and
:class:`~codeparse.contract.errors.InputError`.  Only ``text``, ``check``, ``diff`` and
``build`` import pydantic; the engine works on plain data and builds models at the edge.
"""

MODEL_MODULES = ("text", "check", "diff")


def public_models() -> dict:
    """Every public model class and type alias by name, module by module (text, check, diff),
    each in its module's order.  Imports pydantic."""
    import importlib

    found = {}
    for name in MODEL_MODULES:
        module = importlib.import_module(f".{name}", __name__)
        found.update((attr, getattr(module, attr)) for attr in module.__all__)
    return found
