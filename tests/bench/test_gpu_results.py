#!/usr/bin/env python3
"""bench/gpu-results without a GPU: each committed results page
(docs/results-gpu.md from an H200, docs/results-gpu-h100.md from an H100) is
what its committed .json renders to, every row of that data keeps the
project's one truth (measured peak = simulated peak), --resume on a
complete results file keeps every row and measures nothing (so runs nothing
that needs a device), and the measuring path, run on stand-ins for bench_cuda
and PyTorch, records what they report and flags unequal peaks and failures.

usage: test_gpu_results.py SOURCE_ROOT [BUILD_ROOT]
BUILD_ROOT (with bench/bench_cuda and examples/remat) enables the --resume check;
BUILD_ROOT with examples/remat, the stand-in run.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from checklist import check, verdict


PAGES = ("results-gpu", "results-gpu-h100")


def check_page(script, docs, name, tmp):
    """The page docs/NAME.md is what docs/NAME.json renders to, and its data is complete and equal."""
    data, page = docs / f"{name}.json", docs / f"{name}.md"
    models = json.loads(data.read_text())["models"]
    # The 18 seed models, and whatever the zoo has grown since (GoogLeNet, U-Net, PSPNet).
    check(len(models) >= 18, f"{name}: the results hold at least the 18 seed models", str(len(models)))
    for m in models:
        for method in ("none", "exact"):
            row = m["remat"].get(method, {})
            check("median_ms" in row and row.get("peak_measured") == row.get("peak_simulated"),
                  f"{name}: {m['name']} {method}: measured peak = simulated peak", json.dumps(row)[:200])
        check("median_ms" in m["pytorch"], f"{name}: {m['name']}: PyTorch measured", json.dumps(m["pytorch"])[:200])
    rendered = Path(tmp) / f"{name}.md"
    run = subprocess.run([sys.executable, str(script), "--from", str(data), "--out", str(rendered)],
                         capture_output=True, text=True)
    check(run.returncode == 0, f"{name}: --from renders", run.stderr.strip()[-300:])
    check(rendered.exists() and rendered.read_text() == page.read_text(),
          f"docs/{name}.md is what docs/{name}.json renders to (re-render with --from)")
    text = rendered.read_text() if rendered.exists() else ""
    rows = 2 * len(models)
    check(f"Measured peak = simulated peak in all {rows} measured rows." in text,
          f"{name}: the page states {rows} equal rows")
    check("## Summary" in text and "## Failures" not in text, f"{name}: the page has a summary and no failures")


# A stand-in for bench_cuda: one model's regular and exact rows in Google
# Benchmark's JSON; vgg11's exact row measures 4 KiB above its simulation,
# resnet18 fails the way a device out of memory does.
FAKE_BENCH = r"""#!/usr/bin/env python3
import json, sys
args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
model = args["--benchmark_filter"].split("/")[1]
if model == "resnet18":
    sys.exit("bench_cuda: CUDA error: out of memory")
rows = []
for i, method in enumerate(("none", "exact")):
    simulated = 1000000 * (i + 2)
    rows.append({"name": f"gpu_step/{model}/{method}", "median_ms": 10.0 + i, "peak_simulated": simulated,
                 "peak_measured": simulated + (4096 if (model, method) == ("vgg11", "exact") else 0),
                 "parameters": 1000, "parameter_gradients": 1000, "overhead_simulated": 0.1 * i,
                 "device_bytes": 5000000})
json.dump({"context": {"device": "stand-in"}, "benchmarks": rows}, open(args["--benchmark_out"], "w"))
"""

# A stand-in for the Python that runs bench/pytorch_baseline.py.
FAKE_PYTHON = r"""#!/usr/bin/env python3
import json, sys
out = sys.argv[sys.argv.index("--json") + 1]
budget = float(sys.argv[sys.argv.index("--memory-budget") + 1]) if "--compile" in sys.argv else None
peak = 2500000 if budget is None else int(2000000 * budget) + 1000000
json.dump({"peak_bytes": peak, "median_ms": 8.0 if budget is None else 7.0, "torch": "stand-in",
           "activation_memory_budget": budget}, open(out, "w"))
"""


def check_measuring_path(script, build, tmp):
    """Runs the driver over stand-ins: it records their rows, names unequal peaks and failures on the page."""
    fake = Path(tmp) / "fake-build"
    (fake / "bench").mkdir(parents=True)
    (fake / "examples").mkdir()
    (fake / "examples" / "remat").symlink_to((build / "examples" / "remat").resolve())
    for path, text in ((fake / "bench" / "bench_cuda", FAKE_BENCH), (Path(tmp) / "fake-python", FAKE_PYTHON)):
        path.write_text(text)
        path.chmod(0o755)
    out = Path(tmp) / "stand-in.md"
    run = subprocess.run([sys.executable, str(script), "--build", str(fake), "--models", "alexnet,vgg11,resnet18",
                          "--python", str(Path(tmp) / "fake-python"), "--steps", "3", "--warmup", "1",
                          "--out", str(out)], capture_output=True, text=True)
    check(run.returncode == 0, "stand-ins: the driver runs", (run.stderr or run.stdout).strip()[-300:])
    data = json.loads(out.with_suffix(".json").read_text()) if out.with_suffix(".json").exists() else {"models": []}
    rows = {m["name"]: m for m in data["models"]}
    check(list(rows) == ["alexnet", "vgg11", "resnet18"], "stand-ins: one row per model, in order", str(list(rows)))
    alexnet = rows.get("alexnet", {"remat": {}, "pytorch": {}})
    check(alexnet["remat"].get("exact", {}).get("median_ms") == 11.0 and
          alexnet["remat"].get("none", {}).get("peak_measured") == 2000000 and
          alexnet["pytorch"].get("peak_bytes") == 2500000, "stand-ins: the rows are what the tools reported",
          json.dumps(alexnet)[:300])
    check("out of memory" in rows.get("resnet18", {}).get("remat", {}).get("error", ""),
          "stand-ins: a failed bench_cuda is recorded with its message", json.dumps(rows.get("resnet18"))[:300])
    page = out.read_text() if out.exists() else ""
    check("Measured and simulated peaks differ for: vgg11." in page, "stand-ins: the page names the unequal peak")
    check("## Failures" in page and "resnet18 (remat): bench_cuda: CUDA error: out of memory" in page,
          "stand-ins: the page lists the failure", page[-400:])
    check("## Summary" in page and "2 models" in page, "stand-ins: the summary covers the two complete models")

    # --compile: torch.compile at budgets 1.0 and 0.5, each its own run, in its own columns.
    compiled = Path(tmp) / "compiled.md"
    run = subprocess.run([sys.executable, str(script), "--build", str(fake), "--models", "alexnet", "--compile",
                          "--python", str(Path(tmp) / "fake-python"), "--steps", "3", "--warmup", "1",
                          "--out", str(compiled)], capture_output=True, text=True)
    check(run.returncode == 0, "stand-ins: the driver runs with --compile", (run.stderr or run.stdout).strip()[-300:])
    data = json.loads(compiled.with_suffix(".json").read_text()) if compiled.with_suffix(".json").exists() else {}
    variants = (data.get("models") or [{}])[0].get("pytorch_compile", {})
    check(variants.get("1.0", {}).get("peak_bytes") == 3000000 and variants.get("0.5", {}).get("peak_bytes") == 2000000
          and variants.get("0.5", {}).get("activation_memory_budget") == 0.5,
          "stand-ins: each torch.compile budget is its own run, recorded as reported", json.dumps(variants)[:300])
    page = compiled.read_text() if compiled.exists() else ""
    rows = [line for line in page.splitlines() if line.startswith("| alexnet |")]
    check("PyTorch compile, budget 1.0 | PyTorch compile, budget 0.5 |" in page and len(rows) == 2 and
          rows[0].endswith("| 2 | 3 | 2 |") and rows[1].endswith("| 8.0 | 7.0 | 7.0 |"),
          "stand-ins: the page has torch.compile's columns: peaks and step times", "\n".join(rows))
    check("The exact plan's measured peak against torch.compile's at budget 0.5: -50% to -50%" in page,
          "stand-ins: the summary compares the exact plan with torch.compile at budget 0.5", page[-600:])


def main():
    root = Path(sys.argv[1])
    build = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    script, docs = root / "bench" / "gpu-results", root / "docs"
    data = docs / "results-gpu.json"
    results = json.loads(data.read_text())
    models = results["models"]

    with tempfile.TemporaryDirectory() as tmp:
        for name in PAGES:
            check_page(script, docs, name, tmp)

        if build is None:
            print("skip --resume and the stand-in run: no build directory given")
        else:
            check_measuring_path(script, build, tmp)
        if build is not None and not (build / "bench" / "bench_cuda").exists():
            print("skip --resume: bench_cuda is not built (no CUDA runtime)")
        elif build is not None:
            out = Path(tmp) / "resumed.md"
            # The models the data measured (the zoo may have grown since).
            measured = ",".join(m["name"] for m in models)
            run = subprocess.run([sys.executable, str(script), "--build", str(build), "--resume", str(data),
                                  "--models", measured, "--steps", str(results["steps"]), "--warmup",
                                  str(results["warmup"]), "--out", str(out)], capture_output=True, text=True)
            check(run.returncode == 0, "--resume of a complete run exits 0", (run.stderr or run.stdout).strip()[-300:])
            check("..." not in run.stdout, "--resume of a complete run measures nothing", run.stdout[-300:])
            resumed = json.loads(out.with_suffix(".json").read_text()) if out.with_suffix(".json").exists() else {}
            check(resumed.get("models") == models, "--resume keeps every row as it was")
            mismatch = subprocess.run([sys.executable, str(script), "--build", str(build), "--resume", str(data),
                                       "--steps", str(results["steps"] + 1), "--out", str(out)],
                                      capture_output=True, text=True)
            check(mismatch.returncode != 0 and "resume with the same" in mismatch.stderr,
                  "--resume refuses other --steps, saying so", mismatch.stderr.strip()[-300:])

    return verdict("gpu-results")


if __name__ == "__main__":
    sys.exit(main())
