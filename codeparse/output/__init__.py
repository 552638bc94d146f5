"""Rendering results for people and machines: tables, JSON, SARIF, and escaping.

Takes models or their plain data.  Gives the text and tables of a parse (``render``),
the formats of a check report (``reporters``: concise, GitHub annotations; ``sarif``), and
the one escaping every string from an input passes before it reaches a terminal
(``escaping``).  Nothing here prints: the CLI writes what these return.
"""
