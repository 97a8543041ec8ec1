"""Packing heuristics: Gimbal's greedy squeeze/swell search, Lucid's threshold pairing, Gandiva's random pairing.

All three take a :class:`~lyra_solver.formulations.packing.PackingProblem` (whose candidates already obey the
rules: a guest no larger than its host, memory that fits, one guest per host worker) and return a
:class:`~lyra_solver.formulations.packing.PackingResult` with status ``feasible`` and no bound: the exact
method gives the optimum they are measured against. They are methods of the packing front door
(``solve_packing(problem, method="gimbal")``, ``"lucid"``, ``"random"``), through which the engine calls them.

References
----------
Yang et al., "Gimbal: flexible job packing with worker squeeze/swell", ACM TACO 2025. Hu et al., "Lucid: a
non-intrusive, scalable and interpretable scheduler for deep learning training jobs", ASPLOS 2023 (pairs jobs
whose GPU utilisations fit together). Xiao et al., "Gandiva: introspective cluster scheduling for deep
learning", OSDI 2018 (random packing, undone when it hurts).
"""
from __future__ import annotations

import time

import numpy as np
from lyra_solver.formulations.packing import Member, PackingProblem, PackingResult, make_result, set_value

__all__ = ["gimbal_greedy", "lucid_pairing", "random_pairing"]

FULL = 9  # share index of 1.0


class _Slots:
    """Host workers left per slot while a heuristic packs guests (local mutable state)."""

    def __init__(self, problem: PackingProblem) -> None:
        self.problem = problem
        self.left = problem.slot_capacity.astype(np.int64).tolist()

    def fits(self, c: int) -> bool:
        return all(self.left[s] >= n for s, n in self.problem.uses(c))

    def take(self, c: int) -> None:
        for s, n in self.problem.uses(c):
            self.left[s] -= n


def _priority(problem: PackingProblem) -> list[int]:
    """Guests in Gimbal's order for the policy: ``jct`` shortest first; ``deadline`` least slack first (guests
    without a deadline last, shortest first); ``makespan`` longest first. Ties by index."""
    t = problem.guest_time.tolist()
    if problem.policy == "jct":
        key = lambda g: (t[g], g)  # noqa: E731
    elif problem.policy == "deadline":
        d = problem.guest_deadline.tolist()
        key = lambda g: (d[g] == float("inf"), d[g] - t[g], t[g], g)  # noqa: E731
    else:
        key = lambda g: (-t[g], g)  # noqa: E731
    return sorted(range(problem.n_guests), key=key)


def _squeeze_swell(problem: PackingProblem, h: int, members: list[Member], patience: int,
                   max_steps: int) -> tuple[list[Member], float, int]:
    """Local search over the shares of a packing set: from the given shares, repeatedly take the single 10%
    squeeze or swell (of any job's share on any shared GPU group) that gives the best set value, never undoing
    the previous step; stop after ``patience`` steps without a new best. Returns the best set, its value and the
    steps taken."""
    cur = list(members)
    best, best_val = list(cur), set_value(problem, h, cur)
    steps, idle, last = 0, 0, None
    while idle < patience and steps < max_steps:
        move_best, val_best = None, None
        for i, (c, k, l) in enumerate(cur):
            for which in (0, 1):
                for delta in (-1, 1):
                    nk, nl = (k + delta, l) if which == 0 else (k, l + delta)
                    if not (0 <= nk <= FULL and 0 <= nl <= FULL) or last == (i, which, -delta):
                        continue
                    trial = cur[:i] + [(c, nk, nl)] + cur[i + 1:]
                    val = set_value(problem, h, trial)
                    if val_best is None or val > val_best + 1e-15:
                        move_best, val_best = (i, which, delta, trial), val
        if move_best is None:
            break
        i, which, delta, cur = move_best
        last = (i, which, delta)
        steps += 1
        if val_best > best_val + 1e-15:
            best, best_val, idle = list(cur), val_best, 0
        else:
            idle += 1
    return best, best_val, steps


def gimbal_greedy(problem: PackingProblem, *, patience: int = 3, max_steps: int = 200,
                  deadline: float | None = None) -> PackingResult:
    """Gimbal's packing: guests by policy priority, each onto the host where squeeze/swell gains most.

    For each guest in priority order (see the policies below), each host it may join (slot capacity left) is
    tried: the guest joins with its own and its host's share at 1.0, then the shares of the whole set are
    squeezed or swelled in 10% steps, the best step first, until ``patience`` steps bring no gain. The guest
    joins the host whose set gains most over the set without it, if that gain is positive; the set keeps the
    shares found.

    Priorities: ``jct`` shortest remaining time first (as SRPT); ``deadline`` least slack (time left minus
    remaining time) first; ``makespan`` longest first (as LPT).

    Parameters
    ----------
    problem : PackingProblem
    patience : int
        Steps without gain before the search of one set stops (Gimbal: 3).
    max_steps : int
        Cap on the steps of one search.
    deadline : float, optional
        ``time.perf_counter()`` after which no further guest is considered: the guests packed so far are kept
        (a valid packing; the others wait) and ``backend_status`` says where it stopped. ``None``: no limit.

    Returns
    -------
    PackingResult
        ``method="gimbal"``, status ``feasible``, ``steps`` = squeeze/swell steps taken in all.

    Notes
    -----
    O(Q C_g m^2 s) set evaluations for Q guests with C_g candidates each, sets of m guests and s steps per
    search (s <= max_steps).

    Examples
    --------
    >>> from lyra_solver.formulations.packing import PackingProblem
    >>> p = PackingProblem.build(host_util=[0.9], host_time=[100.0], host_workers=[1], host_gpus=[1],
    ...     host_mem=[10.0], guest_util=[0.9], guest_time=[10.0], guest_gpus=[1], guest_mem=[10.0],
    ...     slot_host=[0], slot_capacity=[1], slot_mem=[80.0], candidates=[(0, 0, [(0, 1)])])
    >>> r = gimbal_greedy(p)
    >>> r.assignment, r.guest_share, r.host_share
    ((0,), (0.9,), (0.1,))
    """
    start = time.perf_counter()
    slots = _Slots(problem)
    sets: dict[int, list[Member]] = {}
    values: dict[int, float] = {}
    total_steps = 0
    order = _priority(problem)
    for done, g in enumerate(order):
        if deadline is not None and time.perf_counter() > deadline:
            note = f"heuristic (stopped at the time limit after {done} of {len(order)} guests)"
            return _result(problem, sets, start, "gimbal", total_steps, backend_status=note)
        choice = None
        for c in problem.candidates_of_guest(g):
            if not slots.fits(c):
                continue
            h = int(problem.cand_host[c])
            members = sets.get(h, []) + [(c, FULL, FULL)]
            found, val, steps = _squeeze_swell(problem, h, members, patience, max_steps)
            total_steps += steps
            gain = val - values.get(h, 0.0)
            if gain > 1e-12 and (choice is None or gain > choice[0] + 1e-15):
                choice = (gain, c, h, found, val)
        if choice is not None:
            _, c, h, found, val = choice
            slots.take(c)
            sets[h], values[h] = found, val
    return _result(problem, sets, start, "gimbal", total_steps)


def lucid_pairing(problem: PackingProblem, *, threshold: float = 1.0) -> PackingResult:
    """Lucid-style pairing: a guest joins a host when their ``gpu_util`` add to at most ``threshold``.

    Guests in index order (the engine passes them in queue order); each joins, among the hosts it may join that
    have no guest yet (Lucid packs pairs) and pass the threshold, the one of smallest combined utilisation
    (then lowest candidate index). Shares stay at 1.0: Lucid does not tune them.

    Parameters
    ----------
    problem : PackingProblem
    threshold : float
        Largest sum of the two utilisations that is packed (default 1.0: the GPU is not over-subscribed).

    Returns
    -------
    PackingResult
        ``method="lucid"``, status ``feasible``.

    Notes
    -----
    O(C) after building the candidate lists.
    """
    start = time.perf_counter()
    slots = _Slots(problem)
    sets: dict[int, list[Member]] = {}
    hu, gu = problem.host_util.tolist(), problem.guest_util.tolist()
    for g in range(problem.n_guests):
        best = None
        for c in problem.candidates_of_guest(g):
            h = int(problem.cand_host[c])
            combined = gu[g] + hu[h]
            if h in sets or combined > threshold + 1e-12 or not slots.fits(c):
                continue
            if best is None or combined < best[0]:
                best = (combined, c, h)
        if best is not None:
            _, c, h = best
            slots.take(c)
            sets[h] = [(c, FULL, FULL)]
    return _result(problem, sets, start, "lucid", 0)


def random_pairing(problem: PackingProblem, *, seed: int = 0, introspect: bool = True) -> PackingResult:
    """Gandiva-style random pairing: guests in a random order, each onto a random host with room.

    Each guest, in an order drawn from ``seed``, joins a host drawn uniformly among those it may join that have
    no guest yet, shares at 1.0. With ``introspect`` (Gandiva's introspection) a pair whose set value is not
    positive is undone, as Gandiva unpacks jobs that slow each other down.

    Parameters
    ----------
    problem : PackingProblem
    seed : int
        Seed of ``numpy.random.default_rng``; same seed, same answer.
    introspect : bool
        Undo pairs that do not gain.

    Returns
    -------
    PackingResult
        ``method="random"``, status ``feasible``.

    Notes
    -----
    O(C) plus the permutation.
    """
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    slots = _Slots(problem)
    sets: dict[int, list[Member]] = {}
    for g in rng.permutation(problem.n_guests).tolist():
        options = [c for c in problem.candidates_of_guest(g)
                   if int(problem.cand_host[c]) not in sets and slots.fits(c)]
        if not options:
            continue
        c = options[int(rng.integers(len(options)))]
        h = int(problem.cand_host[c])
        if introspect and set_value(problem, h, [(c, FULL, FULL)]) <= 0:
            continue
        slots.take(c)
        sets[h] = [(c, FULL, FULL)]
    return _result(problem, sets, start, "random", 0)


def _result(problem: PackingProblem, sets: dict[int, list[Member]], start: float, method: str,
            steps: int, backend_status: str = "heuristic") -> PackingResult:
    q = problem.n_guests
    assignment, gk, hk = [-1] * q, [0] * q, [0] * q
    for members in sets.values():
        for c, k, l in members:
            g = int(problem.cand_guest[c])
            assignment[g], gk[g], hk[g] = c, k, l
    return make_result(problem, assignment, gk, hk, None, proven=False, start=start, method=method,
                       backend_status=backend_status, steps=steps)
