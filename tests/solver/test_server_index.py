"""The servers' part of the index view (:func:`lyra_solver.steps._state.server_index`): each server's position by
id, GPUs and kind, and the usual GPU count of a server (the most common; on a tie the largest), which the
``sjf`` key and the value tables read."""
from __future__ import annotations

import pytest
from lyra_solver.steps._state import KIND_IDLE, KIND_LOANED, KIND_TRAINING, ServerKind, server_index
from lyra_solver.types import Server


def _servers(gpus: list[int], states: list[str | None] | None = None) -> tuple:
    states = states or [None] * len(gpus)
    return tuple(Server(id=f"s{k}", pool="training" if st is None else "inference", gpus=g, state=st)
                 for k, (g, st) in enumerate(zip(gpus, states, strict=True)))


@pytest.mark.parametrize(("gpus", "usual"), [
    ([8, 8, 8], 8),  # one size
    ([4], 4),
    ([8, 4, 4, 2], 4),  # the most common
    ([8, 4, 8, 4, 2], 8),  # a tie: the largest
    ([2, 4, 2, 4], 4),
    ([], 8),  # no server: the default
])
def test_the_usual_server_size_is_the_most_common_then_the_largest(gpus, usual):
    assert server_index(_servers(gpus))[4] == usual


def test_positions_gpus_and_kinds():
    servers = _servers([8, 4, 8, 2], [None, "loaned", "idle", "serving"])
    got, sid, gpus, kind, usual = server_index(servers)
    assert got is servers and sid == {"s0": 0, "s1": 1, "s2": 2, "s3": 3} and usual == 8
    assert gpus.tolist() == [8, 4, 8, 2] and not gpus.flags.writeable
    assert kind.tolist() == [KIND_TRAINING, KIND_LOANED, KIND_IDLE, int(ServerKind.SERVING)]
    assert not kind.flags.writeable
