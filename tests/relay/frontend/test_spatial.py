"""``relay.frontend.spatial`` (the sampling both Relay importers share), on Relay ops directly:
an affine grid of a run-time batch (a dynamic-batch spatial transformer's) is one compile that
runs at any batch."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.frontend.common import infer_type
from minitvm.relay.frontend.spatial import affine_grid_2d
from minitvm.runtime import vm as runtime_vm


def _affine_grid_ref(theta, h, w, align):
    def coords(n):
        return np.linspace(-1, 1, n) if align else (np.arange(n) * 2 + 1) / n - 1

    ys, xs = np.meshgrid(coords(h), coords(w), indexing="ij")
    base = np.stack([xs, ys, np.ones_like(xs)], -1)  # (H, W, 3)
    return np.einsum("hwk,nck->nhwc", base, theta)


@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_of_a_run_time_batch_runs_at_each_batch_from_one_compile(align):
    batch = relay.Any()
    theta = relay.var("theta", shape=(batch, 2, 3), dtype="float32")
    grid = affine_grid_2d(theta, 4, 5, align, "float32")
    shape = infer_type(grid).shape
    assert isinstance(shape[0], relay.Any) and tuple(shape[1:]) == (4, 5, 2)
    mod = tvm.IRModule.from_expr(relay.Function([theta], grid))
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.strict_native": True}):
        exe = relay.vm.compile(mod, target="llvm")
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    for b in (1, 3):
        t = np.random.default_rng(b).standard_normal((b, 2, 3)).astype("float32")
        got = vm.invoke("main", tvm.nd.array(t)).numpy()
        np.testing.assert_allclose(got, _affine_grid_ref(t, 4, 5, align), rtol=1e-5, atol=1e-6)
