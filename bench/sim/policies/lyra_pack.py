"""``lyra-pack``: ``lyra`` plus Gimbal packing (step 6; Yang et al., Gimbal, ACM TACO 2025).

Jobs carry the packing profiles of the trace mapping (:data:`..traces.PACKING_PROFILES`). A guest runs at its
packed speed on its host's GPUs and returns to the queue each round (as :func:`lyra_solver.apply_decision`
shows it); each round's ``decide`` is told the last round's packing (``keep_packing``), so that a guest keeps
the same GPUs of the same host while the rules allow. The packing kept across rounds is the engine's record of
the last decision (:attr:`View.packing`), which this policy passes on.
"""
from __future__ import annotations

from dataclasses import dataclass

from .lyra import Lyra


@dataclass(frozen=True)
class LyraPack(Lyra):
    """Lyra with packing; ``decide`` keeps the last round's packing where it may."""

    packing: str = "gimbal"

    def decide_kwargs(self, view, state) -> dict:
        return {"keep_packing": view.packing}
