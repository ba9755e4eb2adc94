"""``conv_direct``'s grid mode with grid rows of whole vectors (``ROW_TAIL_STORES``): each output
row's last, partly outside piece is one masked vector store; and convs of few taps an output
(``FEW_TAPS_MAX``: SqueezeNet's 3 -> 64 3x3 / 2 stem) stay on ``conv_direct`` rather than
``conv_lanes``, with their own register tile (``FEW_TAPS_TILE``). Both switches on (whatever the host's ISA), the kernels match numpy at one and
two threads: odd output widths, stride 1 and 2, a batch, a residual (not fused: then a separate
pass)."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_prim, run_graph

import minitvm as tvm
from minitvm import relay, tune
from minitvm.backend import kernel_cache
from minitvm.codegen.llvm.stmt import MASKED_STORES
from minitvm.schedule import conv_direct
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


@pytest.fixture
def row_tails(monkeypatch):
    monkeypatch.setattr(conv_direct, "ROW_TAIL_STORES", {"avx512": True, "avx2": True})
    monkeypatch.setattr(conv_direct, "FEW_TAPS_MAX", {"avx512": 32, "avx2": 32})
    monkeypatch.setattr(conv_direct, "FEW_TAPS_TILE", {"avx512": (6, 64), "avx2": (6, 64)})
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


def _masked_loops(lib) -> int:
    return sum(1 for s in walk_stmts(conv_prim(lib).body)
               if isinstance(s, S.For) and s.annotations.get(MASKED_STORES))


def _lanes_tiles(lib) -> int:
    return sum(1 for s in walk_stmts(conv_prim(lib).body)
               if isinstance(s, S.DeclBuffer) and s.buffer.name == "cl_acc")


# (input shape, output channels, kernel, strides, pads): grid width wq = ow + (k - 1) // s a
# multiple of 16, ow not
CASES = {
    "stem_3x3_s2": ((1, 3, 95, 95), 64, 3, (2, 2), (0, 0)),      # ow 47, wq 48
    "one_channel_s1": ((1, 1, 20, 30), 32, 3, (1, 1), (1, 1)),   # ow 30, wq 32
    "batch_5x5_s2": ((2, 1, 39, 61), 16, 5, (2, 2), (1, 1)),     # ow 30, wq 32
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("epi", ["none", "bias_relu", "residual_relu"])
def test_row_tail_stores_match_numpy(case, epi, row_tails):
    shape, o, k, strides, pads = CASES[case]
    lib, inputs, want = build_conv(shape, o, k, strides, pads, epi=epi)
    for threads in (1, 2):
        np.testing.assert_allclose(run_graph(lib, inputs, threads), want, rtol=1e-4, atol=1e-4)
    assert _lanes_tiles(lib) == 0  # (conv_direct, not conv_lanes)
    if epi == "bias_relu":  # (a residual is read per pixel: the element-wise tail; no
        # epilogue: no fused store)
        assert _masked_loops(lib) > 0


def _default_tile(shape, o, k, strides, pads):
    x = relay.var("x", shape=shape)
    w = relay.const(np.zeros((o, shape[1], k, k), "float32"))
    y = relay.nn.conv2d(x, w, strides=strides, padding=pads, kernel_size=(k, k), channels=o)
    (task,) = tune.extract_tasks(tvm.IRModule.from_expr(relay.Function([x], y)))
    d = task.space.default()
    return d["mr"], d["nr"]


def test_few_taps_take_their_own_tile(row_tails):
    assert _default_tile(*CASES["stem_3x3_s2"]) == (6, 64)
    assert _default_tile((1, 16, 41, 61), 32, 3, (2, 2), (1, 1)) == conv_direct.TILES[
        vector_isa()]  # (144 taps: conv_lanes')


def test_more_taps_stay_on_conv_lanes(row_tails):
    """16 input channels of a 3x3 filter (144 taps) are ``conv_lanes``' as before."""
    lib, inputs, want = build_conv((1, 16, 41, 61), 32, 3, (2, 2), (1, 1))  # ow 31, wq 32
    np.testing.assert_allclose(run_graph(lib, inputs), want, rtol=1e-4, atol=1e-4)
    assert _lanes_tiles(lib) > 0 and _masked_loops(lib) == 0


def test_switch_off_keeps_element_stores(monkeypatch):
    monkeypatch.setattr(conv_direct, "ROW_TAIL_STORES", {"avx512": False, "avx2": False})
    kernel_cache.clear_cache()
    try:
        lib, inputs, want = build_conv((1, 3, 95, 95), 64, 3, (2, 2), (0, 0))
        np.testing.assert_allclose(run_graph(lib, inputs), want, rtol=1e-4, atol=1e-4)
        assert _masked_loops(lib) == 0
    finally:
        kernel_cache.clear_cache()
