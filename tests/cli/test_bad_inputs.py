#!/usr/bin/env python3
"""Every bad input an outside tester found, run through the remat CLI.

Each probe must end with exactly one stderr line "remat: error: ..." naming
the file (and its line, where the file has lines), a non-zero exit, within
1 s of CPU time and 100 MB of memory, and must leave no file behind.
Run it on a UBSan build of the CLI to show no probe is undefined behaviour.
Usage: test_bad_inputs.py PATH/TO/remat SOURCE_ROOT
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REMAT = sys.argv[1]
ROOT = Path(sys.argv[2])
GRAPH = str(ROOT / "examples/graphs/forum-cnn.json")
CPU_SECONDS, MEMORY_BYTES = 1.0, 100 * 2**20
failures = 0
cases = 0


def check(name, condition, detail=""):
    global failures, cases
    cases += 1
    print(f"ok    {name}" if condition else f"FAIL  {name}\n      {detail}")
    failures += not condition


def run_measured(args, stdout=None):
    """Runs the CLI: (exit status, stderr, CPU seconds, peak resident bytes), from the child's own rusage."""
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        child = subprocess.Popen([REMAT, *args], stdout=stdout or out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return (child.returncode, err.read().decode("utf-8", "replace"), usage.ru_utime + usage.ru_stime,
                usage.ru_maxrss * 1024)


def probe(name, args, place, tmp, stdout=None):
    before = set(os.listdir(tmp))
    code, err, cpu, rss = run_measured(args, stdout)
    lines = [line for line in err.splitlines() if line.strip()]
    check(name, code not in (0, None) and len(lines) == 1 and lines[0].startswith("remat: error: ") and place in lines[0]
          and cpu < CPU_SECONDS and rss < MEMORY_BYTES and set(os.listdir(tmp)) == before,
          f"exit {code}, {cpu:.2f} s CPU, {rss / 2**20:.0f} MB, new files {set(os.listdir(tmp)) - before}, "
          f"stderr {err[:400]!r}")
    print(f"      {cpu:.3f} s CPU, {rss / 2**20:.1f} MB: {lines[0][:150] if lines else ''}")


with tempfile.TemporaryDirectory() as tmp:
    def file(name, data):
        p = Path(tmp) / name
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
        return str(p)

    def graph(name, nodes, **top):
        return file(name, json.dumps({"format": "remat-graph", "version": 1, "name": name, "nodes": nodes, **top}))

    x = {"name": "x", "op": "input", "bytes": 100}
    nested = "[" * 80000 + "]" * 80000
    probes = [
        ("graph: version nested 80,000 deep", ["info", file("deep.json", '{"format": "remat-graph", "version": '
                                                             + nested + ', "nodes": []}')], "deep.json:1:"),
        ("graph: format nested 80,000 deep", ["info", file("deepf.json", '{"format": ' + nested + '}')], "deepf.json:1:"),
        ("IR: N = 10^8 in 12 bytes", ["info", file("n8.txt", "100000000 0\n")], "n8.txt:"),
        ("IR: N = 2^31", ["info", file("n31.txt", "2147483648 0\n")], "n31.txt:"),
        ("IR: M = 2^64 - 2", ["info", file("m64.txt", "1 18446744073709551614\n")], "m64.txt:"),
        ("IR: a name that is not UTF-8", ["info", file("utf.txt", b"1 0\n0 64 \xff\xfe\n")], "utf.txt:2:"),
        ("graph: times that sum past the largest double",
         ["info", graph("dbl.json", [x, {"name": "a", "op": "relu", "inputs": ["x"], "bytes": 100, "time": 1.7e308},
                                     {"name": "b", "op": "relu", "inputs": ["a"], "bytes": 100, "time": 1.7e308}])],
         "dbl.json"),
        ("a directory as the graph file", ["info", tmp], "is a directory"),
        ("a device as the graph file", ["info", "/dev/zero"], "'/dev/zero' is a device"),
        ("a missing graph file", ["info", str(Path(tmp) / "missing.json")], "missing.json"),
    ]
    # The overflowing number needs its text as written.
    probes.append(("graph: a time that overflows a double", ["info", file("big.json", (
        '{"format": "remat-graph", "version": 1, "name": "big", "nodes": [{"name": "x", "op": "input", "bytes": 100}, '
        '{"name": "y", "op": "relu", "inputs": ["x"], "bytes": 100, "time": 1e309}]}'))], "big.json:1:"))
    plain = graph("plain.json", [x, {"name": "y", "op": "relu", "inputs": ["x"], "bytes": 100, "time": 1e-3}])
    other = graph("other.json", [x, {"name": "y", "op": "relu", "inputs": ["x"], "bytes": 200, "time": 1e-3}])
    plan_path = str(Path(tmp) / "p.json")
    subprocess.run([REMAT, "plan", plain, "--method", "none", "-o", plan_path], check=True, capture_output=True)
    probes += [
        ("plan: format nested 80,000 deep", ["simulate", plain, file("deepp.json", '{"format": ' + nested + '}')],
         "deepp.json:1:"),
        ("plan: kept that is not an array", ["simulate", plain, file("kept.json", '{"steps": [], "kept": "a"}')],
         "kept.json:1:"),
        ("simulate: a plan made for another graph", ["simulate", other, plan_path], "p.json"),
        ("plan -o over its own input", ["plan", plain, "-o", plain], plain),
        ("-o p.json --dot /proc/x", ["plan", plain, "-o", str(Path(tmp) / "q.json"), "--dot", "/proc/x"], "/proc/x"),
        ("-o into a missing directory", ["plan", plain, "-o", str(Path(tmp) / "none" / "q.json")], "none/q.json"),
    ]
    for value in ("1e10", "1e300", "nan", "inf", "0", "-1"):
        probes.append((f"--time-limit {value}", ["plan", plain, "--time-limit", value], f"'{value}'"))
    for name, args, place in probes:
        probe(name, args, place, tmp)
    for command in (["info", plain], ["plan", plain]):
        with open("/dev/full", "w") as full:
            probe(f"{command[0]} > /dev/full", command, "standard output", tmp, stdout=full)

print(f"bad inputs: {cases - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
