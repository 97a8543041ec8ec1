"""simulate --objective (issue 25): each allocating policy runs once per objective, summary.json records it,
every decision of each objective passes the independent checker, an unknown objective exits 2 in one line."""
from __future__ import annotations

import json

import pytest
from lyra_solver import OBJECTIVES
from lyra_solver.bench.sim import data_dir, get_policy, load_load_curve, load_philly, map_jobs
from lyra_solver.bench.sim.cli import _labels, policy_of
from lyra_solver.bench.sim.engine import SimConfig, simulate
from lyra_solver.cli import main

DATA = data_dir()
PHILLY = DATA / "philly" / "philly.csv"
QPS = DATA / "alibaba" / "genai_qps.csv"
needs_data = pytest.mark.skipif(not PHILLY.exists() or not QPS.exists(), reason="shared/data not present")


def test_labels_expand_allocating_policies_only():
    got = _labels(["tiresias", "lyra", "lyra-exact"], ["jct-reduction", "hesrpt"])
    assert got == ["tiresias", "lyra", "lyra@hesrpt", "lyra-exact", "lyra-exact@hesrpt"]
    assert _labels(["lyra"], None) == ["lyra"]
    pol = policy_of("lyra-exact@srpt")
    assert pol.name == "lyra-exact" and pol.decide_options(1.0).objective == "srpt"
    assert policy_of("lyra").decide_options(1.0).objective == OBJECTIVES[0]


@pytest.mark.parametrize("name", ["lyra", "lyra-fifo", "lyra-pack"])
def test_lyra_allocates_with_the_hull_greedy_for_the_new_objectives(name):
    """Lyra's objective keeps Lyra's marginal greedy; any other takes the convex-hull greedy unless an
    allocation is given with it; ``lyra-greedy`` and ``lyra-exact`` keep their own for every objective."""
    assert get_policy(name).decide_options(1.0).allocation == "greedy"
    assert get_policy(name, {"objective": OBJECTIVES[0]}).decide_options(1.0).allocation == "greedy"
    for objective in OBJECTIVES[1:]:
        assert get_policy(name, {"objective": objective}).decide_options(1.0).allocation == "hull"
        given = get_policy(name, {"objective": objective, "allocation": "greedy"})
        assert given.decide_options(1.0).allocation == "greedy"
        assert get_policy("lyra-greedy", {"objective": objective}).decide_options(1.0).allocation == "greedy"
        assert get_policy("lyra-exact", {"objective": objective}).decide_options(1.0).allocation == "exact"
    assert policy_of("lyra@hesrpt").decide_options(1.0).allocation == "hull"


@needs_data
@pytest.mark.parametrize("objective", OBJECTIVES[1:])
def test_every_decision_of_each_objective_passes_the_checker(objective):
    specs = map_jobs(load_philly(PHILLY, start="2017-10-09 06:00", limit=25), seed=1)
    cfg = SimConfig(training_servers=2, inference_servers=2, interval=300.0, load=load_load_curve(QPS), check=True)
    res = simulate(specs, get_policy("lyra", {"objective": objective}), cfg)  # check=True raises on a violation
    assert len(res.jobs) == len(specs)


@needs_data
def test_summary_records_the_objective_and_bad_names_exit_2(tmp_path, capsys):
    out = tmp_path / "o"
    rc = main(["simulate", "--trace", str(PHILLY), "--start", "2017-10-09 06:00", "--limit", "12",
               "--load", str(QPS), "--training-servers", "2", "--inference-servers", "2", "--interval", "300",
               "--compare", "baseline", "lyra", "--objective", "jct-reduction", "srpt", "--jobs", "1",
               "--no-progress", "--out", str(out)])
    assert rc == 0
    pols = json.loads((out / "summary.json").read_text())["policies"]
    assert set(pols) == {"baseline", "lyra", "lyra@srpt"}
    assert pols["lyra"]["objective"] == "jct-reduction" and pols["lyra@srpt"]["objective"] == "srpt"
    assert "objective" not in pols["baseline"]
    assert (out / "jobs-lyra@srpt.csv").exists()
    capsys.readouterr()
    rc = main(["simulate", "--trace", str(PHILLY), "--limit", "5", "--policy", "lyra", "--objective", "fastest"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "--objective" in err and "hesrpt" in err
    rc = main(["simulate", "--trace", str(PHILLY), "--limit", "5", "--policy", "baseline", "--objective", "srpt"])
    assert rc == 2 and "none of the policies allocates" in capsys.readouterr().err
