"""`make install`: the module lands in PREFIX/lib/python3/dist-packages/tessera,
finds the project's libraries relative to itself (the folder may be moved),
and runs a package and a tune from there."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD_DIR


def test_installed_module_runs_from_a_moved_prefix(package, model_dir):
    cmake = shutil.which("cmake")
    if not cmake or not BUILD_DIR:
        pytest.skip("needs cmake and TESSERA_BUILD_DIR")
    staged = model_dir / "staged"
    install = subprocess.run([cmake, "--install", BUILD_DIR, "--prefix", str(staged)], capture_output=True, text=True)
    assert install.returncode == 0, install.stdout + install.stderr
    moved = model_dir / "moved"
    os.rename(staged, moved)
    site = moved / "lib" / "python3" / "dist-packages"
    [extension] = [f for f in os.listdir(site / "tessera") if f.startswith("_tessera") and f.endswith(".so")]
    runpath = subprocess.run(["readelf", "-d", str(site / "tessera" / extension)], capture_output=True, text=True)
    assert "$ORIGIN/../../.." in runpath.stdout, runpath.stdout
    assert BUILD_DIR not in runpath.stdout, runpath.stdout

    script = ("import numpy as np, tessera\n"
              "print(tessera.__file__)\n"
              "m = tessera.Module(%r)\n"
              "print(m.run(x=np.ones((1, 1, 7, 5), np.float32), W=np.ones((1, 1, 3, 3), np.float32))['y'][0, 0, 1, 1])\n"
              "r = tessera.tune('matmul:M=16,N=16,K=16', trials=4, batch=4, db='i.db', progress=False)\n"
              "print(r['stored_ok'])\n" % package)
    env = dict(os.environ, PYTHONPATH=str(site))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.split()
    assert lines[0].startswith(str(site)), lines
    assert float(lines[1]) == 9.0
    assert int(lines[2]) >= 4
