"""Convs of fewer output channels than ``conv_direct``'s tile rows (``few_channels_nr``: SiamFC's
64 -> 1 8x8 response map, DCCRN's transposed-conv phases to 8 and 1 channels) take wider pixel
panels, and those of at most ``FEW_CHANNELS_DIRECT_MAX`` (6) stay off ``conv_lanes``
(``few_channels_direct``). The panel widths chosen, the unrolled 16-lane vectors of a panel
wider than the code generator vectorizes, and the numerics (run-time and constant weights,
grid and row mode, a ragged last panel, channel blocks, epilogues, two threads) with the switch
on for this host's ISA."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_kernel, conv_ref, run_graph

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.codegen.llvm.stmt import MAX_VECTOR_LANES
from minitvm.schedule import conv_direct
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


@pytest.fixture
def wide_on(monkeypatch):
    """The switch on for this host's ISA; kernels built meanwhile stay out of other tests."""
    monkeypatch.setitem(conv_direct.FEW_CHANNELS_WIDE, conv_direct.vector_isa(), True)
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


def _stage(shape, o, k):
    """The conv2d TE stage of an unpadded conv of ``o`` ``k`` filters, its weight an input."""
    from minitvm.relay.backend import te_compiler

    x, w = relay.var("x", shape=shape), relay.var("w", shape=(o, shape[1], *k))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w))))
    (t,) = te_compiler.build_te(mod["main"])[2]
    return t


def test_shipped_switches():
    assert conv_direct.FEW_CHANNELS_WIDE == {"avx512": True, "avx2": False}
    assert conv_direct.FEW_CHANNELS_MAX_VECTORS == 8
    assert conv_direct.FEW_CHANNELS_DIRECT_MAX == 6


@pytest.mark.parametrize("o", [1, 2, 4, 8, 11, 12, 64])
def test_panel_widths(o, wide_on):
    t = _stage((1, 64, 24, 24), o, (8, 8))  # 17 x 24 grid: 408 pixels, 26 vectors
    mr, nr = conv_direct.TILES[conv_direct.vector_isa()]
    got = conv_direct.few_channels_nr(t, mr, nr)
    lanes, base = conv_direct.ROW_LANES, nr // conv_direct.ROW_LANES
    if o >= mr:
        assert got == nr
        return
    v = got // lanes
    assert got % lanes == 0 and got >= nr
    assert o * v <= max(mr * base, o * base)  # no more accumulators than the tile had
    regs = conv_direct.host_switch(conv_direct.VECTOR_REGISTERS)
    assert got == nr or ((o + 1) * v <= regs - 2 and v <= conv_direct.FEW_CHANNELS_MAX_VECTORS)
    if got <= MAX_VECTOR_LANES:
        assert v & (v - 1) == 0  # one vectorized loop: a power of two vectors
    if o == 1 and conv_direct.vector_isa() == "avx512":
        assert got == 7 * lanes  # 26 vectors: 4 panels of at most 8, so of 7 (the last ragged)


def test_off_keeps_the_tile(monkeypatch):
    monkeypatch.setitem(conv_direct.FEW_CHANNELS_WIDE, conv_direct.vector_isa(), False)
    t = _stage((1, 64, 24, 24), 1, (8, 8))
    mr, nr = conv_direct.TILES[conv_direct.vector_isa()]
    assert conv_direct.few_channels_nr(t, mr, nr) == nr
    assert not conv_direct.few_channels_direct(t)


def _acc_shapes(body):
    return {tuple(int(d) for d in s.buffer.shape) for s in walk_stmts(body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == "acc"}


def _xcorr(shape, wshape, pads=(0, 0)):
    """A conv whose weight is an input (SiamFC's cross-correlation), built at opt_level 3."""
    x, w = relay.var("x", shape=shape), relay.var("w", shape=wshape)
    y = relay.nn.conv2d(x, w, padding=pads, kernel_size=wshape[2:], channels=wshape[0])
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(relay.Function([x, w], y)), target="llvm")


def test_wide_panel_is_unrolled_vectors(wide_on):
    lib = _xcorr((1, 64, 24, 24), (1, 64, 8, 8))
    body = conv_kernel(lib).prim_func.body
    (acc,) = _acc_shapes(body)
    mr, nr = conv_direct.TILES[conv_direct.vector_isa()]
    assert acc[0] == 1 and acc[1] > nr
    if acc[1] > MAX_VECTOR_LANES:  # no vectorized loop wider than the code generator takes
        widths = {int(s.extent) for s in walk_stmts(body)
                  if isinstance(s, S.For) and s.kind == S.ForKind.VECTORIZED}
        assert max(widths) <= MAX_VECTOR_LANES
        assert any(isinstance(s, S.For) and s.kind == S.ForKind.UNROLLED
                   and s.loop_var.name.startswith("jv") for s in walk_stmts(body))
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((1, 64, 24, 24)).astype("float32")
    wv = rng.standard_normal((1, 64, 8, 8)).astype("float32")
    for threads in (1, 2):
        np.testing.assert_allclose(run_graph(lib, {"x": xv, "w": wv}, threads), conv_ref(xv, wv),
                                   rtol=1e-4, atol=1e-4)


CASES = [  # input shape, output channels, filter, padding, epilogue
    ((2, 16, 34, 65), 1, (3, 2), (0, 0), "bias_relu"),  # DCCRN's phase, grid mode
    ((1, 16, 18, 64), 2, (3, 3), (1, 1), "residual_relu"),  # row mode, a residual
    ((1, 32, 18, 65), 6, (3, 2), (0, 0), "none"),  # 6 channels: off conv_lanes
    ((1, 8, 11, 13), 4, (3, 3), (1, 1), "bias_relu"),  # one ragged panel
]


@pytest.mark.parametrize("case", CASES)
def test_constant_weights(case, wide_on):
    shape, o, k, pads, epi = case
    lib, inputs, want = build_conv(shape, o, k, pads=pads, epi=epi,
                                   rng=np.random.default_rng(o))
    body = conv_kernel(lib).prim_func.body
    assert not any(s.buffer.name.startswith("cl_") for s in walk_stmts(body)
                   if isinstance(s, S.DeclBuffer))  # conv_direct's tiles, not conv_lanes'
    ((rows, nr),) = _acc_shapes(body)
    assert rows <= o and nr >= conv_direct.TILES[conv_direct.vector_isa()][1]
    for threads in (1, 2):
        np.testing.assert_allclose(run_graph(lib, inputs, threads), want, rtol=1e-4, atol=1e-4)
