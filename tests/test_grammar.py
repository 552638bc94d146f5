"""The grammar loader: grammars are data, checked when loaded, errors point into them."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import pytest

from codeparse.grammar.engine import _FLAGS, GrammarError, available_grammars, load_grammar, load_grammar_file
from codeparse.grammar.locations import grammar_dir

REAL = grammar_dir() / "torchscript-v2.toml"


def variant(tmp_path: Path, old: str, new: str) -> Path:
    """The real grammar with one piece of text replaced."""
    text = REAL.read_text(encoding="utf-8")
    assert old in text, old
    path = tmp_path / "torchscript-v9.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_shipped_grammars_load_and_list():
    ids = [g.id for g in available_grammars()]
    assert "torchscript-v2" in ids
    g = load_grammar("torchscript-v2").compile_all()
    assert g.info.statements == len(g.statements) > 20
    assert {r.emits for r in g.statements} >= {"class", "def", "if", "else", "for", "assign", "expr"}


def test_unknown_grammar_names_supported_ones():
    with pytest.raises(GrammarError, match=r"'torchscript-v0' is not supported; supported: .*torchscript-v2"):
        load_grammar("torchscript-v0")


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("IDENT = '[A-Za-z_]", "IDENT = '{IDNT}[A-Za-z_]", r"piece \{IDENT\}: unknown piece \{IDNT\}"),
        ("SEP = ',[ ]*+'", "SEP = ',[ ]*+{SEP}'", r"reference cycle SEP -> SEP"),
        ("pattern = 'pass'", "pattern = 'pass('", r"rule 'pass': uncompilable pattern"),
        ("pattern = '(?P<value>{EXPR})(?<=\\))'", "pattern = '(?:x)?'", r"rule 'call_stmt': pattern matches the empty string"),
        ('name = "break"', 'name = "pass"', r"rule 'pass': duplicate rule name"),
        ('emits = "pass"', 'emits = "nothing"', r"rule 'pass': unknown emits 'nothing'"),
        ('keyword = "pass"', 'keyword = "skip"', r"rule 'pass': pattern does not begin with its keyword 'skip'"),
        ("\n[scan]\n", "\n[scan_renamed]\n", r"missing section \[scan\]"),
        ("expr_items = ", "expr_items_gone = ", r"\[fragments\] lacks 'expr_items'"),
        ("|(?&type_expr))'", "|(?&no_such_rule))'", r"unknown recursive sub-pattern \(\?&no_such_rule\)"),
        ("""string_quotes = ['"', "'"]""", """string_quotes = ['""']""",
         r"\[lines\]\.string_quotes: each entry is one character"),
        ("unroll_depth = 4", "unroll_depth = 0", r"\[limits\]\.unroll_depth: a positive integer"),
        ("repeat = { param = '{PARAM_SEP}(?P<param>{PARAM})' }", "repeat = '{PARAM_SEP}'",
         r"rule 'def': repeat: a table of group name to pattern"),
        ("repeat = { param = '{PARAM_SEP}(?P<param>{PARAM})' }", "repeat = { param = '(?P<param>x?)' }",
         r"rule 'def' repeat\.param: pattern matches the empty string"),
    ],
)
def test_bad_grammar_errors_name_file_and_rule(tmp_path, old, new, message):
    path = variant(tmp_path, old, new)
    with pytest.raises(GrammarError) as info:
        load_grammar_file(path)
    text = str(info.value)
    assert text.startswith(str(path))
    assert re.search(message, text), text


def test_invalid_toml_is_a_grammar_error(tmp_path):
    path = tmp_path / "torchscript-v9.toml"
    path.write_text("[grammar\n", encoding="utf-8")
    with pytest.raises(GrammarError, match="invalid TOML"):
        load_grammar_file(path)


def test_no_torchscript_regex_in_python_code():
    """Grammar is data: the engine compiles no pattern that spells TorchScript syntax."""
    package = Path(__file__).resolve().parent.parent / "codeparse"
    offenders = []
    for source in package.glob("*.py"):
        for line_no, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"regex\.(compile|match|search|fullmatch|finditer)\(\s*r?[\"']", line):
                # The loader's own meta-patterns (names of pieces and rules) are allowed.
                if source.name == "grammar.py" and re.search(r"A-Z|a-z", line):
                    continue
                offenders.append(f"{source.name}:{line_no}: {line.strip()}")
    assert offenders == []


@pytest.mark.parametrize("grammar_id", [g.id for g in available_grammars()])
def test_every_statement_pattern_is_linear_on_hostile_lines(grammar_id):
    """Doubling a pathological line roughly doubles the time of every rule of every
    grammar (no backtracking blow-up)."""
    import time

    g = load_grammar(grammar_id)
    hostile = [
        "(" * 2000 + "x", "a." * 4000 + "b", "f(" + "x, " * 4000, '"' + "\\" * 4001, "[1, " * 3000,
        "import " + "a." * 4000, "op_version_set = " + "1" * 8000,
        # Unclosed nested types, element after element: `x: A[B, A[B, ...`.
        "x: " + "A[B, " * 1500, "def f(x: " + "A[B, " * 1500,
    ]

    def doubling(match, line: str, rounds: int) -> list[float]:
        times = []
        for n in (1, 2):
            text = line * n
            # CPU time, the best of several: `regex` lets go of the GIL on long subjects,
            # and on a loaded machine getting it back costs wall time, not work.
            best = float("inf")
            for _ in range(rounds):
                start = time.process_time()
                match(text)
                best = min(best, time.process_time() - start)
            times.append(best)
        return times

    for line in hostile:
        for rule in g.statements:
            # `regex` (long lines), `re`, and the `re` form with recursion unrolled
            for match in (rule.pattern.match, rule.fast.match, *([rule.plain.match] if rule.plain else [])):
                times = doubling(match, line, 3)
                if times[1] >= 3.5 * times[0] + 0.01:  # once more before calling it quadratic
                    times = doubling(match, line, 7)
                # Generous bound: a quadratic rule would take ~4x; timer noise dominates tiny values.
                assert times[1] < 3.5 * times[0] + 0.01, (rule.name, line[:20], times)



@pytest.mark.parametrize("grammar_id", [g.id for g in available_grammars()])
def test_classify_patterns_match_every_line_their_rule_matches(grammar_id):
    """A rule that needs `regex` stands in the `re` master pattern as its
    `classify` pattern, which must match wherever the rule does (checked on every line
    of every fixture text), and the master names the same first rule as trying each.  A
    rule that stands in the master as itself gives its groups from the master's match:
    the same as its own match's."""
    import re
    from pathlib import Path

    g = load_grammar(grammar_id)
    root = Path(__file__).resolve().parent.parent / "fixtures"
    lines = {line.strip() for path in [*root.glob("text/*/*.code"), *root.glob("legacy/**/*.py")]
             for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()}
    checked = 0
    for rule in g.statements:
        if rule.classify is None:
            continue
        classify = re.compile(rule.classify)
        for line in lines:
            if rule.pattern.match(line):
                assert classify.match(line), (rule.name, line)
                checked += 1
    assert checked > 0
    for line in lines:
        word = g.fragments["identifier"].match(line)
        key = word.group() if word else None
        rules = g.rules_by_keyword.get(key, g.generic_rules) if key else g.generic_rules
        expected = next((r.name for r in rules if r.pattern.match(line)), None)
        master = g.master(key)
        first = master.first(line, 0, len(line))
        found = next((r.name for r in master.rules[first:] if r.fast.match(line)), None) if first is not None else None
        assert found == expected, line
        hit = master.find(line, 0, len(line))
        if hit is not None and master.maps[hit[0]] is not False:
            index, m = hit
            mapping = master.maps[index]
            own = master.rules[index].pattern.match(line)
            expected = own.groupdict()
            groups = {name: m.group(name if mapping is None else mapping[name]) for name in expected}
            assert (groups, m.end()) == (expected, own.end()), line


def test_deep_parentheses_cost_linear_time():
    """Deep parentheses (a statement and a condition) read in time linear in the
    depth; the condition is reported too deep (CP106).  Both depths are well past the
    expression limit (200), where the cost was quadratic; the 2,000-deep row itself is
    tests/test_hostile.py's."""
    import time

    from codeparse import parse_text

    def cpu(depth: int) -> tuple[float, list[str]]:
        nest = "(" * depth + "x" + ")" * depth
        text = f"def forward(self, x: Tensor) -> Tensor:\n  y = {nest}\n  if bool({nest}):\n    y = x\n  return y\n"
        best, codes = float("inf"), []
        for _ in range(2):
            start = time.process_time()
            codes = [d["code"] for d in parse_text(text, as_dict=True)["diagnostics"]]
            best = min(best, time.process_time() - start)
        return best, codes

    (t1, codes), (t2, _) = cpu(500), cpu(1000)
    assert codes == ["CP106"]
    assert t2 < 3.0 * t1 + 0.05, (t1, t2)


@pytest.mark.parametrize("grammar_id", [g.id for g in available_grammars()])
def test_type_shortcut_ends_where_the_recursive_type_does(grammar_id):
    """`TYPE` reads a dotted name without brackets without a recursive call: at every
    position of every fixture line where a type may start, it ends where `type_expr` does."""
    import regex
    from pathlib import Path

    from codeparse.grammar.engine import _Compiler

    g = load_grammar(grammar_id)
    comp = _Compiler(g.path, g.raw["patterns"], g.raw.get("recursive", {}))
    shortcut = regex.compile(comp.with_defines(comp.expand("{TYPE}", "test"), "test"))
    recursive = regex.compile(comp.with_defines("(?&type_expr)", "test"))
    root = Path(__file__).resolve().parent.parent / "fixtures"
    lines = {line.strip() for path in [*root.glob("text/*/*.code"), *root.glob("legacy/**/*.py")]
             for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()}
    checked = 0
    for line in lines:
        for pos in range(len(line)):
            if line[pos - 1:pos] in ("", " ", "[", "(", ":"):
                a, b = shortcut.match(line, pos), recursive.match(line, pos)
                assert (a and a.end()) == (b and b.end()), (line, pos)
                checked += a is not None
    assert checked > 1000


def test_groups_renamed_in_the_master_read_like_the_rules_own(tmp_path):
    """Two rules of one master alternation with a group of the same name (`assign` and
    `call_stmt` both name `value` once `call_stmt` has no `classify`): the later one's groups
    are renamed, and its statements read the same through `group`, `span_of` and `match`."""
    from codeparse.parse.statements import parse_statements
    from codeparse.parse.source import SourceText

    path = variant(tmp_path, "classify = '[^\\n]*+'\n", "")
    renamed = load_grammar_file(path)
    real = load_grammar("torchscript-v2")
    master = renamed.master(None)
    maps = dict(zip((r.name for r in master.rules), master.maps))
    assert maps["assign"] is None and isinstance(maps["call_stmt"], dict)
    text = "def f(self, x: Tensor) -> Tensor:\n  y = torch.add(x, x)\n  torch.append(l, y)\n  return y\n"
    got = parse_statements(SourceText(text, "t"), renamed).body[0].body
    want = parse_statements(SourceText(text, "t"), real).body[0].body
    for a, b in zip(got, want):
        assert (a.kind, a.start, a.end, a.group("value"), a.span_of("value")) == \
            (b.kind, b.start, b.end, b.group("value"), b.span_of("value"))
        ma, mb = a.match, b.match
        assert (ma.span("value"), ma.group(), ma.end(), ma.groupdict()["value"], "targets" in ma.re.groupindex,
                "type" in ma.re.groupindex) == (mb.span("value"), mb.group(), mb.end(), mb.groupdict()["value"],
                                                "targets" in mb.re.groupindex, "type" in mb.re.groupindex)
    assert [s.kind for s in got] == ["assign", "expr", "return"]
    with pytest.raises(IndexError):
        got[1].group("targets")
    # The rule that kept its names is the only one whose names the master's match knows.
    assert {n for n in got[0].match.re.groupindex if not n.startswith("_")} == set(got[0].rule.group_names())


def _decoded(store: dict, engine: str, sources) -> dict:
    """A store's ``engine`` entries by source (of ``sources``), each with its code unpacked."""
    from codeparse.grammar import compiled as patterns

    field = 4 if engine == "re" else 2
    out = {}
    for source in sources:
        entry = store[engine].get(patterns.store_key(source))
        if entry is not None:
            code = patterns.unpack(source, entry[field])
            assert code is not None, source[:80]
            out[source] = [*entry[:field], code, *entry[field + 1:]]
    return out


def test_stored_patterns_cover_the_grammars():
    """`grammars/patterns.json` holds every pattern the grammars compile, and what this
    interpreter's engines make of each when it wrote them (`python scripts/compile_patterns.py`)."""
    import json

    from codeparse.grammar import compiled as patterns

    writer = _writer()
    stored = json.loads((grammar_dir() / patterns.STORE_FILE).read_bytes())
    found = writer.sources()
    built = json.loads(json.dumps(writer.build()))
    hint = "the stored patterns lag behind the grammars: run `python scripts/compile_patterns.py`"
    assert set(stored["re"]) == set(built["re"]) and set(stored["not_re"]) == set(built["not_re"]), hint
    assert set(stored["regex"]) == set(built["regex"]), hint
    every = found["re"] | found["regex"]
    assert len(_decoded(stored, "re", every)) == len(stored["re"]), hint  # each entry is its source's
    assert len(_decoded(stored, "regex", found["regex"])) == len(stored["regex"]), hint
    if stored["engines"]["re"] == built["engines"]["re"]:
        assert _decoded(stored, "re", every) == _decoded(built, "re", every), hint
    if stored["engines"]["regex"] == built["engines"]["regex"]:
        # `regex` orders a set of characters by their hashes (PYTHONHASHSEED): the same code
        # in another order; compared as a multiset of bytes.
        assert {s: _regex_shape(e) for s, e in _decoded(stored, "regex", found["regex"]).items()} == {
            s: _regex_shape(e) for s, e in _decoded(built, "regex", found["regex"]).items()}, hint


def test_compile_patterns_help_writes_nothing_and_output_goes_where_asked(tmp_path):
    """The script's ``--help`` prints its usage and leaves the store alone; ``--output``
    writes the same patterns to another file."""
    import json
    import subprocess
    import sys

    from codeparse.grammar import compiled as patterns

    script = Path(__file__).resolve().parent.parent / "scripts" / "compile_patterns.py"
    store = grammar_dir() / patterns.STORE_FILE
    before = store.stat().st_mtime_ns, store.read_bytes()
    shown = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, check=True)
    assert shown.stdout.startswith("usage: compile_patterns.py") and "--output" in shown.stdout
    assert (store.stat().st_mtime_ns, store.read_bytes()) == before
    target = tmp_path / "patterns.json"
    wrote = subprocess.run([sys.executable, str(script), "--output", str(target)], capture_output=True, text=True,
                           check=True)
    assert str(target) in wrote.stdout
    assert (store.stat().st_mtime_ns, store.read_bytes()) == before
    written, stored = (json.loads(p.read_bytes()) for p in (target, store))
    assert set(written["regex"]) == set(stored["regex"]) and set(written["re"]) == set(stored["re"])
    tables = patterns.TABLES_DIR
    assert [p.read_bytes() for p in sorted((tmp_path / tables).glob("*.json"))] == [
        p.read_bytes() for p in sorted((grammar_dir() / tables).glob("*.json"))]


def _writer():
    import importlib.util

    script = Path(__file__).resolve().parent.parent / "scripts" / "compile_patterns.py"
    spec = importlib.util.spec_from_file_location("compile_patterns", script)
    writer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(writer)
    return writer


def test_compiled_toml_files_are_what_tomllib_reads():
    """Each `grammars/*.toml` has its compiled form (`grammars/compiled/<name>.json`, written by
    `python scripts/compile_patterns.py`): the checksum of the file's bytes and what tomllib
    reads from it, in its order; `read_toml` gives exactly that."""
    import json
    import tomllib

    from codeparse.grammar import compiled as patterns

    folder = grammar_dir()
    hint = "a compiled file lags behind its TOML file or table: run `python scripts/compile_patterns.py`"
    forms = _writer().tables(folder)
    assert set(forms) == {p.name for p in (folder / patterns.TABLES_DIR).glob("*.json")}, hint
    assert {p.stem + ".json" for p in folder.glob("*.toml")} | {"operators.json"} == set(forms) and len(forms) >= 6
    for name, body in forms.items():
        stored = (folder / patterns.TABLES_DIR / name).read_bytes()
        if name == "operators.json":  # deflated buckets: compared inflated (zlib's bytes may differ by version)
            stored, body = (_inflated_index(json.loads(b)) for b in (stored, body))
        assert stored == body, hint
    for path in sorted(folder.glob("*.toml")):
        want = tomllib.loads(path.read_text(encoding="utf-8"))
        got = patterns.read_toml(path)
        assert got == want and json.dumps(got) == json.dumps(want), path.name


def _inflated_index(index: dict) -> dict:
    import base64
    import json

    return {**index, "buckets": [json.loads(zlib.decompress(base64.b64decode(b))) for b in index["buckets"]]}


@pytest.mark.parametrize("form", ["other text", "missing", "not json", "other format", "shape"])
def test_a_toml_file_unlike_its_compiled_form_is_parsed(tmp_path, form):
    """A compiled form is used only when it was made from the file's own bytes (their
    checksum); anything else (a file edited since, no form, a damaged one) is the file
    parsed, and a broken file still fails as tomllib fails."""
    import json
    import tomllib

    from codeparse.grammar import compiled as patterns

    path = tmp_path / "table.toml"
    path.write_text('[a]\nb = 1\nc = "d"\n', encoding="utf-8")
    (tmp_path / patterns.TABLES_DIR).mkdir()
    stored = tmp_path / patterns.TABLES_DIR / "table.json"
    body = {"format": patterns.TABLES_FORMAT, "checksum": patterns.checksum(path.read_bytes()), "data": {"a": {"b": 2}}}
    if form == "other format":
        body["format"] += 1
    if form == "shape":
        body["data"] = []
    if form != "missing":
        stored.write_text("{" if form == "not json" else json.dumps(body), encoding="utf-8")
    if form == "other text":  # edited after its form was written: one value, same length
        path.write_text('[a]\nb = 3\nc = "d"\n', encoding="utf-8")
    assert patterns.read_toml(path) == {"a": {"b": 3 if form == "other text" else 1, "c": "d"}}
    path.write_text('[a]\nb = 1\nc = "d"\n', encoding="utf-8")
    body["checksum"], body["format"], body["data"] = patterns.checksum(path.read_bytes()), patterns.TABLES_FORMAT, {"z": 1}
    stored.write_text(json.dumps(body), encoding="utf-8")
    assert patterns.read_toml(path) == {"z": 1}  # the same bytes: its form is what is read
    path.write_text("[a\n", encoding="utf-8")
    with pytest.raises(tomllib.TOMLDecodeError):
        patterns.read_toml(path)


def test_a_grammar_edited_in_a_copy_is_read_from_its_text(tmp_path):
    """The shipped grammar folder copied with its compiled forms: each file is read from its
    form until its text is edited; then the edit is what is read, never the stale form."""
    import shutil
    import tomllib

    from codeparse.grammar import compiled as patterns

    folder = tmp_path / "grammars"
    shutil.copytree(grammar_dir(), folder)
    name = "torchscript-v2.toml"
    path = folder / name
    text = path.read_text(encoding="utf-8")
    assert patterns.read_toml(path) == tomllib.loads(text)
    form = (folder / patterns.TABLES_DIR / (path.stem + ".json")).read_text(encoding="utf-8")
    edited = text.replace('[grammar]\n', '[grammar]\nedited = "in a copy"\n', 1)
    assert edited != text
    path.write_text(edited, encoding="utf-8")
    got = patterns.read_toml(path)
    assert got == tomllib.loads(edited) and got["grammar"]["edited"] == "in a copy"
    assert (folder / patterns.TABLES_DIR / (path.stem + ".json")).read_text(encoding="utf-8") == form  # untouched


def _regex_shape(entry: list) -> list:
    return [*entry[:2], sorted(entry[2]), *entry[3:]]


def _every_source() -> set:
    found = _writer().sources()
    return found["re"] | found["regex"]


def test_patterns_from_the_store_equal_compiled_ones():
    import regex

    from codeparse.grammar import compiled as patterns
    from codeparse.grammar.engine import _FLAGS

    assert patterns.REGEX_VERSION0 == regex.VERSION0 and patterns._regex_version() == regex.__version__
    store = patterns._store()
    assert store["re"] and patterns._regex_usable(), "no stored pattern serves this interpreter"
    every = _every_source()
    in_re, in_regex = _decoded(store, "re", every), _decoded(store, "regex", every)
    assert len(in_re) == len(store["re"]) and len(in_regex) == len(store["regex"])
    for source in in_re:
        assert patterns.compile_re(source) == re.compile(source)  # `re` compares the compiled code
    for source in in_regex:
        loaded, compiled = patterns.compile_regex(source, _FLAGS)._pickled_data, regex.compile(source, _FLAGS)._pickled_data
        assert [*loaded[:2], sorted(loaded[2]), *loaded[3:]] == [*compiled[:2], sorted(compiled[2]), *compiled[3:]]


def test_a_bad_stored_entry_is_compiled_instead(monkeypatch):
    from codeparse.grammar import compiled as patterns

    source = "(?P<word>[a-z]++)"
    bad = {"re": {patterns.store_key(source): [32, 0, {"word": 1}, [None, "word"], patterns.pack(source, b"AAAA")]},
           "regex": {}, "regex_tag": None, "not_re": set()}
    monkeypatch.setattr(patterns, "_store", lambda: bad)
    assert patterns.compile_re(source) == re.compile(source)


def test_an_entry_packed_for_another_source_is_a_miss(monkeypatch):
    """Two sources with one key (checksums and length alike) never share an entry: the
    entry holds its source, and another source is compiled."""
    from codeparse.grammar import compiled as patterns

    source, other = "(?P<word>[a-z]++)", "(?P<word>[a-y]++)"
    assert len(source) == len(other) and patterns.store_key(source) != patterns.store_key(other)
    stored = re.compile(other)
    code = patterns.unpack(other, patterns.pack(other, b"\x01\x00\x00\x00"))
    assert code == b"\x01\x00\x00\x00" and patterns.unpack(source, patterns.pack(other, code)) is None
    entry = [stored.flags, stored.groups, dict(stored.groupindex), [None, "word"], patterns.pack(other, code)]
    monkeypatch.setattr(patterns, "_store", lambda: {"re": {patterns.store_key(source): entry}, "regex": {},
                                                     "regex_tag": None, "not_re": set()})
    assert patterns.compile_re(source) == re.compile(source)


@pytest.mark.parametrize("damage", ["flipped", "truncated", "shape", "entry"])
def test_a_damaged_store_is_a_slower_start_never_a_failure(tmp_path, monkeypatch, damage):
    import json

    from codeparse.grammar import locations, compiled as patterns

    stored = (grammar_dir() / patterns.STORE_FILE).read_bytes()
    source = "(?P<word>[a-z]++)"
    if damage == "flipped":  # a bit flipped inside the JSON: not JSON any more
        at = stored.index(b'"format"')
        data = stored[:at] + bytes([stored[at] ^ 0x40]) + stored[at + 1:]
    elif damage == "truncated":
        data = stored[: len(stored) // 2]
    elif damage == "shape":  # valid JSON of the wrong shape
        data = b'{"format": 2, "engines": [], "re": [1], "regex": {"a": 5}, "not_re": 7}'
    else:  # an entry whose deflated code is damaged: zlib.error, compiled instead
        content = json.loads(stored)
        compiled = re.compile(source)
        field = patterns.pack(source, b"\x00" * 64)
        content["re"] = {patterns.store_key(source): [compiled.flags, compiled.groups, dict(compiled.groupindex),
                                                      [None, "word"], field[:8] + "AAAA" + field[12:]]}
        data = json.dumps(content).encode()
    (tmp_path / patterns.STORE_FILE).write_bytes(data)
    monkeypatch.setattr(locations, "grammar_dir", lambda: tmp_path)
    patterns._store.cache_clear()
    monkeypatch.setattr(patterns, "_regex_usable", lambda: True)
    try:
        assert patterns.compile_re(source) == re.compile(source)
        assert patterns.compile_regex("a", _FLAGS).match("a")
        assert not patterns.known_not_re(source)
    finally:
        patterns._store.cache_clear()


_PICKLE_GRAMMAR = """
import pickle, sys
from codeparse import parse_text
from codeparse.grammar.engine import load_grammar
text = 'def forward(self,\\n    x: Tensor) -> Tensor:\\n  _0 = (self.conv).forward(x, )\\n  return _0\\n'
parse_text(text)  # compiles the rules it needs, some from the store with regex's engine alone
assert "regex" not in sys.modules
data = pickle.dumps(load_grammar())
assert pickle.loads(data).id == load_grammar().id
"""


def test_a_grammar_with_stored_regex_patterns_pickles_before_regex_is_imported():
    # `regex` registers how its patterns pickle when it is imported; a pattern built by its
    # engine alone (from the store) could not be pickled until then.
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    done = subprocess.run([sys.executable, "-c", _PICKLE_GRAMMAR], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]


_CHECK_WITH_ENGINES = """
import sys
from codeparse.grammar import compiled as patterns
if sys.argv[1] == "other":  # as another Python or regex would see the store: no entry serves it
    tags = patterns.engine_tags
    patterns.engine_tags = lambda with_regex=True: {k: v + "+other" for k, v in tags(with_regex).items()}
from codeparse.cli.app import main
code = main(["check", "--isolated", "--jobs", "1", "--format", "json", *sys.argv[2:]])
assert patterns._store()["re"] if sys.argv[1] == "this" else not patterns._store()["re"] and not patterns._regex_usable()
sys.exit(code)
"""


def test_the_stored_patterns_and_compiled_ones_check_alike():
    # What the grammars match must not depend on whether the store serves this engine.
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    inputs = [*sorted(map(str, (root / "fixtures" / "archives").glob("[a-f]*.pt"))), str(root / "fixtures" / "files")]
    env = dict(os.environ, PYTHONPATH=str(root))
    runs = [subprocess.run([sys.executable, "-c", _CHECK_WITH_ENGINES, engines, *inputs], capture_output=True,
                           text=True, env=env) for engines in ("this", "other")]
    assert all(run.returncode in (0, 1) for run in runs), [run.stderr[-2000:] for run in runs]
    assert runs[0].stdout == runs[1].stdout and len(runs[0].stdout) > 100_000


def _statements(stmts):
    for s in stmts:
        yield s
        yield from _statements(s.body)
        if s.orelse:
            yield from _statements(s.orelse)


@pytest.mark.parametrize("grammar_id", [g.id for g in available_grammars()])
def test_unrolled_rules_match_as_the_recursive_ones(grammar_id):
    """A rule that calls a recursive sub-pattern has an `re` form, its calls unrolled
    `[limits].unroll_depth` deep, that the parser uses on a statement holding no string whose
    brackets nest at most 3 deep (or, on one line, whose strings `[lines].nested_strings` reads
    whole, the brackets outside them nested as shallow).  On every such statement of every fixture text, archive code
    file and legacy file (signatures over several lines included), every such rule matches as
    its `regex` pattern does: where it matches, how far, every group, and every capture of a
    repeated group (a signature's parameters)."""
    from codeparse.parse.statements import RepeatedMatch, nesting, parse_statements
    from codeparse.parse.source import SourceText

    g = load_grammar(grammar_id)
    rules = [r for r in g.statements if r.plain is not None]
    if "unroll_depth" not in g.limits:
        assert not rules
        return
    assert {r.name for r in rules} >= {"def", "attribute_decl"}
    nested = nesting(g)
    root = Path(__file__).resolve().parent.parent / "fixtures"
    paths = [*root.glob("text/*/*.code"), *root.glob("archive_code/**/*.py"), *root.glob("legacy/**/*.py")]
    checked: dict[str, int] = {}
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        for stmt in _statements(parse_statements(SourceText(text, str(path)), g).body):
            stop = text.find("\n", stmt.end)
            stop = len(text) if stop == -1 else stop
            span = text[stmt.start:stop]
            if (nested(text, stmt.start, stop).end() != stop or '"' in span or "'" in span) and (
                    "\n" in span or g.lines["nested_strings"].match(text, stmt.start, stop).end() != stop):
                continue
            for rule in rules:
                want = rule.pattern.match(text, stmt.start, stop)
                got = rule.plain.match(text, stmt.start, stop)
                assert (got is None) == (want is None), (rule.name, span)
                if want is None:
                    continue
                if rule.repeat:
                    got = RepeatedMatch(got, rule.repeat, stop)
                    for name in rule.repeat:
                        assert got.spans(name) == want.spans(name), (rule.name, span)
                # (`regex` also lists the recursive sub-patterns' groups, never set by a match)
                names = [n for n in rule.group_names() if n not in g.raw["recursive"]]
                assert got.span() == want.span(), (rule.name, span)
                assert [got.group(n) for n in names] == [want.group(n) for n in names], (rule.name, span)
                assert [got.span(n) for n in names] == [want.span(n) for n in names], (rule.name, span)
                checked[rule.name] = checked.get(rule.name, 0) + 1
    if grammar_id == "torchscript-v2":
        assert checked.get("def", 0) > 500 and checked.get("attribute_decl", 0) > 500, checked
        assert checked.get("annotation_decl", 0) > 500, checked  # a string in every one


def test_a_parsed_toml_file_reads_as_its_text_with_universal_newlines(tmp_path):
    """A file without a matching compiled form is read once, as bytes, and parsed as
    `Path.read_text` gives its text: Windows and old Mac line ends inside a multi-line
    string read as they would from the text."""
    import tomllib

    from codeparse.grammar import compiled as patterns

    path = tmp_path / "table.toml"
    path.write_bytes(b'[a]\r\nb = """x\r\ny\rz"""\r\nc = 1\r\n')
    want = tomllib.loads(path.read_text(encoding="utf-8"))
    assert want == {"a": {"b": "x\ny\nz", "c": 1}}
    assert patterns.read_toml(path) == want
