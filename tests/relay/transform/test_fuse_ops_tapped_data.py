"""FuseOps keeps ``image.grid_sample``'s data producer out of its group: fused, the producer
would run once per tap (8 corners in 3-D), and a chain of samplings (VoxelMorph's scaling and
squaring, v <- v + grid_sample(v, id + v)) nested 8^k copies of the first step into one kernel
(its text grew past memory at four steps). The grid argument still fuses; numerics unchanged."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.topi.reference.image_nd import grid_sample_nchw

SIZE = 4


def _identity() -> np.ndarray:
    ax = np.linspace(-1.0, 1.0, SIZE, dtype="float32")
    z, y, x = np.meshgrid(ax, ax, ax, indexing="ij")
    return np.stack([x, y, z])[None]                              # (1, 3, D, H, W): (x, y, z)


def _squaring(steps: int):
    v = relay.var("v", shape=(1, 3, SIZE, SIZE, SIZE))
    ident = relay.const(_identity())
    h = v
    for _ in range(steps):
        h = h + relay.image.grid_sample(h, ident + h, "bilinear", "NCDHW", "border", True)
    return tvm.IRModule.from_expr(relay.Function([v], h))


def _primitive_bodies(mod) -> list[str]:
    text = relay.transform.FuseOps(2)(relay.transform.InferType()(mod)).astext()
    return text.split("fn (")[1:]


def test_each_grid_sample_group_holds_one_sampling():
    groups = [g for g in _primitive_bodies(_squaring(4)) if "image.grid_sample" in g]
    assert len(groups) == 4
    assert all(g.count("image.grid_sample(") == 1 for g in groups)
    # the grid's add (id + v) and the residual add fuse with the sampling
    assert all(g.count("add(") == 2 for g in groups)


def test_grid_sample_of_a_computed_volume_keeps_the_producer_apart():
    d = relay.var("d", shape=(1, 2, SIZE, SIZE, SIZE))
    g = relay.var("g", shape=(1, 3, SIZE, SIZE, SIZE))
    out = relay.image.grid_sample(relay.sigmoid(d), g, "bilinear", "NCDHW", "zeros", False)
    groups = _primitive_bodies(tvm.IRModule.from_expr(relay.Function([d, g], out)))
    assert len(groups) == 2
    assert any("sigmoid" in b and "grid_sample" not in b for b in groups)


def test_squaring_chain_numerics():
    steps = 6                                                      # (8^6 nested copies before)
    v = (np.random.default_rng(0).standard_normal((1, 3, SIZE, SIZE, SIZE)) * 0.2)
    v = v.astype("float32")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(_squaring(steps), target="llvm")
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    gm.set_input("v", v)
    gm.run()
    ref, ident = v.astype("float64"), _identity().astype("float64")
    for _ in range(steps):
        ref = ref + grid_sample_nchw(ref, ident + ref, "bilinear", "border", True)
    np.testing.assert_allclose(gm.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-5)
