#!/usr/bin/env python3
"""Compiles every public header under an include directory on its own with clang++-14
(-std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic); fails on any error or warning.

  tools/check-headers-clang.py INCLUDE_DIR

Exits 77 (a skip, for meson) when clang++-14 is missing.
"""

import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CXX = "clang++-14"
FLAGS = ["-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Wpedantic", "-x", "c++", "-"]


def check(include, header):
    result = subprocess.run([CXX, "-I", str(include), *FLAGS], input=f"#include <{header}>\n",
                            capture_output=True, text=True)
    return header, result.returncode, result.stderr


def main():
    include = Path(sys.argv[1]).resolve()
    if shutil.which(CXX) is None:
        print(f"skip: {CXX} is not installed")
        return 77
    lister = Path(__file__).resolve().parent / "list-headers.py"
    headers = subprocess.run([sys.executable, str(lister), str(include)], check=True, capture_output=True,
                             text=True).stdout.split()
    start = time.monotonic()
    failed = 0
    # Two at a time: the machines this runs on are small and shared.
    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        for header, rc, diagnostics in pool.map(lambda h: check(include, h), headers):
            if rc != 0 or diagnostics:
                failed += 1
                print(f"{header}: {'error' if rc else 'warning'}\n{diagnostics}")
    print(f"{len(headers) - failed} of {len(headers)} headers compile cleanly with {CXX} "
          f"({time.monotonic() - start:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
