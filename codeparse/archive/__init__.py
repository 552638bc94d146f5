"""Saved TorchScript archives: the layout of the zip, and what its entries say.

Takes a path or bytes of a ``.pt``/``.ptl`` archive (or a legacy PyTorch 1.0-1.2 one).
Gives an opened archive (``torchscript``: its code files parsed, version, root class,
debug info, the findings of its entries), the legacy layout's model.json and method files
(``legacy``) and the source positions of ``.debug_pkl`` files (``debuginfo``).  Reads
through :mod:`codeparse.files.zipread`; never imports torch or unpickles.
"""
