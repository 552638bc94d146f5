"""Inference: what the names of a parsed function stand for, and what its conditions depend on.

Takes the statements and expressions of a function and the semantic tables
(``grammars/semantics.toml``, ``semantics``).  Gives definitions and scopes (``facts``), the
types of values (``types``), operators and their schemas (``operators``), whether an export
shape depends on data (``datadep``), and each condition's kind with its sources
(``conditions``).  Never confident when the text cannot decide: an unknown is an
abstention with a reason.
"""
