"""Helpers for codegen tests: build a TE graph and compare with numpy."""

import numpy as np
import pytest

from minitvm import codegen, te


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def build_te(args, name="main"):
    """Compile the TE graph whose arguments are ``args`` and return its kernel."""
    return codegen.build(te.create_prim_func(args), name=name)[name]
