"""The parser: TorchScript text into statements and expressions, with spans.

Takes text and a loaded grammar.  Gives the text's logical lines and offsets (``source``),
its statements as nested blocks (``statements``: class, def, if, for, while, with, plain
statements) and a reader of expressions within a statement (``expressions``).  Nothing here
knows what a condition means; that is inference's work.
"""
