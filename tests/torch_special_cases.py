"""Inputs and the exact ``ndtr`` reference shared by the Relay and Relax PyTorch importer tests
of torch's special functions (``frontend_common.torch_special``). Needs torch (the importing
test skips first)."""

from __future__ import annotations

import math

import numpy as np
import torch

EDGES = [0.0, -0.0, 1e-30, -1e-6, 1.0, -1.0, 1e3, -1e3, -1e10, float("inf"), float("-inf"),
         float("nan")]


def ndtr_exact(x) -> np.ndarray:
    """Phi(x) from the C library's double ``erfc``, rounded to float32 (torch's float64 kernel
    rounds the left tail to 0 too)."""
    return np.array([0.5 * math.erfc(-v / math.sqrt(2.0)) for v in x.tolist()], "float32")


def seeded(scale: float, n: int = 400, seed: int = 0) -> torch.Tensor:
    """``n`` float32 standard normal values (of ``seed``) times ``scale``."""
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(n).astype("float32")
                            * np.float32(scale))
