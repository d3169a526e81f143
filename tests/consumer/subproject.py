#!/usr/bin/env python3
"""remat as a Meson subproject, with the consumer's defaults.

Copies the consumer project (tests/consumer) into SCRATCH, links the source
tree in as subprojects/remat, configures it with no remat option, builds
everything it builds by default and runs the consumer. Fails when the
consumer does not build or run, when remat's CUDA backend is configured
(as a subproject 'auto' means disabled) or when a remat library is compiled
that the consumer does not link.
Usage: subproject.py MESON SOURCE_ROOT SCRATCH
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

meson, root, scratch = sys.argv[1], Path(sys.argv[2]).resolve(), Path(sys.argv[3])


def run(*args, cwd=None):
    r = subprocess.run([meson, *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: meson {' '.join(args)} exited {r.returncode}\n{r.stdout}{r.stderr}")
    return r.stdout


shutil.rmtree(scratch, ignore_errors=True)
project = scratch / "project"
shutil.copytree(root / "tests/consumer", project, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
(project / "subprojects").mkdir()
(project / "subprojects/remat").symlink_to(root, target_is_directory=True)
build = scratch / "build"

# The fallback even where a remat.pc is installed: this tests the subproject.
run("setup", str(build), str(project), "--force-fallback-for=remat")
targets = {t["name"] for t in json.loads(run("introspect", "--targets", str(build)))}
if "remat_cuda" in targets:
    sys.exit("FAIL: remat's CUDA backend is configured in a subproject whose consumer did not ask for it")
run("compile", "-C", str(build))
built = sorted(p.name for p in (build / "subprojects").rglob("*") if p.is_file() and p.suffix in (".a", ".o"))
if built:
    sys.exit(f"FAIL: the consumer links no remat library, yet {', '.join(built)} were built")
r = subprocess.run([str(build / "consumer")], capture_output=True, text=True)
print(r.stdout + r.stderr, end="")
if r.returncode != 0:
    sys.exit(f"FAIL: the consumer exited {r.returncode}")
shutil.rmtree(scratch)
print("ok: remat as a subproject (no CUDA, no library built) planned through <remat/remat.hpp>")
