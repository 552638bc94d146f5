"""The table of diagnostic codes: one row per code, stable forever.

``CP1xx`` reading text, ``CP2xx`` inference, ``CP3xx`` input, archive and grammar,
``CP4xx`` what ``torch.export`` will meet (``check --target export``).
Each row gives the code, a snake_case name, a message template (``str.format`` with
named arguments, which stay machine-readable in ``Diagnostic.args``) and a severity.
A test checks that every code here is produced by some input and that nothing
outside this table is ever produced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional


__all__ = ["Code", "CODES", "FILE_KIND_CODES", "diagnostic"]


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
        Code("CP113", "condition_too_deep", "what this condition depends on passes through a cycle of more than {limit} steps; its kind is unknown", "warning"),
        Code("CP301", "unreadable_input", "cannot read input: {reason}", "error"),
        Code("CP302", "binary_input", "input is binary, not code text ({reason})", "error"),
        Code("CP303", "grammar_mismatch", "text lacks the features of grammar {grammar} ({reason})", "warning"),
        # -- condition findings of `check`: CP201-CP219 --
        Code("CP201", "tensor_value_branch", "branch on tensor values: `{condition}` depends on {sources}; a trace freezes the branch it took", "warning"),
        Code("CP202", "tensor_shape_branch", "branch on tensor shape or metadata: `{condition}` depends on {sources}; a trace bakes the example's shape in", "info"),
        Code("CP203", "training_branch", "branch on self.training: `{condition}`; a trace keeps only the mode it was traced in", "info"),
        Code("CP204", "attribute_branch", "branch on module state: `{condition}` depends on {sources}", "info"),
        Code("CP205", "argument_branch", "branch on an argument: `{condition}` depends on {sources}", "info"),
        Code("CP206", "runtime_branch", "branch on runtime state: `{condition}` depends on {sources}", "info"),
        Code("CP207", "unknown_branch", "cannot tell what `{condition}` depends on", "info"),
        Code("CP208", "constant_branch", "branch on a constant: `{condition}`", "info"),
        # -- archive reading, limits, resolution: CP304-CP349 --
        Code("CP304", "not_a_zip", "not a TorchScript archive: {reason}", "error"),
        Code("CP305", "damaged_zip", "the zip archive is damaged: {reason}", "error"),
        Code("CP306", "unsupported_format", "unsupported format: {reason}", "error"),
        Code("CP307", "no_code_folder", "the zip holds no TorchScript code folder (`<root>/code/` or `.data/ts_code/`)", "error"),
        Code("CP308", "too_many_entries", "the archive has {count} entries; the limit is {limit} (--max-entries)", "error"),
        Code("CP309", "entry_too_large", "entry {entry} inflates to {size} bytes; the limit is {limit} (--max-entry-bytes); not read", "error"),
        Code("CP310", "total_too_large", "reading {entry} would inflate {size} bytes in all; the limit is {limit} (--max-total-bytes); not read", "error"),
        Code("CP311", "compression_ratio", "entry {entry} inflates {ratio} times its stored size; the limit is {limit} (--max-ratio); not read", "error"),
        Code("CP312", "unsafe_entry_name", "entry name {entry} {reason}; not read", "error"),
        Code("CP313", "unreadable_entry", "entry {entry} cannot be read: {reason}", "error"),
        Code("CP314", "forbidden_global", "debug info {entry} names {global_name}, which codeparse never loads; its source mapping is skipped", "warning"),
        Code("CP315", "bad_debug_info", "debug info {entry} is not understood ({reason}); its source mapping is skipped", "warning"),
        Code("CP316", "unresolved_class", "type {name} is not defined in the archive", "error"),
        Code("CP317", "unresolved_function", "function {name} is not defined in the archive", "error"),
        Code("CP318", "unresolved_method", "{receiver} is a {type}, which has no method {method}", "error"),
        Code("CP319", "no_version_record", "the archive has no version record (`version` or `.data/version`)", "warning"),
        Code("CP320", "duplicate_entry", "entry {entry} is stored {count} times; loaders may read different ones", "error"),
        Code("CP321", "undeclared_attribute", "{ref} is read, but {type} declares no attribute {name}", "error"),
        # -- model files recognised by their bytes, pickle safety: CP322-CP339 --
        Code("CP322", "lfs_pointer", "a Git LFS pointer, not the model: object {oid} ({size} bytes) is not fetched, so nothing was checked", "warning"),
        Code("CP323", "torch_checkpoint", "torch.save checkpoint ({content}): {pickles} pickle(s) scanned, {globals} global(s) named; no TorchScript code to check", "info"),
        Code("CP324", "plain_pickle", "plain pickle: {pickles} pickle(s) scanned, {globals} global(s) named", "info"),
        Code("CP325", "torch_export_archive", "torch.export archive ({content}): {pickles} pickle(s) scanned, {globals} global(s) named; no TorchScript code to check", "info"),
        Code("CP330", "pickle_dangerous_global", "pickle {entry} names {global_name} (byte {offset}): loading the file calls it, and it can run commands or code", "error"),
        Code("CP331", "pickle_unknown_global", "pickle {entry} names {global_name} (byte {offset}) without calling it: loading the file imports it, and torch.load(weights_only=True) refuses it", "error"),
        Code("CP332", "pickle_unreadable", "pickle {entry} cannot be walked ({reason}); what loading it calls is not known", "error"),
        Code("CP333", "pickle_unknown_globals_more", "pickle {entry} names {count} more global(s) that are not known safe, from byte {offset} on; only the first {listed} of each kind are listed one by one", "error"),
        # -- the gate against files built to pass it: CP334-CP339, CP345-CP347 --
        Code("CP334", "pickle_called_global", "pickle {entry} calls {global_name} (byte {offset}): loading the file runs it, and it is neither in torch's weights_only allowlist nor a known data type", "error"),
        Code("CP335", "pickle_data_type", "pickle {entry} rebuilds {global_name} (byte {offset}), a known data type: loading runs its code; weights_only=True refuses it unless allowed (torch.serialization.add_safe_globals)", "warning"),
        Code("CP336", "pickle_instantiated_class", "pickle {entry} instantiates {global_name} (byte {offset}): loading runs the class's code; weights_only=True refuses it unless allowed (torch.serialization.add_safe_globals)", "warning"),
        Code("CP337", "pickle_unreadable_name", "pickle {entry} names a global that cannot be read ({reason}); what loading it calls is not known", "error"),
        Code("CP338", "pickle_walk_cap", "pickle {entry} is not walked to its end ({reason}); what loading it calls is not known", "error"),
        # -- budgets and hostile inputs: CP340-CP349 --
        Code("CP340", "input_budget_exceeded", "reading this input exceeded its budget: {reason}; its partial results are dropped", "error"),
        Code("CP341", "overlapping_entries", "entry {entry} overlaps entry {other} in the zip; neither is read", "error"),
        Code("CP342", "link_outside_tree", "{link} is a symbolic link to {target}, outside the walked tree; not read", "warning"),
        Code("CP343", "pickle_limit", "{entry} exceeds a pickle limit: {reason}; not read", "error"),
        Code("CP345", "ambiguous_zip", "the zip reads differently in different readers: {reason}; it is not read", "error"),
        Code("CP346", "entry_name_collision", "entries {entry} and {other} differ only in case; torch's reader matches names without regard to case", "error"),
        Code("CP347", "link_outside_tree_model", "{link} is a symbolic link to {target}, a model file outside the walked tree; a loader follows the link", "error"),
        Code("CP344", "file_too_large", "the file is {size} bytes; the limit is {limit} (--max-entry-bytes); not read", "error"),
        # -- operators and diff: CP220-CP239 --
        Code("CP220", "unknown_operator", "operator {operator} (called as {callee}, {count} times) is not known to torch {torch}", "warning"),
        Code("CP221", "script_failed", "torch.jit.script failed: {message}", "error"),
        Code("CP222", "tracer_warning", "TracerWarning at {file}:{line}: {message}", "warning"),
        Code("CP223", "trace_failed", "torch.jit.trace failed: {message}", "error"),
        # -- when the diff abstains: CP224-CP229 --
        Code("CP224", "diff_inputs_mismatch", "only {matched} of {events} trace calls ({percent}%) match the script: "
             "the script and the trace are not of the same model (or the trace is of a wrapper)", "error"),
        # -- "Will it export?": CP401-CP419, under `check --target export` --
        Code("CP401", "export_data_dependent_branch", "{what} on tensor values: `{condition}` depends on {sources}; torch.export cannot trace it (GuardOnDataDependentSymNode): {advice}", "error"),
        Code("CP402", "export_data_dependent_shape_branch", "{what} on a data-dependent size: `{condition}` reads the size of a tensor made from tensor values ({producers}); torch.export cannot decide it: assert what the code needs with torch._check(...) / torch._check_is_size(...), or move the check out of the exported code", "error"),
        Code("CP403", "export_shape_specialization", "{what} on tensor shape: `{condition}` depends on {sources}; torch.export specializes to the example's shape; with a named Dim on that dimension export fails unless the Dim's range decides it: give dynamic_shapes a Dim with min/max on the side the example takes (Dim.AUTO refines silently)", "info"),
        Code("CP404", "export_specialization", "{what} on {kind}: `{condition}` depends on {sources}; torch.export keeps the branch the example takes", "info"),
        Code("CP405", "export_tensor_to_scalar", "`{conversion}` turns a tensor's value into a Python number outside a condition; non-strict torch.export rejects it even without a branch: keep the value a tensor, or bound it with torch._check(...) / torch._check_is_size(...)", "error"),
        Code("CP406", "export_unknown_branch", "cannot tell what `{condition}` depends on; torch.export may fail or specialize at this {what}", "warning"),
        Code("CP407", "export_unknown_conversion", "cannot tell whether `{conversion}` stops torch.export: {reason}", "warning"),
        # -- legacy formats: CP350-CP369 --
        Code("CP350", "unresolved_constant", "{name} is not in the model.json tensor table ({count} tensors)", "error"),
        Code("CP351", "mobile_bytecode", "mobile bytecode version {version} in {entry}: {methods} methods, {count} operators: {operators}", "info"),
        Code("CP352", "bad_mobile_bytecode", "{entry} is not understood ({reason})", "warning"),
    )
}

# What a clean file is (a checkpoint, a plain pickle, a .pt2), reported as info: kept in JSON,
# JSONL, SARIF and --statistics, never printed by the line formats (table, concise, github).
FILE_KIND_CODES = frozenset({"CP323", "CP324", "CP325"})


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


