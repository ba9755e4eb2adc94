"""``conv_lanes``' row store runs a fused epilogue that reads no operand at the pixel (a bias,
then tanh) on all 16 lanes of a tile before the transpose; on a last tile holding padding
channels those lanes read the per-channel operand at the tile's last real channel, never past
the operand's end (a 7-channel conv read 9 floats past its bias: denormal garbage made SCINet's
fused conv + tanh + exp 20x slower, 55 -> 3 us). The reads are bounded by interval analysis
over the kernel's loops, and the outputs match numpy."""

import numpy as np
import pytest
from conv_reference import conv_kernel, conv_ref, run_graph

import minitvm as tvm
from minitvm import relay
from minitvm.arith import Analyzer
from minitvm.schedule.common import vector_isa
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, stmt_exprs, walk_stmts

pytestmark = pytest.mark.usefixtures("no_winograd")  # (conftest)


def _build(shape, o, k):
    """conv2d (1 x k filters, no padding) + bias + tanh, built at opt_level 3: (lib, x, want)."""
    rng = np.random.default_rng(o)
    wv = rng.standard_normal((o, shape[1], 1, k)).astype("float32")
    bias = rng.standard_normal(o).astype("float32")
    xv = rng.standard_normal(shape).astype("float32")
    x = relay.var("x", shape=shape)
    y = relay.nn.conv2d(x, relay.const(wv), kernel_size=(1, k), channels=o)
    y = relay.tanh(relay.nn.bias_add(y, relay.const(bias)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    want = np.tanh(conv_ref(xv, wv) + bias[:, None, None])
    return lib, xv, want


def _channel_reads(func, channels: int) -> list[tuple[int, int]]:
    """(least, greatest) channel index of every load of the per-channel operand (a parameter
    shaped ``[1, channels, 1, 1]``), each loop and let variable bound to its range."""
    ana = Analyzer()
    for s in walk_stmts(func.body):
        if isinstance(s, S.For):
            ana.bind(s.loop_var, E.Range.from_min_extent(s.min, s.extent))
        elif isinstance(s, S.LetStmt):
            ana.bind(s.var, s.value)
    operand = [b for b in func.buffer_map.values()
               if [int(d) for d in b.shape] == [1, channels, 1, 1]]
    assert len(operand) == 1
    spans = []
    for s in walk_stmts(func.body):
        for root in stmt_exprs(s):
            for e in post_order(root):
                if isinstance(e, E.BufferLoad) and e.buffer.data is operand[0].data:
                    bound = ana.const_int_bound(e.indices[1])
                    spans.append((bound.min_value, bound.max_value))
    return spans


@pytest.mark.parametrize("o", [7, 23])
def test_padding_lanes_read_the_bias_in_bounds(o, force_knobs):
    """7 channels (one tile of 16, 9 padding lanes) and 23 (a second tile of 7 real ones)."""
    if vector_isa() != "avx512":
        pytest.skip("the row store's pre-transpose epilogue runs on AVX-512's 16-lane tiles")
    force_knobs(lanes_width=16, lanes_rowstore=True)
    lib, xv, want = _build((2, 14, 1, 50), o, 3)
    kernel = conv_kernel(lib)
    spans = _channel_reads(kernel.prim_func, o)
    assert spans  # (the epilogue reads the bias)
    assert all(0 <= lo and hi <= o - 1 for lo, hi in spans), spans
    got = run_graph(lib, {"x": xv}, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
