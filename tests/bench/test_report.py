#!/usr/bin/env python3
"""Smoke test of the solver benchmarks and their report: runs a few points of
bench_solvers (AlexNet with four methods; `exact` along the NAS series, which
stops at its lower-set cap) and renders them with bench/report --from-json.

usage: test_report.py BENCH_SOLVERS SOURCE_ROOT
"""

import json
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from checklist import check, verdict


def main():
    bench, root = Path(sys.argv[1]), Path(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # A budget far above the points' times, so the NAS series stops at the lower-set cap and
        # not at a growth prediction from millisecond points (this is the debug build, and exact
        # solves each point in two execution orders).
        for suite, pattern in (("zoo", "^zoo/(exact|ogc-exact|ogc|none)/alexnet/"), ("nas", "^nas/exact/")):
            run = subprocess.run([str(bench), f"--benchmark_filter={pattern}", f"--benchmark_out={tmp / suite}.json",
                                  "--benchmark_out_format=json", "--remat_point_seconds=20"],
                                 capture_output=True, text=True)
            check(run.returncode == 0, f"bench_solvers runs the {suite} points", run.stderr.strip()[-300:])
        zoo = {b["name"].split("/iterations")[0]: b for b in json.loads((tmp / "zoo.json").read_text())["benchmarks"]}
        exact = zoo.get("zoo/exact/alexnet", {})
        check(exact.get("label") == "optimal" and exact.get("gap") == 0 and exact.get("nodes") == 25,
              "exact on AlexNet: optimal, gap 0, 25 nodes")
        check(exact.get("cpu_s", 0) > 0 and exact.get("runs", 0) >= 3 and exact.get("heap_bytes", 0) > 0,
              "exact on AlexNet: a median of at least three runs and a heap peak")
        check(zoo.get("zoo/ogc/alexnet", {}).get("fh_gap_vs_optimum") == 1,
              "ogc's gap on Feng & Huang's objective is against ogc-exact's optimum")
        nas = json.loads((tmp / "nas.json").read_text())["benchmarks"]
        stops = [b for b in nas if "stop: " in b.get("label", "")]
        skipped = [b for b in nas if b.get("error_message", "").startswith("not run: stopped at nas:cells=4")]
        check(len(stops) == 1 and "cells:4/" in stops[0]["name"] and "lower sets" in stops[0]["label"],
              "exact's NAS series stops at 4 cells, at the lower-set cap",
              "; ".join(f'{b["name"]}: {b.get("label") or b.get("error_message", "")}' for b in nas))
        check(len(skipped) == 9, "the nine larger stacks are not run, with the reason")

        out = tmp / "docs"
        run = subprocess.run([sys.executable, str(root / "bench" / "report"), "--from-json", str(tmp), "--suites",
                              "zoo,nas", "--out", str(out)], capture_output=True, text=True)
        check(run.returncode == 0, "bench/report --from-json renders", run.stderr.strip()[-300:])
        text = (out / "benchmarks.md").read_text() if (out / "benchmarks.md").exists() else ""
        check("| alexnet | 25 | 24 | 24 | optimal |" in text, "the report's zoo table has AlexNet's exact row")
        check("cap: more than 20000 lower sets" in text, "the report says why exact stopped on the NAS stacks")
        svgs = sorted((out / "benchmarks").glob("*.svg"))
        check({p.name for p in svgs} >= {"zoo-time.svg", "nas-time.svg", "nas-memory.svg"}, "the plots are written")
        for svg in svgs:
            try:
                ElementTree.parse(svg)
                check(True, f"{svg.name} is well-formed XML")
            except ElementTree.ParseError as e:
                check(False, f"{svg.name} is well-formed XML ({e})")

    run = subprocess.run([str(bench), "--remat_point_seconds=soon"], capture_output=True, text=True)
    check(run.returncode == 1 and "needs a non-negative number" in run.stderr, "a bad option is a one-line error")
    return verdict("bench-report")


if __name__ == "__main__":
    sys.exit(main())
