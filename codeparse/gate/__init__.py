"""The CI gate: ``codeparse check`` over files and archives, under a policy and a budget.

Takes paths (or standard input) and a policy.  Gives one report per input and the report of
the run, as plain data or as models (``run``: the check core), from the policy
(``policy``: ``[tool.codeparse]`` and the command line), the inputs expanded (``inputs``),
each input checked under time and memory limits in worker processes (``budget``), known
findings subtracted (``baseline``), and the same check mapped over a Dask cluster
(``scale``).
"""
