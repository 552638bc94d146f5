"""The table of diagnostic codes: one row per code, stable forever.

``CP1xx`` reading text, ``CP2xx`` inference, ``CP3xx`` input, archive and grammar.
Each row gives the code, a snake_case name, a message template (``str.format`` with
named arguments, which stay machine-readable in ``Diagnostic.args``) and a severity.
A test checks that every code here is produced by some input and that nothing
outside this table is ever produced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .models import Diagnostic

__all__ = ["Code", "CODES", "diagnostic"]


@dataclass(frozen=True)
class Code:
    code: str
    name: str
    template: str
    severity: str


CODES: dict[str, Code] = {
    c.code: c
    for c in (
        Code("CP101", "unparsed_statement", "text not covered by grammar {grammar}: {excerpt}", "error"),
        Code("CP102", "unexpected_indent", "unexpected indent: expected column {expected}", "error"),
        Code("CP103", "expected_block", "expected an indented block after '{statement}'", "error"),
        Code("CP104", "nesting_too_deep", "blocks nested deeper than {limit} levels are not read", "error"),
        Code("CP105", "line_too_long", "line of {length} characters exceeds the limit of {limit}", "error"),
        Code("CP106", "expression_too_deep", "expression nested deeper than {limit} levels is not read", "warning"),
        Code("CP107", "match_timeout", "grammar {grammar} gave up on this line after {seconds} s", "error"),
        Code("CP108", "dangling_else", "'{statement}' without a matching 'if' before it", "error"),
        Code("CP109", "empty_input", "the input holds no code", "warning"),
        Code("CP110", "invalid_utf8", "bytes that are not UTF-8 at byte {byte}; replaced", "error"),
        Code("CP111", "inconsistent_dedent", "unindent to column {column} does not match any outer block", "error"),
        Code("CP112", "unbalanced_brackets", "brackets do not pair up: {excerpt}", "error"),
        Code("CP301", "unreadable_input", "cannot read input: {reason}", "error"),
        Code("CP302", "binary_input", "input is binary, not code text ({reason})", "error"),
        Code("CP303", "grammar_mismatch", "text lacks the features of grammar {grammar} ({reason})", "warning"),
        # -- condition findings of `check` (issue 3): CP201-CP219 --
        # -- archive reading, limits, resolution (issue 3): CP304-CP349 --
        # -- operators and diff (issue 4): CP220-CP239 --
        # -- legacy formats (issue 5): CP350-CP369 --
    )
}


def diagnostic(code: str, path: str, span: Optional[dict] = None, **args: object) -> dict:
    """A :class:`Diagnostic` as a plain dict, rendered from the table."""
    row = CODES[code]
    text_args = {k: str(v) for k, v in args.items()}
    return {
        "code": row.code,
        "name": row.name,
        "severity": row.severity,
        "message": row.template.format(**text_args),
        "path": path,
        "span": span,
        "args": text_args,
    }


def diagnostic_model(code: str, path: str, span: Optional[dict] = None, **args: object) -> Diagnostic:
    return Diagnostic.model_validate(diagnostic(code, path, span, **args))
