#!/usr/bin/env python3
"""Checks the core's include graph under include/remat along its data flow.

Fails when a header
- pulls in CUDA or anything from backends/ (the core builds with a plain C++20 compiler);
- includes a header of a later layer (an upward include): base < graph < plan, zoo
  < analysis, io < solvers < runtime < solve.hpp < report < remat.hpp;
- takes part in an include cycle;
- is longer than MAX_LINES lines.
"""
import re
import sys
from pathlib import Path

MAX_LINES = 700
FORBIDDEN = re.compile(r'#\s*include\s*[<"]([^>"]*(cuda|cudnn|cublas|thrust/|cub/|backends/)[^>"]*)[>"]')
INCLUDE = re.compile(r'#\s*include\s*<remat/([^>]+)>')
# The layer of each folder (and of the files on top); a header may include
# its own layer and those below it.
LAYERS = {"detail": 0, "": 0, "graph": 1, "plan": 2, "zoo": 2, "analysis": 3, "io": 3,
          "solvers": 4, "runtime": 5, "report": 7}
TOP = {"zoo.hpp": 2, "solve.hpp": 6, "remat.hpp": 8}


def layer(rel: str) -> int:
    if rel in TOP:
        return TOP[rel]
    folder = rel.split("/")[0] if "/" in rel else ""
    if folder not in LAYERS:
        raise SystemExit(f"{rel}: folder '{folder}' has no layer in tools/check-core-includes.py")
    return LAYERS[folder]


def main() -> int:
    root = Path(sys.argv[1])
    core = root / "remat"
    bad = []
    includes = {}
    headers = sorted(core.rglob("*.hpp"))
    for path in headers:
        rel = path.relative_to(core).as_posix()
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) > MAX_LINES:
            bad.append(f"{path}: {len(lines)} lines, over {MAX_LINES}")
        includes[rel] = []
        for number, line in enumerate(lines, 1):
            m = FORBIDDEN.search(line)
            if m:
                bad.append(f"{path}:{number}: includes {m.group(1)}")
            m = INCLUDE.search(line)
            if not m:
                continue
            target = m.group(1)
            includes[rel].append(target)
            if not (core / target).is_file():
                bad.append(f"{path}:{number}: includes <remat/{target}>, which does not exist")
            elif layer(target) > layer(rel):
                bad.append(f"{path}:{number}: includes <remat/{target}> from a later layer")
    # Cycles: depth-first search, reporting each back edge once.
    state = {}

    def visit(h, stack):
        state[h] = "open"
        stack.append(h)
        for t in includes.get(h, []):
            if state.get(t) == "open":
                bad.append("include cycle: " + " -> ".join(stack[stack.index(t):] + [t]))
            elif t not in state:
                visit(t, stack)
        stack.pop()
        state[h] = "done"

    for h in includes:
        if h not in state:
            visit(h, [])
    for line in bad:
        print(line)
    print(f"checked {len(headers)} headers: {len(bad)} problems "
          f"(forbidden or upward includes, cycles, headers over {MAX_LINES} lines)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
