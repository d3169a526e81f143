"""Runs the Python tests against the package in the build tree (meson test 'python').

Exits 77, a skip for meson, when pytest is not installed, saying so.
"""

import os
import subprocess
import sys

tests, package_root = sys.argv[1], sys.argv[2]
try:
    import pytest  # noqa: F401
except ImportError:
    print(f"skip: pytest is not installed for {sys.executable} (pip install pytest)")
    sys.exit(77)
env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p))
sys.exit(subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", tests], env=env))
