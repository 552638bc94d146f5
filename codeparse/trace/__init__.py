"""Trace against script: what a traced module lost that its scripted code keeps.

Takes two texts of one model (scripted and traced), or a live module and inputs (with
torch).  Gives a :class:`~codeparse.contract.diff.DiffReport` (``compare``) from each
side's functions (``sides``), the events of their bodies (``events``), an alignment of the
two (``align``) and the evidence of each difference (``evidence``); captures both sides
from a live module (``capture``) and checks a module for ``torch.export`` (``exportcheck``).
"""
