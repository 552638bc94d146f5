"""From bytes or text to a parsed code file: the parse path, one way through.

Every code text takes the same four steps, each a function here, in this order:

1. **Read** (:func:`parse_file`, :func:`parse_bytes`): one ``open`` and ``fstat``; a regular
   file is read with one ``os.read`` of its size plus one byte (a file that grew is read on
   in chunks, up to the limit, CP344 past it); NUL bytes make it binary (an
   :class:`InputError`), undecodable UTF-8 is replaced and reported (CP110), a byte-order
   mark dropped.
2. **Prepare** (:func:`prepare_text`): the grammar is the newest whose ``[detect]``
   features the first 4 KiB have (or the one forced, CP303 when its features do not
   match); :func:`codeparse.parse.statements.parse_statements` reads the text into
   statements with nested blocks (one ``re`` pass over the physical lines, one master
   pattern per line, blocks by an indentation stack; CP101-CP112 for what it cannot read).
3. **Start** (:func:`start_file`): :class:`codeparse.text.extract.Extractor` walks every
   function's body once for its definitions, ifs and loops, and registers each function
   (:class:`codeparse.infer.callees.Callee`), so that a call into a function later in
   the text, or in another file of an archive, can be followed before any condition is read.
4. **Finish** (:func:`finish_file`): the extractor scans each body for calls and ``self``
   references (one ``finditer`` of the grammar's ``[scan].references_run``), answers each
   if's and loop's condition (:mod:`codeparse.infer`), and the file's plain data is
   assembled with its diagnostics in text order: the dict of ``parse_text(as_dict=True)``,
   or the :class:`CodeFile` built from it.

:func:`parse_text` runs steps 2-4 on one text with the cyclic garbage collector paused
(the caller's setting restored after).  An archive (:mod:`codeparse.text.program`) runs
step 2 on every file first (reading :func:`declarations` from it), then step 3 on every
file, then step 4, so that every class and function of the archive is known first.

Nothing here prints; inputs that cannot be read at all raise :class:`InputError` (one line:
path and reason); text that can be read is always parsed, its problems reported as
diagnostics in the returned :class:`CodeFile`.
"""

from __future__ import annotations

import functools
import gc
import os
import stat
import sys
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Iterable, Optional

from ..contract.codes import diagnostic
from ..contract.errors import InputError
from ..grammar.engine import DEFAULT_GRAMMAR, grammar_ids, load_grammar
from ..infer.semantics import shared_semantics
from ..parse.source import SourceText
from ..parse.statements import parse_statements
from .extract import Extractor

if TYPE_CHECKING:  # the models import pydantic; the plain-data path never does
    from ..contract.text import CodeFile

__all__ = ["parse_text", "parse_bytes", "decode_text", "parse_file", "iter_inputs", "detect_grammar", "is_torchscript_text",
           "module_name_for", "CODE_SUFFIXES"]


CODE_SUFFIXES = (".code", ".py")

DETECT_WINDOW = 4096  # characters of text examined to detect a grammar

#: Most bytes a code file (or standard input) may hold: ``Policy().max_entry_bytes``, the
#: limit an archive entry is held to (CP344 beyond it).
MAX_FILE_BYTES = 64 << 20


def _expect(value: Any, kinds: Any, what: str) -> None:
    """The library boundary: a wrong argument type is a TypeError that says what was expected."""
    if not isinstance(value, kinds):
        raise TypeError(f"{what}, not {type(value).__name__}")


def features_match(grammar_id: str, window: str) -> bool:
    g = load_grammar(grammar_id)
    for p in g.detect_absent:
        if p.search(window) is not None:
            return False
    for p in g.detect_present:
        if p.search(window) is None:
            return False
    return True


def detect_grammar(text: str) -> Optional[str]:
    """The id of the newest grammar whose text features the text has, or None."""
    window = text[:DETECT_WINDOW]
    for grammar_id in grammar_ids():
        if features_match(grammar_id, window):
            return grammar_id
    return None


def is_torchscript_text(data: bytes) -> bool:
    """Whether bytes read from a file not named ``.code`` are TorchScript text: UTF-8 whose
    first 4 KiB have the text features (``[detect] text_present``/``text_absent``) of a grammar.
    A config file or a Python script is not; the printer's output (an archive's ``code/``) is."""
    try:
        window = data[:DETECT_WINDOW].decode("utf-8")
    except UnicodeDecodeError as exc:  # a character cut at the window's end still counts
        if exc.start < DETECT_WINDOW - 4:
            return False
        window = data[:exc.start].decode("utf-8")
    for grammar_id in grammar_ids():
        g = load_grammar(grammar_id)
        if g.text_present and all(p.get().search(window) for p in g.text_present) and not any(
                p.get().search(window) for p in g.text_absent):
            return True
    return False


def module_name_for(path: Optional[str], root: str = "__torch__") -> Optional[str]:
    """``__torch__.torch.nn.modules.conv`` for ``.../code/__torch__/torch/nn/modules/conv.py``."""
    if not path or path == "-" or root not in path:
        return None
    # Of the parts PurePosixPath gives (empty and `.` parts dropped, without building one),
    # the first that is `root` with a part after it starts the module's name; else a last
    # part that is `root` (a file `__torch__.py`) names the root module.
    parts = path.replace("\\", "/").split("!", 1)[-1].split("/")
    if root in parts and root and root != ".":
        rest = [p for p in parts[parts.index(root) + 1:] if p and p != "."]
        if rest:
            rest[-1] = rest[-1].rsplit(".", 1)[0]
            return ".".join([root, *rest])
    for last in reversed(parts):
        if last and last != ".":
            return root if last.rsplit(".", 1)[0] == root else None
    return None


def _collector_paused(fn):
    """``fn`` with the cyclic garbage collector paused while it runs, the caller's setting
    restored after.  Reading one input builds many small containers that live as long as
    its result; the collector would rescan them over and over (on a traced function of 8×
    the length, 1.6× the cost per byte).  What one input leaves is collected when the
    collector next runs."""

    @functools.wraps(fn)
    def paused(*args: Any, **kwargs: Any) -> Any:
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return paused


def _code_file(data: dict, as_dict: bool) -> Any:
    """The parse result: the plain data itself, or the :class:`CodeFile` built from it."""
    if as_dict:
        return data
    from ..contract.build import code_file_from_plain

    return code_file_from_plain(data)


def parse_text(text: str, path: Optional[str] = None, grammar: Optional[str] = None,
               owner: Optional[str] = None, *, types=None, functions=None,
               as_dict: bool = False) -> "CodeFile":
    """Parse TorchScript code text into a :class:`CodeFile`.

    With ``as_dict=True`` the result is a plain dict equal to
    ``CodeFile.model_dump(mode="json")``, built without pydantic (the fast path: the
    ``parse`` command writes its JSON from it).

    ``path`` names the input in diagnostics (``-`` by default) and, for archive
    files under a ``__torch__`` folder, gives the qualified names.  ``grammar``
    forces a grammar id; by default it is detected from the text.  ``owner`` is the
    qualified name of the class whose method text this is (``__torch__.M``): its
    functions are then named ``__torch__.M.forward``.  ``types`` (used by the archive
    reader) maps a qualified class name to ``(kind, declared attributes)`` of the other
    classes of an archive, so that ``self.layer1.conv`` gets its role and type.
    ``functions`` (also the archive reader's) maps a qualified name to the
    :class:`~codeparse.infer.callees.Callee` of a function of another file, so that calls
    into it are followed.
    """
    _expect(text, str, "parse_text expects the code as str (use parse_bytes for bytes)")
    _expect(path, (str, type(None)), "parse_text expects path as str or None")
    _expect(grammar, (str, type(None)), "parse_text expects grammar as a grammar id (str) or None")
    return _parse(text, path, grammar, owner, (), types, functions, as_dict)


@_collector_paused
def _parse(text: str, path: Optional[str], grammar: Optional[str], owner: Optional[str],
           extra: Iterable[dict], types: Any, functions: Any, as_dict: bool = False) -> "CodeFile":
    """:func:`parse_text`, with diagnostics found before parsing (``extra``: bad UTF-8).

    Without a ``functions`` hook nothing outside this text can call into its functions,
    so once it is finished their inference is released (:meth:`Extractor.release`): freed
    when the result is returned, not later by the cyclic collector.  Its plain data is then
    this call's alone, and the models are built from it without copying
    (:func:`codeparse.contract.build.code_file_taking_plain`)."""
    # The steps unwrapped: the collector is paused here already.
    started = _start_file(_prepare_text(text, path, grammar, extra), owner, types, functions)
    if functions is not None or types is not None:
        return _finish_file(started, as_dict)
    data = _finish_file(started, True)
    started.extractor.release()
    if as_dict:
        return data
    # The data is this call's own (nothing else holds it once the inference is released):
    # its dicts become the models' own, not copies, built once the rest is freed.
    del started
    from ..contract.build import code_file_taking_plain

    return code_file_taking_plain(data)


class Prepared:
    """One text read by the statement classifier (grammar, lines, blocks), not yet extracted.

    :func:`prepare_text` makes it; :func:`declarations` reads the class declarations
    from it alone (the archive pre-pass); :func:`start_file` and :func:`finish_file`
    extract the rest.
    """

    __slots__ = ("source", "grammar", "statements", "diagnostics", "path")

    def __init__(self, source: SourceText, grammar: Any, statements: list, diagnostics: list[dict],
                 path: Optional[str]):
        self.source = source
        self.grammar = grammar
        self.statements = statements
        self.diagnostics = diagnostics
        self.path = path


@_collector_paused
def prepare_text(text: str, path: Optional[str] = None, grammar: Optional[str] = None,
                 _extra: Iterable[dict] = (), fallback: str = DEFAULT_GRAMMAR) -> Prepared:
    """Detect the grammar and classify every statement of ``text`` (see :func:`parse_text`);
    ``fallback`` is the grammar read where none is forced and none is detected (CP303)."""
    shown = path if path is not None else "-"
    detected = None if grammar else detect_grammar(text)
    g = load_grammar(grammar or detected or fallback)
    diagnostics = list(_extra)
    # A detected grammar's features matched already; a forced or fallback one may not.
    if detected is None and not features_match(g.id, text[:DETECT_WINDOW]):
        reason = g.info.detect or "its detection rules do not match"
        diagnostics.append(diagnostic("CP303", shown, None, grammar=g.id, reason=reason))
    source = SourceText(text, shown)
    if not text or text.isspace():
        diagnostics.append(diagnostic("CP109", shown, None))
    parsed = parse_statements(source, g)
    diagnostics.extend(parsed.diagnostics)
    return Prepared(source, g, parsed.body, diagnostics, path)


@_collector_paused
def declarations(prepared: Prepared) -> dict:
    """What a prepared text declares, from its statements alone (no extraction):
    ``classes`` (``qualified_name``, ``kind``, ``parameters``, ``buffers``, ``attributes``
    with ``name``, ``type``, ``final``) and ``functions`` (qualified names), as plain data."""
    extractor = Extractor(prepared.source, prepared.grammar, shared_semantics(), module_name_for(prepared.path))
    return extractor.declarations(prepared.statements)


class Started:
    """A prepared text with every function's definitions walked (:func:`start_file`):
    its functions are registered with the ``functions`` hook, so calls into them from
    other files can be followed before any condition is read."""

    __slots__ = ("prepared", "extractor", "state")

    def __init__(self, prepared: Prepared, extractor: Extractor, state: Any):
        self.prepared = prepared
        self.extractor = extractor
        self.state = state


@_collector_paused
def start_file(prepared: Prepared, owner: Optional[str] = None, types=None, functions=None) -> Started:
    """Walk the definitions of every function of a prepared text (the first half of extraction)."""
    extractor = Extractor(prepared.source, prepared.grammar, shared_semantics(), module_name_for(prepared.path), owner, types,
                          functions)
    return Started(prepared, extractor, extractor.start(prepared.statements))


@_collector_paused
def finish_file(started: Started, as_dict: bool = False) -> "CodeFile":
    """Read conditions, calls and references: the :class:`CodeFile` of a started text
    (``as_dict``: its plain data, see :func:`parse_text`)."""
    prepared, extractor = started.prepared, started.extractor
    shown = prepared.source.path
    diagnostics = list(prepared.diagnostics)
    classes, functions = extractor.finish(started.state)
    diagnostics.extend(extractor.limit_diagnostics(shown))
    diagnostics.sort(key=lambda d: (d["span"] or {}).get("start", -1))
    return _code_file({
        "path": shown,
        "grammar": prepared.grammar.id,
        "classes": classes,
        "functions": functions,
        "diagnostics": diagnostics,
    }, as_dict)


_prepare_text, _start_file, _finish_file = prepare_text.__wrapped__, start_file.__wrapped__, finish_file.__wrapped__


def decode_code(data: bytes, path: str) -> tuple[str, list[dict]]:
    """The text :func:`parse_bytes` parses and its decoding diagnostics (CP110);
    binary input raises :class:`InputError`."""
    nul = data.find(0)
    if nul != -1:
        raise InputError(path, f"binary input (NUL byte at offset {nul}), not code text", "CP302")
    extra = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        at = len(data[: exc.start].decode("utf-8", errors="replace"))
        source = SourceText(text, path)
        extra.append(diagnostic("CP110", path, source.span(at, at + 1), byte=exc.start))
    return _without_bom(text), extra


def _without_bom(text: str) -> str:
    return text[1:] if text.startswith("\ufeff") else text


def decode_text(data: bytes) -> str:
    """The text :func:`parse_bytes` parses for ``data`` (its spans index into it):
    UTF-8 with undecodable bytes replaced, a leading byte-order mark dropped."""
    return _without_bom(data.decode("utf-8", errors="replace"))


def parse_bytes(data: bytes, path: str, grammar: Optional[str] = None, *, types=None,
                functions=None, as_dict: bool = False) -> "CodeFile":
    """Decode and parse; binary input raises :class:`InputError`, bad UTF-8 is a diagnostic."""
    _expect(data, (bytes, bytearray, memoryview), "parse_bytes expects the code as bytes (use parse_text for str)")
    _expect(path, str, "parse_bytes expects path as str")
    data = bytes(data)
    text, extra = decode_code(data, path)
    return _parse(text, path, grammar, None, extra, types, functions, as_dict)


def parse_file(path: str | Path, grammar: Optional[str] = None, *, as_dict: bool = False,
               max_bytes: Optional[int] = None, functions=None) -> "CodeFile":
    """Read a ``.code``/``.py`` file (``-`` for stdin) and parse it (``as_dict``, ``functions``:
    see :func:`parse_text`).

    Only regular files are read (a FIFO or a device is CP301); a file over ``max_bytes``
    (default :data:`MAX_FILE_BYTES`, the archive entry limit) is refused with CP344.
    """
    _expect(path, (str, os.PathLike), "parse_file expects a path (str or os.PathLike)")
    shown = os.fspath(path)
    limit = MAX_FILE_BYTES if max_bytes is None else max_bytes
    if shown == "-":
        data = sys.stdin.buffer.read(limit + 1)
        size = len(data)
    else:
        # One open and one fstat: the descriptor says what the path is.  Non-blocking, so
        # that opening a FIFO does not wait for a writer (it is refused below).
        try:
            fd = os.open(shown, _OPEN_FLAGS)
        except FileNotFoundError:
            raise InputError(shown, "no such file") from None
        except IsADirectoryError:
            raise InputError(shown, "is a directory") from None
        except OSError as exc:
            raise InputError(shown, exc.strerror or str(exc)) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                if stat.S_ISDIR(st.st_mode):
                    raise InputError(shown, "is a directory")
                from ..files.walk import not_regular

                raise InputError(shown, not_regular(shown) or "not a regular file")
            size = st.st_size
            data = _read_fd(fd, limit + 1, size + 1) if size <= limit else b""
        except OSError as exc:
            raise InputError(shown, exc.strerror or str(exc)) from None
        finally:
            os.close(fd)
        size = max(size, len(data))
    if size > limit:
        finding = diagnostic("CP344", shown, None, size=size if shown != "-" else f"more than {limit}", limit=limit)
        error = InputError(shown, finding["message"], "CP344")
        error.finding = finding  # type: ignore[attr-defined]
        raise error
    return parse_bytes(data, shown, grammar, functions=functions, as_dict=as_dict)


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def _read_fd(fd: int, most: int, expect: int) -> bytes:
    """Up to ``most`` bytes of an open regular file, from its start.

    The first read asks for ``expect`` bytes (the size ``fstat`` gave, plus one to see the
    end): ``os.read`` allocates what it is asked for, and asking for the limit (64 MiB) on
    every small file cost five times the reading.  A short read is the file's end (the
    descriptor is a regular file); a file that grew since is read on in chunks of at
    least 64 KiB, up to ``most``."""
    chunks = []
    want = min(most, max(expect, 1))
    while most > 0:
        chunk = os.read(fd, want)
        chunks.append(chunk)
        most -= len(chunk)
        if len(chunk) < want:
            break
        want = min(most, max(want, 1 << 16))
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def iter_inputs(paths: Iterable[str], skipped: Optional[list] = None) -> list[str]:
    """Expand directories (recursively) into their code files, sorted; keep ``-``.

    Walks never leave their directory: a symbolic link to a file outside it is not
    listed but appended to ``skipped`` (when given) as a CP342 finding dict.
    """
    from ..files.walk import Escaped, paths_of, walk_files

    out: list[str] = []
    for raw in paths_of(paths, "iter_inputs"):
        if raw == "-":
            out.append(raw)
            continue
        p = Path(raw)
        if p.is_dir():
            found = []
            for f in walk_files(p):
                if PurePosixPath(f).suffix not in CODE_SUFFIXES:
                    continue
                if isinstance(f, Escaped):
                    if skipped is not None:
                        skipped.append(diagnostic("CP342", str(f), None, link=str(f), target=f.target))
                    continue
                found.append(str(f))
            if not found:
                raise InputError(raw, "directory holds no .code or .py files")
            out.extend(found)
        elif p.exists():
            out.append(raw)
        else:
            raise InputError(raw, "no such file or directory")
    return out
