"""The single-level MILP oracle against the simulator and remat's plans and bounds.

The oracle's optimum is a real schedule (the simulator replays it to the same
peak), no kept-set plan of the same order peaks lower, its linear relaxation
lies below it, and remat's lower bound, which holds for every schedule, lies
below it too: the last is what checks remat's bounds on graphs past the
exhaustive oracle's ~8 nodes.
"""

import random

import pytest

import remat

pytest.importorskip("highspy", reason="HiGHS is not installed (pip install highspy)")

from single_level_milp import least_peak, random_graph  # noqa: E402


def test_the_optimum_is_a_schedule_no_plan_of_its_order_beats():
    bounds_checked = 0
    for seed in range(40):
        g = random_graph(seed, 3 + seed % 10)
        peak, steps, status = least_peak(g)
        assert status == "Optimal"
        assert remat.simulate(g, steps).peak_bytes == peak, seed
        names = [g.node(v)["name"] for v in range(len(g)) if g.node(v)["op"] != "input"]
        rng = random.Random(seed)
        for kept in ([], names, *(rng.sample(names, rng.randint(1, len(names))) for _ in range(5))):
            assert remat.simulate(g, remat.kept_schedule(g, kept)).peak_bytes >= peak, (seed, kept)
        relaxation, _, _ = least_peak(g, relax=True)
        assert relaxation <= peak + 1e-6 * peak, seed
        assert least_peak(g, forward_recompute=False)[0] >= peak, seed
        # A bound remat says holds for every schedule holds for these; an
        # optimum over its own plan family need not (its plans may also run
        # in another order).
        plan = remat.solve(g, method="general-search")
        if plan.proof_family.startswith("every schedule"):
            assert plan.peak_lower_bound <= peak, seed
            bounds_checked += 1
    assert bounds_checked >= 10


def test_a_layered_graph_of_twenty_nodes():
    # Wider than the exhaustive oracle reaches: layers of four, each node reading
    # two of the layer below and, now and then, one further back.
    rng = random.Random(7)
    nodes = [{"name": "x", "op": "input", "bytes": 64}]
    layers = [["x"]]
    for layer in range(5):
        names = []
        for j in range(4):
            below = layers[-1]
            operands = rng.sample(below, min(2, len(below)))
            if len(layers) > 2 and rng.random() < 0.3:
                operands.append(rng.choice(layers[-3]))
            op, reads = rng.choice((("linear", "inputs"), ("relu", "output"), ("add", "none")))
            name = f"n{layer}.{j}"
            nodes.append({"name": name, "op": op, "inputs": sorted(set(operands)), "bytes": 64, "time": 1.0,
                          "params": 16 if op == "linear" else 0, "reads": reads})
            names.append(name)
        layers.append(names)
    read = {x for n in nodes for x in n.get("inputs", ())}
    nodes.append({"name": "loss", "op": "sum", "inputs": [n["name"] for n in nodes[1:] if n["name"] not in read],
                  "bytes": 4, "time": 0.1})
    g = remat.Graph(nodes, name="layered")
    peak, steps, status = least_peak(g)
    assert status == "Optimal"
    assert remat.simulate(g, steps).peak_bytes == peak
    # remat proves its plan the least of every schedule here: no schedule of
    # the oracle's may peak lower.
    plan = remat.solve(g)
    assert (plan.status, plan.proof_family) == ("optimal", "every schedule")
    assert plan.peak <= peak
    # Nothing kept and everything kept are schedules of this order too.
    names = [n["name"] for n in nodes[1:]]
    assert peak <= min(remat.simulate(g, remat.kept_schedule(g, kept)).peak_bytes for kept in ([], names))
