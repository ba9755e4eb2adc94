"""Fixtures of the codegen tests (helpers live in codegen_helpers.py)."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)
