"""The remat Python package over the core: graphs, solve, simulate, errors."""

import doctest
import json
import os
import subprocess
from pathlib import Path

import pytest

import remat

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = ROOT / "examples" / "graphs"


def chain(n, bytes_=8):
    nodes = [{"name": "x", "op": "input", "bytes": 4}]
    for i in range(n):
        nodes.append({"name": f"v{i}", "op": "relu", "inputs": [nodes[-1]["name"]], "bytes": bytes_, "time": 1.0})
    return remat.Graph(nodes, name=f"chain{n}")


def diamond():
    return remat.Graph(
        [
            {"name": "x", "op": "input", "bytes": 16},
            {"name": "a", "op": "conv2d", "inputs": ["x"], "bytes": 64, "time": 2.0, "params": 32},
            {"name": "b", "op": "relu", "inputs": ["a"], "bytes": 64, "time": 0.5},
            {"name": "c", "op": "relu", "inputs": ["a"], "bytes": 64, "time": 0.5, "workspace": 8},
            {"name": "d", "op": "add", "inputs": ["b", "c"], "bytes": 64, "time": 0.25, "reads": "none"},
            {"name": "loss", "op": "sum", "inputs": [4], "bytes": 4, "time": 0.1},
        ],
        name="diamond",
    )


def test_the_module_docstring_runs():
    failures, tried = doctest.testmod(remat, verbose=False)
    assert tried >= 4 and failures == 0


def test_a_graph_from_dicts_keeps_what_it_was_given():
    g = diamond()
    assert len(g) == 6 and g.name == "diamond" and g.num_edges == 6
    assert g.names == ["x", "a", "b", "c", "d", "loss"]
    a = g.node(g.index("a"))
    assert a == {"name": "a", "op": "conv2d", "inputs": ["x"], "bytes": 64, "time": 2.0, "params": 32,
                 "workspace": 0, "backward_workspace": 0, "reads": a["reads"]}
    assert g.node(4)["reads"] == "none"
    assert g.node(3)["workspace"] == 8 and g.node(3)["backward_workspace"] == 8
    assert g.node(5)["inputs"] == ["d"]  # an index names the node it points at


def test_json_round_trip_and_files():
    g = remat.Graph.load(str(GRAPHS / "forum-cnn-full.json"))
    back = remat.Graph.from_json(g.to_json())
    assert back.names == g.names
    assert [back.node(v) for v in range(len(back))] == [g.node(v) for v in range(len(g))]
    assert back.to_json() == g.to_json()


@pytest.mark.parametrize("method", remat.methods)
def test_every_method_plans_and_its_figures_are_the_simulators(method):
    g = remat.Graph.load(str(GRAPHS / "forum-cnn-full.json"))
    s = remat.solve(g, method=method, time_limit=10)
    assert s.status in ("optimal", "feasible")
    assert s.method == method
    sim = remat.simulate(g, s.schedule)
    assert s.peak == sim.peak_bytes == s.figures.peak_bytes
    assert sim.recompute_time == pytest.approx(s.recompute_time)
    assert s.peak >= s.peak_lower_bound
    kinds = {k for k, _ in s.schedule}
    assert kinds <= {"compute", "recompute", "free", "backward"}
    assert sum(1 for k, _ in s.schedule if k == "backward") == sum(
        1 for v in range(len(g)) if g.node(v)["op"] != "input")
    if s.kept is not None:
        assert set(s.kept) <= set(g.names)


def test_the_plan_json_is_what_the_cli_writes(tmp_path):
    cli = os.environ.get("REMAT_CLI")
    if not cli:
        pytest.skip("REMAT_CLI is not set (meson test sets it to the built CLI)")
    graph_file = GRAPHS / "forum-cnn-full.json"
    out = tmp_path / "plan.json"
    subprocess.run([cli, "plan", str(graph_file), "--method", "exact", "-o", str(out)], check=True,
                   capture_output=True)
    s = remat.solve(remat.Graph.load(str(graph_file)), method="exact")
    ours, theirs = json.loads(s.to_json()), json.loads(out.read_text())
    assert ours["steps"] == theirs["steps"]
    assert ours["figures"]["peak_bytes"] == theirs["figures"]["peak_bytes"]


def test_the_time_objective_keeps_the_budget_and_names_the_least_budget():
    g = chain(12)
    # exact's least peak is over general plans on a graph this small; the
    # time objective minimises recompute over stage plans.
    least = remat.solve(g).peak
    stage_least = remat.solve(g, method="dp").peak
    regular = remat.solve(g, method="none").peak
    assert least <= stage_least < regular
    within = remat.solve(g, objective="time", budget=stage_least)
    assert within.status == "optimal" and within.peak <= stage_least
    assert within.recompute_time >= within.recompute_lower_bound
    if least < stage_least:
        # Below every stage plan: the least-peak general plan, recompute not minimised.
        general = remat.solve(g, objective="time", budget=least)
        assert general.status == "feasible" and general.peak == least and general.produced_by == "general-dp"
    roomy = remat.solve(g, objective="time", budget=regular)
    assert roomy.recompute_time == 0
    impossible = remat.solve(g, objective="time", budget=least - 1)
    assert impossible.status == "infeasible"
    assert impossible.proof_family == "general plans"
    assert impossible.smallest_feasible_budget == least
    assert impossible.peak is None and impossible.schedule == []
    with pytest.raises(ValueError, match="holds no plan"):
        impossible.to_json()


def test_orders_caps_and_limits_reach_the_core():
    g = remat.Graph.load(str(GRAPHS / "forum-cnn-full.json"))
    for order in ("graph", "consumers-first", "best", "auto"):
        s = remat.solve(g, order=order)
        assert s.peak == remat.simulate(g, s.schedule).peak_bytes
        if s.order:
            assert sorted(s.order) == sorted(g.names)
    # the stage portfolio's cap (exact's general plan would answer first)
    capped = remat.solve(remat.Graph.load(str(GRAPHS / "resnet50.json")), max_lower_sets=1, general_work=0)
    assert capped.status == "feasible" and capped.unproven == "cap"
    assert "more than 1 lower sets" in capped.message
    assert remat.solve(g, method="every-k", every_k=2).peak >= remat.solve(g).peak


def test_simulate_takes_names_or_indices_and_records_a_timeline():
    g = chain(3)
    steps = [("compute", "v0"), ("compute", 2), ("compute", "v2"), ("backward", "v2"), ("free", "v2"),
             ("backward", "v1"), ("free", "v1"), ("backward", "v0"), ("free", "v0")]
    sim = remat.simulate(g, steps, timeline=True)
    assert len(sim.timeline) == len(steps)
    assert max(sim.timeline) == sim.peak_bytes
    assert sim.at_peak["total"] == sim.peak_bytes
    assert sim.recompute_steps == 0 and sim.forward_time == 3.0


def test_core_errors_arrive_as_remat_errors_with_the_cores_message(tmp_path):
    with pytest.raises(remat.InvalidGraph, match="reads 'zz', which is no node's name") as e:
        remat.Graph([{"name": "x", "op": "input", "bytes": 4}, {"name": "a", "inputs": ["zz"], "bytes": 1}])
    assert e.value.node == "a"
    with pytest.raises(remat.InvalidGraph, match="cycle") as e:
        remat.Graph([{"name": "a", "inputs": ["b"], "bytes": 1}, {"name": "b", "inputs": ["a"], "bytes": 1}])
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "nodes": [\n  {"name": "x", "op": "input", "bytes": -3}]}')
    with pytest.raises(remat.ParseError, match=str(bad) + ":2"):
        remat.Graph.load(str(bad))
    with pytest.raises(remat.Error, match="No such file"):
        remat.Graph.load(str(tmp_path / "missing.json"))
    with pytest.raises(remat.InvalidSchedule, match="not alive"):
        remat.simulate(chain(2), [("backward", "v1")])
    assert issubclass(remat.Error, RuntimeError)


@pytest.mark.parametrize(
    "kwargs, error, text",
    [
        ({"method": "fastest"}, ValueError, "unknown method 'fastest'"),
        ({"objective": "speed"}, ValueError, "unknown objective 'speed'"),
        ({"order": "random"}, ValueError, "unknown order 'random'"),
        ({"budget": -1}, ValueError, "budget must not be negative"),
        ({"budget": 2**64}, ValueError, "budget does not fit in 64 bits"),
        ({"budget": 1.5}, TypeError, "budget must be an int"),
        ({"time_limit": float("nan")}, ValueError, "time_limit must be a number of seconds"),
        ({"time_limit": -1}, ValueError, "time_limit must be a number of seconds"),
        ({"bound_time_limit": 1e300}, ValueError, "bound_time_limit must be a number of seconds"),
        ({"every_k": 0, "method": "every-k"}, ValueError, "every_k must be at least 1"),
        ({"work_limit": -1}, ValueError, "work_limit must not be negative"),
        ({"work_limit": 1e9}, TypeError, r"work_limit must be an int \(work units\)"),
    ],
)
def test_absurd_options_are_named(kwargs, error, text):
    with pytest.raises(error, match=text):
        remat.solve(chain(3), **kwargs)


def test_bad_node_fields_are_named():
    with pytest.raises(ValueError, match="node 1: unknown field 'byts'"):
        remat.Graph([{"name": "x", "op": "input", "bytes": 4}, {"name": "a", "inputs": ["x"], "byts": 1}])
    with pytest.raises(ValueError, match=r"node 1 \('a'\): 'bytes' is required"):
        remat.Graph([{"name": "x", "op": "input", "bytes": 4}, {"name": "a", "inputs": ["x"]}])
    with pytest.raises(ValueError, match=r"node 0 \('x'\) bytes must not be negative"):
        remat.Graph([{"name": "x", "op": "input", "bytes": -4}])
    with pytest.raises(ValueError, match=r"unknown node 0 \('x'\) reads 'some' \(one of none, inputs, output, both\)"):
        remat.Graph([{"name": "x", "bytes": 4, "reads": "some"}])
    with pytest.raises(TypeError, match="node 0 must be a dict"):
        remat.Graph([("x", 4)])


def test_a_work_limit_ends_the_search_at_the_same_point_every_time():
    g = remat.Graph.load(str(GRAPHS / "darts-cifar10.json"))
    first = remat.solve(g, work_limit=30_000_000)
    again = remat.solve(g, work_limit=30_000_000)
    assert first.unproven == "work-limit"
    assert first.work >= 30_000_000 and first.work == again.work
    assert first.schedule == again.schedule
    # exact's general plan (a local search of fixed work) leads on DARTS
    assert first.produced_by == "general local search"
    assert first.proof_family == "every schedule"
    assert first.peak_bound_name.startswith(("the per-op floor", "the cut floor", "the backward-order floor",
                                             "the window floor"))
    stages = remat.solve(g, work_limit=30_000_000, general_work=0)
    assert stages.produced_by in ("chain", "mincut", "ogc", "approx") or stages.produced_by.startswith("dp")
    assert stages.proof_family == "stage plans"
    assert stages.peak_bound_name == ""
    assert first.peak < stages.peak
    with pytest.raises(ValueError, match="max_recompute"):
        remat.solve(g, max_recompute=-1.0)
    assert remat.solve(g, method="mincut").proof_family == ""


def test_a_long_solve_releases_the_interpreter():
    import threading
    import time

    g = remat.Graph.load(str(GRAPHS / "darts-cifar10.json"))
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.002)

    t = threading.Thread(target=tick)
    t.start()
    s = remat.solve(g, method="kept-search", time_limit=0.5)
    stop.set()
    t.join()
    assert s.peak is not None and s.seconds > 0.2
    # Holding the interpreter through the search would leave the other thread one tick.
    assert len(ticks) >= 10
