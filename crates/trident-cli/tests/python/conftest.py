"""Shared set-up of the checks of the `trident` binary against its Python
peers (scikit-learn, PyMaxflow), which CI runs after installing them:

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install numpy scikit-learn PyMaxflow pytest
    cargo build -p trident-compute-cli
    TRIDENT_BIN=$CARGO_TARGET_DIR/debug/trident /tmp/peers/bin/pytest crates/trident-cli/tests/python

TRIDENT_BIN defaults to target/debug/trident under the repository root.
"""

import json
import os
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="session")
def trident():
    """Runs the binary (rayon backend) and returns its --json object."""
    exe = os.environ.get("TRIDENT_BIN", str(ROOT / "target" / "debug" / "trident"))
    if not Path(exe).exists():
        pytest.fail(f"no trident binary at {exe}: build it or set TRIDENT_BIN")

    def run(*args):
        env = dict(os.environ, TRIDENT_BACKEND="rayon")
        out = subprocess.run([exe, *map(str, args), "--json"], capture_output=True, env=env)
        assert out.returncode == 0, out.stderr.decode()
        return json.loads(out.stdout)

    return run


def write_png(path, pixels):
    """An 8-bit grey (H x W) or RGB (H x W x 3) PNG, written without PIL."""
    a = np.ascontiguousarray(pixels, dtype=np.uint8)
    h, w = a.shape[:2]
    colour = 2 if a.ndim == 3 else 0
    raw = b"".join(b"\x00" + a[y].tobytes() for y in range(h))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, colour, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    Path(path).write_bytes(png)
