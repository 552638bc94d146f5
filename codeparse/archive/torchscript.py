"""Read saved TorchScript archives without torch and without trusting them.

An archive is a zip whose single top folder (any name) holds ``code/``; a
``torch.package`` keeps it under ``.data/ts_code/`` (``code/`` there, or one per
``<id>/``).  The suffix does not matter (``.pt``, ``.ptl``, ``.zip``, ``.jit``, renamed):
the bytes decide.  What is read, and how:

* the version record (``version`` or ``.data/version``), as an integer;
* every ``.py`` under a code folder, in stored order, parsed as one :class:`CodeFile`
  named ``archive!entry``;
* each code file's ``.debug_pkl`` (or the model.json era's ``debug/<name>.pkl``) with
  the restricted unpickler of :mod:`codeparse.archive.debuginfo`;
* ``data.pkl`` is never unpickled: its opcodes are only *listed* (``pickletools``) to
  learn the root module's class name.  Tensor data is never opened.

Nothing is written to disk.  Limits (:class:`codeparse.contract.check.Policy`) bound what is
inflated: the entry count is checked from the end-of-archive record, then counted
again by walking the central directory record by record (stopping at the limit),
before ``zipfile`` parses it (CP308), so an end record that says 3 cannot smuggle in
60,000 entries; each entry read is checked against its declared size (CP309), the
running total (CP310) and its compression ratio (CP311: every entry over
:data:`RATIO_SMALL` bytes by its own ratio, and every entry by the ratio of all
entries read so far once they pass :data:`RATIO_FLOOR` bytes), and is inflated in
chunks that stop at the declared size, so a lying header cannot make it grow.
Entries whose names are absolute or contain ``..`` are never read (CP312); entries
whose stored bytes overlap another entry (the "overlapping zip bomb") are never read
either (CP341).

An input that cannot be read at all raises :class:`codeparse.InputError` with its code
(CP304 not a zip, CP305 damaged, CP306 unsupported format such as the pre-zip
``PYTORCH1`` container, CP307 no code folder, CP308 too many entries).

The model.json seam (PyTorch 1.0-1.2 archives).  When the top folder holds
``model.json`` and a module ``codeparse.archive.legacy`` provides
``parse_model_json_archive(entries, archive_path, grammar) -> (model, files)``, it is
called with ``entries``: the bounded bytes of ``model.json``, ``libs.py``,
``libs/*.py`` and the code files, by entry name, in stored order (read here, within
the limits).  Its ``files`` (``CodeFile`` per code file, ``archive!entry`` paths)
replace the plain parse; ``model.main.qualified_name``, when present, names the root
class.  If it raises, the finding is CP313 and the plain parse stands.  Without that
module the code files are parsed like any others.
"""

from __future__ import annotations

import importlib
import io
import os
from contextlib import contextmanager
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

from ..contract.codes import diagnostic
from ..files.zipread import EntryRefused, ZipReader, one_line, open_zip, refuse

if TYPE_CHECKING:  # the models import pydantic: `is_archive_path` (every `parse` input) does without
    from ..contract.check import Archive, Policy
    from ..contract.text import CodeFile


__all__ = ["open_archive", "read_archive", "reading_archive", "OpenedArchive", "archive_code_files"]


def decode_text(data: bytes) -> str:
    """:func:`codeparse.text.reader.decode_text` (the parser is imported when text is first read:
    recognising a file by its bytes, ``codeparse.files.filekind``, needs none of it)."""
    from ..text.reader import decode_text as decode

    return decode(data)


_MAX_VERSION_BYTES = 64
_MAX_PICKLE_OPS = 200_000  # opcodes of data.pkl listed while looking for the root class
_PICKLE_HEAD = 1 << 16  # bytes of data.pkl inflated to find it (its first class comes first)


def _code_prefixes(reader: ZipReader) -> tuple[str, list[str]]:
    """The layout and the folders (``root/code/``, ``root/.data/ts_code/code/``...) holding code."""
    root = reader.root
    if root is None:
        return "zip", []
    plain = f"{root}/code/"
    package = f"{root}/.data/ts_code/"
    prefixes: list[str] = []
    seen: set[str] = set()
    layout = "zip"
    for name in reader.names:
        if name.startswith(plain):
            prefix = plain
        elif name.startswith(package):
            parts = name[len(package):].split("/")
            if parts[0] == "code":
                prefix = package + "code/"
            elif len(parts) > 2 and parts[1] == "code":
                prefix = f"{package}{parts[0]}/code/"
            else:
                continue
            layout = "torch.package"
        else:
            continue
        if prefix not in seen:
            seen.add(prefix)
            prefixes.append(prefix)
    if f"{root}/model.json" in reader:
        layout = "model.json"
    return layout, prefixes


def _version(reader: ZipReader) -> tuple[Optional[int], list[dict]]:
    root = reader.root
    for name in (f"{root}/version", f"{root}/.data/version"):
        if name in reader:
            try:
                raw = reader.read(name, _MAX_VERSION_BYTES)
            except EntryRefused as refused:
                return None, [refused.finding]
            try:
                return int(raw.decode("ascii").strip()), []
            except (UnicodeDecodeError, ValueError):
                return None, [diagnostic("CP313", reader.path, None, entry=name,
                                         reason="the version record is not a number")]
    return None, [diagnostic("CP319", reader.path, None)]


def _root_class(reader: ZipReader, root_name: str) -> Optional[str]:
    """The root module's class, from the first class ``data.pkl`` names (opcodes listed, never run)."""
    import pickletools

    root = reader.root
    candidates = [f"{root}/data.pkl"] + sorted(
        n for n in reader.names if n.startswith(f"{root}/.data/ts_code/") and n.endswith("/data.pkl")
    )
    for name in candidates:
        if name not in reader:
            continue
        data = reader.head(name, _PICKLE_HEAD)
        if data is None:
            return None
        strings: list[str] = []
        try:
            for index, (op, arg, _pos) in enumerate(pickletools.genops(io.BytesIO(data))):
                if index > _MAX_PICKLE_OPS:
                    break
                if op.name == "GLOBAL" and isinstance(arg, str):
                    module, _, cls = arg.partition(" ")
                    if module == root_name or module.startswith(root_name + "."):
                        return f"{module}.{cls}"
                elif op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8") and isinstance(arg, str):
                    strings = (strings + [arg])[-2:]
                elif op.name == "STACK_GLOBAL" and len(strings) == 2:
                    module, cls = strings
                    if module == root_name or module.startswith(root_name + "."):
                        return f"{module}.{cls}"
        except Exception:  # noqa: BLE001 - a damaged pickle only hides the root class
            return None
    return None


def _debug_entry(reader: ZipReader, name: str) -> Optional[str]:
    candidate = name + ".debug_pkl"
    if candidate in reader:
        return candidate
    root = reader.root
    if root and name.startswith(f"{root}/code/"):  # model.json era: debug/<name>.pkl
        stem = PurePosixPath(name).stem
        legacy = f"{root}/debug/{stem}.pkl"
        if legacy in reader:
            return legacy
    return None


# torch writes an empty code file for each TorchBind class an archive uses
# (`code/__torch__/torch/classes/quantized.py` in every quantized model): not an empty input.
_TORCHBIND_FOLDER = "/code/__torch__/torch/classes/"


def _placeholder_ok(code_file: CodeFile) -> CodeFile:
    """``code_file`` without CP109 when it is a TorchBind placeholder (see above)."""
    if _TORCHBIND_FOLDER not in code_file.path or not any(d.code == "CP109" for d in code_file.diagnostics):
        return code_file
    kept = [d for d in code_file.diagnostics if d.code != "CP109"]
    return code_file.model_copy(update={"diagnostics": kept})


def _placeholder_plain(code_file: dict) -> dict:
    """:func:`_placeholder_ok` of a file's plain data."""
    diagnostics = code_file["diagnostics"]
    if _TORCHBIND_FOLDER not in code_file["path"] or not any(d["code"] == "CP109" for d in diagnostics):
        return code_file
    return dict(code_file, diagnostics=[d for d in diagnostics if d["code"] != "CP109"])


def _legacy_hook() -> Optional[Callable[..., Any]]:
    try:
        legacy = importlib.import_module(".legacy", __package__)
    except ImportError:
        return None
    hook = getattr(legacy, "parse_model_json_archive", None)
    return hook if callable(hook) else None


def _model_json(reader: ZipReader, hook: Callable[..., Any], code: list[tuple[str, bytes]],
                findings: list[dict], grammar: Optional[str]) -> Optional[tuple[list[CodeFile], Optional[str]]]:
    """Hand a model.json archive to ``codeparse.archive.legacy`` (the seam in the module docs).

    ``code`` holds the code entries already read; ``model.json`` and ``libs`` are read
    here.  Returns the files and the root class, or None when the hook failed (CP313).
    """
    root = reader.root
    entries: dict[str, bytes] = {}
    have = dict(code)
    for name in reader.names:
        wanted = (name in have or name == f"{root}/model.json" or name == f"{root}/libs.py"
                  or (name.endswith(".py") and name.startswith((f"{root}/libs/", f"{root}/code/"))))
        if not wanted:
            continue
        if name in have:
            entries[name] = have[name]
            continue
        try:
            entries[name] = reader.read(name)
        except EntryRefused as refused:
            findings.append(refused.finding)
    try:
        model, legacy_files = hook(entries, reader.path, grammar)
    except Exception as exc:  # noqa: BLE001 - their failure is one finding, not a crash
        findings.append(diagnostic("CP313", reader.path, None, entry=f"{root}/model.json", reason=one_line(exc)))
        return None
    main = getattr(model, "main", None)
    return list(legacy_files), getattr(main, "qualified_name", None)


def _mobile_bytecode(reader: ZipReader) -> list[dict]:
    """A lite-interpreter archive's ``bytecode.pkl``: its version and operators, as one
    finding from ``codeparse.archive.legacy`` (read there with a restricted unpickler)."""
    name = f"{reader.root}/bytecode.pkl"
    if name not in reader:
        return []
    try:
        legacy = importlib.import_module(".legacy", __package__)
        data = reader.read(name)
    except EntryRefused as refused:
        return [refused.finding]
    except ImportError:
        return []
    return [legacy.bytecode_diagnostic(data, reader.path, name)]


class OpenedArchive:
    """An archive open for reading, its code entries read (not parsed yet).

    Made by :func:`reading_archive`; the zip stays open while it is in use, so that
    debug info is read only when an origin is asked for (:meth:`origins`).
    ``findings`` holds the archive-level findings met so far (names, version, code
    entries refused, and once :attr:`files` is read, entries that are not code text).
    """

    def __init__(self, shown: str, reader: ZipReader, count: int, policy: Policy, cache: Any):
        self.path = shown
        self.reader = reader
        self.count = count
        self.policy = policy
        self.cache = cache
        self.layout = "zip"
        self.version: Optional[int] = None
        self.findings: list[dict] = []
        self.code: list[tuple[str, bytes]] = []  # (display path, bytes) of every code entry read
        self.grammar: Optional[str] = None
        self.root_name = ""
        self.legacy = False  # codeparse.archive.legacy built the files (a model.json archive)
        self.legacy_root: Optional[str] = None
        self._files: Optional[list[dict]] = None
        self._entries: dict[str, tuple[int, str, bytes]] = {}  # display path -> (index, entry name, bytes)
        self._origins: dict[str, Optional[dict[int, tuple[str, int]]]] = {}
        self._debug_findings: dict[int, dict] = {}  # entry index -> finding
        # With keep_line_maps (read_archive's extras, for codeparse.rules.export): every LineMap
        # and its text, by display path; a cache folder is then not used for origins.
        self.keep_line_maps = False
        self.line_maps: dict[str, tuple] = {}

    @property
    def files(self) -> list[dict]:
        """The code files as plain data (``CodeFile.model_dump(mode="json")``), parsed as one
        program on first use (:func:`codeparse.text.program.parse_program`)."""
        if self._files is None:
            from ..text.program import parse_program

            registry: dict = {}
            files, parse_findings = parse_program(self.code, self.grammar, cache=self.cache, as_dict=True,
                                                  registry=registry)
            self._functions = registry.get("functions")
            self._prepared = registry.get("prepared")
            self._release = registry.get("release")
            self._files = [_placeholder_plain(cf) for cf in files]
            self.findings.extend(parse_findings)
        return self._files

    @property
    def traced(self) -> bool:
        """The archive holds ``traced_inputs.pkl``: saved from ``torch.jit.trace`` (torch >= 2.1)."""
        return any(n.rsplit("/", 1)[-1] == "traced_inputs.pkl" for n in self.reader.names)

    def root_class(self) -> Optional[str]:
        return self.legacy_root or _root_class(self.reader, self.root_name)

    def saved_values(self) -> Optional[Any]:
        """The plain attribute values ``data.pkl`` saves, per class
        (:class:`codeparse.rules.saved.SavedValues`) but those of attributes the code
        assigns, read on the first call; None when there is no ``data.pkl`` or it cannot be
        read within the limits."""
        if not hasattr(self, "_saved"):
            self._saved = None
            name = f"{self.reader.root}/data.pkl"
            if not self.legacy and name in self.reader:
                from .attributes import read_saved_values

                try:
                    data = self.reader.read(name)
                except EntryRefused:
                    return None
                saved = read_saved_values(data)
                if saved is not None:
                    # An attribute the code assigns is not what was saved when it is read.
                    from ..rules.saved import assigned_attributes

                    texts = [raw.decode("utf-8", errors="replace") for _, raw in self.code]
                    saved = saved.without(assigned_attributes(texts, self.grammar, self._statements_read(texts)))
                self._saved = saved
        return self._saved

    def _statements_read(self, texts: list[str]) -> Optional[list[Optional[list]]]:
        """For each code entry's text (``texts``, in :attr:`code` order), the top-level
        statements the program's parse read from that same text with the same grammar, or
        None (read from the cache, another text, another grammar): what is not read again."""
        prepared = getattr(self, "_prepared", None)
        if prepared is None:
            return None
        from ..grammar.engine import load_grammar

        grammar = load_grammar(self.grammar)
        out: list[Optional[list]] = []
        for (display, _), text in zip(self.code, texts):
            found = prepared(display)
            same = found is not None and found.grammar is grammar and found.source.text == text
            out.append(found.statements if same else None)
        return out

    def callee(self, qualified: str) -> Optional[Any]:
        """A function of the program with its inference (:class:`codeparse.infer.callees.Callee`),
        once :attr:`files` is read; None for a model.json archive or an unknown name."""
        functions = getattr(self, "_functions", None)
        return functions.get(qualified) if functions is not None else None

    def release(self) -> None:
        """Free the program's inference (:func:`codeparse.text.program.parse_program`'s
        ``registry["release"]``) once no caller asks :meth:`callee` any more: refcounting
        frees it then, not the cyclic collector.  :meth:`callee` answers None after."""
        release = getattr(self, "_release", None)
        self._release = self._functions = None
        if release is not None:
            release()

    def code_text(self, display: str) -> Optional[str]:
        """The text of one code file, as its spans index it (None for a model.json archive,
        whose files codeparse.archive.legacy builds)."""
        found = None if self.legacy else self._entries.get(display)
        if found is None:
            return None
        from ..text.reader import decode_text

        return decode_text(found[2])

    def origins(self, display: str) -> Optional[Any]:
        """Code line -> original ``(file, line)`` for one code file (``.get(line)``), from its
        ``.debug_pkl``, read (and unpickled, or taken from the content cache) on the first
        call only."""
        if display in self._origins:
            return self._origins[display]
        self._origins[display] = None
        found = self._entries.get(display)
        if found is None:
            return None
        index, name, data = found
        debug = _debug_entry(self.reader, name)
        if debug is None:
            return None
        try:
            # Debug info is a few times the size of its code; the cap bounds what a
            # hostile pickle can build from memo references.
            raw = self.reader.read(debug, max(1 << 20, 16 * len(data)))
        except EntryRefused as refused:
            self._debug_findings[index] = refused.finding
            return None
        origins, problem = self._line_origins(display, name, data, raw)
        if problem is not None:
            code, args = problem
            self._debug_findings[index] = diagnostic(code, self.path, None, entry=debug, **args)
            return None
        self._origins[display] = origins
        return origins

    def _line_origins(self, display: str, name: str, data: bytes,
                      raw: bytes) -> tuple[Optional[Any], Optional[tuple[str, dict]]]:
        """The origins of one code file (a dict, or a :class:`~codeparse.archive.debuginfo.LineOrigins`
        that maps each line on its first ask when nothing is written to disk), or the
        finding reading its debug info gave."""
        from ..text.reader import module_name_for
        from .debuginfo import DebugInfoError, ForbiddenGlobal, LineOrigins, line_origins, read_debug_pkl
        from ..pickles.safepickle import PickleLimit

        cache = self.cache
        if self.keep_line_maps and cache is not None and cache.directory is not None:
            cache = None  # a cache folder stores the lines, not the map that export reads
        key = debug_key = None
        if cache is not None:
            from ..text.cache import sha256

            key = cache.key(data, None, module_name_for(name))
            # The limit decides whether a long source is read (CP315): part of the key.
            debug_key = sha256(raw + f"\0{self.policy.max_debug_chars}".encode()).hexdigest()
            stored = cache.origins(key, debug_key)
            if isinstance(stored, dict):
                if "problem" in stored:
                    return None, (stored["problem"][0], stored["problem"][1])
                if "lines" in stored:
                    return {row[0]: (row[1], row[2]) for row in stored["lines"]}, None
                if "lazy" in stored:
                    if self.keep_line_maps:
                        self.line_maps[display] = stored["lazy"].parts
                    return stored["lazy"], None
        problem: Optional[tuple[str, dict]] = None
        origins: Optional[Any] = None
        lazy = cache is None or cache.directory is None
        try:
            line_map = read_debug_pkl(raw, max_rows=len(data) + 1, max_chars=self.policy.max_debug_chars)
            text = decode_text(data)
            origins = LineOrigins(text, line_map) if lazy else line_origins(text, line_map)
            if self.keep_line_maps:
                self.line_maps[display] = (line_map, text)
        except ForbiddenGlobal as exc:
            problem = ("CP314", {"global_name": exc.name})
        except PickleLimit as exc:
            problem = ("CP343", {"reason": str(exc)})
        except DebugInfoError as exc:
            problem = ("CP315", {"reason": str(exc)})
        if cache is not None:
            value = ({"problem": list(problem)} if problem is not None
                     else {"lazy": origins} if lazy  # in memory only: never written
                     else {"lines": [[line, f, n] for line, (f, n) in origins.items()]})
            cache.put_origins(key, debug_key, value)
        return origins, problem

    def debug_findings(self) -> list[dict]:
        """Findings about the debug info read so far, in stored order."""
        return [self._debug_findings[i] for i in sorted(self._debug_findings)]

    def every_origin(self) -> dict[str, Any]:
        """Every code file's origins (every ``.debug_pkl`` read, in stored order), each as
        :meth:`origins` gives it (``.get(line)``; lines are mapped when asked for)."""
        parsed = {cf["path"] for cf in self.files}
        out = {}
        for display in self._entries:
            if display in parsed:
                found = self.origins(display)
                if found is not None:
                    out[display] = found
        return out

    def all_origins(self) -> dict[str, dict[int, tuple[str, int]]]:
        """Every code file's origins as dicts (every ``.debug_pkl`` read), for the full :class:`Archive`."""
        return {display: found if isinstance(found, dict) else dict(found.items())
                for display, found in self.every_origin().items()}

    def tail_findings(self) -> list[dict]:
        """The findings read last: mobile bytecode and the pickle scan."""
        from ..pickles.scan import archive_pickle_findings

        return _mobile_bytecode(self.reader) + archive_pickle_findings(self.reader, self.cache)


@contextmanager
def reading_archive(path: str | os.PathLike, policy: Optional[Policy] = None, grammar: Optional[str] = None,
                    data: Optional[bytes] = None, cache: Any = None,
                    opened: Optional[tuple] = None) -> Iterator[OpenedArchive]:
    """Open an archive within the limits and read its code entries (see the module docs);
    the zip is closed when the block ends.  Raises :class:`codeparse.InputError`.

    ``data``: the archive's bytes when it is not a file (``check -`` reads standard input);
    ``opened``: the zip already open (:func:`open_zip`)."""
    from ..contract.records import Limits
    from ..grammar.engine import load_semantics

    shown = os.fspath(path)
    policy = policy or Limits()
    reader, count = open_zip(shown, policy, data, opened)
    try:
        opened = OpenedArchive(shown, reader, count, policy, cache)
        layout, prefixes = _code_prefixes(reader)
        opened.layout = layout
        if not prefixes and layout != "model.json":
            raise refuse(shown, "CP307")
        findings = opened.findings
        findings.extend(reader.findings)
        opened.version, version_findings = _version(reader)
        findings.extend(version_findings)
        opened.root_name = load_semantics()["names"]["qualified_root"]
        code_names = [n for n in reader.names
                      if n.endswith(".py") and any(n.startswith(p) for p in prefixes)]
        entries: list[tuple[str, bytes]] = []
        for name in code_names:
            try:
                entries.append((name, reader.read(name)))
            except EntryRefused as refused:
                findings.append(refused.finding)
        hook = _legacy_hook() if layout == "model.json" else None
        legacy = _model_json(reader, hook, entries, findings, grammar) if hook is not None else None
        if legacy is not None:
            files, opened.legacy_root = legacy
            opened._files = [_placeholder_plain(cf.model_dump(mode="json")) for cf in files]
            opened.legacy = True
        opened.code = [(reader.display(n), d) for n, d in entries]
        opened.grammar = grammar
        for index, (name, entry_data) in enumerate(entries):
            opened._entries[reader.display(name)] = (index, name, entry_data)
        yield opened
    finally:
        reader._zf.close()
        fp = getattr(reader._zf, "fp", None)
        if fp is not None:
            fp.close()


def read_archive(path: str | os.PathLike, policy: Optional[Policy] = None,
                 grammar: Optional[str] = None, data: Optional[bytes] = None,
                 extras: Optional[dict] = None, cache: Any = None) -> Archive:
    """Read a saved TorchScript archive into an :class:`Archive` (see the module docs):
    every ``.debug_pkl`` of a parsed code file is read, for the source map.

    ``data``: the archive's bytes when it is not a file (``check -`` reads standard input);
    ``path`` is then only its name in findings.  ``extras``, when given, receives what
    :mod:`codeparse.rules.export` needs beyond the model: ``offset_maps`` (entry -> ``(LineMap,
    text)``, the origin of any offset), ``traced`` (:attr:`OpenedArchive.traced`) and
    ``files`` (the code files as plain data, ``CodeFile.model_dump(mode="json")``).  ``cache``: a
    :class:`codeparse.text.cache.EntryCache` shared by several reads."""
    with reading_archive(path, policy, grammar, data, cache) as opened:
        opened.keep_line_maps = extras is not None
        return archive_of(opened, extras)


def archive_of(opened: OpenedArchive, extras: Optional[dict] = None) -> Archive:
    """The :class:`Archive` of an archive open for reading (:func:`read_archive`)."""
    from ..rules.saved import saved_branches
    from ..text.program import resolve

    files = opened.files
    maps = opened.all_origins()
    findings = opened.findings + opened.debug_findings()
    root_class = opened.root_class()
    findings.extend(opened.tail_findings())
    archive = resolve(
        path=opened.path, layout=opened.layout, root=opened.reader.root, version=opened.version,
        entries=opened.count, files=files, maps=maps, root_class=root_class, findings=findings,
        adjust=lambda per_file: saved_branches(per_file, opened.saved_values),
    )
    if extras is not None:
        extras["offset_maps"] = opened.line_maps
        extras["traced"] = opened.traced
        extras["files"] = files
        extras["text"] = opened.code_text
        extras["callee"] = opened.callee
        extras["saved"] = opened.saved_values()
    return archive


def open_archive(path: str | os.PathLike, policy: Optional[Policy] = None) -> Archive:
    """Read a saved TorchScript archive without torch: the public entry point.

    Raises :class:`codeparse.InputError` (with ``.code``) when it cannot be read at all,
    and ``TypeError`` for a ``path`` that is not a ``str``/``os.PathLike`` or a ``policy``
    that is not a :class:`~codeparse.contract.check.Policy`.
    """
    from ..contract.check import Policy

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"open_archive expects a path (str or os.PathLike), not {type(path).__name__}")
    if policy is not None and not isinstance(policy, Policy):
        raise TypeError(f"open_archive expects policy as a codeparse.Policy or None, not {type(policy).__name__}")
    return read_archive(path, policy)


def archive_code_files(path: str | os.PathLike, grammar: Optional[str] = None) -> Iterator[tuple[CodeFile, str]]:
    """``(CodeFile, text)`` for each code entry of an archive, in stored order (for ``parse``).

    The entries are parsed as one program, as ``check`` reads them
    (:func:`codeparse.text.program.parse_program`): calls are followed into the
    archive's other files and its classes' declarations give types, so that one archive
    gives one answer whichever command reads it.  Entries that cannot be read become a
    CodeFile with only their diagnostic.
    """
    from ..contract.text import CodeFile
    from ..contract.check import Policy
    from ..text.program import parse_program

    shown = os.fspath(path)
    reader, _ = open_zip(shown, Policy())
    try:
        layout, prefixes = _code_prefixes(reader)
        if not prefixes:
            raise refuse(shown, "CP307")
        if layout == "model.json":  # the seam: method files with classes from model.json
            hook = _legacy_hook()
            legacy = _model_json(reader, hook, [], [], grammar) if hook is not None else None
            legacy_files = legacy[0] if legacy is not None else None
            if legacy_files:
                prefix = reader.display("")
                for cf in legacy_files:  # `archive!entry`: the entry is what follows the archive path
                    entry = cf.path[len(prefix):] if cf.path.startswith(prefix) else cf.path
                    yield cf, decode_text(reader.read(entry)) if entry in reader else ""
                return
        entries: list[tuple[str, bytes]] = []
        order: list[tuple[str, Optional[dict]]] = []  # (display, finding of an entry refused)
        for name in reader.names:
            if not (name.endswith(".py") and any(name.startswith(p) for p in prefixes)):
                continue
            display = reader.display(name)
            try:
                entries.append((display, reader.read(name)))
                order.append((display, None))
            except EntryRefused as refused:
                order.append((display, dict(refused.finding, path=display)))
        files, findings = parse_program(entries, grammar)
        parsed = {cf.path: cf for cf in files}
        unread = {f["path"]: f for f in findings}
        data = dict(entries)
        for display, refused in order:
            finding = refused or unread.get(display)
            if finding is not None:
                yield CodeFile(path=display, grammar=grammar or "unread", classes=[], functions=[],
                               diagnostics=[finding]), ""
            else:
                yield _placeholder_ok(parsed[display]), decode_text(data[display])
    finally:
        reader._zf.close()
        fp = getattr(reader._zf, "fp", None)
        if fp is not None:
            fp.close()


