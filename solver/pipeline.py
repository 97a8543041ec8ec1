"""One scheduling round: snapshot in, decision out (DESIGN "Round pipeline").

:func:`decide` validates the snapshot, reads the round's settings, and runs the steps of
:mod:`lyra_solver.steps` in order, each a pure function of the round state so far and the settings:

1. reclaim: give back ``inference.reclaim`` loaned servers at least cost (Lyra's greedy, or the exact ILP);
2. loan: borrow idle inference servers when queued or elastic work can use them;
3. admit: queued and just-preempted jobs get their base demand in queue order (training servers first); a
   job that does not fit in free GPUs may take the extra workers of running elastic jobs (base demand comes
   before elastic extras, as in Lyra);
4. scale: the GPUs left go to elastic jobs by a multiple-choice knapsack over the value table;
5. place: workers onto servers, best fit decreasing (or the placement ILP), keeping running jobs where they
   are unless their worker count changed;
6. pack: jobs still waiting may share GPUs with running jobs (``off`` by default).

Borrowed servers that end up hosting no worker are not borrowed. The output is a :class:`Decision` whose
bytes depend on the snapshot and the options only (timings are added only on request).

Running time of a heuristic round: O(S + J log J + H) for S servers, J jobs and H placement entries, plus the
allocation solver (the exact MCKP core is typically milliseconds on 5,000 classes).

References
----------
Li et al., "Lyra: Elastic Scheduling for Deep Learning Clusters", EuroSys 2023 (capacity loaning, server
preemption cost, JCT-reduction values, knapsack-driven scaling).
"""
from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence

import msgspec
from lyra_solver._collector import paused
from lyra_solver.errors import InputError
from lyra_solver.formulations.vocabulary import (
    ALLOCATIONS,
    OBJECTIVES,
    PACKING_POLICIES,
    PACKINGS,
    PLACEMENTS,
    QUEUE_ORDERS,
    RECLAIMS,
    Allocation,
    Objective,
    Packing,
    PackingPolicy,
    PlacementOption,
    QueueOrder,
    ReclaimOption,
    check_option,
)
from lyra_solver.steps import STEPS, RoundState, Settings
from lyra_solver.steps._state import Cluster
from lyra_solver.steps.decision import Changes, changes_of
from lyra_solver.steps.pack import pack
from lyra_solver.types import Decision, PackingGroup, Snapshot
from lyra_solver.validate import check_keep_packing, validate_snapshot
from lyra_solver.values import BACKENDS

__all__ = ["OPTION_VALUES", "Settings", "changes_built", "decide", "decide_built", "settings_of"]

log = logging.getLogger(__name__)

#: Each option of :func:`decide` and the vocabulary it takes its value from.
OPTION_VALUES: dict[str, tuple[str, ...]] = {
    "queue": QUEUE_ORDERS, "allocation": ALLOCATIONS, "reclaim": RECLAIMS, "placement": PLACEMENTS,
    "packing": PACKINGS, "packing_policy": PACKING_POLICIES, "objective": OBJECTIVES,
}


def settings_of(snap: Snapshot, **overrides) -> Settings:
    """The round's settings: the snapshot's options, overridden by the keyword arguments that are not None.

    Raises :class:`InputError` (path: the argument's name) for a value outside the option's vocabulary
    (case-sensitive: ``"Exact"`` is refused, naming the allowed values) or a time limit that is not a positive
    finite number.
    """
    o = snap.options
    base = dict(queue=o.queue, allocation=o.allocation, reclaim=o.reclaim, placement=o.placement,
                packing=o.packing, time_limit=o.time_limit, packing_policy=o.packing_policy, objective=o.objective)
    for name, value in overrides.items():
        if value is None:
            continue
        if name in OPTION_VALUES:
            try:
                check_option(name, value, OPTION_VALUES[name])
            except ValueError as err:
                raise InputError(name, str(err).partition(": ")[2]) from None
        elif name == "time_limit" and (isinstance(value, bool) or not isinstance(value, int | float)
                                       or not 0 < value < math.inf):
            raise InputError(name, f"must be a positive finite number of seconds, got {value!r}")
        elif name == "backend" and value not in BACKENDS:
            raise InputError(name, f"expected one of {', '.join(BACKENDS)}, got {value!r}")
        base[name] = value
    return Settings(**base)


@paused  # the collector paused for the round (lyra_solver._collector)
def decide(snapshot: Snapshot, *, queue: QueueOrder | None = None, allocation: Allocation | None = None,
           reclaim: ReclaimOption | None = None, placement: PlacementOption | None = None,
           packing: Packing | None = None, time_limit: float | None = None, timings: bool = False,
           backend: str = "auto", deterministic: bool = False, packing_policy: PackingPolicy | None = None,
           keep_packing: Sequence[PackingGroup] = (), objective: Objective | None = None) -> Decision:
    """One scheduling round: the decision for ``snapshot``.

    The snapshot is validated first (:func:`lyra_solver.validate.validate_snapshot`: free for one that
    :func:`lyra_solver.load_snapshot` or an earlier call accepted; a typed snapshot built in Python is checked as
    its JSON would be; :func:`lyra_solver.validate_snapshot` also takes a dict in the JSON format). Keyword
    arguments override the snapshot's ``options``; their values come from the vocabularies of
    :mod:`lyra_solver.formulations.vocabulary`. ``timings=True`` adds ``summary.time_s`` (which makes the output
    differ from run to run). ``backend`` picks the value table's array library
    (:func:`lyra_solver.values.resolve_backend`; the numbers agree within float tolerance). ``keep_packing``
    (the previous decision's ``packing``, from Python only: PackingGroups or dicts in their JSON format, checked
    by :func:`lyra_solver.validate.check_keep_packing`): a packing guest that may share the same host GPUs
    again keeps them instead of being re-paired, which would restart it (:func:`lyra_solver.steps.pack.pack_step`).
    ``objective`` (default ``options.objective``, else ``jct-reduction``) is the allocation's value table, one of
    :data:`lyra_solver.OBJECTIVES` (:mod:`lyra_solver.objectives`); ``summary.jct_reduction``, ``bound`` and
    ``optimality_gap`` are then in that objective's units.

    Raises
    ------
    InputError
        A snapshot or option that breaks a rule of the format (the field path or argument name, and why).
    TypeError
        ``snapshot`` is not a :class:`Snapshot`.

    Examples
    --------
    One 8-GPU training server, one loaned inference server that inference wants back, a running elastic job
    on both and a queued one: the loaned server goes back, the running job shrinks onto the training server
    and the queued job gets its base demand beside it.

    >>> from lyra_solver import decide, parse_snapshot
    >>> snap = parse_snapshot(b'''{"format_version": 1,
    ...   "servers": [{"id": "t0", "pool": "training", "gpus": 8},
    ...               {"id": "i0", "pool": "inference", "gpus": 8, "state": "loaned"}],
    ...   "inference": {"reclaim": 1},
    ...   "jobs": [{"id": "a", "min_workers": 2, "max_workers": 8, "remaining_work": 1e6,
    ...             "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0},
    ...             "placement": {"t0": 4, "i0": 4}},
    ...            {"id": "b", "min_workers": 2, "max_workers": 2, "remaining_work": 1e5,
    ...             "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0}}]}''')
    >>> d = decide(snap, allocation="exact")
    >>> d.servers.reclaim, d.jobs["a"].placement, d.jobs["b"].action, d.jobs["b"].placement
    (('i0',), {'t0': 6}, 'run', {'t0': 2})
    >>> d.summary.methods["allocation"], d.summary.preemptions
    ('mckp-core', 0)
    """
    if not isinstance(snapshot, Snapshot):
        raise TypeError(f"decide: snapshot must be a lyra_solver.Snapshot (from parse_snapshot or load_snapshot), "
                        f"got {type(snapshot).__name__}")
    t0 = time.perf_counter()
    snapshot = validate_snapshot(snapshot)
    keep_packing = check_keep_packing(keep_packing)
    return _decide(snapshot, t0, queue=queue, allocation=allocation, reclaim=reclaim, placement=placement,
                   packing=packing, time_limit=time_limit, timings=timings, backend=backend,
                   deterministic=deterministic, packing_policy=packing_policy, keep_packing=keep_packing,
                   objective=objective)


@paused  # the collector paused for the round (lyra_solver._collector)
def decide_built(snapshot: Snapshot, *, queue: QueueOrder | None = None, allocation: Allocation | None = None,
                 reclaim: ReclaimOption | None = None, placement: PlacementOption | None = None,
                 packing: Packing | None = None, time_limit: float | None = None, timings: bool = False,
                 backend: str = "auto", deterministic: bool = False, packing_policy: PackingPolicy | None = None,
                 keep_packing: Sequence[PackingGroup] = (), objective: Objective | None = None) -> Decision:
    """:func:`decide` for a snapshot its caller built and vouches for: the snapshot is not validated again.

    For the engine's own callers only, whose snapshots are made of values they produced and checked themselves
    (the simulator: servers of its configuration, jobs of its checked trace, placements of earlier decisions
    carried out by :func:`lyra_solver.apply_decision`). Everything else is as :func:`decide`, with the same
    decision for a valid snapshot; the options and ``keep_packing`` are still checked. A snapshot from outside
    (a file, a request, user code) goes to :func:`decide`, which validates it. The saving is the validation's
    O(size) pass: about a fifth of a round on a few hundred jobs.

    Raises
    ------
    InputError
        An option outside its vocabulary, or a bad ``keep_packing``.
    TypeError
        ``snapshot`` is not a :class:`Snapshot`.
    """
    if not isinstance(snapshot, Snapshot):
        raise TypeError(f"decide_built: snapshot must be a lyra_solver.Snapshot, got {type(snapshot).__name__}")
    t0 = time.perf_counter()
    keep_packing = check_keep_packing(keep_packing)
    return _decide(snapshot, t0, queue=queue, allocation=allocation, reclaim=reclaim, placement=placement,
                   packing=packing, time_limit=time_limit, timings=timings, backend=backend,
                   deterministic=deterministic, packing_policy=packing_policy, keep_packing=keep_packing,
                   objective=objective)


def _check_ages(snapshot: Snapshot, objective: str) -> None:
    """Every objective but Lyra's weighs a running job's restart (and preemption) over its age,
    ``now - submit_time`` (:func:`lyra_solver.objectives.horizons`): a running job submitted after ``now`` has
    none. Raises :class:`InputError` naming the first such job's ``submit_time``. A queued job's age is not used
    (starting it restarts nothing). O(J)."""
    now = snapshot.now
    for i, job in enumerate(snapshot.jobs):
        if job.placement is not None and job.submit_time > now:
            raise InputError(f"jobs[{i}].submit_time",
                             f"{job.submit_time!r} is after now ({now!r}): objective {objective!r} weighs restarts "
                             f"over each job's age (now - submit_time)")


#: The keyword arguments of :func:`decide` that :func:`settings_of` reads, in :func:`_settings`' order.
_OVERRIDES = ("queue", "allocation", "reclaim", "placement", "packing", "time_limit", "backend", "packing_policy",
              "objective")

#: The last round's options, overrides (values and their types) and the settings read from them (:func:`_settings`):
#: a simulator passes the same ``Options`` object and keyword arguments every round. One entry, replaced whole.
_last_settings: tuple = (None, None, None)


def _settings(snapshot: Snapshot, values: tuple) -> dict:
    """:func:`settings_of`'s fields (a dict: the caller adds the round's own) for the snapshot's options and the
    keyword arguments :data:`_OVERRIDES` of ``values``, read once per distinct options object and overrides
    (equal values of the same types: ``1`` and ``True`` are not the same time limit): the same values, and the
    same :class:`InputError` for a bad one (which is never kept)."""
    global _last_settings
    key = (values, tuple(map(type, values)))
    opts, kept, fields = _last_settings
    if opts is snapshot.options and kept == key:
        return dict(fields)
    fields = vars(settings_of(snapshot, **dict(zip(_OVERRIDES, values, strict=True))))
    _last_settings = (snapshot.options, key, dict(fields))
    return dict(fields)


@paused  # the collector paused for the round (lyra_solver._collector)
def changes_built(snapshot: Snapshot, *, queue: QueueOrder | None = None, allocation: Allocation | None = None,
                  reclaim: ReclaimOption | None = None, placement: PlacementOption | None = None,
                  time_limit: float | None = None, backend: str = "auto", deterministic: bool = False,
                  objective: Objective | None = None, index: Cluster | None = None) -> Changes:
    """What :func:`decide_built`'s decision changes, without the decision: the jobs whose placement it changes
    (each one's placement after it, by server id), the servers reclaimed and the servers loaned
    (:func:`lyra_solver.steps.decision.changes_of`: the same placements, the same lists).

    For a caller that holds every job's placement itself and carries out only the changes (the simulator):
    assembling the decision of every job was about a sixth of such a round on a few hundred jobs, and that caller
    then compared every job's decision with its placement again. Nor are the steps' reports made in full
    (:attr:`~lyra_solver.steps.Settings.reports`: the greedy allocation finds no LP bound). No packing (step 6):
    ``snapshot.options.packing`` must be ``off``. The snapshot is taken as valid, as by :func:`decide_built`.

    ``index``: the snapshot's index view where the caller keeps its job columns across rounds
    (:meth:`lyra_solver.steps._state.Cluster.given`, equal to what
    :meth:`~lyra_solver.steps._state.Cluster.of` makes of the snapshot, as it does when ``index`` is ``None``):
    a simulator round then visits no job in Python to index it.

    Raises
    ------
    InputError
        An option outside its vocabulary, or packing asked for.
    TypeError
        ``snapshot`` is not a :class:`Snapshot`.
    """
    if not isinstance(snapshot, Snapshot):
        raise TypeError(f"changes_built: snapshot must be a lyra_solver.Snapshot, got {type(snapshot).__name__}")
    if index is not None and index.snap is not snapshot:
        raise ValueError("changes_built: index is the index view of another snapshot")
    t0 = time.perf_counter()
    state, settings = _run_steps(snapshot, t0, queue=queue, allocation=allocation, reclaim=reclaim,
                                 placement=placement, packing=None, time_limit=time_limit, backend=backend,
                                 deterministic=deterministic, packing_policy=None, keep_packing=(),
                                 objective=objective, reports=False, index=index)
    if settings.packing != "off":
        raise InputError("options.packing", f"changes_built takes no packing, got {settings.packing!r}")
    return changes_of(state)


def _decide(snapshot: Snapshot, t0: float, *, queue, allocation, reclaim, placement, packing, time_limit,
            timings: bool, backend: str, deterministic: bool, packing_policy, keep_packing, objective) -> Decision:
    """The round on a snapshot taken as valid (options still checked); ``t0``: when the call began."""
    state, settings = _run_steps(snapshot, t0, queue=queue, allocation=allocation, reclaim=reclaim,
                                 placement=placement, packing=packing, time_limit=time_limit, backend=backend,
                                 deterministic=deterministic, packing_policy=packing_policy,
                                 keep_packing=keep_packing, objective=objective)
    decision = pack(state, settings)
    if timings:  # step 6 included
        summary = msgspec.structs.replace(decision.summary, time_s=round(time.perf_counter() - t0, 6))
        decision = msgspec.structs.replace(decision, summary=summary)
    return decision


def _run_steps(snapshot: Snapshot, t0: float, *, queue, allocation, reclaim, placement, packing, time_limit,
               backend: str, deterministic: bool, packing_policy, keep_packing, objective,
               reports: bool = True, index: Cluster | None = None) -> tuple[RoundState, Settings]:
    """Steps 1-5 on a snapshot taken as valid (options checked here): the round state and the settings.
    ``reports``: whether the steps' reports are read (:attr:`Settings.reports`); ``index``: the snapshot's index
    view, if the caller has it."""
    fields = _settings(snapshot, (queue, allocation, reclaim, placement, packing, time_limit, backend, packing_policy,
                                  objective))
    if fields["objective"] != OBJECTIVES[0]:
        _check_ages(snapshot, fields["objective"])
    # the exact steps share the round's time limit (each gets what is left), or use deterministic limits
    fields.update(deterministic=bool(deterministic), deadline=t0 + fields["time_limit"],
                  keep_packing=tuple(keep_packing), reports=reports)
    settings = Settings(**fields)
    # each step's result added to the state so far (a new RoundState each time, built from the results by name:
    # what dataclasses.replace does, without its pass over the fields)
    done = {"cluster": Cluster.of(snapshot) if index is None else index}
    state = RoundState(**done)
    logged = log.isEnabledFor(logging.INFO)
    for name, step in STEPS:
        done[name] = step(state, settings)
        state = RoundState(**done)
        if logged:
            _log_step(name, state, settings)
    return state, settings


def _log_step(name: str, state: RoundState, settings: Settings) -> None:
    """One line of what a step did (logger ``lyra_solver.pipeline``, level INFO)."""
    if not log.isEnabledFor(logging.INFO):
        return
    if name == "reclaim":
        rec = state.reclaimed
        log.info("reclaim: %d servers back (%s, %s), %d jobs shrunk, %d preempted", len(rec.servers),
                 rec.report.method, rec.report.status, len(rec.shrunk), len(rec.preempted))
    elif name == "loan":
        log.info("loan: %d idle servers offered", len(state.borrowed))
    elif name == "admit":
        adm = state.admitted
        log.info("admit: %d of %d queued jobs (%s), %d donors", len(adm.admitted), len(state.reclaimed.queued),
                 settings.queue, len(adm.donors))
    elif name == "scale":
        r = state.scaled.report
        log.info("scale: %s %s, objective %s, bound %s", r.method, r.status, r.objective, r.bound)
    elif name == "place":
        log.info("place: %s %s", state.placed.report.method, state.placed.report.status)
