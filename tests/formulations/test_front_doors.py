"""The front doors (solve_mckp, solve_reclaim, solve_placement, solve_joint, solve_packing): checks done once
before dispatch, trivial cases answered there for the doors' own methods, registries as the single list of methods;
every heuristic row of a table runs through its door and returns the family's result."""
from __future__ import annotations

import importlib
import inspect

import pytest
from lyra_solver.formulations import Status, mckp, placement, reclaim
from lyra_solver.formulations.packing import PackingProblem, PackingResult, solve_packing
from lyra_solver.formulations.placement import (
    JointProblem,
    PlacementProblem,
    PlacementResult,
    solve_joint,
    solve_placement,
)
from lyra_solver.formulations.reclaim import ReclaimProblem, ReclaimResult, solve_reclaim

RECLAIM = dict(server_gpus=[8, 8], job_workers=[4, 1], job_min=[2, 1], job_gpus_per_worker=[1, 1],
               restart_cost=[30.0, 30.0], preempt_cost=[300.0, 300.0], host_job=[0, 0, 1],
               host_server=[0, 1, 1], host_count=[2, 2, 1], count=1)
PLACE = dict(server_free=[8, 8], server_loaned=[False, True], job_workers=[6], job_base=[4],
             job_gpus_per_worker=[2])
JOINT = dict(server_free=[4, 4], job_min=[4], job_max=[6], job_gpus_per_worker=[1],
             value=[[[5.5, 4.0], [6.0, 4.8], [float("nan"), 5.0]]])
PACK = dict(host_util=[0.5, 0.9], host_time=[100.0, 50.0], host_workers=[1, 2], host_gpus=[1, 2],
            host_mem=[10.0, 10.0], guest_util=[0.3, 0.9], guest_time=[10.0, 80.0], guest_gpus=[1, 1],
            guest_mem=[10.0, 10.0], slot_host=[0, 1], slot_capacity=[1, 2], slot_mem=[80.0, 80.0],
            candidates=[(0, 0, [(0, 1)]), (0, 1, [(1, 1)]), (1, 1, [(1, 1)])])


def _calls():
    return [
        lambda **kw: mckp.solve_mckp([[0, 1]], [[0.0, 1.0]], 1, **kw),
        lambda **kw: solve_reclaim(ReclaimProblem.build(**RECLAIM), **kw),
        lambda **kw: solve_placement(PlacementProblem.build(**PLACE), **kw),
        lambda **kw: solve_joint(JointProblem.build(**JOINT), **kw),
        lambda **kw: solve_packing(PackingProblem.build(**PACK), **kw),
    ]


@pytest.mark.parametrize("call", range(5))
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


@pytest.mark.parametrize("method", reclaim.TABLE.names(own=True))
def test_reclaim_trivial_cases_never_reach_the_method(method: str, monkeypatch) -> None:
    from lyra_solver.formulations.reclaim import ilp

    monkeypatch.setattr(ilp, "solve_ilp", _refuse)
    none = solve_reclaim(ReclaimProblem.build(**{**RECLAIM, "count": 0}), method=method)
    assert none.status == Status.OPTIMAL and none.servers == () and none.objective == 0.0
    every = solve_reclaim(ReclaimProblem.build(**{**RECLAIM, "count": 5}), method=method)
    assert every.status == Status.OPTIMAL and every.servers == (0, 1) and every.bound == every.objective == 600.0
    short = solve_reclaim(ReclaimProblem.build(**{**RECLAIM, "count": None, "min_gpus": 17}), method=method)
    assert short.status == Status.INFEASIBLE and short.servers == () and short.objective is None


@pytest.mark.parametrize("method", placement.TABLE.names(own=True))
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
    """The doors' own methods hold only their algorithm (the heuristics, self-contained, answer every case)."""
    for family, names in ((mckp, ("is_feasible", "infeasible_result", "n == 0")),
                          (reclaim, ("gpus_unreachable", "min_gpus <= 0", "count == 0")),
                          (placement, ("fits on no server", "no allowed option"))):
        for module_name, function_name, *_ in family._REGISTRY.values():
            if "." in module_name:  # a heuristic of lyra_solver.heuristics
                continue
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


#: Each front door with its family's result type and a small problem of its family.
HEURISTIC_DOORS = {
    "reclaim": (solve_reclaim, ReclaimResult, lambda: ReclaimProblem.build(**RECLAIM)),
    "placement": (solve_placement, PlacementResult, lambda: PlacementProblem.build(**PLACE)),
    "packing": (solve_packing, PackingResult, lambda: PackingProblem.build(**PACK)),
}


def _heuristic_rows():
    return [(family, name) for family, (solve, *_) in HEURISTIC_DOORS.items()
            for name in importlib.import_module(solve.__module__).TABLE.names(kind="heuristic")]


def test_every_heuristic_row_is_a_method_of_its_door() -> None:
    from lyra_solver.formulations import methods

    for family in HEURISTIC_DOORS:
        door = importlib.import_module(f"lyra_solver.formulations.{family}")
        table = methods.TABLES[family]
        assert table.names() == door.METHODS and set(table.names(kind="heuristic")) <= set(door.METHODS)
        assert set(door.METHODS) - set(table.aliases()) == set(door._REGISTRY)
    assert len(_heuristic_rows()) == 7  # greedy, fewest-jobs, random; bfd; gimbal, lucid, random


@pytest.mark.parametrize(("family", "method"), _heuristic_rows())
def test_each_door_runs_its_heuristic_rows_and_returns_the_familys_result(family: str, method: str) -> None:
    solve, result_type, problem = HEURISTIC_DOORS[family]
    p = problem()
    res = solve(p, method=method)
    assert type(res) is result_type and res.method == method and res.status == Status.FEASIBLE
    direct = importlib.import_module(solve.__module__).TABLE.function(method)(p)  # the same answer either way
    assert _answer(res) == _answer(direct)
    # the door checked the arguments before dispatch: options the heuristic does not take are refused
    with pytest.raises(ValueError, match=rf"^colour: not an option of method '{method}'"):
        solve(p, method=method, colour="red")
    with pytest.raises(ValueError, match=r"^time_limit: must be >= 0"):
        solve(p, method=method, time_limit=-1.0)
    limited = solve(p, method=method, time_limit=5.0)  # a heuristic takes no limit: it runs to its end
    assert _answer(limited) == _answer(res)


def _answer(res) -> dict:
    """A result's fields but its time (a placement by its pairs: Placement compares by identity)."""
    return {k: getattr(v, "per_job", v) for k, v in vars(res).items() if k != "time_s"}


def test_heuristics_answer_the_trivial_cases_themselves() -> None:
    """The door hands a heuristic every instance: its answer is the one it gives when called directly."""
    from lyra_solver.heuristics.placement import best_fit_decreasing
    from lyra_solver.heuristics.reclaim import greedy_reclaim

    every = ReclaimProblem.build(**{**RECLAIM, "count": 5})
    res = solve_reclaim(every, method="greedy")
    assert res.servers == (0, 1) and res.status == Status.FEASIBLE and res.backend_status == "all servers"
    assert res.status == greedy_reclaim(every).status
    short = ReclaimProblem.build(**{**RECLAIM, "count": None, "min_gpus": 17})
    assert solve_reclaim(short, method="greedy").status == Status.INFEASIBLE
    # a job that fits nowhere: the exact methods say infeasible, best fit decreasing places the others
    wide = PlacementProblem.build(server_free=[8, 8], server_loaned=[False, True], job_workers=[2, 1],
                                  job_base=[1, 1], job_gpus_per_worker=[9, 2])
    assert solve_placement(wide, method="cpsat").status == Status.INFEASIBLE
    res = solve_placement(wide, method="bfd")
    assert res.status == Status.NO_SOLUTION and res.objective is None and res.placed.tolist() == [0, 1]
    assert res.placement.per_job == best_fit_decreasing(wide).placement.per_job


def test_seeded_heuristics_take_their_seed_through_the_door() -> None:
    from lyra_solver.heuristics.packing import random_pairing
    from lyra_solver.heuristics.reclaim import random_reclaim

    p = ReclaimProblem.build(**RECLAIM)
    for seed in range(4):
        assert solve_reclaim(p, method="random", seed=seed).servers == random_reclaim(p, seed).servers
    k = PackingProblem.build(**PACK)
    for seed in range(4):
        assert solve_packing(k, method="random", seed=seed).assignment == random_pairing(k, seed=seed).assignment
