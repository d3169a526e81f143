"""The least peak over every single-level schedule of one execution order, as a
mixed-integer programme solved by HiGHS (highspy, from PyPI): an oracle for
graphs too large for the exhaustive search of tests/support/all_schedules.hpp.

A schedule here computes every node once, in the graph's id order, runs the
backwards in reverse id order, and may recompute any value at any point
before them (Checkmate's formulation, with remat's cost model,
docs/cost-model.md). The backward order fixes every gradient buffer's
lifetime, so gradients and parameter gradients are constants per step, and
the programme decides only which values are alive when:

- positions: in the forward, before computing node t, an optional recompute
  of each earlier node, then t's compute; before the backward of v, an
  optional recompute of each node up to v, then v's backward;
- C[p] (binary) recomputes position p's node; A[p, i] (continuous in [0, 1])
  holds value i at p: A[p, i] <= A[p-1, i] + C[p] where p computes i, so a
  value is alive only from a (re)compute on, and integral once C is;
- a compute needs its operands alive and holds its output and workspace; a
  backward needs the values it reads; the peak M is at least every
  position's memory.

`least_peak` returns the optimum and its schedule, which the simulator
replays (the tests check the two agree to the byte); with `relax` it solves
the linear relaxation instead, a lower bound for every schedule of this
order. The programme has O(n²) positions and O(n³) alive variables: seconds
up to about 50 computed nodes for the integer programme, 100 for the
relaxation.

Run as a script, it prints the figures for graph files beside `remat
plan`'s: `python3 single_level_milp.py GRAPH.json... [--relax]
[--no-forward-recompute] [--limit S]`; with `--random COUNT [--computed LO-HI]`
it sets `exact`'s proven optima on random graphs against it (family_gap).
"""

import argparse
import json
import random
import sys
import time

import highspy

import remat


def _costs(g):
    nodes = [g.node(v) for v in range(len(g))]
    index = {n["name"]: v for v, n in enumerate(nodes)}
    operands = [sorted({index[x] for x in n["inputs"]}) for n in nodes]
    is_input = [n["op"] == "input" for n in nodes]
    consumers = [[] for _ in nodes]
    for v, ps in enumerate(operands):
        for p in ps:
            consumers[p].append(v)

    def reads(v):
        kind, out = nodes[v]["reads"], set()
        if kind in ("inputs", "both"):
            out |= {p for p in operands[v] if not is_input[p]}
        if kind in ("output", "both"):
            out.add(v)
        return out

    return nodes, operands, is_input, consumers, reads


def least_peak(g, relax=False, forward_recompute=True, time_limit=600.0):
    """(peak, schedule, status) for remat.Graph g: the least peak over every
    single-level schedule of its id order and one schedule reaching it, or
    with `relax` the linear relaxation's optimum (a lower bound) and None.
    status is HiGHS's ("Optimal", or "Time limit reached" with the best
    schedule found). Without `forward_recompute` nothing is recomputed before
    the first backward, as in remat's plans."""
    nodes, operands, is_input, consumers, reads = _costs(g)
    computed = [v for v in range(len(nodes)) if not is_input[v]]
    resident = sum(n["params"] for n in nodes) + sum(n["bytes"] for v, n in enumerate(nodes) if is_input[v])

    # Gradient bytes while the recomputes before v's backward run, and during it.
    before, during = {}, {}
    buffers, param_grads = set(), 0
    for v in reversed(computed):
        held = sum(nodes[u]["bytes"] for u in buffers) + param_grads
        new = [p for p in operands[v] if not is_input[p] and p not in buffers]
        allocated = (0 if consumers[v] else nodes[v]["bytes"]) + sum(nodes[p]["bytes"] for p in new)
        before[v], during[v] = held, held + allocated + nodes[v]["params"] + nodes[v]["backward_workspace"]
        buffers.discard(v)
        buffers |= {p for p in operands[v] if not is_input[p]}
        param_grads += nodes[v]["params"]

    positions = []  # (node computed or None, its compute is forced, last node held, node backwarded, resident)
    for t in computed:
        if forward_recompute:
            positions += [(k, False, t - 1, None, resident) for k in computed if k < t]
        positions.append((t, True, t, None, resident))
    for v in reversed(computed):
        positions += [(k, False, v, None, resident + before[v]) for k in computed if k <= v]
        positions.append((None, True, v, v, resident + during[v]))

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 0.5)  # bytes are integers
    kind = highspy.HighsVarType.kContinuous if relax else highspy.HighsVarType.kInteger
    peak = h.addVariable(lb=0)
    alive_at, recompute_at, previous = [], [], {}
    for node, forced, last, backward, held in positions:
        c = 1 if forced or node is None else h.addVariable(lb=0, ub=1, type=kind)
        alive = {}
        for i in computed:
            if i > last:
                break
            alive[i] = a = h.addVariable(lb=0, ub=1)
            source = previous.get(i, 0) + (c if i == node else 0)
            if isinstance(source, int):
                if source == 0:
                    h.changeColBounds(a.index, 0, 0)
            else:
                h.addConstr(a <= source)
        if node is not None:
            for q in operands[node]:
                if not is_input[q]:
                    h.addConstr(alive[q] >= c)
            h.addConstr(alive[node] >= c)
        if backward is not None:
            for q in reads(backward):
                h.changeColBounds(alive[q].index, 1, 1)
        memory = sum(nodes[i]["bytes"] * a for i, a in alive.items()) + held
        if node is not None and nodes[node]["workspace"]:
            memory = memory + nodes[node]["workspace"] * c
        h.addConstr(peak >= memory)
        alive_at.append(alive)
        recompute_at.append(c)
        previous = alive
    h.minimize(peak)
    status = h.modelStatusToString(h.getModelStatus())
    if relax:
        return h.getInfo().objective_function_value, None, status

    # A value is held where its variable is 1: below 1 nothing needs it there
    # or later before its next compute, so it is freed (the peak allows any
    # fraction where the memory is below it).
    value = h.getSolution().col_value

    def on(x):
        return x == 1 if isinstance(x, int) else value[x.index] > 1 - 1e-6

    steps, held, done = [], set(), set()
    for (node, forced, last, backward, _), alive, c in zip(positions, alive_at, recompute_at):
        now = {i for i, a in alive.items() if on(a)}
        steps += [("free", nodes[i]["name"]) for i in sorted(held - now)]
        held &= now
        if node is not None and on(c) and node not in held:
            steps.append(("compute" if node not in done else "recompute", nodes[node]["name"]))
            done.add(node)
            held.add(node)
        if backward is not None:
            steps.append(("backward", nodes[backward]["name"]))
    return round(h.getInfo().objective_function_value), steps, status


READS = ("none", "inputs", "output", "both")


def random_graph(seed, computed):
    """A random DAG: each node reads one to three earlier values (the input
    among them), with random bytes, parameters, workspace and backward reads;
    every value without a consumer feeds the loss."""
    rng = random.Random(seed)
    nodes = [{"name": "x", "op": "input", "bytes": rng.randint(1, 40)}]
    for i in range(computed):
        earlier = [n["name"] for n in nodes]
        operands = rng.sample(earlier, min(len(earlier), rng.randint(1, 3)))
        nodes.append({"name": f"v{i}", "op": "custom", "inputs": operands, "bytes": rng.randint(1, 100),
                      "time": 1.0, "params": rng.choice((0, 0, rng.randint(1, 30))),
                      "workspace": rng.choice((0, 0, rng.randint(1, 50))), "reads": rng.choice(READS)})
    read = {x for n in nodes for x in n.get("inputs", ())}
    sinks = [n["name"] for n in nodes[1:] if n["name"] not in read]
    nodes.append({"name": "loss", "op": "sum", "inputs": sinks, "bytes": 4, "time": 0.1})
    return remat.Graph(nodes, name=f"random{seed}")


def family_gap(count, smallest, largest):
    """Over `count` random graphs of smallest..largest computed nodes: on
    those where `exact` proves its plan over general plans (or every
    schedule), how often some schedule of the id order peaks lower, by how
    much, and how often the plan is the lower one (it may run in another
    order)."""
    counts = {"graphs": count, "proven": 0, "schedule lower": 0, "plan lower": 0, "forward recompute lower": 0}
    gaps = []
    for seed in range(count):
        g = random_graph(1000 + seed, smallest + seed % (largest - smallest + 1))
        plan = remat.solve(g)
        if plan.status != "optimal" or plan.proof_family not in ("general plans", "every schedule"):
            continue
        counts["proven"] += 1
        peak, steps, _ = least_peak(g, forward_recompute=False)
        assert remat.simulate(g, steps).peak_bytes == peak
        gaps.append(max(0.0, (plan.peak - peak) / peak))
        counts["schedule lower"] += peak < plan.peak
        counts["plan lower"] += plan.peak < peak
        counts["forward recompute lower"] += least_peak(g)[0] < peak
    counts["mean gap %"] = round(100 * sum(gaps) / max(1, len(gaps)), 4)
    counts["largest gap %"] = round(100 * max(gaps, default=0.0), 2)
    return counts


def _computed_range(text):
    try:
        smallest, largest = (int(x) for x in text.split("-"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not LO-HI (two whole numbers)") from None
    if not 1 <= smallest <= largest:
        raise argparse.ArgumentTypeError(f"'{text}': need 1 <= LO <= HI")
    return smallest, largest


def _positive(text):
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive whole number")
    return int(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graphs", nargs="*")
    parser.add_argument("--random", type=_positive, metavar="COUNT",
                        help="instead: the general family against the oracle on COUNT random graphs")
    parser.add_argument("--computed", type=_computed_range, default=(6, 12), help="computed nodes of the random graphs, LO-HI")
    parser.add_argument("--relax", action="store_true", help="solve the linear relaxation (a lower bound)")
    parser.add_argument("--no-forward-recompute", action="store_true",
                        help="recompute nothing before the first backward, as remat's plans")
    parser.add_argument("--limit", type=float, default=600.0, help="seconds for HiGHS")
    args = parser.parse_args()
    if args.random:
        print(json.dumps(family_gap(args.random, *args.computed)))
    for path in args.graphs:
        g = remat.Graph.load(path)
        start = time.perf_counter()
        peak, steps, status = least_peak(g, relax=args.relax, forward_recompute=not args.no_forward_recompute,
                                          time_limit=args.limit)
        seconds = time.perf_counter() - start
        plan = remat.solve(g)
        row = {"graph": path, "nodes": len(g), "status": status, "seconds": round(seconds, 2),
               "relaxation" if args.relax else "least_peak": int(peak),
               "remat_peak": plan.peak, "remat_bound": plan.peak_lower_bound}
        if steps is not None:
            row["simulated"] = remat.simulate(g, steps).peak_bytes
        print(json.dumps(row))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
