"""Allocation objectives: the value of each option of each job, one formula per objective (DESIGN "Objectives").

Every objective is a **separable** value ``V_j(w)`` per job ``j`` and option ``w`` (workers), so the scale step's
multiple-choice knapsack (``maximise sum_j V_j(w_j)`` subject to the GPUs) is solved unchanged by every MCKP
method (core, dp, cpsat, highs, cbc exactly; greedy and hull as heuristics). The objectives differ in what a
round's allocation is asked to buy:

``jct-reduction`` (the default, Lyra's)
    ``V = T(min) - T(w) - P [restart]``: the seconds one job saves if nothing else changes. Myopic: it favours
    long jobs (their absolute saving is largest) and weighs a restart against the whole remaining time.
``pollux``
    The power mean with ``p = -1`` of the jobs' speedups (Pollux's cluster fitness), separable as
    ``-sum_j 1 / speedup_j``: ``V = 1 - T(w) / (T(min) f)``, scale-free, so a long job and a short one are
    treated alike.
``srpt``
    The rate at which jobs complete: ``V = H0 (f / T(w) - 1 / T(min))`` (``H0`` = 3,600 s: completions per
    hour). With linear speedup every GPU goes to the job of least remaining time (SRPT); with concave speedup
    the GPUs spread, more to the jobs with less work left.
``hesrpt``
    heSRPT's allocation as a knapsack: ``V = c_j (f T(min) / T(w) - 1)`` with rank weights ``c_j`` from the
    jobs' order by remaining time, so that for speedup ``k ** p`` the optimum gives the job of rank ``i``
    (``i = 1`` the longest of ``m``) the share ``(i/m) ** q - ((i-1)/m) ** q``, ``q = 1 / (1 - p)``.

Restarts over a horizon (every objective but ``jct-reduction``): a rescaled job makes no progress for its
restart penalty ``P``, so over the ``H`` seconds until its allocation next changes it keeps the fraction
``f = H / (H + P)`` of the new option's rate (``f = 1`` for the current option and for jobs not running).
The horizon is the job's age: ``H = now - submit_time`` (at least :data:`MIN_HORIZON`), as in Pollux, which
expects a job that has run for ``H`` seconds to run about as long again; young jobs pay a restart dearly,
old ones hardly. This is the hysteresis against churn: a rescale must gain more than the fraction it loses.
No horizon is longer than the option's own remaining time, ``H_j(w) = min(age_j, T_j(w))``
(:func:`option_horizon`): an allocation holds at most until the job ends, so a job about to finish is not
rescaled for a speed-up it could only use for seconds (on the Pollux workloads 1, 4 and 5 this cut mean JCT by
0.3-1.5% against the age alone).

Each formula is written in the subset of the array API that numpy, cupy and torch share (``where``, arithmetic),
so :mod:`lyra_solver.values` (numpy, the reference) and :mod:`lyra_solver.values_gpu` (torch, cupy) evaluate
the very same expression.

References
----------
Li, J., et al. (2023). Lyra: Elastic scheduling for deep learning clusters. EuroSys '23 (the JCT-reduction
value and the MCKP). Qiao, A., et al. (2021). Pollux: Co-adaptive cluster scheduling for goodput-optimized
deep learning. OSDI '21 (the power mean of speedups, p = -1, and its restart factor). Berg, B., Dorsman,
J.-P., Harchol-Balter, M. (2018). Towards optimality in parallel scheduling. POMACS 1(2) (malleable jobs with
concave speedup: give more servers to the jobs with less work left). Berg, B., Vesilo, R., Harchol-Balter,
M. (2019). heSRPT: Optimal parallel scheduling of jobs with known sizes. arXiv:1903.09346, and (2020) heSRPT:
Parallel scheduling to minimize mean slowdown. Performance Evaluation 144 (the optimal shares for speedup
``k ** p`` by rank).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from lyra_solver.formulations.vocabulary import OBJECTIVES as _VOCABULARY

__all__ = ["JOINT_ADMISSION", "MIN_HORIZON", "OBJECTIVES", "SRPT_SCALE", "check_objective", "fitted_exponent",
           "hesrpt", "hesrpt_weights", "horizons", "jct_reduction", "objective_values", "option_horizon", "pollux",
           "preempt_values", "prepare", "srpt", "useful_fraction", "value_scalar", "wait_values"]

#: The allocation objectives, the default first (Lyra's, so that existing outputs keep their bytes); defined in
#: :mod:`lyra_solver.formulations.vocabulary` with the other options' values.
OBJECTIVES: tuple[str, ...] = _VOCABULARY

#: Shortest restart horizon (seconds): a job just started weighs a restart over at least this long.
MIN_HORIZON = 60.0

#: Longest restart horizon (seconds): however old a job, its allocation is not expected to hold longer.
MAX_HORIZON = float("inf")

#: ``srpt`` values are completions per this many seconds (3,600: per hour), so that they are O(1) numbers.
SRPT_SCALE = 3600.0

#: Smallest useful fraction of a restarted option (Pollux floors speedups at 1e-3 likewise): keeps values finite.
MIN_FRACTION = 1e-3

_TIME_CAP = 1e15  # lyra_solver.values.TIME_CAP (values imports this module)

#: Remaining times below this (seconds) count as this in the rate-based objectives (finite values for jobs
#: with no work left).
MIN_TIME = 1e-9


#: The objectives whose knapsack also admits: every job of the round (running, queued, just preempted) has the
#: option of 0 workers (wait, or preempt a running job) valued by :func:`wait_values`, so admission, preemption
#: and scaling are one decision. ``jct-reduction`` (Lyra's) admits in queue order before scaling, as the paper.
JOINT_ADMISSION: frozenset[str] = frozenset({"hesrpt"})


def check_objective(name: str) -> str:
    """``name`` if it is one of :data:`OBJECTIVES`.

    Raises
    ------
    ValueError
        ``"objective: expected one of jct-reduction, ..., got 'x'"``.
    """
    if not isinstance(name, str) or name not in OBJECTIVES:
        raise ValueError(f"objective: expected one of {', '.join(OBJECTIVES)}, got {name!r}")
    return name


def option_horizon(xp, horizon, t):
    """The horizon of each option: the job's horizon, but no longer than the option's remaining time.

    ``H_j(w) = min(H_j, T_j(w))``: an allocation holds at most until the job ends, so a job about to finish
    weighs a restart against the seconds it has left (60 s left and a 30 s restart: ``f = 2/3``), not against
    its age. ``horizon`` (J, 1), ``t`` (J, M); returns (J, M). O(J M).
    """
    return xp.where(t < horizon, t, horizon + 0.0 * t)


def useful_fraction(xp, restart, penalty, horizon):
    """``f = H / (H + P)`` where the option restarts the job, 1 elsewhere (at least :data:`MIN_FRACTION`).

    Parameters
    ----------
    xp : module
        numpy, cupy or torch.
    restart : (J, M) bool array
        Option ``w`` differs from the running job's current count.
    penalty, horizon : (J, 1) float arrays
        ``P`` (seconds without progress after a restart) and ``H`` (seconds until the next change).

    Notes
    -----
    Over ``H + P`` seconds after a restart the job progresses for ``H``; assumes the allocation then holds for
    ``H`` seconds. O(J M).
    """
    f = horizon / (horizon + penalty + 0.0 * horizon)
    f = xp.where(f < MIN_FRACTION, MIN_FRACTION, f)
    return xp.where(restart, f, 1.0 + 0.0 * f)


def jct_reduction(xp, t, t0, restart, penalty, horizon=None, weight=None):
    """Lyra's value: the seconds one job saves at ``w`` workers.

    ``V_j(w) = T_j(min) - T_j(w) - P_j [running_j and w != current_j]``

    Assumes nothing else changes until the job ends (its allocation, the others'), so a restart is weighed
    against the whole remaining time. Non-decreasing in ``w`` wherever the rate is (restarts aside);
    proportional to the remaining work. O(J M).

    References
    ----------
    Li, J., et al. (2023). Lyra: Elastic scheduling for deep learning clusters. EuroSys '23, section 4.
    """
    return t0 - t - xp.where(restart, penalty, 0.0 * penalty)


def pollux(xp, t, t0, restart, penalty, horizon, weight=None):
    """Pollux's power mean of speedups with ``p = -1``, as a separable sum.

    ``speedup_j(w) = f rate_j(w) / rate_j(min) = f T_j(min) / T_j(w)``; maximising the power mean
    ``(sum_j speedup_j ** -1 / J) ** -1`` is minimising ``sum_j 1 / speedup_j``, so
    ``V_j(w) = 1 - T_j(w) / (f T_j(min))`` (0 at ``min``, below 1).

    Assumes the speedup relative to the job's smallest allocation measures its worth (Pollux measures it
    against a fair share; both are per-job constants, so the argmax is the same up to that normalisation) and
    that restarts cost the fraction ``1 - f`` of the rate (:func:`useful_fraction`; Pollux's own factor is
    ``(age - restarts * delay) / (age + delay)``). Independent of the remaining work: long and short jobs alike.
    O(J M).

    References
    ----------
    Qiao, A., et al. (2021). Pollux: Co-adaptive cluster scheduling for goodput-optimized deep learning.
    OSDI '21, section 4.2 (equation 13, p = -1).
    """
    f = useful_fraction(xp, restart, penalty, option_horizon(xp, horizon, t))
    return 1.0 - t / (_floor(xp, t0) * f)


def srpt(xp, t, t0, restart, penalty, horizon, weight=None):
    """Completion rate: the sum of the jobs' rates of progress through their remaining work.

    ``V_j(w) = H0 (f / T_j(w) - 1 / T_j(min))`` with ``H0`` = :data:`SRPT_SCALE`.

    ``1 / T_j(w) = rate_j(w) / remaining_work_j`` is the fraction of its remaining work a job does per second;
    the marginal value of a GPU is ``(rate(w+1) - rate(w)) / remaining_work``, so at equal speedups the job
    with least work left is served first, and with linear speedup all GPUs go to it: SRPT, optimal for mean
    flow time of malleable jobs with linear speedup (Berg et al. 2018). With concave speedup the GPUs spread
    in proportion to ``remaining_work ** (-1 / (1 - p))`` for ``rate = k ** p``. Assumes the allocation holds
    for the horizon (restart factor ``f``). O(J M).

    References
    ----------
    Berg, B., Dorsman, J.-P., Harchol-Balter, M. (2018). Towards optimality in parallel scheduling. POMACS 1(2).
    Schrage, L. (1968). A proof of the optimality of the shortest remaining processing time discipline.
    Operations Research 16(3).
    """
    f = useful_fraction(xp, restart, penalty, option_horizon(xp, horizon, t))
    return SRPT_SCALE * (f / _floor(xp, t) - 1.0 / _floor(xp, t0))


def hesrpt(xp, t, t0, restart, penalty, horizon, weight):
    """heSRPT's shares as a separable knapsack: weighted speedups with rank weights.

    ``V_j(w) = c_j (f T_j(min) / T_j(w) - 1)``, ``c_j`` from :func:`hesrpt_weights`.

    For speedup ``s(k) = k ** p`` the knapsack's optimum (real relaxation) gives job ``j`` a share proportional
    to ``c_j ** q`` (``q = 1 / (1 - p)``, from ``c_j p k_j ** (p - 1) = lambda``), and the weights make that
    share heSRPT's: the job of rank ``i`` among ``m`` (``i = 1`` the longest remaining) gets
    ``(i/m) ** q - ((i-1)/m) ** q``, the allocation that minimises total flow time of ``m`` malleable jobs
    with that speedup when no more arrive. Assumes a common exponent ``p`` (fitted per round) and the ranks by
    remaining time at ``min`` workers. O(J M).

    References
    ----------
    Berg, B., Vesilo, R., Harchol-Balter, M. (2019). heSRPT: Optimal parallel scheduling of jobs with known
    sizes. arXiv:1903.09346 (the optimal shares by rank for total flow time); the same authors (2020), heSRPT:
    Parallel scheduling to minimize mean slowdown, Performance Evaluation 144.
    """
    f = useful_fraction(xp, restart, penalty, option_horizon(xp, horizon, t))
    return weight * (f * t0 / _floor(xp, t) - 1.0)


def hesrpt_weights(t_min: np.ndarray, exponent: float) -> np.ndarray:
    """Rank weights ``c`` of :func:`hesrpt`: ``c_i = (i ** q - (i - 1) ** q) ** (1 / q) / m``.

    Parameters
    ----------
    t_min : (J,) array
        Remaining time of each job at its smallest option (the rank key: longest first, ties by position).
    exponent : float
        The speedup exponent ``p`` in (0, 1); ``q = 1 / (1 - p)``.

    Returns
    -------
    (J,) array
        Positive, larger for jobs with less time left (non-increasing in ``t_min``).

    Notes
    -----
    O(J log J) (one sort).
    """
    m = int(t_min.shape[0])
    if m == 0:
        return np.zeros(0)
    p = min(max(float(exponent), 0.05), 0.95)
    q = 1.0 / (1.0 - p)
    order = np.lexsort((np.arange(m), -np.asarray(t_min, np.float64)))  # longest first
    i = np.arange(1, m + 1, dtype=np.float64)
    c = (i ** q - (i - 1.0) ** q) ** (1.0 / q) / m
    out = np.empty(m)
    out[order] = c
    return out


def fitted_exponent(rate_min: np.ndarray, rate_max: np.ndarray, w_min: np.ndarray, w_max: np.ndarray) -> float:
    """The common speedup exponent ``p`` of :func:`hesrpt`: the median over elastic jobs of
    ``log(rate(w) / rate(min)) / log(w / min)``, 0.5 when no job is elastic. O(J log J).

    :func:`prepare` passes each job's fastest count as ``w`` (``w_max``, ``rate_max``), not its largest: a job
    past its peak (cifar10 at batch 2,048 runs 9.1x faster on 16 GPUs than on 1, 5.2x on 64) is never given
    more than its peak, so the exponent is read over the range it is used in. On the 8 Pollux workloads this
    fit gave 0-4.4% lower mean JCT than the largest count's (``--preset pollux-artifact``, ``lyra-exact``)."""
    el = (w_max > w_min) & (rate_min > 0) & (rate_max > 0)
    if not el.any():
        return 0.5
    p = np.log(rate_max[el] / rate_min[el]) / np.log(w_max[el] / w_min[el])
    return float(np.median(p))


_FORMULAS = {"jct-reduction": jct_reduction, "pollux": pollux, "srpt": srpt, "hesrpt": hesrpt}


def objective_values(xp, name: str, t, t0, restart, penalty, horizon, weight):
    """The value table of objective ``name`` (one of :data:`OBJECTIVES`) from remaining times.

    Parameters
    ----------
    xp : module
        numpy, cupy or torch.
    t : (J, M) array
        ``T_j(w)`` of each option.
    t0 : (J, 1) array
        ``T_j(min_j)``.
    restart : (J, M) bool array
    penalty, horizon, weight : (J, 1) arrays
        Restart penalty, restart horizon (:func:`horizons`), the objective's per-job weight (1 but for
        ``hesrpt``).

    Returns
    -------
    (J, M) array of values (padding is the caller's).
    """
    return _FORMULAS[check_objective(name)](xp, t, t0, restart, penalty, horizon, weight)


def prepare(jobs: Sequence, objective: str, *, server_gpus: int = 8) -> np.ndarray:
    """The objective's per-job weight: :func:`hesrpt_weights` for ``hesrpt``, ones for every other objective.

    Parameters
    ----------
    jobs : sequence of :class:`lyra_solver.values.JobOptions`
        The jobs of one table: ranks are among them.
    objective : str
    server_gpus : int

    Returns
    -------
    (J,) float array

    Notes
    -----
    O(J log J) for ``hesrpt`` (two rate evaluations per job and a sort), O(J) otherwise.
    """
    n = len(jobs)
    if objective != "hesrpt" or n == 0:
        return np.ones(n)
    from lyra_solver.throughput import rate_one

    def rate(j, w: int) -> float:
        return rate_one(j.throughput, w, gpus_per_worker=j.gpus_per_worker, server_gpus=server_gpus)

    r_min = np.array([rate(j, j.min_workers) for j in jobs])
    best = [_best_count(j, rate) for j in jobs]
    r_best = np.array([r for _, r in best])
    w_best = np.array([w for w, _ in best], np.float64)
    w_min = np.array([j.min_workers for j in jobs], np.float64)
    work = np.array([j.remaining_work for j in jobs], np.float64)
    with np.errstate(divide="ignore"):
        t_min = np.minimum(work / r_min, _TIME_CAP)
    return hesrpt_weights(t_min, fitted_exponent(r_min, r_best, w_min, w_best))


#: Worker counts at most tried per job for its fastest count (:func:`_best_count`).
BEST_COUNT_GRID = 64


def _best_count(job, rate) -> tuple[int, float]:
    """The job's fastest count among ``min..max`` (at most :data:`BEST_COUNT_GRID` evenly spaced counts, ``min``
    and ``max`` included) and its rate; the smallest such count on ties. O(min(M, 64)) rate evaluations."""
    lo, hi = job.min_workers, job.max_workers
    counts = range(lo, hi + 1) if hi - lo < BEST_COUNT_GRID else \
        sorted({int(round(x)) for x in np.linspace(lo, hi, BEST_COUNT_GRID)})
    w, r = lo, rate(job, lo)
    for c in counts:
        rc = rate(job, c)
        if rc > r:
            w, r = c, rc
    return w, r


def value_scalar(objective: str, t: float, t0: float, restart: bool, penalty: float, age: float,
                 weight: float = 1.0) -> float:
    """One entry of the table of ``objective``, in plain floats: the reference the array formulas are tested
    against (written apart from them). ``t`` = ``T_j(w)``, ``t0`` = ``T_j(min)``, ``age`` the job's
    seconds since submission, ``weight`` that of :func:`prepare`."""
    check_objective(objective)
    if objective == "jct-reduction":
        return t0 - t - (penalty if restart else 0.0)
    h = min(age if age > MIN_HORIZON else MIN_HORIZON, MAX_HORIZON, t)
    f = max(h / (h + penalty), MIN_FRACTION) if restart else 1.0
    t, t0 = max(t, MIN_TIME), max(t0, MIN_TIME)
    if objective == "pollux":
        return 1.0 - t / (t0 * f)
    if objective == "srpt":
        return SRPT_SCALE * (f / t - 1.0 / t0)
    return weight * (f * t0 / t - 1.0)


def wait_values(name: str, t0: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The value of 0 workers (the job waits) for each job, on the scale of :func:`objective_values`.

    ``srpt``: ``-H0 / T(min)`` (the job completes at rate 0); ``hesrpt``: ``-c`` (speedup 0); ``pollux``:
    ``1 - 1 / MIN_FRACTION`` (the speedup floored at :data:`MIN_FRACTION`, as Pollux floors it: the power
    mean with ``p = -1`` all but forbids a job from waiting while GPUs could run it). Each is the formula at
    ``T(0) = inf`` with the objective's own floor, so waiting is the option of rate 0 of the same table: a
    queued job is admitted exactly when running it (at some count) is worth more than the GPUs elsewhere.
    Not defined for ``jct-reduction`` (it admits in queue order). O(J).

    Parameters
    ----------
    name : str
        One of :data:`JOINT_ADMISSION`.
    t0 : (J,) array
        ``T_j(min_j)``.
    weight : (J,) array
        The objective's per-job weight (:func:`prepare`).
    """
    if name not in JOINT_ADMISSION:
        raise ValueError(f"objective {name!r} has no wait option (it admits in queue order)")
    t0 = np.asarray(t0, np.float64)
    if name == "srpt":
        return -SRPT_SCALE / np.where(t0 < MIN_TIME, MIN_TIME, t0)
    if name == "hesrpt":
        return -np.asarray(weight, np.float64)
    return np.full(t0.shape, 1.0 - 1.0 / MIN_FRACTION)


def preempt_values(wait: np.ndarray, current: np.ndarray, penalty: np.ndarray, horizon: np.ndarray) -> np.ndarray:
    """The value of preempting a running job: waiting's value less the restart it will pay on resuming.

    ``V(0) - (V(cur) - V(0)) P / H``: over the horizon ``H`` (:func:`horizons`) the job loses its preemption
    penalty ``P`` of progress at the rate it had, the same hysteresis as a rescale's factor ``f`` (a young
    job is dear to stop, an old one cheap). ``wait``, ``current`` (the value of its current count), ``penalty``
    and ``horizon`` are (J,) arrays. O(J).
    """
    gap = np.maximum(np.asarray(current, np.float64) - wait, 0.0)
    return wait - gap * np.asarray(penalty, np.float64) / np.asarray(horizon, np.float64)


def horizons(ages: np.ndarray) -> np.ndarray:
    """Restart horizon of each job: its age, at least :data:`MIN_HORIZON` seconds. O(J)."""
    a = np.asarray(ages, np.float64)
    a = np.where(np.isfinite(a) & (a > MIN_HORIZON), a, MIN_HORIZON)
    return np.where(a > MAX_HORIZON, MAX_HORIZON, a)


def _floor(xp, t):
    return xp.where(t < MIN_TIME, MIN_TIME, t)

