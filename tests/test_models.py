"""The public models: documented, and round-tripping through JSON."""

from __future__ import annotations



def test_every_public_model_field_is_documented():
    """The pydantic models are the public contract: every class and field says what it is."""
    from pydantic import BaseModel

    from codeparse.contract import public_models

    undocumented = []
    for name, cls in public_models().items():
        if isinstance(cls, type) and issubclass(cls, BaseModel):
            if not (cls.__doc__ or "").strip():
                undocumented.append(name)
            undocumented += [f"{name}.{f}" for f, info in cls.model_fields.items() if not info.description]
    assert undocumented == []


def test_schema_command_covers_every_model():
    """`codeparse schema --model NAME` prints a JSON Schema for every public model."""
    import json
    import subprocess
    import sys

    from pydantic import BaseModel

    from codeparse.contract import public_models

    names = [n for n, v in public_models().items() if isinstance(v, type) and issubclass(v, BaseModel)]
    for name in ("CodeFile", "Report", "DiffReport", "Archive"):
        assert name in names
        out = subprocess.run([sys.executable, "-m", "codeparse", "schema", "--model", name],
                             capture_output=True, text=True, check=True).stdout
        schema = json.loads(out)
        assert schema["title"] == name and schema["properties"]
