"""Inference: what the names of a parsed function stand for, and what its conditions depend on.

Takes the statements and expressions of a function and the semantic tables
(``grammars/semantics.toml``, ``semantics``).  Gives definitions and scopes (``facts``),
def-use and paths from ``self`` (``names``), the types of names and expressions
(``valuetypes``, over the type algebra of ``types`` and the operator schemas of
``operators``), calls followed into the bodies they reach (``callees``), each condition's
kind with its sources (``conditions``, its visits memoized by ``memo`` as the pairs of
``sources``), the condition's resolved text (``resolved``), and whether an export shape
depends on data (``datadep``).  Never confident when the text cannot decide: an unknown
is an abstention with a reason.
"""
