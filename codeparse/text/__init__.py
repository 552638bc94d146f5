"""From code text to a parsed code file, and from an archive's files to one resolved program.

Takes bytes or text (one file, or every code file of an archive).  Gives the plain data of a
:class:`~codeparse.contract.text.CodeFile` (``reader``: decode, detect the grammar, parse,
extract, infer; ``extract``: signatures, ifs, calls and references from the statements),
the program of an archive resolved across files (``program``: classes, the module tree,
types, the call graph, the condition findings CP201-CP208) and a cache of parsed entries by content (``cache``).
"""
