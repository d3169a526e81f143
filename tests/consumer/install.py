#!/usr/bin/env python3
"""remat installed, then used through pkg-config by a program outside it.

1. A release build with tests, benchmarks, examples and CUDA off, installed
   with --destdir into SCRATCH: consumer.cpp compiles with only
   `pkg-config --cflags remat` and runs; consumer_cpu.cpp compiles and links
   with only `pkg-config --cflags --libs remat-cpu` and runs.
2. Where the main build directory has the CUDA backend (building it again
   here would take minutes), that build installed likewise: remat-cuda.pc,
   libremat_cuda.a and the CUDA headers are there, and consumer_cuda.cpp links
   with `pkg-config --cflags --libs remat-cuda` and the host compiler alone.

Exits 77 (skip) without pkg-config.
Usage: install.py MESON SOURCE_ROOT MAIN_BUILD_DIR SCRATCH CXX...
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

meson, root, main_build, scratch = sys.argv[1], Path(sys.argv[2]).resolve(), Path(sys.argv[3]), Path(sys.argv[4])
cxx = sys.argv[5:]
sources = root / "tests/consumer"
PREFIX = "/usr/local"


def run(*command, env=None):
    r = subprocess.run(command, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(map(str, command))} exited {r.returncode}\n{r.stdout}{r.stderr}")
    return r.stdout


def consumer(destdir, source, package, libs):
    """Compiles source with only what pkg-config says about package, then runs it."""
    # pkg-config reads the .pc files under destdir, their prefix moved there.
    env = dict(os.environ, PKG_CONFIG_PATH=os.pathsep.join(sorted({str(p.parent) for p in destdir.rglob("*.pc")})))
    flags = run("pkg-config", f"--define-variable=prefix={destdir}{PREFIX}", "--cflags",
                *(["--libs"] if libs else []), package, env=env).split()
    # Every -l in a -L pkg-config names, not in a directory this machine's
    # linker happens to search (this one finds libcudart in /usr/local/lib).
    library_dirs = [Path(f[2:]) for f in flags if f.startswith("-L")]
    unplaced = [f for f in flags if f.startswith("-l") and
                not any((d / f"lib{f[2:]}{suffix}").exists() for d in library_dirs for suffix in (".a", ".so"))]
    if unplaced:
        sys.exit(f"FAIL: pkg-config --libs {package} names no directory holding {', '.join(unplaced)}: {' '.join(flags)}")
    exe = scratch / source.removesuffix(".cpp")
    run(*cxx, "-std=c++20", str(sources / source), "-o", str(exe), *flags)
    # The CUDA runtime's shared libraries: where pkg-config's -L points.
    env = dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join(map(str, library_dirs))) if library_dirs else None
    print(run(str(exe), env=env), end="")


def installed(destdir, *patterns):
    missing = [p for p in patterns if not list((destdir / PREFIX.lstrip("/")).glob(p))]
    if missing:
        sys.exit(f"FAIL: not installed under {destdir}{PREFIX}: {', '.join(missing)}")


if not shutil.which("pkg-config"):
    print("SKIP: pkg-config not found")
    sys.exit(77)
shutil.rmtree(scratch, ignore_errors=True)
scratch.mkdir(parents=True)

# 1. What a packager builds.
build, destdir = scratch / "build", scratch / "root"
run(meson, "setup", str(build), str(root), "--buildtype=release", f"--prefix={PREFIX}", "-Dcuda=disabled",
    "-Dtests=false", "-Dbenchmarks=false", "-Dexamples=false")
run(meson, "install", "-C", str(build), "--destdir", str(destdir))
installed(destdir, "include/remat/remat.hpp", "include/remat/ops/op.hpp", "include/remat/cpu/executor.hpp",
          "lib*/**/libremat_ops.a", "lib*/**/libremat_cpu.a", "lib*/**/remat.pc", "lib*/**/remat-cpu.pc")
consumer(destdir, "consumer.cpp", "remat", libs=False)
consumer(destdir, "consumer_cpu.cpp", "remat-cpu", libs=True)

# 2. The CUDA backend, from the main build.
targets = {t["name"] for t in json.loads(run(meson, "introspect", "--targets", str(main_build)))}
if "remat_cuda" in targets:
    destdir = scratch / "root-cuda"
    run(meson, "install", "-C", str(main_build), "--no-rebuild", "--destdir", str(destdir))
    installed(destdir, "include/remat/cuda/device.hpp", "lib*/**/libremat_cuda.a", "lib*/**/remat-cuda.pc")
    consumer(destdir, "consumer_cuda.cpp", "remat-cuda", libs=True)
else:
    print(f"no CUDA backend in {main_build}: its install is not checked")
shutil.rmtree(scratch)
print("ok: installed remat used through pkg-config")
