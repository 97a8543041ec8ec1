"""The collector pause that the parse and the round share (:mod:`lyra_solver._collector`): off inside, as found
after (on error too), left off for a caller who turned it off, and the promotion's generations."""
from __future__ import annotations

import gc

import pytest
from lyra_solver._collector import Paused, paused


def test_paused_inside_and_restored_after_even_on_error():
    seen = []

    @paused
    def work(fail: bool) -> int:
        seen.append(gc.isenabled())
        if fail:
            raise ValueError("boom")
        return 7

    assert gc.isenabled()
    assert work(False) == 7 and seen == [False] and gc.isenabled()
    with pytest.raises(ValueError, match="boom"):
        work(True)
    assert seen == [False, False] and gc.isenabled()
    assert work.__name__ == "work"


def test_a_collector_the_caller_turned_off_stays_off():
    gc.disable()
    try:
        with Paused(promote=True):
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def _young() -> set[int]:
    return {id(o) for o in gc.get_objects(generation=0)} | {id(o) for o in gc.get_objects(generation=1)}


def test_promote_moves_what_was_made_inside_to_the_oldest_generation():
    thresholds = gc.get_threshold()
    gc.set_threshold(1_000_000, 10, 10)  # no collection of its own during the test: where objects are is ours
    try:
        with Paused(promote=True):
            made = [[i] for i in range(1_000)]  # lists: always tracked
        with Paused():  # without promotion they stay young
            kept = [[i] for i in range(1_000)]
        young = {id(o) for o in gc.get_objects(generation=0)}
        assert gc.isenabled() and not any(id(d) in young for d in made)  # no young collection will scan them
        assert all(id(d) in young for d in kept)
    finally:
        gc.set_threshold(*thresholds)


def test_promote_leaves_an_application_freeze_alone():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with Paused(promote=True):
            [{"k": i} for i in range(100)]
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
