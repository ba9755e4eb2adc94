"""The implicit-GEMM conv2d on strided convolutions: the phased input is filled by strided
row copies (only the phases some filter tap reads), the filter rows are unrolled, and results
match numpy on odd shapes, stride 2 and 3, asymmetric padding and fused epilogues."""

import numpy as np
import pytest
from conv_reference import conv_ref

import minitvm as tvm
from minitvm import relay
from minitvm.arith import Analyzer
from minitvm.contrib import graph_executor
from minitvm.runtime import threadpool
from minitvm.schedule import conv_direct
from minitvm.schedule.common import vector_isa
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, substitute, walk_stmts


def _build(shape, o, k, strides, pads, epi, rng, dil=(1, 1)):
    kh, kw = k
    wv = rng.standard_normal((o, shape[1], kh, kw)).astype("float32")
    bias = rng.standard_normal(o).astype("float32")
    x = relay.var("x", shape=shape)
    y = relay.nn.conv2d(x, relay.const(wv), strides=strides, padding=pads, dilation=dil,
                        kernel_size=k, channels=o)
    oshape = [int(d) for d in relay.transform.InferType()(
        tvm.IRModule.from_expr(relay.Function([x], y)))["main"].ret_type.shape]
    args, extra = [x], {}
    if epi in ("bias_relu", "residual_relu"):
        y = relay.nn.bias_add(y, relay.const(bias))
    if epi == "residual_relu":
        r = relay.var("r", shape=oshape)
        args.append(r)
        extra["r"] = rng.standard_normal(oshape).astype("float32")
        y = y + r
    if epi != "none":
        y = relay.nn.relu(y)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function(args, y)), target="llvm")
    return lib, wv, bias, extra


def _expected(xv, wv, bias, extra, strides, pads, epi, dil=(1, 1)):
    want = conv_ref(xv, wv, strides, pads, dil)
    if epi in ("bias_relu", "residual_relu"):
        want = want + bias.reshape(1, -1, 1, 1)
    if epi == "residual_relu":
        want = want + extra["r"]
    return np.maximum(want, 0) if epi != "none" else want


CASES = [
    # (N, C, H, W), O, (KH, KW), strides, (top, left, bottom, right), epilogue
    ((1, 5, 15, 15), 7, (1, 1), (2, 2), (0, 0, 0, 0), "none"),          # ResNet downsample
    ((1, 9, 15, 17), 13, (1, 1), (2, 2), (0, 0, 0, 0), "bias_relu"),
    ((1, 3, 17, 19), 13, (3, 3), (2, 2), (1, 1, 1, 1), "residual_relu"),
    ((2, 6, 16, 16), 11, (3, 3), (2, 2), (1, 1, 1, 1), "bias_relu"),
    ((1, 3, 64, 64), 10, (7, 7), (2, 2), (3, 3, 3, 3), "bias_relu"),    # stem, row mode
    ((1, 4, 13, 20), 9, (3, 3), (2, 2), (0, 1, 1, 0), "residual_relu"),  # asymmetric pads
    ((1, 4, 11, 14), 6, (3, 2), (1, 2), (1, 0, 1, 1), "none"),          # strided in width only
    ((1, 5, 19, 13), 7, (5, 3), (3, 3), (2, 1, 2, 1), "bias_relu"),
    ((1, 4, 12, 16), 5, (3, 3), (2, 2), (2, 2, 2, 2), "none"),          # padding wider than a phase
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", CASES)
def test_strided_conv_matches_numpy(case, threads):
    shape, o, k, strides, pads, epi = case
    rng = np.random.default_rng(7)
    lib, wv, bias, extra = _build(shape, o, k, strides, pads, epi, rng)
    xv = rng.standard_normal(shape).astype("float32")
    before = threadpool.get_num_threads()
    try:
        threadpool.set_num_threads(threads)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(x=xv, **extra)
        got = m.get_output(0).numpy()
    finally:
        threadpool.set_num_threads(before)
    np.testing.assert_allclose(got, _expected(xv, wv, bias, extra, strides, pads, epi),
                               rtol=1e-4, atol=1e-4)


def test_dilated_strided_conv_matches_numpy():
    rng = np.random.default_rng(3)
    shape, strides, pads, dil = (1, 4, 15, 16), (2, 2), (2, 2, 2, 2), (2, 2)
    lib, wv, bias, extra = _build(shape, 6, (3, 3), strides, pads, "bias_relu", rng, dil)
    xv = rng.standard_normal(shape).astype("float32")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(x=xv)
    np.testing.assert_allclose(m.get_output(0).numpy(),
                               _expected(xv, wv, bias, extra, strides, pads, "bias_relu", dil),
                               rtol=1e-4, atol=1e-4)


def _conv_prim(lib):
    (prim,) = [k.prim_func for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    return prim


def _xph_copies(prim):
    """The stores into the phased input that copy input elements (not zeros)."""
    out = []
    for s in walk_stmts(prim.body):
        if isinstance(s, S.BufferStore) and s.buffer.name == "xph" and \
                not isinstance(s.value, E.FloatImm):
            out.append(s)
    return out


@pytest.mark.parametrize("k, copies", [((1, 1), 1), ((3, 3), 2)])
def test_strided_phase_fill_copies_only_read_phases(k, copies, direct_conv_only):
    """A 1x1 stride-2 conv reads one column phase of the input, a 3x3 one both: strided row
    copies of the column phases read only (the parity of the input column each copy starts
    from), with no per-element bounds checks (Select)."""
    rng = np.random.default_rng(0)
    pads = (0, 0, 0, 0) if k == (1, 1) else (1, 1, 1, 1)
    lib, *_ = _build((1, 8, 20, 20), 8, k, (2, 2), pads, "none", rng)
    stores = _xph_copies(_conv_prim(lib))
    assert stores
    parities = set()
    for s in stores:
        assert not any(isinstance(e, E.Select) for e in post_order(s.value))
        assert isinstance(s.value, E.BufferLoad)
        col = s.value.indices[3]
        free = {v: E.IntImm(v.dtype, 0) for v in post_order(col) if isinstance(v, E.Var)}
        parities.add(int(Analyzer().simplify(substitute(col, free)).value) % 2)
    assert len(parities) == copies


@pytest.mark.skipif(not conv_direct.UNROLL_STRIDED_ROWS[vector_isa()],
                    reason="unrolled filter rows are off for this ISA (UNROLL_STRIDED_ROWS)")
@pytest.mark.usefixtures("direct_conv_only")  # (8 output channels would run on conv_lanes)
def test_strided_filter_rows_unrolled():
    """Stride 2: the filter-row loop of the micro-kernel is unrolled (its phase plane and row
    offset are constants); stride 1 keeps it a loop."""
    rng = np.random.default_rng(0)
    kinds = {}
    for stride in (1, 2):
        lib, *_ = _build((1, 8, 20, 20), 8, (3, 3), (stride, stride), (1, 1, 1, 1), "none",
                         rng)
        kinds[stride] = {s.kind for s in walk_stmts(_conv_prim(lib).body)
                         if isinstance(s, S.For) and s.loop_var.name.startswith("ky")}
    assert kinds[2] == {S.ForKind.UNROLLED}
    assert kinds[1] == {S.ForKind.SERIAL}
