#!/usr/bin/env python3
"""Without C++20, remat stops with one line saying so.

- Every public header's first #include is <remat/config.hpp>, whose guard is
  then the first thing a pre-C++20 compiler meets (version.hpp, macros only,
  stays readable by any compiler).
- A C++17 translation unit including <remat/remat.hpp> fails, and its first
  error is the guard's message, not "'concept' does not name a type".
- Configuring remat with cpp_std=c++17 fails with meson.build's message.
Usage: cxx17_guard.py MESON SOURCE_ROOT SCRATCH CXX...
"""
import shutil
import subprocess
import sys
from pathlib import Path

meson, root, scratch = sys.argv[1], Path(sys.argv[2]).resolve(), Path(sys.argv[3])
cxx = sys.argv[4:]
MESSAGE = "remat needs C++20"
INCLUDE_ROOTS = ["include", "backends/common/include", "backends/cpu/include", "backends/cuda/include"]
EXEMPT = {"remat/config.hpp", "remat/version.hpp"}
failures = []

for include_root in INCLUDE_ROOTS:
    for path in sorted((root / include_root).rglob("*.hpp")):
        rel = path.relative_to(root / include_root).as_posix()
        if "/detail/" in rel or rel in EXEMPT:
            continue
        includes = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
                    if line.startswith("#include")]
        if not includes or includes[0] != "#include <remat/config.hpp>":
            failures.append(f"{include_root}/{rel}: first #include is not <remat/config.hpp>")

r = subprocess.run([*cxx, "-std=c++17", "-fsyntax-only", "-I", str(root / "include"), "-x", "c++", "-"],
                   input="#include <remat/remat.hpp>\n", capture_output=True, text=True)
errors = [line for line in r.stderr.splitlines() if "error" in line]
if r.returncode == 0:
    failures.append("a C++17 translation unit including <remat/remat.hpp> compiled")
elif not errors or MESSAGE not in errors[0]:
    failures.append(f"C++17: the first error is not the guard's:\n{errors[0] if errors else r.stderr}")
else:
    print(f"C++17 compile, first of {len(errors)} error lines: {errors[0]}")

shutil.rmtree(scratch, ignore_errors=True)
r = subprocess.run([meson, "setup", str(scratch), str(root), "-Dcpp_std=c++17", "-Dcuda=disabled",
                    "-Dtests=false", "-Dbenchmarks=false", "-Dexamples=false"], capture_output=True, text=True)
message = [line for line in (r.stdout + r.stderr).splitlines() if MESSAGE in line]
if r.returncode == 0 or not message:
    failures.append(f"meson setup -Dcpp_std=c++17 exited {r.returncode} without '{MESSAGE}':\n{r.stdout}{r.stderr}")
else:
    print(f"meson setup -Dcpp_std=c++17: {message[0]}")
shutil.rmtree(scratch, ignore_errors=True)

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
