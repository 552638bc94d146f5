"""The rules: which findings a parsed program gives, and what each code means.

Takes parsed code and the program resolved from it.  Gives the ``torch.export`` readiness
findings and verdict (``export``: CP4xx), each with the conditions that guard it
(``pathguards``), and the explanation of any code (``explain``: ``codeparse rule``, from
``grammars/rules.toml``).  The condition findings (CP201-CP208) come with the program
(:mod:`codeparse.text.program`).
"""
