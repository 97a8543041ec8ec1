"""The steps of one round (DESIGN "Round pipeline"), one module each, in the order :func:`lyra_solver.decide` runs
them. Each is a pure function ``step(state, settings)`` of the frozen :class:`RoundState` (the cluster and the
results of the steps before) and the round's :class:`Settings`:

1. :func:`~lyra_solver.steps.reclaim.reclaim`: loaned servers back to inference, at least cost;
2. :func:`~lyra_solver.steps.loan.loan`: idle inference servers borrowed for queued or elastic work;
3. :func:`~lyra_solver.steps.admit.admit`: base demand of queued jobs in queue order (then by donation);
4. :func:`~lyra_solver.steps.scale.scale`: the GPUs left to elastic jobs, MCKP over the value table;
5. :func:`~lyra_solver.steps.place.place`: workers onto servers;
6. :func:`~lyra_solver.steps.pack.pack`: the decision of steps 1-5, waiting jobs packed onto running jobs' GPUs.
"""
from lyra_solver.steps import admit, loan, pack, place, reclaim, scale
from lyra_solver.steps._state import RoundState, Settings, StepReport

__all__ = ["STEPS", "RoundState", "Settings", "StepReport", "admit", "loan", "pack", "place", "reclaim", "scale"]

#: Steps 1-5 in order, each with the :class:`RoundState` field its result goes to; step 6,
#: :func:`lyra_solver.steps.pack.pack`, turns the final state into the decision. (The names of this package are
#: the step modules; each module's function of the same name is the step.)
STEPS = (("reclaim", reclaim.reclaim), ("loan", loan.loan), ("admit", admit.admit), ("scale", scale.scale),
         ("place", place.place))
