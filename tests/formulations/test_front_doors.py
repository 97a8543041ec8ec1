"""The front doors (solve_mckp, solve_reclaim, solve_placement, solve_joint): checks and trivial cases done
once before dispatch, registries as the single list of methods."""
from __future__ import annotations

import importlib
import inspect

import pytest
from lyra_solver.formulations import Status, mckp, placement, reclaim
from lyra_solver.formulations.placement import JointProblem, PlacementProblem, solve_joint, solve_placement
from lyra_solver.formulations.reclaim import ReclaimProblem, solve_reclaim

RECLAIM = dict(server_gpus=[8, 8], job_workers=[4, 1], job_min=[2, 1], job_gpus_per_worker=[1, 1],
               restart_cost=[30.0, 30.0], preempt_cost=[300.0, 300.0], host_job=[0, 0, 1],
               host_server=[0, 1, 1], host_count=[2, 2, 1], count=1)
PLACE = dict(server_free=[8, 8], server_loaned=[False, True], job_workers=[6], job_base=[4],
             job_gpus_per_worker=[2])
JOINT = dict(server_free=[4, 4], job_min=[4], job_max=[6], job_gpus_per_worker=[1],
             value=[[[5.5, 4.0], [6.0, 4.8], [float("nan"), 5.0]]])


def _calls():
    return [
        lambda **kw: mckp.solve_mckp([[0, 1]], [[0.0, 1.0]], 1, **kw),
        lambda **kw: solve_reclaim(ReclaimProblem.build(**RECLAIM), **kw),
        lambda **kw: solve_placement(PlacementProblem.build(**PLACE), **kw),
        lambda **kw: solve_joint(JointProblem.build(**JOINT), **kw),
    ]


@pytest.mark.parametrize("call", range(4))
def test_bad_method_option_and_time_limit_are_named(call: int) -> None:
    solve = _calls()[call]
    with pytest.raises(ValueError, match=r"^method: unknown method 'simplex'"):
        solve(method="simplex")
    with pytest.raises(ValueError, match=r"^time_limit: must be >= 0"):
        solve(time_limit=-1.0)
    with pytest.raises(ValueError, match=r"^colour: not an option of method 'cpsat' \(its options: "):
        solve(method="cpsat", colour="red")


@pytest.mark.parametrize("method", mckp.METHODS)
def test_mckp_trivial_cases_never_reach_the_method(method: str, monkeypatch) -> None:
    registry = dict(mckp._REGISTRY)
    for name in registry:
        module = importlib.import_module(f"lyra_solver.formulations.mckp.{registry[name][0]}")
        monkeypatch.setattr(module, registry[name][1], _refuse)
    empty = mckp.solve_mckp([], [], 5, method=method)
    assert empty.status == Status.OPTIMAL and empty.choice == () and empty.objective == 0.0
    assert empty.method == mckp.ALIASES.get(method, method) if method != "bb" else empty.method == "bb"
    infeasible = mckp.solve_mckp([[3, 4], [2]], [[1.0, 2.0], [0.0]], 4, method=method)
    assert infeasible.status == Status.INFEASIBLE and infeasible.choice is None


def _refuse(*args, **kwargs):
    raise AssertionError("a trivial case reached the method")


@pytest.mark.parametrize("method", reclaim.METHODS)
def test_reclaim_trivial_cases_never_reach_the_method(method: str, monkeypatch) -> None:
    from lyra_solver.formulations.reclaim import ilp

    monkeypatch.setattr(ilp, "solve_ilp", _refuse)
    none = solve_reclaim(ReclaimProblem.build(**{**RECLAIM, "count": 0}), method=method)
    assert none.status == Status.OPTIMAL and none.servers == () and none.objective == 0.0
    every = solve_reclaim(ReclaimProblem.build(**{**RECLAIM, "count": 5}), method=method)
    assert every.status == Status.OPTIMAL and every.servers == (0, 1) and every.bound == every.objective == 600.0
    short = solve_reclaim(ReclaimProblem.build(**{**RECLAIM, "count": None, "min_gpus": 17}), method=method)
    assert short.status == Status.INFEASIBLE and short.servers == () and short.objective is None


@pytest.mark.parametrize("method", placement.METHODS)
def test_placement_infeasible_before_dispatch(method: str, monkeypatch) -> None:
    from lyra_solver.formulations.placement import ilp, joint

    monkeypatch.setattr(ilp, "solve_ilp", _refuse)
    monkeypatch.setattr(joint, "solve_joint_ilp", _refuse)
    res = solve_placement(PlacementProblem.build(**{**PLACE, "job_gpus_per_worker": [9]}), method=method)
    assert res.status == Status.INFEASIBLE and res.placement is None
    res = solve_joint(JointProblem.build(**{**JOINT, "server_free": [4, 0], "job_max": [4],
                                            "value": [[[float("nan"), 5.0]]]}), method=method)
    assert res.status == Status.INFEASIBLE and res.placement is None


def test_backends_do_not_repeat_the_front_door_checks() -> None:
    for family, names in ((mckp, ("is_feasible", "infeasible_result", "n == 0")),
                          (reclaim, ("gpus_unreachable", "min_gpus <= 0", "count == 0")),
                          (placement, ("fits on no server", "no allowed option"))):
        for module_name, function_name, *_ in family._REGISTRY.values():
            module = importlib.import_module(f"{family.__name__}.{module_name}")
            function = getattr(module, function_name)
            source = inspect.getsource(function).replace(function.__doc__ or "", "")
            for text in names:
                assert text not in source, f"{module.__name__}.{function_name} repeats {text!r}"


def test_cli_mckp_choices_are_the_registry() -> None:
    from lyra_solver.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["mckp"]
    method = next(a for a in sub._actions if a.dest == "method")
    assert tuple(method.choices) == mckp.METHODS
