"""The grammars as data, and the engine that loads, checks and compiles them.

Takes ``grammars/*.toml`` (one complete file per TorchScript dialect, plus the semantic,
rule and highlighting tables).  Gives a loaded :class:`~codeparse.grammar.engine.Grammar`
with every pattern compiled once (from the stored compiled patterns, ``compiled``, when
this interpreter can use them), and the folder the data files are in (``locations``).
"""
