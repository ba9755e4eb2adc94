"""``conv_winograd``: 3x3 stride-1 convs by Winograd F(2x2, 3x3) and F(4x4, 3x3).

The transform matrices compute a 3x3 correlation exactly (checked in float64); built convs
(odd heights, both paddings, batches, bias + residual + relu fused, weights passed at run time)
match a float64 reference at one and two threads; the schedule takes exactly the convs its
geometry allows, is the default there, and is one more implementation in the tuner's space."""

import numpy as np
import pytest
from conv_reference import conv_ref, knob_table

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.contrib import graph_executor
from minitvm.runtime import threadpool
from minitvm.schedule import conv_winograd, knobs, tunable
from minitvm.schedule.conv_pointwise import row_tiles
from minitvm.schedule.lower import LoweringOptions
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


@pytest.mark.parametrize("m", sorted(conv_winograd.MATRICES))
def test_transforms_compute_a_3x3_correlation(m):
    bt, g, at = (np.array(a, dtype="float64") for a in conv_winograd.MATRICES[m])
    rng = np.random.default_rng(m)
    d, f = rng.standard_normal((m + 2, m + 2)), rng.standard_normal((3, 3))
    y = at @ ((g @ f @ g.T) * (bt @ d @ bt.T)) @ at.T
    want = np.array([[np.sum(d[i:i + 3, j:j + 3] * f) for j in range(m)] for i in range(m)])
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)


def _conv(shape, o, pad=1, epi="bias_relu", const_weight=True, seed=0):
    """(mod, params, inputs, want) of a conv2d 3x3 (+ bias, residual, relu)."""
    rng = np.random.default_rng(seed)
    wv = rng.standard_normal((o, shape[1], 3, 3)).astype("float32")
    bias = rng.standard_normal(o).astype("float32")
    xv = rng.standard_normal(shape).astype("float32")
    want = conv_ref(xv, wv, pads=(pad,) * 4)
    x = relay.var("x", shape=shape)
    w = relay.var("w", shape=wv.shape)
    y = relay.nn.conv2d(x, w, padding=(pad, pad), kernel_size=(3, 3), channels=o)
    args, inputs = [x, w], {"x": xv}
    if epi != "none":
        y = relay.nn.bias_add(y, relay.const(bias))
        want = want + bias[:, None, None]
    if epi == "residual_relu":
        r = relay.var("r", shape=want.shape)
        inputs["r"] = rng.standard_normal(want.shape).astype("float32")
        y, want = y + r, want + inputs["r"]
        args.append(r)
    if epi != "none":
        y, want = relay.nn.relu(y), np.maximum(want, 0)
    params = {"w": wv} if const_weight else {}
    if not const_weight:
        inputs["w"] = wv
    return tvm.IRModule.from_expr(relay.Function(args, y)), params, inputs, want


def _build(mod, params, table=None):
    kernel_cache.clear_cache()
    with knobs.use_knobs(table), tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target="llvm", params=params)


def _winograd_table(mod, params, m):
    """A knob table putting every conv of ``mod`` on F(m x m, 3 x 3)."""
    return knob_table(mod, params, impl="winograd", wino_m=m)


def _uses_winograd(lib) -> bool:
    (k,) = [k for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    return any(isinstance(s, S.DeclBuffer) and s.buffer.name == "wg_v"
               for s in walk_stmts(k.prim_func.body))


def _check(lib, inputs, want, rtol):
    before = threadpool.get_num_threads()
    try:
        for threads in (1, 2):
            threadpool.set_num_threads(threads)
            g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
            g.run(**inputs)
            got = g.get_output(0).numpy()
            scale = np.max(np.abs(want))
            np.testing.assert_allclose(got / scale, want / scale, rtol=0, atol=rtol)
    finally:
        threadpool.set_num_threads(before)


CASES = [  # (input shape, output channels, padding, epilogue, block sizes that apply)
    ((1, 16, 16, 16), 16, 1, "bias_relu", (2,)),
    ((1, 32, 34, 34), 24, 1, "residual_relu", (2, 4)),  # 34 rows: a partial last band
    ((1, 48, 14, 14), 32, 1, "residual_relu", (2,)),  # 4-lane transforms, one band
    ((2, 24, 10, 16), 16, 1, "bias_relu", (2, 4)),  # 4-lane transforms, batch 2
    ((2, 20, 19, 32), 32, 1, "none", (2, 4)),  # odd height, batch 2, 20 channels
    ((1, 16, 34, 34), 40, 0, "bias_relu", (2, 4)),  # no padding: 32x32 output
    ((1, 64, 56, 56), 64, 1, "residual_relu", (2, 4)),  # ResNet's first stage
    # ragged rows: the last block reaches past the row, its extra columns not stored
    ((1, 20, 73, 73), 16, 0, "bias_relu", (2, 4)),  # Inception's 71x71 (18 blocks of 4)
    ((1, 16, 35, 35), 24, 1, "residual_relu", (2, 4)),  # 35 columns: 9 of 4, 18 of 2
    ((2, 16, 17, 17), 16, 1, "bias_relu", (2,)),  # 17: 9 blocks of 2, batch 2
]


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("shape,o,pad,epi,sizes", CASES)
def test_winograd_conv_matches_reference(shape, o, pad, epi, sizes, m):
    if m not in sizes:
        pytest.skip(f"F({m}x{m}) does not apply to this conv")
    mod, params, inputs, want = _conv(shape, o, pad, epi)
    lib = _build(mod, params, _winograd_table(mod, params, m))
    assert _uses_winograd(lib)
    _check(lib, inputs, want, rtol=1e-5 if m == 2 else 5e-5)


def test_winograd_is_the_default_where_it_applies():
    mod, params, inputs, want = _conv((1, 32, 32, 32), 32)
    lib = _build(mod, params)
    assert _uses_winograd(lib)
    _check(lib, inputs, want, rtol=5e-5)


def test_weights_at_run_time_keep_the_direct_conv():
    """The weights are transformed at build time: passed at run time, the conv stays direct."""
    mod, params, inputs, want = _conv((1, 32, 32, 32), 32, const_weight=False)
    lib = _build(mod, params)
    assert not _uses_winograd(lib)
    _check(lib, inputs, want, rtol=1e-5)


def _stage(shape, wshape, stride, padding, dilation):
    """A conv2d_nchw stage as the Relay lowering tags it (only its geometry is read)."""
    from minitvm import te

    x = te.placeholder(shape, name="x")
    w = te.placeholder(wshape, name="w")
    kh = wshape[2]
    oh, ow = ((d + 2 * padding - dilation * (kh - 1) - 1) // stride + 1 for d in shape[2:])
    info = {"strides": (stride, stride), "dilation": (dilation, dilation),
            "padding": (padding,) * 4, "groups": 1, "operands": (x, w)}
    return te.compute((shape[0], wshape[0], oh, ow), lambda b, o, y, z: x[b, o % shape[1], y, z],
                      name="conv2d", tag="conv2d_nchw", attrs=info)


@pytest.mark.parametrize("shape,wshape,attrs,want", [
    ((1, 64, 56, 56), (64, 64, 3, 3), dict(stride=1, padding=1, dilation=1), (2, 4)),
    ((1, 64, 28, 28), (64, 64, 3, 3), dict(stride=1, padding=1, dilation=1), (2, 4)),
    ((1, 64, 14, 14), (64, 64, 3, 3), dict(stride=1, padding=1, dilation=1), (2,)),  # 14 % 4
    ((1, 64, 6, 6), (64, 64, 3, 3), dict(stride=1, padding=1, dilation=1), ()),  # 3 blocks
    ((1, 64, 56, 56), (64, 64, 3, 3), dict(stride=2, padding=1, dilation=1), ()),
    ((1, 64, 56, 56), (64, 64, 3, 3), dict(stride=1, padding=2, dilation=2), ()),
    ((1, 64, 56, 56), (64, 64, 1, 1), dict(stride=1, padding=0, dilation=1), ()),
    ((1, 8, 56, 56), (64, 8, 3, 3), dict(stride=1, padding=1, dilation=1), ()),  # 8 channels
    # a ragged last block reaching at most 1/16 of the row past it
    ((1, 64, 33, 33), (64, 64, 3, 3), dict(stride=1, padding=1, dilation=1), (2,)),  # 34 / 36
    ((1, 80, 73, 73), (192, 80, 3, 3), dict(stride=1, padding=0, dilation=1), (2, 4)),  # 71
    ((1, 64, 7, 7), (64, 64, 3, 3), dict(stride=1, padding=1, dilation=1), ()),  # 8 for 7
])
def test_block_sizes_follow_the_geometry(shape, wshape, attrs, want):
    t = _stage(shape, wshape, attrs["stride"], attrs["padding"], attrs["dilation"])
    assert conv_winograd.block_sizes(t) == want
    assert conv_winograd.supported(t) == bool(want)


def test_tuner_space_offers_winograd_with_its_knobs():
    t = _stage((1, 64, 56, 56), (64, 64, 3, 3), 1, 1, 1)
    key, space = tunable.conv2d_space(t, LoweringOptions())
    assert key is not None and "winograd" in space.values("impl")
    assert set(space.values("wino_m")) == {2, 4}
    assert space.default()["impl"] == "winograd" and space.default()["wino_m"] == 4
    strided = _stage((1, 64, 56, 56), (64, 64, 3, 3), 2, 1, 1)
    _, space = tunable.conv2d_space(strided, LoweringOptions())
    assert "winograd" not in space.values("impl") and "wino_m" not in space.names


def test_packed_weight_is_g_w_gt_per_channel_tile():
    t = _stage((1, 16, 32, 32), (16, 16, 3, 3), 1, 1, 1)
    shape, pack = conv_winograd.packed_weight(t)
    rng = np.random.default_rng(1)
    w = rng.standard_normal((16, 16, 3, 3)).astype("float32")
    got = pack(w)
    assert got.shape == shape == (36, 16 * 16)
    g = np.array(conv_winograd.MATRICES[4][1], dtype="float64")
    u = np.einsum("xi,ocij,yj->xyoc", g, w.astype("float64"), g).reshape(36, 16, 16)
    # the first tile of 6 output channels is [C][6]: channel c, row ii at c * 6 + ii
    np.testing.assert_allclose(got[:, :16 * 6].reshape(36, 16, 6), u[:, :6].transpose(0, 2, 1),
                               rtol=1e-6, atol=1e-6)
    # every tile (6s, then the 5s or the rest that row_tiles chooses) is [C][rows] in turn
    for start, rows, count in row_tiles(16):
        for k in range(count):
            o0 = start + k * rows
            np.testing.assert_allclose(
                got[:, o0 * 16:(o0 + rows) * 16].reshape(36, 16, rows),
                u[:, o0:o0 + rows].transpose(0, 2, 1), rtol=1e-6, atol=1e-6)


def _column_loops(lib) -> set:
    """The kinds of the conv kernel's loops whose body is one test (a ragged row's columns)."""
    (k,) = [k for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    return {s.kind for s in walk_stmts(k.prim_func.body)
            if isinstance(s, S.For) and s.loop_var.name.startswith("q") and
            isinstance(s.body, S.IfThenElse)}


RAGGED = [  # (input shape, output channels, padding, epilogue, block size)
    ((1, 16, 27, 27), 16, 1, "bias_relu", 4),      # SqueezeNet's 27: 7 blocks, 1 column over
    ((1, 16, 23, 25), 16, 0, "residual_relu", 4),  # no padding, 23 columns, 21 rows
]


@pytest.mark.parametrize("shape,o,pad,epi,m", RAGGED)
def test_ragged_rows_store_whole_tiles_as_vectors(shape, o, pad, epi, m):
    """A ragged row's last chunk (``RAGGED_TAIL_VECTOR``): its whole tiles one vector store, the
    last tile's columns each tested; no column loop tests every column. (``CASES``' ragged
    rows, 71, 35 and 17 wide, check it at both block sizes and two threads.)"""
    mod, params, inputs, want = _conv(shape, o, pad, epi, seed=4)
    lib = _build(mod, params, _winograd_table(mod, params, m))
    assert _uses_winograd(lib) and _column_loops(lib) == set()
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    g.run(**inputs)
    scale = np.max(np.abs(want))  # (as ``_check``: F(4x4)'s error is relative to the largest)
    np.testing.assert_allclose(g.get_output(0).numpy() / scale, want / scale, rtol=0, atol=5e-5)


def test_ragged_rows_per_column_store_gives_the_same_bits(monkeypatch):
    """Without ``RAGGED_TAIL_VECTOR`` each column of the chunk is tested in a loop; the outputs
    are the same bit for bit."""
    mod, params, inputs, _ = _conv(*RAGGED[0][:4], seed=4)
    outs = []
    for on in (True, False):
        monkeypatch.setattr(conv_winograd, "RAGGED_TAIL_VECTOR", on)
        lib = _build(mod, params, _winograd_table(mod, params, RAGGED[0][4]))
        assert _column_loops(lib) == (set() if on else {S.ForKind.SERIAL})
        g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        g.run(**inputs)
        outs.append(g.get_output(0).numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
