#!/usr/bin/env python3
"""bench/gpu-results without a GPU: each committed results page
(docs/results-gpu.md from an H200, docs/results-gpu-h100.md from an H100) is
what its committed .json renders to, every row of that data keeps the
project's one truth (measured peak = simulated peak), and --resume on a
complete results file keeps every row and measures nothing (so runs nothing
that needs a device).

usage: test_gpu_results.py SOURCE_ROOT [BUILD_ROOT]
BUILD_ROOT (with bench/bench_cuda and examples/remat) enables the --resume check.
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
    check(len(models) == 18, f"{name}: the results hold 18 models", str(len(models)))
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
    check("Measured peak = simulated peak in all 36 measured rows." in text, f"{name}: the page states 36 equal rows")
    check("## Summary" in text and "## Failures" not in text, f"{name}: the page has a summary and no failures")


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
            print("skip --resume: no build directory given")
        else:
            out = Path(tmp) / "resumed.md"
            run = subprocess.run([sys.executable, str(script), "--build", str(build), "--resume", str(data),
                                  "--steps", str(results["steps"]), "--warmup", str(results["warmup"]),
                                  "--out", str(out)], capture_output=True, text=True)
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
