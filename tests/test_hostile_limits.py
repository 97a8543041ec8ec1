"""Hostile sizes and time limits (issue 9 point 1): backends' statuses under limits, bounded wall time,
honest bounds for thinned value tables."""
from __future__ import annotations

import math

import pytest
from lyra_solver.formulations import Status
from lyra_solver.formulations._lexilp import Milp, solve_lex
from lyra_solver.formulations.placement import JointProblem, solve_joint

nan = math.nan


@pytest.mark.parametrize("method", ["cpsat", "cbc"])
def test_integer_infeasible_is_a_proof(method):
    # 2x + 2y = 3 has real solutions but no integer one: CBC says "Integer infeasible", which PuLP leaves as
    # solution status "No Solution Found" (only its problem status says Infeasible); it is still a proof
    m = Milp.empty()
    x, y = m.var(ub=3), m.var(ub=3)
    m.row([x, y], [2, 2], lo=3, hi=3)
    ans = solve_lex(m, [([x], [1])], method=method, time_limit=None, num_workers=1)
    assert ans.status == Status.INFEASIBLE and ans.values is None, ans.backend_status


@pytest.mark.parametrize("method", ["cpsat", "cbc"])
def test_joint_integer_infeasible(method):
    # the example on which test_joint_matches_brute_force[cbc] failed: each job runs 2 workers of 2 GPUs on
    # ONE server (the table allows no other option); the 6- and 2-GPU servers hold 3 + 1 such workers in all,
    # but no two servers hold 2 each
    p = JointProblem.build(server_free=[6, 0, 2], job_min=[2, 2], job_max=[3, 3], job_gpus_per_worker=[2, 2],
                           value=[[[0.0], [nan]], [[0.0], [nan]]])
    res = solve_joint(p, method=method)
    assert res.status == Status.INFEASIBLE and res.placement is None, res.backend_status
