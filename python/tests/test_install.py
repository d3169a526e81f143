"""The package installs offline both ways the issue names: `pip install
--no-build-isolation .` (meson-python) and `meson install`, and imports from
the installed place alone."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("REMAT_BUILD_DIR", ROOT / "build"))
# Every module of the package, as the source tree has it.
SOURCES = {str(p.relative_to(ROOT / "python")) for p in (ROOT / "python" / "remat").rglob("*.py")}
PROBE = ("import remat, sys; g = remat.Graph.load(sys.argv[1]); s = remat.solve(g); "
         "print(remat.__file__); print(s.status, s.peak == remat.simulate(g, s.schedule).peak_bytes)")


def solves_from(site: Path):
    """Runs the probe with only `site` (and the standard library) to import remat from."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    out = subprocess.run([sys.executable, "-c", PROBE, str(ROOT / "examples" / "graphs" / "resnet50.json")],
                         capture_output=True, text=True, env=env, cwd="/")
    assert out.returncode == 0, out.stderr
    where, verdict = out.stdout.splitlines()
    assert Path(where).resolve().is_relative_to(site.resolve())
    assert verdict in ("optimal True", "feasible True")  # exact's general plan on ResNet-50 is feasible


def test_pip_installs_the_package_offline(tmp_path):
    try:
        import mesonpy  # noqa: F401
    except ImportError:
        pytest.skip("meson-python is not installed (pip install --no-deps meson-python pyproject-metadata)")
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w", str(wheels),
         f"--config-settings=builddir={tmp_path / 'build'}", str(ROOT)],
        capture_output=True, text=True)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (wheel,) = wheels.glob("remat-*.whl")
    site = tmp_path / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target",
                              str(site), str(wheel)], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr
    solves_from(site)
    installed = sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file() and "dist-info" not in str(p))
    assert any(p.startswith("remat/_core") for p in installed)
    assert SOURCES <= set(installed), f"not installed: {sorted(SOURCES - set(installed))}"
    assert not any(p.endswith(".hpp") for p in installed), "the wheel ships the package, not the C++ headers"


def test_meson_install_installs_the_package(tmp_path):
    if not (BUILD / "build.ninja").exists():
        pytest.skip(f"no configured build in {BUILD}")
    dest = tmp_path / "dest"
    out = subprocess.run(["meson", "install", "-C", str(BUILD), "--no-rebuild", "--tags", "python-runtime",
                          "--destdir", str(dest)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (init,) = [p for p in dest.rglob("remat/__init__.py")]
    solves_from(init.parent.parent)
    installed = {str(p.relative_to(init.parent.parent)) for p in init.parent.rglob("*.py")}
    assert SOURCES <= installed, f"not installed: {sorted(SOURCES - installed)}"
    shutil.rmtree(dest)
