"""The content cache of parsed archive entries: in process always, on disk when asked.

``torch/nn/*`` files are byte-identical across the archives of a model zoo and across
CI runs, so ``check`` parses an entry once and reuses the result wherever the same
entry comes back with the same surroundings.

**Key.**  An entry's *content key* is the SHA-256 of: the cache format
(:data:`FORMAT`), the codeparse fingerprint (version, and a digest of the package's
Python files and grammar files, so an edited checkout never reads a stale entry; a
cache with no folder lives and dies with its process, so it skips that digest), the
forced grammar id (or none: detected from the text), the entry's module name
(``__torch__.torch.nn.modules.linear``, from its path) and its bytes.  Under one content
key the cache holds:

* ``declarations``: the classes the entry declares, from the statement classifier
  alone (the pre-pass of :func:`codeparse.text.program.parse_program`); they depend on the
  content key only;
* ``parses``: one or more parsed files, each with the declarations it *consulted*
  (every class summary the parser asked for through its ``types`` hook, with the
  answer it got).  A stored parse is reused only when every one of those questions
  gets the same answer in the archive at hand: the parse would then ask the same
  questions and build the same file.
* ``origins``: for a ``.debug_pkl`` (keyed by its own SHA-256), the original
  ``(file, line)`` of each code line (:func:`codeparse.archive.debuginfo.line_origins`), or the
  finding reading it gave.

Paths are not part of an entry: a stored file has an empty path, filled in on reuse.

**On disk** (``--cache-dir DIR``, or ``cache-dir`` in a trusted ``--config`` file; off by
default, so reading an archive writes nothing unless asked): one JSON file per content
key, ``DIR/<2 hex>/<key>.json``, ``{"mac": ..., "format": 1, "fingerprint": ..., ...}``.
Every entry carries a keyed hash (HMAC-SHA256) of the rest of it, made with a secret
kept outside any checked tree (``$XDG_CACHE_HOME/codeparse/cache-key``, else
``~/.cache/codeparse/cache-key``, created 0600): an entry this machine did not write (a
cache folder committed to a repository, a report forged to pass the gate) does not
verify and is a miss.  Without a usable secret nothing is read from or written to disk.  Never
pickle or marshal: a cache directory shared with others cannot run code here.  Files
are written whole to a temporary name in the same folder and renamed into place
(``os.replace``), so parallel writers (``--jobs``, Dask workers) never leave a torn
file; a reader that finds a file it cannot parse, of another format or fingerprint,
treats it as a miss.  When two writers race, the last rename wins and the other
parse is simply not kept.

**In process** (always on): the same entries in a dictionary for the life of one
:class:`EntryCache` (one ``check`` run), bounded to :data:`MEMORY_ENTRIES` keys.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Optional

__all__ = ["FORMAT", "EntryCache", "InputCache", "fingerprint", "answer_of", "sha256"]


def _sha256() -> Callable[..., Any]:
    """SHA-256 from the interpreter's own module (``_sha2`` since Python 3.12, ``_sha256``
    before), as :mod:`random` takes its SHA-512, else :mod:`hashlib`'s: importing
    ``hashlib`` loads OpenSSL's library (some 3 ms and 200 page faults of a process that
    checks one archive).  The digests are SHA-256's either way."""
    try:
        from _sha2 import sha256 as constructor  # type: ignore[import-not-found]
    except ImportError:
        try:
            from _sha256 import sha256 as constructor  # type: ignore[import-not-found,no-redef]
        except ImportError:
            from hashlib import sha256 as constructor  # type: ignore[assignment]
    return constructor


sha256 = _sha256()  # ``hashlib.sha256``'s digests: content keys, fingerprints

FORMAT = 1
MEMORY_ENTRIES = 4096  # content keys kept in memory per run
MAX_PARSES = 8  # stored parses per content key (different surroundings)

_fingerprint: Optional[str] = None


def fingerprint() -> str:
    """codeparse's version and a digest of its Python files and grammars (once per process)."""
    global _fingerprint
    if _fingerprint is None:
        from ..grammar.locations import grammar_dir

        try:
            from importlib.metadata import version

            release = version("codeparse")
        except Exception:  # noqa: BLE001 - a source checkout without metadata
            release = "unknown"
        digest = sha256(release.encode())
        package = Path(__file__).resolve().parents[1]
        files = sorted(package.rglob("*.py")) + sorted(grammar_dir().glob("*"))
        for f in files:
            if f.is_file():
                digest.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
        _fingerprint = f"{release}+{digest.hexdigest()[:16]}"
    return _fingerprint


def answer_of(found: Optional[tuple[str, dict]]) -> Optional[list]:
    """A ``types`` hook answer as plain JSON data (comparable with a stored one)."""
    if found is None:
        return None
    kind, declared = found
    return [kind, [[name, role, typ] for name, (role, typ) in declared.items()]]


class EntryCache:
    """Parsed entries by content key: in memory always, in ``directory`` when given."""

    def __init__(self, directory: Optional[str | os.PathLike] = None):
        self.directory = Path(directory) if directory else None
        # Keys name the codeparse that made an entry; in memory that is this process, so
        # the package is hashed (fingerprint(), reading every file of it) only for a disk cache.
        self._maker = fingerprint() if self.directory is not None else "in-process"
        self._memory: dict[str, dict] = {}
        self.hits = 0
        self.misses = 0

    # -- keys ----------------------------------------------------------------
    def key(self, data: bytes, grammar: Optional[str], module: Optional[str]) -> str:
        digest = sha256(f"codeparse-cache {FORMAT}\0{self._maker}\0{grammar or ''}\0{module or ''}\0"
                                .encode())
        digest.update(data)
        return digest.hexdigest()

    # -- records -------------------------------------------------------------
    def _record(self, key: str) -> dict:
        record = self._memory.get(key)
        if record is None:
            record = self._load(key) or {"declarations": None, "parses": [], "origins": {}, "program": None,
                                         "blob": None}
            if len(self._memory) >= MEMORY_ENTRIES:
                self._memory.pop(next(iter(self._memory)))
            self._memory[key] = record
        return record

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return _entry_path(self.directory, key)

    def _load(self, key: str) -> Optional[dict]:
        if self.directory is None:
            return None
        try:
            with open(self._path(key), "rb") as handle:
                data = _verified(json.loads(handle.read()))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("fingerprint") != fingerprint():
            return None
        parses = data.get("parses")
        origins = data.get("origins")
        return {"declarations": data.get("declarations"), "parses": parses if isinstance(parses, list) else [],
                "origins": origins if isinstance(origins, dict) else {}, "program": data.get("program"),
                "blob": data.get("blob")}

    def _save(self, key: str, record: dict) -> None:
        """Write the record whole under a temporary name, then rename it into place."""
        if self.directory is None:
            return
        body = {"format": FORMAT, "fingerprint": fingerprint(), "declarations": record["declarations"],
                "parses": [{"consulted": p["consulted"], "file": p["file"]} for p in record["parses"]],
                "origins": record["origins"], "program": record["program"], "blob": record["blob"]}
        try:
            _write_whole(self._path(key), body)
        except OSError:
            return  # a cache that cannot be written is only a slower run

    # -- declarations (pre-pass) ----------------------------------------------
    def declarations(self, key: str) -> Optional[dict]:
        """What the entry declares (:func:`codeparse.text.reader.declarations`: ``classes`` and
        ``functions``), or None."""
        found = self._record(key)["declarations"]
        if (isinstance(found, dict) and isinstance(found.get("classes"), list)
                and isinstance(found.get("functions"), list)):
            return found
        return None

    def put_declarations(self, key: str, declarations: dict) -> None:
        self._record(key)["declarations"] = declarations

    # -- parses ----------------------------------------------------------------
    def parse(self, key: str, ask: Callable[[str], Optional[list]]) -> Optional[Any]:
        """A stored parse whose every consulted declaration gets the same answer from ``ask``
        (its ``file`` is the plain data of a CodeFile with an empty path), else None."""
        record = self._record(key)
        for entry in record["parses"]:
            consulted = entry.get("consulted")
            if not isinstance(consulted, dict) or not isinstance(entry.get("file"), dict):
                continue
            if all(ask(q) == a for q, a in consulted.items()):
                self.hits += 1
                return entry
        self.misses += 1
        return None

    def put_parse(self, key: str, consulted: dict[str, Optional[list]], file: dict) -> None:
        """Keep a parse: ``file``, the plain data of a CodeFile with an empty path."""
        record = self._record(key)
        record["parses"] = ([{"consulted": consulted, "file": file}] + record["parses"])[:MAX_PARSES]
        self._save(key, record)

    # -- whole programs ------------------------------------------------------------
    def program_key(self, parts: list[str]) -> str:
        """The key of one archive's resolved program: its code entries' names and content keys,
        its root class and layout (``parts``, in order)."""
        digest = sha256(f"codeparse-program {FORMAT}\0{self._maker}\0".encode())
        for part in parts:
            digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
        return digest.hexdigest()

    def program(self, key: str) -> Optional[dict]:
        found = self._record(key)["program"]
        return found if isinstance(found, dict) else None

    def put_program(self, key: str, value: dict) -> None:
        record = self._record(key)
        record["program"] = value
        self._save(key, record)

    # -- other results of one blob's bytes (a pickle's scan) ---------------------------
    def blob_key(self, kind: str, data: bytes) -> str:
        digest = sha256(f"codeparse-{kind} {FORMAT}\0{self._maker}\0".encode())
        digest.update(data)
        return digest.hexdigest()

    def blob(self, key: str) -> Any:
        return self._record(key).get("blob")

    def put_blob(self, key: str, value: Any) -> None:
        record = self._record(key)
        record["blob"] = value
        self._save(key, record)

    # -- debug info --------------------------------------------------------------
    def origins(self, key: str, debug_key: str) -> Optional[Any]:
        return self._record(self._origins_key(key, debug_key))["origins"].get(debug_key)

    def put_origins(self, key: str, debug_key: str, value: Any) -> None:
        okey = self._origins_key(key, debug_key)
        record = self._record(okey)
        record["origins"][debug_key] = value
        self._save(okey, record)

    @staticmethod
    def _origins_key(key: str, debug_key: str) -> str:
        """Origins live in their own small file: reading them never loads the parse."""
        return sha256(f"origins\0{key}\0{debug_key}".encode()).hexdigest()


# -- whole inputs (the parent process of `check`) -----------------------------------

INPUT_MAX_BYTES = 32 << 20  # inputs hashed whole by the parent; larger ones always go to a worker
INPUT_ENTRY_BYTES = 16 << 20  # a stored input report read back by the parent: at most this size


class InputCache:
    """The report of a whole input, by the SHA-256 of its bytes (on disk only).

    ``check`` reads each input in a worker process within its budget
    (:mod:`codeparse.gate.budget`).  With a cache folder, the parent first hashes each
    regular file of at most :data:`INPUT_MAX_BYTES` (one sequential read, never
    parsed) and looks up the report a worker made for the same bytes, input path,
    policy and codeparse: a hit is used as it is, with no worker; a miss is read in a
    worker as before, and its report (a readable one only: never one over budget) is
    stored.  The key covers the cache :data:`FORMAT`, the codeparse
    :func:`fingerprint`, the path as given (reports name it), every policy field and the
    bytes' digest.  Entries are JSON (``{"format", "fingerprint", "input"}``), read only
    up to :data:`INPUT_ENTRY_BYTES` and checked field by field
    (:func:`codeparse.contract.records.input_report_ok`) before the parent uses one: a file that
    fails is a miss.  A report is stored only if the input is still the file that was
    hashed (same inode, size, modification and change time) when its worker is done.
    """

    def __init__(self, directory: str | os.PathLike, policy: Any):
        self.directory = Path(directory)
        self._maker = fingerprint()
        self._policy = json.dumps(policy.model_dump(), sort_keys=True, default=str)
        self._seen: dict[str, tuple] = {}  # key -> the file's identity when it was hashed

    def key(self, path: str) -> Optional[str]:
        """The key of the input at ``path``, or None (not a regular file, too large, unreadable).

        The file's identity when it was hashed is kept (:meth:`unchanged`): a report is
        stored under the key only if the file was not written or replaced meanwhile."""
        import stat

        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > INPUT_MAX_BYTES:
                return None
            digest = sha256(f"codeparse-input {FORMAT}\0{self._maker}\0{self._policy}\0".encode()
                                    + path.encode("utf-8", "surrogatepass") + b"\0")
            left = INPUT_MAX_BYTES + 1
            while left > 0:
                chunk = os.read(fd, min(1 << 20, left))
                if not chunk:
                    break
                digest.update(chunk)
                left -= len(chunk)
            if left <= 0:
                return None  # grew past the bound while read
            key = digest.hexdigest()
            self._seen[key] = _identity(info)
            return key
        except OSError:
            return None
        finally:
            os.close(fd)

    def _path(self, key: str) -> Path:
        return _entry_path(self.directory, key)

    def get(self, key: str, path: str) -> Optional[dict]:
        """The stored report of this input, or None."""
        from ..contract.records import input_report_ok

        try:
            with open(self._path(key), "rb") as handle:
                raw = handle.read(INPUT_ENTRY_BYTES + 1)
            if len(raw) > INPUT_ENTRY_BYTES:
                return None
            data = _verified(json.loads(raw))
        except (OSError, ValueError, RecursionError):
            return None
        if (not isinstance(data, dict) or data.get("format") != FORMAT or data.get("fingerprint") != self._maker):
            return None
        report = data.get("input")
        return report if input_report_ok(report, path) else None

    def put(self, key: str, report: dict, path: str) -> None:
        """Keep a report, written whole under a temporary name and renamed into place,
        unless the file at ``path`` is no longer the one hashed (its inode, size, or
        modification or change time differ: it was written or replaced meanwhile)."""
        try:
            if _identity(os.stat(path)) != self._seen.get(key):
                return
        except OSError:
            return
        try:
            _write_whole(self._path(key), {"format": FORMAT, "fingerprint": self._maker, "input": report})
        except (OSError, ValueError, TypeError):
            return  # a cache that cannot be written is only a slower run


def _entry_path(directory: Path, key: str) -> Path:
    """Where an entry of either cache is kept: a folder per first two hex digits of its key."""
    return directory / key[:2] / f"{key}.json"


_secret: Optional[bytes] = None


def cache_secret() -> Optional[bytes]:
    """The key that signs cache entries: read from, or made once in, the user's cache
    folder (never the checked tree), readable by the user alone; None when it cannot be
    had (entries are then neither read nor written)."""
    global _secret
    if _secret is not None:
        return _secret
    import secrets
    import stat

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "codeparse"
    path = folder / "cache-key"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_hex(32))
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077 or info.st_uid != os.getuid():
            return None  # a key others can read or replace signs nothing
        key = path.read_bytes().strip()
    except OSError:
        return None
    if len(key) < 32:
        return None
    _secret = key
    return key


def _mac(body: dict) -> Optional[str]:
    import hashlib
    import hmac

    key = cache_secret()
    if key is None:
        return None
    text = json.dumps(body, separators=(",", ":"))
    return hmac.new(key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def _verified(data: object) -> Optional[dict]:
    """An entry read back, without its ``mac``, if the mac is this machine's; else None."""
    import hmac

    if not isinstance(data, dict) or not isinstance(data.get("mac"), str):
        return None
    body = {k: v for k, v in data.items() if k != "mac"}
    expected = _mac(body)
    if expected is None or not hmac.compare_digest(expected, data["mac"]):
        return None
    return body


def _write_whole(target: Path, body: dict) -> None:
    """Write ``body`` as JSON (the C encoder of ``json.dumps``) under a temporary name in
    ``target``'s folder, then rename it into place: a reader, or another ``--jobs``
    worker, sees the whole entry or none.  Raises what writing or encoding raises."""
    import tempfile  # here: it imports shutil, bz2, lzma and random (some 8 ms), and only writes need it

    mac = _mac(body)
    if mac is None:
        raise OSError("no cache key: entries are not written")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps({"mac": mac, **body}, separators=(",", ":")))
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _identity(info: os.stat_result) -> tuple:
    """What changes when a file is written or replaced (the change time cannot be set back)."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
