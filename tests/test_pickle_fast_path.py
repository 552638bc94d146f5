"""The fast path of ``.debug_pkl`` reading (``safepickle.load_plain`` and the row loop of
``debuginfo._rows``) gives what the bounded unpickler gives, on real torch output and on
every mutation of it: the value, or it leaves the decision to the unpickler."""

from __future__ import annotations

import pickle
import pickletools
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeparse.archive import debuginfo
from codeparse.archive.debuginfo import ALLOWED_GLOBALS, _as_list, _Restricted, read_debug_pkl
from codeparse.pickles.safepickle import NotPlain, load_plain

ARCHIVES = Path(__file__).resolve().parent.parent / "fixtures" / "archives"
# Both layouts torch writes: script (string table, offset/range/tag rows) and a trace
# (string table with call-stack line lists, long list builders).
CASES = ("cond_attribute.script.pt", "cond_attribute.trace.pt", "nn_sequential.script.pt")


def _debug_pkls() -> list[bytes]:
    found = []
    for case in CASES:
        with zipfile.ZipFile(ARCHIVES / case) as zf:
            found += [zf.read(n) for n in sorted(zf.namelist()) if n.endswith(".debug_pkl")]
    return found


PKLS = _debug_pkls()


def _outcome(read, data: bytes):
    try:
        return "value", read(data)
    except Exception as exc:  # noqa: BLE001 - the outcome is the exception's kind and reason
        return type(exc).__name__, str(exc)


def _slow(monkeypatch_target, data: bytes):
    """``read_debug_pkl`` with the fast path of the unpickling off: the unpickler reads."""
    def refuse(*_args, **_kwargs):
        raise NotPlain
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(monkeypatch_target, "load_plain", refuse)
        return _outcome(lambda d: read_debug_pkl(d, max_rows=5000, max_chars=200_000)._rows, data)


def test_the_fast_path_reads_every_fixture_as_the_unpickler_does():
    assert len(PKLS) >= 3
    for data in PKLS:
        budget = 8 * len(data) + 4096
        assert load_plain(data, budget, ALLOWED_GLOBALS, (_as_list,)) == _Restricted(data, budget).load()
        fast = _outcome(lambda d: read_debug_pkl(d, max_rows=5000, max_chars=200_000)._rows, data)
        assert fast[0] == "value" and fast == _slow(debuginfo, data)


def test_a_global_the_pickle_does_not_call_is_left_to_the_unpickler():
    """A real .debug_pkl whose first REDUCE is turned into TUPLE2: the value holds the
    `build_intlist` global itself, which the unpickler gives as its own object.  The fast
    path defers (it returned its own function, a value the unpickler never gives)."""
    data = next(d for d in PKLS if b"build_intlist" in d)
    reduce_at = next(pos for op, _arg, pos in pickletools.genops(data) if op.name == "REDUCE")
    changed = data[:reduce_at] + pickle.TUPLE2 + data[reduce_at + 1:]
    budget = 8 * len(changed) + 4096
    with pytest.raises(NotPlain):
        load_plain(changed, budget, ALLOWED_GLOBALS, (_as_list,))
    with pytest.raises(NotPlain):  # one that ends before the call
        load_plain(b"\x80\x02ctorch.jit._pickle\nbuild_intlist\n.", 4096, ALLOWED_GLOBALS, (_as_list,))
    assert _outcome(lambda d: read_debug_pkl(d, max_rows=5000, max_chars=200_000)._rows, changed) \
        == _slow(debuginfo, changed)


@settings(max_examples=250, deadline=None)
@given(which=st.integers(min_value=0), edits=st.lists(
    st.tuples(st.integers(min_value=0), st.sampled_from(["set", "cut", "insert", "end"]),
              st.sampled_from(list(b"KMJ\x87\x86\x85th jqr(e]aRN\x88\x89X\x8c\x8a\x94.\x00\xff"))),
    min_size=1, max_size=4))
def test_on_mutated_debug_pkls_the_fast_path_agrees_or_defers(which, edits):
    """Bytes changed, cut, inserted or the pickle truncated: ``load_plain`` returns the
    unpickler's value or raises NotPlain, and ``read_debug_pkl`` gives the same rows or the
    same error as with the fast path off."""
    data = bytearray(PKLS[which % len(PKLS)])
    for where, kind, byte in edits:
        if not data:
            break
        i = where % len(data)
        if kind == "set":
            data[i] = byte
        elif kind == "cut":
            del data[i:i + 1 + byte % 8]
        elif kind == "insert":
            data[i:i] = bytes([byte])
        else:
            del data[i:]
    data = bytes(data)
    budget = 8 * len(data) + 4096
    try:
        value = load_plain(data, budget, ALLOWED_GLOBALS, (_as_list,))
    except NotPlain:
        pass
    else:
        assert value == _Restricted(data, budget).load()
    assert _outcome(lambda d: read_debug_pkl(d, max_rows=5000, max_chars=200_000)._rows, data) == _slow(debuginfo, data)
