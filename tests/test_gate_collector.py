"""The collector around the inputs of a check (codeparse.gate.budget): what one input leaves
alive is frozen out of the young generation only inside a block that froze the heap (and
hands it back on leaving), never in a caller that froze objects of its own; the bounded
unpickler leaves no cycle holding what it built."""

from __future__ import annotations

import gc
import pickle

import pytest

from codeparse.archive.debuginfo import _Restricted
from codeparse.gate import budget
from codeparse.gate.budget import _heap_frozen, collecting_as_workers, input_done


@pytest.fixture(autouse=True)
def nothing_frozen():
    gc.unfreeze()  # whatever an earlier test of this process left frozen: back to the collector
    yield


def test_input_done_freezes_inside_a_block_that_froze_and_the_block_hands_everything_back():
    assert gc.get_freeze_count() == 0
    with collecting_as_workers():
        frozen = gc.get_freeze_count()
        assert frozen > 0
        kept = [[n] for n in range(1000)]  # what one input leaves alive
        input_done()
        assert gc.get_freeze_count() >= frozen + len(kept)
    assert gc.get_freeze_count() == 0


def test_input_done_does_nothing_outside_a_block():
    assert gc.get_freeze_count() == 0
    input_done()
    assert gc.get_freeze_count() == 0


def test_input_done_never_freezes_for_a_caller_that_froze_its_own_objects():
    gc.freeze()
    try:
        mine = gc.get_freeze_count()
        with _heap_frozen():
            kept = [[n] for n in range(1000)]
            input_done()
            assert gc.get_freeze_count() == mine
        assert gc.get_freeze_count() == mine and kept
    finally:
        gc.unfreeze()


def test_nested_blocks_hand_back_once_at_the_outermost():
    with _heap_frozen():
        with _heap_frozen():
            input_done()
        assert budget._freezing
        assert gc.get_freeze_count() > 0
    assert not budget._freezing
    assert gc.get_freeze_count() == 0


def test_the_unpickler_drops_what_it_built_after_loading():
    # A list builder is memoized by the pickle (as torch writes them): the closure that
    # find_class returns holds the unpickler, so a memo kept after loading is a cycle.
    data = pickle.dumps(None, protocol=2)
    built = (b"\x80\x02ctorch.jit._pickle\nbuild_intlist\nq\x00]q\x01(K\x01K\x02e\x85q\x02Rq\x03"
             b"h\x00]q\x04K\x03a\x85q\x05Rq\x06\x86q\x07.")
    unpickler = _Restricted(built, 1000)
    assert unpickler.load() == ([1, 2], [3])
    assert unpickler.memo == {} and unpickler.stack == [] and unpickler.metastack == []
    assert _Restricted(data, 10).load() is None
