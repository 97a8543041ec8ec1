"""CBC on a PuLP model with the whole call bounded by a wall-clock deadline (issue 9).

PuLP's ``prob.solve(PULP_CBC_CMD(timeLimit=...))`` writes an MPS file, starts CBC and waits for it without a
limit of its own; CBC's ``-sec`` counts only its own search, not reading the file, presolve or the root LP,
so a big model overran its limit by its set-up time. :func:`run_cbc` does what PuLP does with the deadline
kept throughout: it writes the model, gives CBC only the time left (``-sec``, elapsed time), and kills CBC's
process group when it is still running :data:`KILL_GRACE` seconds after the deadline. A killed run has no
solution (``killed`` is set and the problem's status is PuLP's "Not Solved"); a run that could not start
because no time was left likewise.

References
----------
Forrest, J., Lougee-Heimer, R. (2005). CBC user guide. COIN-OR, https://github.com/coin-or/Cbc.
Mitchell, S., O'Sullivan, M., Dunning, I. (2011). PuLP: a linear programming toolkit for Python.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass

__all__ = ["KILL_GRACE", "CbcRun", "run_cbc"]

#: Seconds CBC may run past the deadline (finishing its search, writing its solution) before it is killed.
KILL_GRACE = 0.25
#: CBC is not started with less than this many seconds left (its start alone takes about this long).
MIN_START = 0.02


@dataclass(frozen=True)
class CbcRun:
    """What one bounded CBC run did: ``ran`` (CBC was started), ``killed`` (stopped at the hard limit), ``log``
    (CBC's output) and ``note`` (why it did not run or was killed, for the backend status)."""

    ran: bool
    killed: bool
    log: str
    note: str = ""


def _solver(threads: int, gap_rel: float | None, gap_abs: float | None):
    import pulp

    with warnings.catch_warnings():
        # PuLP 3.x announces the bundled-CBC interface's removal in 4.0; it is the one bundled here
        warnings.simplefilter("ignore", DeprecationWarning)
        return pulp.PULP_CBC_CMD(msg=False, threads=int(threads), gapRel=gap_rel, gapAbs=gap_abs)


def run_cbc(prob, *, deadline: float | None, threads: int = 1, gap_rel: float | None = 0.0,
            gap_abs: float | None = None) -> CbcRun:
    """Solve the PuLP problem ``prob`` with the bundled CBC, all of it done by ``deadline`` (+ :data:`KILL_GRACE`).

    On return ``prob.status``/``prob.sol_status`` and the variables' values are set as ``prob.solve`` would set
    them; a run that did not start or was killed leaves "Not Solved" / "No Solution Found".

    Parameters
    ----------
    prob : pulp.LpProblem
    deadline : float or None
        ``time.perf_counter()`` by which the answer is due; ``None``: no limit.
    threads : int
    gap_rel, gap_abs : float, optional
        CBC's ``ratio`` and ``allow`` (0 relative gap: proven optimal).

    Returns
    -------
    CbcRun

    Notes
    -----
    Writing the MPS file is O(model) Python work in PuLP; it is done first and its time counts.
    """
    import pulp

    solver = _solver(threads, gap_rel, gap_abs)
    prob.status, prob.sol_status = pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound
    was_none, dummy = prob.fixObjective()  # as prob.solve does: an empty objective gets a dummy variable
    try:
        return _run(prob, solver, deadline)
    finally:
        prob.restoreObjective(was_none, dummy)


def _run(prob, solver, deadline: float | None) -> CbcRun:
    import pulp

    with tempfile.TemporaryDirectory(prefix="lyra_cbc_") as tmp:
        mps, sol, log_path = (os.path.join(tmp, name) for name in ("model.mps", "model.sol", "cbc.log"))
        variables, var_names, con_names, _ = prob.writeMPS(mps, rename=1)
        args = [solver.path, mps]
        if prob.sense == pulp.LpMaximize:
            args.append("-max")
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None:
            if left < MIN_START:
                return CbcRun(False, False, "", "time limit reached before CBC started")
            args += ["-sec", f"{left:.3f}"]
        for option in solver.getOptions():  # ratio, allow, threads, timeMode elapsed
            args += ["-" + option.split()[0], *option.split()[1:]]
        args += ["-solve", "-printingOptions", "all", "-solution", sol]
        with open(log_path, "w") as out:
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
            try:
                proc.wait(timeout=None if deadline is None else max(deadline + KILL_GRACE - time.perf_counter(),
                                                                    0.0))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return CbcRun(True, True, _read(log_path), f"killed {KILL_GRACE} s after the time limit")
        log = _read(log_path)
        if proc.returncode != 0 or not os.path.exists(sol):
            return CbcRun(True, False, log, f"CBC exited with {proc.returncode} and no solution file")
        status, values, _, _, _, sol_status = solver.readsol_MPS(sol, prob, variables, var_names, con_names)
    prob.assignVarsVals(values)
    prob.assignStatus(status, sol_status)
    return CbcRun(True, False, log)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""
