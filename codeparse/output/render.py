"""Renderers: models in, text out.  Nothing here decides where output goes.

Each renderer returns a string or writes to the stream it is given; only ``cli.py``
chooses the stream.  ``rich`` is imported inside the table renderers alone, so that
``--format json`` / ``jsonl`` start without it.

Diagnostics render as compilers print them (one position convention, see
:class:`codeparse.contract.text.Span`)::

    path:LINE:COL: CP101 text not covered by grammar torchscript-v2: x = = 1
      x = = 1
      ^^^^^^^

A span over several lines is underlined to the end of its first line.
"""

from __future__ import annotations

import json
import unicodedata
from typing import TYPE_CHECKING, Any, Iterable, Optional, TextIO

from .escaping import for_text

if TYPE_CHECKING:  # only for annotations; the models import pydantic
    from ..grammar.engine import GrammarInfo
    from ..contract.text import Call, CodeFile, Diagnostic, Function, IfStatement, Signature

__all__ = [
    "FORMATS",
    "JsonArrayWriter",
    "render_jsonl_line",
    "render_diagnostic",
    "render_diagnostics",
    "render_signature",
    "short_call",
    "short_calls",
    "render_code_table",
    "render_grammars_json",
    "render_grammars_table",
    "render_schema",
]

FORMATS = ("table", "json", "jsonl")

# How many distinct calls a table cell lists before it says "+N more".
CALLS_CAP = 6
# Below this many columns the ifs are listed as blocks of rows, not as one wide table.
WIDE_TABLE = 120
# Rich colour per condition kind (ConditionKind order): the riskier, the louder.
KIND_STYLE = {
    "tensor_value": "bold red",
    "tensor_shape": "yellow",
    "argument": "cyan",
    "attribute": "blue",
    "runtime": "magenta",
    "unknown": "dim",
    "constant": "green",
}


# --------------------------------------------------------------------------- JSON


def _json(code_file: Any, indent: Optional[int] = None) -> str:
    """A ``CodeFile`` as JSON: its model's, or, for the plain dict of ``parse_text(...,
    as_dict=True)``, the same bytes written by ``json`` (pydantic's separators, UTF-8 kept)."""
    if isinstance(code_file, dict):
        return json.dumps(code_file, ensure_ascii=False, indent=indent,
                          separators=(",", ": ") if indent is not None else (",", ":"))
    return code_file.model_dump_json(indent=indent)


def render_jsonl_line(code_file: "CodeFile | dict") -> str:
    """One ``CodeFile`` (model or plain dict) as one line of JSON (no trailing newline)."""
    return _json(code_file)


class JsonArrayWriter:
    """Writes a JSON array (indent 2) of ``CodeFile`` objects one at a time.

    Streaming keeps memory flat on large inputs and always yields a well-formed
    array: call :meth:`close` (also on errors) to write the closing bracket.
    """

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.count = 0
        self.closed = False

    def write(self, code_file: "CodeFile | dict") -> None:
        body = _json(code_file, indent=2)
        nested = "\n".join("  " + line for line in body.split("\n"))
        self.stream.write(("[\n" if self.count == 0 else ",\n") + nested)
        self.count += 1

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.stream.write("[]\n" if self.count == 0 else "\n]\n")


def render_schema(model: Any) -> str:
    """The JSON Schema of a pydantic model class, indented."""
    return json.dumps(model.model_json_schema(), indent=2, ensure_ascii=False)


# -------------------------------------------------------------------- diagnostics


def _display_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _pad(prefix: str) -> str:
    """Blank space as wide as ``prefix`` on screen; tabs stay tabs so carets align."""
    return "".join("\t" if ch == "\t" else " " * _display_width(ch) for ch in prefix)


def _line_of(text: str, line: int) -> Optional[str]:
    """The 1-based ``line`` of ``text`` without its line break, or None past the end."""
    if line < 1:
        return None
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start)
        if start == -1:
            return None
        start += 1
    end = text.find("\n", start)
    out = text[start:] if end == -1 else text[start:end]
    return out[:-1] if out.endswith("\r") else out


#: Characters of a source line shown under a diagnostic; a longer line is cut around the
#: span, with ``…`` where text was left out.
CARET_WIDTH = 160


def render_diagnostic(diag: "Diagnostic", text: Optional[str] = None, path: Optional[str] = None) -> str:
    """``path:line:col: CODE message``, then the source line and a caret line.

    ``text`` is the source the spans index into; without it (or without a span) only
    the first line is rendered.  No trailing newline.  Everything from the input (the
    path, the message, the source line) passes :func:`codeparse.output.escaping.for_text`, so
    a newline or an escape sequence in it is shown as ``\\n``/``\\x1b`` and cannot forge
    an output line; a source line longer than :data:`CARET_WIDTH` is cut around the span.
    """
    where = for_text(path if path is not None else diag.path)
    message = for_text(diag.message)
    span = diag.span
    if span is None:
        return f"{where}: {diag.code} {message}"
    head = f"{where}:{span.line}:{span.column}: {diag.code} {message}"
    source_line = _line_of(text, span.line) if text is not None else None
    if source_line is None:
        return head
    col = max(span.column - 1, 0)
    if col > len(source_line):
        col = len(source_line)
    end = span.end_column - 1 if span.end_line == span.line else len(source_line)
    end = min(max(end, col + 1), max(len(source_line), col + 1))
    before, after = "", ""
    if len(source_line) > CARET_WIDTH:  # a window around the span's start
        left = max(0, min(col - CARET_WIDTH // 4, len(source_line) - CARET_WIDTH))
        right = left + CARET_WIDTH
        before = "…" if left > 0 else ""
        after = "…" if right < len(source_line) else ""
        source_line = source_line[left:right]
        col, end = col - left, max(min(end, right) - left, col - left + 1)
    shown_before = before + _escaped(source_line[:col])
    underlined = _escaped(source_line[col:end])
    width = sum(_display_width(ch) for ch in underlined) if underlined else 1
    carets = "^" * max(width, 1)
    shown = shown_before + underlined + _escaped(source_line[end:]) + after
    return f"{head}\n  {shown}\n  {_pad(shown_before)}{carets}"


def _escaped(text: str) -> str:
    """:func:`for_text` that keeps tabs, so that the caret line (which copies them) aligns."""
    return "\t".join(for_text(part) for part in text.split("\t"))


def render_diagnostics(
    diagnostics: Iterable["Diagnostic"], text: Optional[str] = None, path: Optional[str] = None
) -> str:
    """Every diagnostic of a file, each ending in a newline ("" when there are none)."""
    return "".join(render_diagnostic(d, text, path) + "\n" for d in diagnostics)


# -------------------------------------------------------------------------- table


def render_signature(name: str, signature: "Signature") -> str:
    """``forward(self, x: Tensor) -> Tensor``, parameters as TorchScript prints them."""
    params = []
    for p in signature.params:
        item = p.name if p.annotation is None else f"{p.name}: {p.annotation}"
        if p.default is not None:
            item += f"={p.default}"
        params.append(item)
    out = f"{name}({', '.join(params)})"
    if signature.returns is not None:
        out += f" -> {signature.returns}"
    return out


def short_call(call: "Call") -> str:
    """A call as a reader names it: ``self.custom_layer1.forward``, ``aten::conv2d``."""
    if call.kind in ("submodule", "self_method", "method"):
        if call.receiver and call.method:
            return f"{call.receiver}.{call.method}"
        if call.receiver and call.kind == "self_method":
            return f"{call.receiver}.{call.callee}"
    return call.target or call.callee


def short_calls(calls: Iterable["Call"], cap: int = CALLS_CAP) -> list[str]:
    """Distinct short call names in first-seen order, at most ``cap`` plus a "+N more"."""
    seen: dict[str, None] = {}
    for call in calls:
        seen.setdefault(short_call(call), None)
    names = list(seen)
    if len(names) > cap:
        return names[:cap] + [f"… +{len(names) - cap} more"]
    return names


def _sources_list(if_stmt: "IfStatement") -> list[str]:
    return [f"{s.ref} ({s.kind}, {s.type})" for s in if_stmt.condition.sources]


def _lines(items: Iterable[str], empty: str = ""):
    """One cell of input-derived items, one per line, each escaped on its own."""
    from rich.text import Text

    text = "\n".join(for_text(item) for item in items)
    return Text(text or empty)


def _text(value: object, style: str = ""):
    """A rich ``Text`` of input-derived ``value``: never parsed as markup, controls escaped."""
    from rich.text import Text

    return Text(for_text(value), style=style)


# The width of tables written to a stream that is no terminal (a CI log, a pipe): no line
# wraps, so a finding stays one line that grep finds whole.
LOG_WIDTH = 100_000


class _LogLines:
    """A stream that is no terminal, as rich writes to it: each line without the spaces
    that pad its table cells to the column width."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        *lines, self._pending = (self._pending + text).split("\n")
        for line in lines:
            self._stream.write(line.rstrip(" ") + "\n")
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(self._pending.rstrip(" "))
            self._pending = ""
        self._stream.flush()

    def isatty(self) -> bool:
        return False


def console(stream: TextIO, color: Optional[bool], width: Optional[int]):
    """The rich console of a table: on a terminal, its width; on anything else, no
    wrapping (unless ``width`` is given) and no trailing padding, so that a log stays
    greppable (a token is never split over two lines)."""
    from rich.console import Console

    tty = getattr(stream, "isatty", lambda: False)()
    return Console(
        file=stream if tty else _LogLines(stream),
        width=width if (width or tty) else LOG_WIDTH,
        force_terminal=color,
        no_color=(color is False),
        highlight=False,
        soft_wrap=False,
    )



def _console(stream: TextIO, color: Optional[bool], width: Optional[int]):
    from rich.console import Console

    return Console(
        file=stream,
        width=width,
        force_terminal=color,
        no_color=(color is False),
        highlight=False,
        soft_wrap=False,
    )


def _ifs_table(function: "Function"):
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box.SIMPLE_HEAD, show_lines=True, pad_edge=False, expand=False)
    table.add_column("line", justify="right", no_wrap=True)
    table.add_column("depth", justify="right", no_wrap=True)
    table.add_column("condition", overflow="fold")
    table.add_column("resolved", overflow="fold")
    table.add_column("kind", min_width=9, overflow="fold")
    table.add_column("sources", overflow="fold")
    table.add_column("then calls", overflow="fold")
    table.add_column("else calls", overflow="fold")
    for if_stmt in function.ifs:
        cond = if_stmt.condition
        kind = cond.kind + (" (None check)" if cond.none_check else "")
        table.add_row(
            str(if_stmt.span.line),
            str(if_stmt.depth),
            _text(cond.text),
            _text(cond.resolved),
            Text(kind, style=KIND_STYLE.get(cond.kind, "")),
            _lines(_sources_list(if_stmt)),
            _lines(short_calls(if_stmt.then_calls)),
            _lines(short_calls(if_stmt.else_calls)) if if_stmt.has_else else Text("-"),
        )
    return table


def _ifs_cards(function: "Function"):
    """The narrow layout: one block of ``field value`` rows per ``if``."""
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    for index, if_stmt in enumerate(function.ifs):
        cond = if_stmt.condition
        if index:
            grid.add_row("", "")
        head = Text(f"line {if_stmt.span.line}, depth {if_stmt.depth}: ")
        head.append(cond.kind, style=KIND_STYLE.get(cond.kind, ""))
        if cond.none_check:
            head.append(" (None check)")
        grid.add_row("if", head)
        grid.add_row("condition", _text(cond.text))
        if cond.resolved != cond.text:
            grid.add_row("resolved", _text(cond.resolved))
        grid.add_row("sources", _lines(_sources_list(if_stmt), "-"))
        grid.add_row("then calls", _lines(short_calls(if_stmt.then_calls), "-"))
        if if_stmt.has_else:
            grid.add_row("else calls", _lines(short_calls(if_stmt.else_calls), "-"))
    return grid


def _write_function(console: Any, function: "Function", indent: str) -> None:
    from rich.padding import Padding
    from rich.text import Text

    title = Text(indent)
    title.append(for_text(render_signature(function.qualified_name, function.signature)), style="bold")
    title.append(f"  line {function.span.line}", style="dim")
    console.print(title, soft_wrap=True)
    if not function.ifs:
        console.print(Text(f"{indent}  no if statements", style="dim"))
        return
    if console.width >= WIDE_TABLE:
        console.print(Padding(_ifs_table(function), (0, 0, 0, len(indent)), expand=False))
    else:
        console.print(Padding(_ifs_cards(function), (0, 0, 1, len(indent) + 2), expand=False))


def _plural(n: int, word: str) -> str:
    if n == 1:
        return f"1 {word}"
    return f"{n} {word}" + ("es" if word.endswith("s") else "s")


def render_code_table(
    code_file: "CodeFile",
    stream: TextIO,
    *,
    color: Optional[bool] = None,
    width: Optional[int] = None,
) -> None:
    """Write one file's functions and their ``if`` statements to ``stream`` for people.

    ``color=None`` lets rich detect a terminal; ``width=None`` uses the terminal width
    (or ``$COLUMNS``, or rich's default when not a terminal).
    """
    from rich.text import Text

    console = _console(stream, color, width)
    n_funcs = len(code_file.functions) + sum(len(c.methods) for c in code_file.classes)
    n_ifs = sum(len(f.ifs) for f in code_file.functions) + sum(
        len(m.ifs) for c in code_file.classes for m in c.methods
    )
    header = Text()
    header.append(for_text(code_file.path), style="bold underline")
    header.append(
        f"  grammar {code_file.grammar}; {_plural(len(code_file.classes), 'class')}"
        f", {_plural(n_funcs, 'function')}, {_plural(n_ifs, 'if')}"
        f", {_plural(len(code_file.diagnostics), 'diagnostic')}",
        style="dim",
    )
    console.print(header, soft_wrap=True)
    for cls in code_file.classes:
        console.print(_text(f"class {cls.qualified_name} ({cls.kind})", style="bold"), soft_wrap=True)
        for method in cls.methods:
            _write_function(console, method, "  ")
    for function in code_file.functions:
        _write_function(console, function, "")
    console.print()


# ------------------------------------------------------------------------ grammars


def _grammar_dict(info: "GrammarInfo") -> dict:
    return {
        "id": info.id,
        "title": info.title,
        "torch_versions": info.torch_versions,
        "version_records": list(info.version_records),
        "detect": info.detect,
        "path": info.path,
        "statements": info.statements,
    }


def render_grammars_json(infos: Iterable["GrammarInfo"]) -> str:
    return json.dumps([_grammar_dict(i) for i in infos], indent=2, ensure_ascii=False)


def render_grammars_table(
    infos: Iterable["GrammarInfo"],
    stream: TextIO,
    *,
    color: Optional[bool] = None,
    width: Optional[int] = None,
) -> None:
    """Each grammar as a titled block of ``field value`` rows (readable at any width)."""
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    console = _console(stream, color, width)
    for info in infos:
        title = Text()
        title.append(for_text(info.id), style="bold")
        title.append(f"  {for_text(info.title)}")
        console.print(title, soft_wrap=True)
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(overflow="fold")
        grid.add_row("torch versions", _text(info.torch_versions or "-"))
        grid.add_row("version records", _text(", ".join(str(v) for v in info.version_records) or "-"))
        grid.add_row("detect", _text(info.detect or "-"))
        grid.add_row("statements", Text(str(info.statements)))
        grid.add_row("path", _text(info.path))
        console.print(Padding(grid, (0, 0, 1, 2), expand=False))
