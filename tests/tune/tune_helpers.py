"""Shared helpers of the tuner tests: small workloads and models."""

from __future__ import annotations

import numpy as np

from minitvm import relay
from minitvm.ir.module import IRModule

DENSE = ["dense", 16, 48, 64, "float32"]  # small_mlp's first layer
MATMUL = ["matmul", 16, 48, 64, False, "float32"]
BATCH_MATMUL = ["batch_matmul", [2, 16, 64], [2, 48, 64], True, "float32"]
CONV = ["conv2d_nchw", [1, 8, 10, 10], [16, 8, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1], 1,
        "float32"]


def small_mlp(batch: int = 16, seed: int = 0) -> IRModule:
    """dense(64 -> 48) + bias + relu (tunable), dense(48 -> 16) (too small for the GEMM)."""
    rng = np.random.default_rng(seed)
    x = relay.var("x", shape=(batch, 64))
    w1 = relay.const(rng.standard_normal((48, 64)).astype("float32"))
    b1 = relay.const(rng.standard_normal(48).astype("float32"))
    w2 = relay.const(rng.standard_normal((16, 48)).astype("float32"))
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w1), b1))
    return IRModule.from_expr(relay.Function([x], relay.nn.dense(h, w2)))


def mlp_reference(mod, x):
    """numpy output of ``small_mlp``'s module (reads its constants back)."""
    body = mod["main"].body
    w2 = body.args[1].data.numpy()
    bias_add = body.args[0].args[0]
    b1 = bias_add.args[1].data.numpy()
    w1 = bias_add.args[0].args[1].data.numpy()
    return np.maximum(x @ w1.T + b1, 0) @ w2.T
