"""Shared fixtures: a seeded generator per test, so every failure reproduces."""

import numpy as np
import pytest


@pytest.fixture
def rng(request):
    # One stream per test, seeded by its name: the same inputs on every run.
    return np.random.default_rng(_seed(request.node.name))


def _seed(name: str) -> int:
    """FNV-1a of the test's name (Python's hash() of a str varies by process)."""
    h = 0xCBF29CE484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001B3) % 2**64
    return h % 2**32
