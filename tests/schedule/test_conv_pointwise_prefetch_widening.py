"""A stride-1 1x1 conv that at least doubles few channels (``PREFETCH_OUTPUT_WIDENING``, by
host: 2 panels ahead from at most 64 input channels on rocketlake, None elsewhere) prefetches
its output further ahead than ``PREFETCH_OUTPUT``'s panel, unless its epilogue reads a plane
operand (a residual). The choice (``_output_ahead``) at and either side of the thresholds, the
prefetched offsets in the kernel, and the numerics (the last panels prefetch past the plane:
harmless) against numpy."""

import numpy as np
import pytest
from conv_reference import conv_prim as _conv_prim
from conv_reference import run_graph as _run
from pointwise_cases import build_pointwise

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.relay.backend import te_compiler
from minitvm.schedule import conv_pointwise
from minitvm.schedule.common import host_key, vector_isa
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts

needs_pointwise = pytest.mark.skipif(not conv_pointwise.ENABLED[vector_isa()],
                                     reason="the 1x1 schedule is off for this ISA")


@pytest.fixture
def widening(monkeypatch):
    """32-lane tiles and AVX-512's output prefetch whatever the host's ISA, and a setter of
    this host's entry of the widening switch; kernels built meanwhile stay out of other tests."""
    monkeypatch.setattr(conv_pointwise, "WIDTH", {"avx512": 32, "avx2": 32})
    ahead = conv_pointwise.PREFETCH_OUTPUT["avx512"]
    monkeypatch.setattr(conv_pointwise, "PREFETCH_OUTPUT", {"avx512": ahead, "avx2": ahead})
    table = dict(conv_pointwise.PREFETCH_OUTPUT_WIDENING)
    monkeypatch.setattr(conv_pointwise, "PREFETCH_OUTPUT_WIDENING", table)
    kernel_cache.clear_cache()

    def set_to(value) -> None:
        table[host_key(table)] = value
        kernel_cache.clear_cache()

    yield set_to
    kernel_cache.clear_cache()


def test_shipped_switch():
    assert conv_pointwise.PREFETCH_OUTPUT_WIDENING == {"rocketlake": (2, 64), "avx512": None,
                                                       "avx2": None}
    assert conv_pointwise.PREFETCH_OUTPUT == {"avx512": 1, "avx2": None}


def _g(c, o, stride=1):
    return {"c": c, "o": o, "sh": stride, "sw": stride}


@pytest.mark.parametrize("g, operands, want", [
    (_g(48, 96), False, 2),     # regnet_like's 48 -> 96
    (_g(64, 128), False, 2),    # at both thresholds
    (_g(64, 127), False, 1),    # not doubled
    (_g(65, 130), False, 1),    # too many input channels
    (_g(48, 96, 2), False, 1),  # strided (a subsampled copy)
    (_g(48, 96), True, 1),      # a residual
])
def test_output_ahead(g, operands, want, widening):
    widening((2, 64))
    assert conv_pointwise._output_ahead(g, operands) == want


def test_output_ahead_off(widening, monkeypatch):
    widening(None)
    assert conv_pointwise._output_ahead(_g(48, 96), False) == 1
    monkeypatch.setattr(conv_pointwise, "PREFETCH_OUTPUT", {"avx512": None, "avx2": None})
    widening((2, 64))
    assert conv_pointwise._output_ahead(_g(48, 96), False) is None


def _output_offsets(prim) -> set:
    """The constant last term of every output prefetch's index: the pixel offset ahead of the
    tile's panel (``ahead * width + lane``)."""
    found = set()
    for s in walk_stmts(prim.body):
        if isinstance(s, S.Evaluate):
            for e in post_order(s.value):
                if isinstance(e, E.Call) and e.op_name == "tir.prefetch" and \
                        e.args[0].buffer.name == "out0_flat":
                    i = e.args[0].indices[0]
                    assert isinstance(i, E.Add) and isinstance(i.b, E.IntImm)
                    found.add(int(i.b.value))
    return found


def _conv_stage(shape, o):
    x = relay.var("x", shape=shape)
    w = relay.var("w", shape=(o, shape[1], 1, 1))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w))))
    _, _, (conv,) = te_compiler.build_te(mod["main"])
    return conv


CASES = [
    # (N, C, H, W), O, epilogue, output prefetch offsets (2 panels of 32 ahead: 64 and 80)
    ((1, 48, 16, 16), 96, "bias_relu", {64, 80}),
    ((2, 32, 8, 12), 64, "none", {64, 80}),             # a batch, 3 panels an image
    ((1, 24, 28, 28), 144, "bias_clip", {64, 80}),      # 784: the last panel overlapping
    ((1, 48, 16, 16), 96, "residual_relu", {32, 48}),   # a residual: 1 panel ahead
    ((1, 80, 16, 16), 160, "bias_relu", {32, 48}),      # 80 input channels: 1 panel ahead
]


@needs_pointwise
@pytest.mark.parametrize("case", CASES)
def test_widening_prefetch_matches_numpy(case, widening):
    shape, o, epi, offsets = case
    widening((2, 64))
    g = conv_pointwise.geometry(_conv_stage(shape, o))
    assert g["mode"] == "pixels"
    lib, feeds, want = build_pointwise(shape, o, epi)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=1e-4, atol=1e-4)
    assert _output_offsets(_conv_prim(lib)) == offsets

