"""``lyra``, ``lyra-exact`` and ``lyra-greedy``: loaning and elastic scaling together (Li et al., Lyra,
EuroSys 2023).

Idle and loaned inference servers are shown, loaned ones asked back when the load needs them, elastic jobs
shown with their ranges; shortest job first. ``lyra`` uses the greedy MCKP and the greedy reclaim,
``lyra-exact`` the exact MCKP and the exact reclaim ILP.

With an objective other than Lyra's (``--objective``), ``lyra`` allocates with the convex-hull greedy
(``allocation="hull"``) instead of Lyra's marginal greedy, and ``lyra-greedy`` keeps the marginal greedy. The
new objectives weigh a restart by a factor on every option but the current one, so a running job's row peaks
at the count it holds: the marginal greedy climbs each row one undominated item at a time from the smallest,
and a job holding many workers stops on the flat part below its peak when capacity runs out first, to climb
back the next round (a restart each way: deepspeech2 alternating 12 and 17 workers every round for an hour on
Pollux workload 4). The hull greedy steps along each row's upper convex hull, peak included. Measured with
``--objective hesrpt`` on Pollux workloads 1-8 (``--preset pollux-artifact``): the marginal greedy 3-28%
above ``lyra-exact``'s mean JCT with 2-5x its restarts, the hull greedy within 4% of it either way (BENCHMARKS.md,
"Objectives"). Lyra's own objective keeps the marginal greedy, as the paper.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from lyra_solver.objectives import OBJECTIVES

from .base import Policy


@dataclass(frozen=True)
class Lyra(Policy):
    """Loaning and elastic scaling; the allocation and reclaim methods are the row's.

    ``objective_allocation``: the allocation method with an objective other than Lyra's when no allocation
    is given with it (``None``: the row's ``allocation`` whatever the objective)."""

    loan: bool = True
    elastic: bool = True
    objective_allocation: str | None = "hull"

    def with_options(self, options: Mapping[str, Any]) -> Policy:
        pol = super().with_options(options)
        given = dict(pol.options)
        if (self.objective_allocation is not None and given.get("objective", OBJECTIVES[0]) != OBJECTIVES[0]
                and "allocation" not in given):
            pol = replace(pol, allocation=self.objective_allocation)
        return pol
