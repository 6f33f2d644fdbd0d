"""backends(), last_backend(), report() and TRIDENT_BACKEND."""

import os
import subprocess
import sys

import numpy as np

import trident_compute as tc


def test_backends_dict():
    b = tc.backends()
    assert set(b) == {"compiled", "available", "unavailable", "forced", "default", "per_call"}
    assert "rayon" in b["compiled"]
    names = [name for name, _ in b["available"]]
    assert "rayon" in names and b["default"] in names
    for name, why in b["unavailable"].items():
        assert name in b["compiled"] and name not in names and why


def test_last_backend_and_report():
    tc.gemm(np.eye(2), np.eye(2))
    assert tc.last_backend() in [n for n, _ in tc.backends()["available"]]
    assert "dense_gemm" in tc.report()


def run(env_value, code):
    env = dict(os.environ, TRIDENT_BACKEND=env_value)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def test_forced_backend():
    p = run("rayon", "import trident_compute as tc; b = tc.backends(); print(b['forced'], b['default'])")
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["rayon", "rayon"]


def test_forced_backend_that_cannot_run():
    code = (
        "import numpy as np, trident_compute as tc\n"
        "try:\n"
        "    tc.gemm(np.eye(2), np.eye(2))\n"
        "except tc.BackendUnavailableError as e:\n"
        "    print('unavailable')\n"
        "except ValueError as e:\n"
        "    print('value')\n"
    )
    assert run("reference", code).stdout.strip() == "unavailable"  # not compiled in
    assert run("nonsense", code).stdout.strip() == "value"
