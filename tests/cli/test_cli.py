#!/usr/bin/env python3
"""End-to-end tests of the remat command-line tool.

Each case runs the tool and checks its exit status and output; bad input must
give exactly one clear error line on stderr and a non-zero exit.
Usage: test_cli.py PATH/TO/remat SOURCE_ROOT
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REMAT = sys.argv[1]
ROOT = Path(sys.argv[2])
GRAPH = str(ROOT / "examples/graphs/forum-cnn.json")
failures = 0
cases = 0


def run(*args):
    return subprocess.run([REMAT, *args], capture_output=True, text=True, timeout=120)


def check(name, condition, detail=""):
    global failures, cases
    cases += 1
    if condition:
        print(f"ok    {name}")
    else:
        failures += 1
        print(f"FAIL  {name}\n      {detail}")


def expect_error(name, args, fragment, place=""):
    """One stderr line, starting 'remat: error: ', holding `fragment` and, when given, the place (file:line: or node)."""
    r = run(*args)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    check(name, r.returncode != 0 and len(lines) == 1 and fragment in lines[0] and place in lines[0] and
          lines[0].startswith("remat: error: "), f"exit {r.returncode}, stderr {r.stderr!r}")


with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)

    def file(name, text):
        p = tmp / name
        p.write_text(text, encoding="utf-8")
        return str(p)

    # --help on every command
    for cmd in ([], ["info"], ["plan"], ["simulate"], ["pareto"], ["explain"], ["zoo"], ["zoo", "list"], ["zoo", "export"], ["gen"],
                ["gen", "chain"], ["gen", "random"], ["gen", "nas"], ["gen", "transformer"]):
        r = run(*cmd, "--help")
        check(f"--help {' '.join(cmd)}", r.returncode == 0 and "Usage" in r.stdout, r.stdout + r.stderr)

    # info
    r = run("info", GRAPH)
    check("info prints the table", r.returncode == 0 and "regular peak" in r.stdout and "per-op floor" in r.stdout,
          r.stdout + r.stderr)
    r = run("info", GRAPH, "--json")
    info = json.loads(r.stdout) if r.returncode == 0 else {}
    check("info --json", info.get("nodes") == 11 and info.get("edges") == 10 and info.get("parameters") == 54577132,
          r.stdout + r.stderr)
    check("info: floor below the regular peak", 0 < info.get("per-op floor", 0) <= info.get("regular peak", 0), str(info))

    # plan: every method, files out
    methods = ("none", "every-k", "sqrt", "chain", "approx", "mincut", "ogc", "ogc-exact", "kept-search", "general-search", "dp", "exact")
    listed = run("plan", "--help").stdout
    choices = re.search(r"--method TEXT:\{([^}]*)\}", listed)
    check("the test runs every method plan --help lists",
          choices is not None and set(choices.group(1).split(",")) == set(methods), listed)
    for method in methods:
        r = run("plan", GRAPH, "--method", method, "--json")
        ok = r.returncode == 0
        figures = json.loads(r.stdout) if ok else {}
        check(f"plan --method {method}", ok and figures.get("peak", 0) >= info.get("per-op floor", 1), r.stdout + r.stderr)
        if method == "none":
            check("plan none: zero recompute, peak = regular",
                  figures.get("recompute") == 0 and figures.get("peak") == info.get("regular peak"), str(figures))
    plan_file, dot_file = str(tmp / "plan.json"), str(tmp / "plan.dot")
    r = run("plan", GRAPH, "--method", "sqrt", "-o", plan_file, "--dot", dot_file)
    check("plan writes the plan and DOT", r.returncode == 0 and Path(plan_file).exists() and Path(dot_file).exists(),
          r.stdout + r.stderr)
    planned = json.loads(run("plan", GRAPH, "--method", "sqrt", "--json").stdout)

    # simulate reproduces the plan's figures (one source of truth)
    r = run("simulate", GRAPH, plan_file, "--json", "--timeline", str(tmp / "t.csv"))
    sim = json.loads(r.stdout) if r.returncode == 0 else {}
    check("simulate gives the plan's own figures", sim.get("peak") == planned.get("peak") and
          sim.get("recompute") == planned.get("recompute"), r.stdout + r.stderr)
    timeline = (tmp / "t.csv").read_text().splitlines() if (tmp / "t.csv").exists() else []
    check("simulate --timeline writes one row per step", len(timeline) > 10 and timeline[0].startswith("step,kind,node"),
          str(timeline[:2]))
    kept_plan = file("kept.json", json.dumps({"kept": ["relu1", "relu3", "fc1"]}))
    r = run("simulate", GRAPH, kept_plan)
    check("simulate a plan given as kept tensors", r.returncode == 0 and "peak" in r.stdout, r.stdout + r.stderr)

    graph_dot = str(tmp / "graph.dot")
    r = run("info", GRAPH, "--dot", graph_dot)
    check("info writes the graph as DOT", r.returncode == 0 and Path(graph_dot).read_text().startswith("digraph"),
          r.stdout + r.stderr)
    # The pictures need Graphviz and librsvg, which .ci/run and the README install.
    check("Graphviz's dot is installed (apt-get install graphviz)", shutil.which("dot") is not None)
    check("rsvg-convert is installed (apt-get install librsvg2-bin)", shutil.which("rsvg-convert") is not None)
    if shutil.which("dot"):
        for what, source in (("graph", graph_dot), ("plan", dot_file)):
            svg = tmp / f"{what}.svg"
            r = subprocess.run(["dot", "-Tsvg", source, "-o", str(svg)], capture_output=True, text=True)
            check(f"dot -Tsvg draws the {what}", r.returncode == 0 and svg.stat().st_size > 1000, r.stderr)

    # optimal plans, objectives, budgets, the frontier
    resnet = str(ROOT / "examples/graphs/resnet50.json")
    # exact over stage plans alone (--general-work 0), the baseline the other methods are held to
    r = run("plan", resnet, "--method", "exact", "--general-work", "0", "--json")
    exact = json.loads(r.stdout) if r.returncode == 0 else {}
    check("plan --method exact is optimal and beats sqrt", exact.get("status") == "optimal" and
          exact.get("peak", 1 << 62) < json.loads(run("plan", resnet, "--method", "sqrt", "--json").stdout)["peak"],
          r.stdout + r.stderr)
    r = run("plan", resnet, "--json")
    general = json.loads(r.stdout) if r.returncode == 0 else {}
    kept = json.loads(run("plan", resnet, "--method", "kept-search", "--json").stdout)
    check("plan: by default exact's general plan, below the stage optimum and kept-search, proven, says its recompute",
          general.get("produced_by") == "general local search" and general.get("status") == "optimal" and
          general.get("peak", 1 << 62) < min(exact.get("peak", 0), kept.get("peak", 0)) and
          general.get("lower_bound_holds_for") == "every plan" and "forward passes" in run("plan", resnet).stdout,
          r.stdout + r.stderr)
    # its bound is the cut floor, which info prints above the per-op floor, and explain bounds savings by
    info50 = json.loads(run("info", resnet, "--json").stdout)
    ex50 = json.loads(run("explain", resnet, "--json").stdout)
    check("explain: the most any plan saves, down to the cut floor",
          ex50.get("cut_floor", {}).get("bytes") == info50.get("cut floor") and
          ex50.get("cut_floor", {}).get("after") == "layer1.1.bn3" and
          ex50.get("most_any_plan_saves") == ex50.get("regular", {}).get("peak", 0) - info50.get("cut floor", 0) and
          "down to the cut floor (the values the backward of 'layer1.1.conv1' reads: held across the backward of "
          "'layer1.1.bn3' or recomputed after it" in " ".join(ex50.get("verdict", [])),
          str(ex50)[:600])
    check("info: ResNet-50's cut floor above its per-op floor, exact's bound, and its plan's peak",
          info50.get("per-op floor", 1 << 62) < info50.get("cut floor", 0) == general.get("lower bound") ==
          general.get("peak") and
          "least peak proven: it equals the cut floor (what the values the backward of 'layer1.1.conv1' reads" in
          run("plan", resnet).stdout, str(info50) + r.stdout)
    # one NASNet cell: no backward order gives every backward its cheapest done set; the backward-order
    # floor that says so is exact's bound, info's and explain's, and proves the plan over every schedule
    cell = str(tmp / "nasnet-cell.json")
    run("gen", "nas", "--cell", "nasnet", "--cells", "1", "-o", cell)
    info_cell = json.loads(run("info", cell, "--json").stdout or "{}")
    plan_cell = json.loads(run("plan", cell, "--json").stdout or "{}")
    explain_cell = json.loads(run("explain", cell, "--json").stdout or "{}")
    check("a NASNet cell: the backward-order floor above the per-op floor is exact's proven bound, and explain's",
          info_cell.get("per-op floor", 1 << 62) < info_cell.get("order floor", 0) == plan_cell.get("lower bound") ==
          plan_cell.get("peak") == explain_cell.get("order_floor", {}).get("bytes") and
          plan_cell.get("status") == "optimal" and "it equals the backward-order floor" in run("plan", cell).stdout and
          "down to the backward-order floor" in " ".join(explain_cell.get("verdict", [])),
          str(info_cell) + str(plan_cell)[:600])
    # three DARTS cells: the window floor around the plan's peak passes the other three floors; exact's plan
    # meets it, and explain bounds what any plan saves by it, where info (no plan) cannot look
    darts3 = str(tmp / "darts-3.json")
    run("gen", "nas", "--cell", "darts", "--cells", "3", "-o", darts3)
    info_d3 = json.loads(run("info", darts3, "--json").stdout or "{}")
    plan_d3 = json.loads(run("plan", darts3, "--json").stdout or "{}")
    explain_d3 = json.loads(run("explain", darts3, "--json").stdout or "{}")
    info_most = max(info_d3.get(k, 0) for k in ("per-op floor", "cut floor", "order floor"))
    check("three DARTS cells: explain's search floor is exact's proven window floor, above info's floors",
          info_most < plan_d3.get("lower bound", 0) == plan_d3.get("peak") ==
          explain_d3.get("search_floor", {}).get("bytes") and plan_d3.get("status") == "optimal" and
          explain_d3.get("search_floor", {}).get("name", "").startswith("the window floor (every schedule") and
          explain_d3.get("most_any_plan_saves") == explain_d3.get("regular", {}).get("peak", 0) -
          plan_d3.get("lower bound", 0) and
          "down to the window floor (every schedule" in " ".join(explain_d3.get("verdict", [])),
          str(info_d3) + str(explain_d3)[:600])
    r = run("plan", resnet, "--max-recompute", "1", "--json")
    held = json.loads(r.stdout) if r.returncode == 0 else {}
    check("plan --max-recompute 1: at most a forward pass of recompute, between the two peaks",
          r.returncode == 0 and general.get("peak", 1 << 62) <= held.get("peak", 0) <= exact.get("peak", 0) and
          held.get("recompute", 1e9) <= held.get("forward_time", 0) * (1 + 1e-9), r.stdout + r.stderr)
    expect_error("a negative --general-work", ["plan", resnet, "--general-work", "-1"], "--general-work")
    r = run("plan", resnet, "--method", "exact", "--general-work", "0", "--order", "best", "--json")
    in_both = json.loads(r.stdout) if r.returncode == 0 else {}
    check("plan --order best tries the consumers-first order too, lower here; by default (241 lower sets) the "
          "graph's order", exact.get("order") == "graph" and in_both.get("order") == "consumers-first" and
          in_both.get("status") == "optimal" and in_both.get("peak", 1 << 62) < exact.get("peak", 0),
          r.stdout + r.stderr)
    expect_error("an unknown order", ["plan", resnet, "--order", "random"], "--order")
    for method in ("dp", "chain", "approx"):
        r = run("plan", resnet, "--method", method, "--json")
        ok = r.returncode == 0 and json.loads(r.stdout).get("peak", 0) >= exact.get("peak", 1 << 62)
        check(f"plan --method {method} never beats exact", ok, r.stdout + r.stderr)
    # --json names the search's counts in each method's words, and why a plan is not proven
    check("an optimal plan has no 'unproven' reason, and its search counts lower sets",
          "unproven" not in exact and exact.get("search", {}).get("lower_sets", 0) > 0, str(exact))
    for method, count, why in (("mincut", "minimum_cuts", "no-proof"), ("ogc", "division_pieces", "no-proof"),
                               ("ogc-exact", "sweeps", None), ("kept-search", "toggles_taken", "no-proof")):
        r = run("plan", resnet, "--method", method, "--json")
        planned = json.loads(r.stdout) if r.returncode == 0 else {}
        check(f"plan --method {method} --json: search counts '{count}', unproven {why}",
              count in planned.get("search", {}) and planned.get("unproven") == why and
              planned.get("peak", 0) >= exact.get("peak", 1 << 62) * (0.9 if method == "kept-search" else 1),
              r.stdout + r.stderr)
    # "optimal" is said with the plans it covers; the search row names the method that made the plan
    r = run("plan", resnet, "--method", "chain")
    check("plan --method chain: 'optimal over id-interval stage plans', search labelled (chain)",
          r.returncode == 0 and re.search(r"^status\s+optimal over id-interval stage plans", r.stdout, re.M) and
          re.search(r"^search \(chain\)\s+[0-9.]+ s, [0-9.e+]+ work units", r.stdout, re.M), r.stdout + r.stderr)
    check("plan --json: the producing method, the proof's family, and what the bound holds for",
          exact.get("produced_by") == "dp" and exact.get("proof_family") == "stage plans" and
          exact.get("lower_bound_holds_for") == "stage plans" and exact.get("search", {}).get("work", 0) > 0,
          str(exact))
    # general-search meets the per-op floor on ResNet-18, which proves the least peak of every schedule
    resnet18 = str(tmp / "resnet18.json")
    run("zoo", "export", "resnet18", "-o", resnet18)
    floor = json.loads(run("info", resnet18, "--json").stdout).get("per-op floor")
    r = run("plan", resnet18, "--method", "general-search", "--quiet")
    general = json.loads(run("plan", resnet18, "--method", "general-search", "--quiet", "--json").stdout)
    check("plan --method general-search: 'optimal over every schedule, in peak' at the per-op floor",
          r.returncode == 0 and re.search(r"^status\s+optimal over every schedule, in peak", r.stdout, re.M) and
          general.get("peak") == floor and general.get("proof_family") == "every schedule, in peak" and
          general.get("lower_bound_holds_for") == "every plan" and "unproven" not in general, r.stdout + r.stderr)
    # exact meets U-Net's per-op floor in the last-written-first order, and says which order
    unet = str(tmp / "unet.json")
    run("zoo", "export", "unet", "-o", unet)
    floor = json.loads(run("info", unet, "--json").stdout).get("per-op floor")
    r = run("plan", unet, "--quiet")
    planned = json.loads(run("plan", unet, "--quiet", "--json").stdout)
    check("plan: U-Net optimal over every schedule, in the last-written-first order",
          r.returncode == 0 and re.search(r"^status\s+optimal over every schedule", r.stdout, re.M) and
          re.search(r"^order\s+last-written-first \(", r.stdout, re.M) and planned.get("peak") == floor and
          planned.get("order") == "last-written-first", r.stdout + r.stderr)
    nas = str(tmp / "nas.json")
    run("gen", "nas", "--cells", "8", "-o", nas)
    plans = [run("plan", nas, "--work-limit", "3e7", "--quiet", "--json", "-o", str(tmp / f"nas{i}.plan.json"))
             for i in range(2)]
    limited = [json.loads(p.stdout) if p.returncode == 0 else {} for p in plans]
    check("plan --work-limit: stopped by the work limit, the same plan twice",
          limited[0].get("unproven") == "work-limit" and
          (tmp / "nas0.plan.json").read_text() == (tmp / "nas1.plan.json").read_text(),
          plans[0].stdout[:800] + plans[0].stderr)
    expect_error("a negative work limit", ["plan", resnet, "--work-limit", "-1"], "--work-limit")
    r = run("plan", nas, "--work-limit", "1e8")
    check("no progress line when stderr is not a terminal", r.returncode == 0 and r.stderr == "", r.stderr)
    r = run("plan", resnet, "--objective", "time", "--budget", "2GiB", "--json")
    timed = json.loads(r.stdout) if r.returncode == 0 else {}
    check("time objective stays within the budget", 0 < timed.get("peak", 0) <= 2 * 2**30, r.stdout + r.stderr)
    r = run("plan", resnet, "--objective", "time", "--budget", "1GiB")
    check("an impossible budget names the smallest feasible one",
          r.returncode != 0 and "smallest feasible budget" in r.stderr, r.stdout + r.stderr)
    expect_error("time objective without a budget", ["plan", resnet, "--objective", "time"], "needs --budget")
    expect_error("a budget that is not a size", ["plan", resnet, "--objective", "time", "--budget", "lots"],
                 "not a byte size")
    r = run("pareto", resnet, "--csv", str(tmp / "f.csv"), "--svg", str(tmp / "f.svg"), "--json")
    front = json.loads(r.stdout) if r.returncode == 0 else {}
    pts = front.get("points", [])
    check("pareto: exact frontier, peaks rising and recompute falling",
          front.get("status") == "optimal" and len(pts) > 3 and
          all(a["peak"] < b["peak"] and a["recompute"] > b["recompute"] for a, b in zip(pts, pts[1:])) and
          all(p["least_recompute"] for p in pts) and pts[0]["peak"] == exact.get("peak"), r.stdout[:500] + r.stderr)
    csv_lines = (tmp / "f.csv").read_text().splitlines() if (tmp / "f.csv").exists() else []
    check("pareto writes CSV and SVG",
          csv_lines[:1] == ["peak_bytes,recompute_seconds,overhead,least_recompute"] and len(csv_lines) == len(pts) + 1 and
          (tmp / "f.svg").read_text().startswith("<svg"), "\n".join(csv_lines[:3]))
    if shutil.which("rsvg-convert"):
        r = subprocess.run(["rsvg-convert", str(tmp / "f.svg"), "-o", str(tmp / "f.png")], capture_output=True, text=True)
        check("the frontier SVG renders", r.returncode == 0 and (tmp / "f.png").stat().st_size > 1000, r.stderr)

    # explain: the forum thread's second network, its per-op checkpoints, Adam, a budget
    full = str(ROOT / "examples/graphs/forum-cnn-full.json")
    per_op = "conv1,relu1,conv2,relu2,conv3,relu3,flatten,param1,sigmoid,param2,param3,cat"
    r = run("explain", full, "--optimizer", "adam", "--keep", per_op, "--budget", "8GiB", "--json")
    ex = json.loads(r.stdout) if r.returncode == 0 else {}
    params = 6946247896
    check("explain: parameters and Adam state of the forum network",
          ex.get("parameters") == params and ex.get("optimizer_state") == 2 * params and
          ex.get("regular", {}).get("at_peak", {}).get("parameters") == params and
          ex.get("regular", {}).get("at_peak", {}).get("parameter gradients") == params - 36200, r.stdout[:400] + r.stderr)
    check("explain: regular training peaks at the per-op floor, nothing to save",
          ex.get("regular", {}).get("peak") == 14059935192 + 2 * params and
          ex.get("per_op_floor", {}).get("bytes") == ex.get("regular", {}).get("peak") and
          ex.get("most_any_plan_saves") == 0 and ex.get("optimal", {}).get("is_regular") is True, str(ex)[:400])
    check("explain: the per-op checkpoints cost 42871060 bytes more",
          ex.get("chosen", {}).get("saves") == -42871060 and ex.get("chosen", {}).get("kept") == 12, str(ex.get("chosen"))[:300])
    check("explain: the verdict says so, and that 8 GiB cannot fit",
          any("can save nothing" in v for v in ex.get("verdict", [])) and
          any("No plan fits 8.00 GiB" in v for v in ex.get("verdict", [])), str(ex.get("verdict")))
    r = run("explain", full, "--keep", "relu1,relu2,relu3,flatten,cat")
    check("explain prints the breakdown, the floor, the largest tensors and a verdict",
          r.returncode == 0 and all(w in r.stdout for w in ("regular training", "your checkpoints", "optimal plan",
                                                                "per-op floor", "largest at the peak", "verdict",
                                                                "parameter gradient of 'param1'")), r.stdout + r.stderr)
    plan_path = str(tmp / "forum-plan.json")
    run("plan", GRAPH, "--method", "sqrt", "-o", plan_path)
    r = run("explain", GRAPH, "--plan", plan_path, "--json")
    check("explain --plan reads a plan file", r.returncode == 0 and json.loads(r.stdout).get("chosen", {}).get("method") == "sqrt",
          r.stdout[:300] + r.stderr)
    expect_error("explain: unknown checkpoint", ["explain", full, "--keep", "relu1,conv9"],
                 "--keep: 'conv9' is not a node of graph 'forum-cnn-full'")
    expect_error("explain: a plan the simulator rejects names the file",
                 ["explain", GRAPH, "--plan", file("bad-plan.json", '{"steps": [["compute", "relu1"]]}')],
                 "bad-plan.json: step 0 ('relu1'): operand 'conv1' is not alive")
    expect_error("explain: a budget that is not a size", ["explain", full, "--budget", "lots"], "not a byte size")
    expect_error("explain: unknown optimizer", ["explain", full, "--optimizer", "adagrad"], "adagrad")
    expect_error("explain: --keep and --plan together", ["explain", full, "--keep", "relu1", "--plan", plan_path],
                 "excludes")

    # explain's pictures on a 518-node zoo network render with rsvg-convert
    big = str(tmp / "resnet152.json")
    run("zoo", "export", "resnet152", "-o", big)
    pictures = {kind: tmp / f"r152-{kind}.svg" for kind in ("graph", "timeline", "pareto")}
    r = run("explain", big, "--graph-svg", str(pictures["graph"]), "--timeline-svg", str(pictures["timeline"]),
            "--pareto-svg", str(pictures["pareto"]))
    check("explain writes three SVGs for resnet152", r.returncode == 0 and
          all(p.exists() and p.read_text().startswith("<svg") for p in pictures.values()), r.stdout[-300:] + r.stderr)
    graph_svg = pictures["graph"].read_text() if pictures["graph"].exists() else ""
    check("explain: repeated blocks are collapsed", "×35" in graph_svg and "layer3.1 … 35" in graph_svg, "")
    if shutil.which("rsvg-convert"):
        for kind, svg in pictures.items():
            png = svg.with_suffix(".png")
            r = subprocess.run(["rsvg-convert", str(svg), "-o", str(png)], capture_output=True, text=True)
            check(f"the {kind} SVG renders", r.returncode == 0 and not r.stderr and png.exists() and
                  png.stat().st_size > 10000, r.stderr)

    # explain's plan is the one `remat plan` gives, general plans included;
    # 800 MiB lies between ResNet-152's general plan and its stage optimum
    r = run("plan", big, "--json", "--quiet")
    planned = json.loads(r.stdout).get("peak") if r.returncode == 0 else None
    r = run("explain", big, "--json")
    ex = json.loads(r.stdout) if r.returncode == 0 else {}
    check("explain: the plan of `remat plan`, with the plans its status speaks of",
          planned is not None and ex.get("optimal", {}).get("peak") == planned and
          ex.get("optimal", {}).get("proof_family") in ("general plans", "every schedule"), str(ex.get("optimal"))[:300])
    r = run("explain", big, "--budget", "800MiB", "--json")
    ex = json.loads(r.stdout) if r.returncode == 0 else {}
    check("explain: a general plan fits 800 MiB",
          0 < ex.get("optimal", {}).get("peak", 0) <= 800 << 20 and
          any("the best plan found does" in v for v in ex.get("verdict", [])), str(ex.get("verdict")))
    r = run("explain", big, "--budget", "800MiB", "--general-work", "0", "--json")
    ex = json.loads(r.stdout) if r.returncode == 0 else {}
    check("explain --general-work 0: no stage plan fits 800 MiB, and the verdict names the family",
          ex.get("optimal", {}).get("peak", 0) > 800 << 20 and ex.get("optimal", {}).get("proof_family") == "stage plans" and
          any("among stage plans, none needs less than" in v and "does not rule out plans of other kinds" in v
              for v in ex.get("verdict", [])), str(ex.get("verdict")))

    # Kusumoto IR input
    ir = file("cg.txt", "3 2\n0 64 x\n1 32 /c/W\n2 128 y\nforward\n2 1\n0 _\n1 _\n2\nConvolution2DFunction\n{}\n"
                        "backward\n3 2\n2 gradient\n0 input\n1 input\n0\n1\nConvolution2DFunction\n{}\n")
    r = run("info", ir, "--json")
    check("info reads Kusumoto IR", r.returncode == 0 and json.loads(r.stdout).get("parameters") == 32, r.stdout + r.stderr)

    # Bad input: one clear line, non-zero exit
    good = json.loads(Path(GRAPH).read_text())
    expect_error("missing file", ["info", str(tmp / "nope.json")], "cannot open")
    # The seven malformed inputs: each names the file and line, and the node where there is one.
    expect_error("empty file", ["info", file("empty.json", "")], "empty file", "empty.json:1:")
    expect_error("truncated JSON", ["info", file("trunc.json", Path(GRAPH).read_text()[:300])], "truncated JSON",
                 "trunc.json:1:")
    bad = json.loads(json.dumps(good)); bad["nodes"][1]["bytes"] = "big"
    expect_error("wrong type", ["info", file("type.json", json.dumps(bad, indent=1))],
                 "node 'conv1': bytes must be an integer", "type.json:26:")
    bad = json.loads(json.dumps(good)); bad["nodes"][1]["bytes"] = -1
    expect_error("negative bytes", ["info", file("neg.json", json.dumps(bad, indent=1))],
                 "node 'conv1': bytes must be a non-negative integer, got -1", "neg.json:26:")
    bad = json.loads(json.dumps(good)); bad["nodes"][2]["inputs"] = ["conv9"]
    expect_error("unknown input", ["info", file("unk.json", json.dumps(bad, indent=1))],
                 "node 'relu1': input 'conv9' does not name a node", "unk.json:44:")
    bad = json.loads(json.dumps(good)); bad["nodes"][1]["inputs"] = ["x", "relu1"]
    expect_error("cycle", ["info", file("cycle.json", json.dumps(bad, indent=1))],
                 "the graph has a cycle: 'relu1' -> 'conv1' -> 'relu1'", "cycle.json:41:")
    bad = json.loads(json.dumps(good))
    for n in bad["nodes"][1:3]:
        n["bytes"] = 2**63 - 1
    expect_error("sizes overflow", ["info", file("ovf.json", json.dumps(bad, indent=1))],
                 "node 'conv1': sizes overflow 64 bits", "ovf.json:20:")
    # The same in Kusumoto IR: located by line, or by node once the graph is assembled.
    expect_error("IR: truncated", ["info", file("t.txt", "2 2\n0 10 _\n")], "truncated file", "t.txt:3:")
    expect_error("IR: wrong type", ["info", file("w.txt", "2 2\n0 10 _\n1 abc _\n")], "got 'abc'", "w.txt:3:")
    expect_error("IR: negative bytes", ["info", file("n.txt", "2 2\n0 10 _\n1 -5 _\n")], "must not be negative",
                 "n.txt:3:")
    expect_error("IR: unknown variable", ["info", file("u.txt", "2 2\n0 10 _\n1 5 _\nforward\n1 1\n0 _\n7\nReLU\n{}\n")],
                 "output variable 7 is not a variable", "u.txt:7:")
    cyclic_ir = ("3 4\n0 10 _\n1 10 _\n2 10 _\nforward\n2 1\n0 _\n2 _\n1\nReLU\n{}\nforward\n1 1\n1 _\n2\nReLU\n{}\n"
                 "backward\n1 1\n1 gradient\n0\nReLU\n{}\nbackward\n1 1\n2 gradient\n1\nReLU\n{}\n")
    expect_error("IR: cycle", ["info", file("c.txt", cyclic_ir)], "the graph has a cycle: 'v2' -> 'v1' -> 'v2'", "c.txt:")
    big = 2**63 - 1
    overflowing_ir = (f"3 2\n0 {big} _\n1 {big} _\n2 5 _\nforward\n2 1\n0 _\n1 _\n2\nAdd\n{{}}\n"
                      "backward\n1 2\n2 gradient\n0\n1\nAdd\n{}\n")
    expect_error("IR: sizes overflow", ["info", file("o.txt", overflowing_ir)], "node 'v2': sizes overflow 64 bits", "o.txt:")
    expect_error("not a graph", ["info", file("text.txt", "hello\n")], "not a graph file")
    expect_error("bad plan", ["simulate", GRAPH, file("p.json", '{"kept": ["nothing"]}')], "'nothing' is not a node")
    expect_error("invalid schedule", ["simulate", GRAPH, file("s.json", '{"steps": [["compute", "relu1"]]}')],
                 "operand 'conv1' is not alive")
    r = run("plan", GRAPH, "--method", "magic")
    check("unknown method is refused", r.returncode != 0 and "magic" in r.stderr, r.stderr)
    r = run("bogus")
    check("unknown command is refused", r.returncode != 0, r.stderr)
    located = run("info", file("loc.json", json.dumps(bad, indent=1)))
    check("errors name file and line", ":" in located.stderr and "loc.json:" in located.stderr, located.stderr)

    # zoo: the model list, exports, and the shipped graphs it made
    r = run("zoo", "list")
    check("zoo list prints 21 models", r.returncode == 0 and len(r.stdout.splitlines()) == 22 and
          "resnet50" in r.stdout and "25557032" in r.stdout, r.stdout + r.stderr)
    r = run("zoo", "list", "--json")
    models = {m["name"]: m for m in json.loads(r.stdout)} if r.returncode == 0 else {}
    check("zoo list --json", models.get("inception-v3", {}).get("parameters") == 27161264 and
          models.get("alexnet", {}).get("batch") == 1024 and models.get("darts-cifar10", {}).get("height") == 32,
          r.stdout[:300] + r.stderr)
    r = run("zoo", "export", "resnet50")
    exported = json.loads(r.stdout) if r.returncode == 0 else {"nodes": []}
    nodes = {n["name"]: n for n in exported["nodes"]}
    check("zoo export writes remat JSON to stdout", exported.get("name") == "resnet50" and len(nodes) == 178 and
          nodes.get("layer1.0.conv1", {}).get("attrs", {}).get("shape") == [64, 64, 56, 56], r.stderr)
    for name in ("resnet50", "densenet121", "inception-v3", "darts-cifar10"):
        r = run("zoo", "export", name)
        shipped = ROOT / "examples/graphs" / f"{name}.json"
        check(f"examples/graphs/{name}.json is 'remat zoo export {name}'",
              r.returncode == 0 and shipped.exists() and shipped.read_text() == r.stdout, r.stderr)
    small = str(tmp / "small.json")
    r = run("zoo", "export", "resnet18", "--batch", "2", "--image", "64", "96", "--dtype", "bf16", "--device", "a100",
            "-o", small)
    graph = json.loads(Path(small).read_text()) if r.returncode == 0 else {"nodes": []}
    first = graph["nodes"][0] if graph["nodes"] else {}
    check("zoo export options", first.get("attrs") == {"shape": [2, 3, 64, 96], "dtype": "bf16"} and
          "written to" in r.stdout, r.stdout + r.stderr)
    r = run("info", small, "--json")
    check("info reads an exported model", r.returncode == 0 and json.loads(r.stdout).get("parameters") == 2 * 11689512,
          r.stdout + r.stderr)

    # outputs: checked before the search, written whole or not at all, never over an input
    copy = file("copy.json", Path(GRAPH).read_text())
    expect_error("-o equal to the input graph is refused", ["plan", copy, "-o", copy], "is an input of this command")
    check("... and the input is untouched", Path(copy).read_text() == Path(GRAPH).read_text())
    expect_error("-o equal to the input, by another path", ["plan", copy, "-o", str(tmp / "." / "copy.json")],
                 "is an input of this command")
    expect_error("the same file for two outputs", ["plan", GRAPH, "-o", str(tmp / "x.out"), "--dot", str(tmp / "x.out")],
                 "is already the output of --output")
    before = set(os.listdir(tmp))
    expect_error("a failed second output", ["plan", GRAPH, "-o", str(tmp / "p2.json"), "--dot", "/proc/x"],
                 "--dot: cannot write '/proc/x'")
    check("... leaves no file behind", set(os.listdir(tmp)) == before, str(set(os.listdir(tmp)) - before))
    stack64 = str(tmp / "stack64.json")
    run("gen", "nas", "--cells", "64", "-o", stack64)
    started = time.monotonic()
    expect_error("-o into a missing directory fails before the search",
                 ["plan", stack64, "--method", "ogc-exact", "-o", str(tmp / "no" / "p.json")],
                 "no directory '" + str(tmp / "no") + "'")
    check("... at once", time.monotonic() - started < 5, f"{time.monotonic() - started:.1f} s")
    expect_error("a directory as output", ["info", GRAPH, "--dot", str(tmp)], "is a directory")
    for command in (["info", GRAPH], ["plan", GRAPH, "--method", "sqrt"], ["zoo", "export", "alexnet"]):
        with open("/dev/full", "w") as full:
            r = subprocess.run([REMAT, *command], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
        check(f"{command[0]}: output lost to a full device is an error", r.returncode != 0 and
              r.stderr.strip() == "remat: error: cannot write to standard output", r.stderr)
    r = run("plan", GRAPH, "--method", "sqrt", "-o", str(tmp / "mode.json"))
    mask = os.umask(0)
    os.umask(mask)
    check("a written file has the mode a plain create gives", (tmp / "mode.json").stat().st_mode & 0o777 == 0o666 & ~mask,
          oct((tmp / "mode.json").stat().st_mode))

    # --time-limit: every value either a limit in milliseconds or one clear error
    for value in ("1e10", "1e300", "nan", "inf", "0", "-1", "abc", "1e7x"):
        expect_error(f"--time-limit {value}", ["plan", GRAPH, "--time-limit", value],
                     f"--time-limit: expected a number of seconds above 0, at most 10000000, got '{value}'")
    expect_error("--bound-time 1e300", ["plan", GRAPH, "--bound-time", "1e300"], "--bound-time: expected a number")
    expect_error("pareto --time-limit nan", ["pareto", GRAPH, "--time-limit", "nan"], "--time-limit: expected")
    expect_error("explain --time-limit 0", ["explain", GRAPH, "--time-limit", "0"], "--time-limit: expected")
    expect_error("-k 0", ["plan", GRAPH, "--method", "every-k", "-k", "0"], "-k: expected a positive whole number, got '0'")
    expect_error("-k past 2^63", ["plan", GRAPH, "-k", "99999999999999999999"], "-k: expected a positive whole number")
    for method in ("dp", "exact", "ogc-exact"):
        started = time.monotonic()
        r = run("plan", stack64, "--method", method, "--time-limit", "0.0004")
        check(f"--time-limit 0.0004 is a millisecond, not 'no limit' ({method})",
              r.returncode in (0, 1) and time.monotonic() - started < 10, r.stdout[-300:] + r.stderr)

    # --max-memory: the search stops at the ceiling with its plan and says so
    r = run("plan", stack64, "--method", "kept-search", "--max-memory", "1", "--json")
    capped = json.loads(r.stdout) if r.returncode == 0 else {}
    check("--max-memory stops the search with its best plan, and --json says why",
          capped.get("unproven") == "memory-limit" and capped.get("peak", 0) > 0, r.stdout[-500:] + r.stderr)
    r = run("plan", stack64, "--method", "kept-search", "--max-memory", "1")
    check("... and the table says so", r.returncode == 0 and "stopped at the memory ceiling" in r.stdout, r.stdout + r.stderr)
    expect_error("--max-memory that is not a size", ["plan", GRAPH, "--max-memory", "lots"],
                 "--max-memory: 'lots' is not a positive byte size")

    # graphs with nothing to plan: inputs only, or already at the per-op floor
    inputs_only = file("inputs.json", json.dumps({"format": "remat-graph", "version": 1, "name": "only-inputs",
                                                  "nodes": [{"name": "x", "op": "input", "bytes": 100}]}))
    for method in methods:
        r = run("plan", inputs_only, "--method", method, "--json")
        planned = json.loads(r.stdout) if r.returncode == 0 else {}
        check(f"a graph of inputs only: {method} plans it, exit 0", planned.get("peak") == 100, r.stdout + r.stderr)

    # gen: every kind writes a graph info can read; a seed gives the same graph
    for kind, args in (("chain", ["--length", "50", "--max-features", "2048", "--seed", "3"]),
                       ("random", ["--layers", "6", "--width", "3", "--density", "0.3", "--seed", "5"]),
                       ("nas", ["--cell", "amoebanet", "--cells", "6", "--batch", "4", "--aux"]),
                       ("transformer", ["--layers", "2", "--batch", "2", "--seq", "32", "--hidden", "64", "--heads", "4"])):
        out = str(tmp / f"{kind}.json")
        r = run("gen", kind, *args, "-o", out)
        info_r = run("info", out, "--json") if r.returncode == 0 else r
        check(f"gen {kind}", r.returncode == 0 and info_r.returncode == 0 and json.loads(info_r.stdout).get("nodes", 0) > 10,
              r.stdout + r.stderr + info_r.stderr)
    r1, r2 = run("gen", "random", "--seed", "9"), run("gen", "random", "--seed", "9")
    check("gen random is deterministic", r1.returncode == 0 and r1.stdout == r2.stdout, r1.stderr)
    r = run("gen", "nas", "--cells", "1900", "-o", str(tmp / "big.json"))
    check("gen nas makes a 10^5-node stack", r.returncode == 0 and "104436 nodes" in r.stdout, r.stdout + r.stderr)

    expect_error("zoo: unknown model", ["zoo", "export", "resnet51"], "unknown model 'resnet51' (known: alexnet")
    expect_error("zoo: unknown dtype", ["zoo", "export", "resnet50", "--dtype", "f8"], "unknown dtype 'f8'")
    expect_error("zoo: unknown device", ["zoo", "export", "resnet50", "--device", "tpu"], "unknown device profile 'tpu'")
    expect_error("zoo: bad batch", ["zoo", "export", "resnet50", "--batch", "abc"], "--batch: expected a positive whole number")
    expect_error("zoo: one image size", ["zoo", "export", "resnet50", "--image", "300"], "--image")
    expect_error("zoo: image too small", ["zoo", "export", "vgg11", "--image", "16", "16"], "node 'features.20'")
    expect_error("zoo: no model", ["zoo", "export"], "NAME is required")
    expect_error("gen: no kind", ["gen"], "subcommand is required")
    expect_error("gen: heads must divide", ["gen", "transformer", "--heads", "5"], "heads (5) must divide hidden (768)")
    expect_error("gen: auxiliary head needs 8x8", ["gen", "nas", "--image", "64", "64", "--aux"], "auxiliary head needs")
    expect_error("gen: unknown cell", ["gen", "nas", "--cell", "enas"], "unknown cell genotype 'enas'")
    expect_error("gen: odd map", ["gen", "nas", "--image", "31", "31"], "FactorizedReduce needs an even map, got 31×31")
    expect_error("gen: density", ["gen", "random", "--density", "2"], "--density")

print(f"cli: {cases - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
