"""The HTML report: one self-contained page per archive, for a person to read.

Takes paths (archives, code text, other model files, directories) and, optionally, a
script and its trace.  Gives the page (``page``: the Jinja2 templates in ``templates/``,
autoescaped, rendered with the data), from the data gathered once (``data``: each input
told apart and read as ``check`` tells it apart and reads it, through
:mod:`codeparse.gate.run`: the archive read, the program resolved, the check's findings), the
script and trace side by side (``pairs``) and the code highlighted with Pygments
(``highlight``).  Imported only by ``codeparse report``: jinja2 and pygments stay out of
every other command.
"""

__all__ = ["build_report", "write_report"]


def __getattr__(name: str):
    if name in __all__:
        from . import page

        return getattr(page, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
