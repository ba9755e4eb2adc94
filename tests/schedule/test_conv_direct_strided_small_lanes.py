"""A strided conv in ``conv_direct``'s row mode on a small output plane goes to ``conv_lanes``
on a Zen 4 and on AVX2 (``STRIDED_ROWS_LANES_MAX_PIXELS``, looked up by
``common.host_switch``): at 16x16 out the channel-lane tiles ran 2-7% faster on the Zen 4 and up
to 15% on a Zen 3 (AVX2), at 32x32 12-60% slower; on an Intel Xeon 5-40% slower at 16x16 too.
Convs of fewer than 32 input channels (stems) stay. The routing and the numerics (epilogues,
batches, channels not a multiple of 16) at the thresholds and either side of them, and the
per-host lookup."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_kernel, run_graph

from minitvm.backend import kernel_cache
from minitvm.runtime import jit
from minitvm.schedule import common, conv_direct
from minitvm.schedule.common import host_key, host_switch
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts


@pytest.fixture
def small_planes_on_lanes(monkeypatch):
    """The shipped Zen 4 threshold on whichever host this is; kernels built meanwhile stay out
    of other tests."""
    table = conv_direct.STRIDED_ROWS_LANES_MAX_PIXELS
    monkeypatch.setitem(table, host_key(table), 256)
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


def _on_lanes(lib) -> bool:
    """Does the conv kernel run ``conv_lanes``' tiles (its ``cl_`` buffers)?"""
    body = conv_kernel(lib).prim_func.body
    names = {s.buffer.name for s in walk_stmts(body) if isinstance(s, S.BufferStore | S.DeclBuffer)}
    names |= {e.buffer.name for e in post_order(body) if isinstance(e, E.BufferLoad)}
    return any(n.startswith("cl_") for n in names)


def test_shipped_thresholds():
    assert conv_direct.STRIDED_ROWS_LANES_MAX_PIXELS == {"znver4": 256, "avx512": 0, "avx2": 256}
    assert conv_direct.STRIDED_ROWS_LANES_MIN_CHANNELS == 32


CASES = [  # input shape, output channels, filter, strides, padding, epilogue, on conv_lanes
    ((1, 64, 32, 32), 64, 3, (2, 2), (1, 1), "bias_relu", True),  # det_postprocess's, 16x16
    ((2, 32, 32, 32), 40, 3, (2, 2), (1, 1), "residual_relu", True),  # batch, 40 channels
    ((1, 32, 31, 32), 32, 3, (2, 2), (1, 1), "none", True),  # 16x16 from an odd height
    ((1, 16, 32, 32), 32, 3, (2, 2), (1, 1), "bias_relu", False),  # few channels stay
    ((1, 3, 32, 32), 16, 7, (2, 2), (3, 3), "bias_relu", False),  # a stem stays
    ((1, 32, 64, 64), 64, 3, (2, 2), (1, 1), "bias_relu", False),  # 32x32 out: row mode stays
    ((1, 16, 32, 32), 32, 5, (1, 1), (2, 2), "bias_relu", False),  # stride 1 stays
]


@pytest.mark.parametrize("case", CASES)
def test_routing_and_numerics(case, small_planes_on_lanes):
    shape, o, k, strides, pads, epi, lanes = case
    lib, inputs, want = build_conv(shape, o, k, strides, pads, epi=epi,
                                   rng=np.random.default_rng(o + k))
    assert _on_lanes(lib) == lanes
    for threads in (1, 2):
        np.testing.assert_allclose(run_graph(lib, inputs, threads), want, rtol=1e-4, atol=1e-4)


def test_off_keeps_row_mode(monkeypatch):
    table = conv_direct.STRIDED_ROWS_LANES_MAX_PIXELS
    monkeypatch.setitem(table, host_key(table), 0)
    kernel_cache.clear_cache()
    try:
        lib, inputs, want = build_conv((1, 64, 32, 32), 64, 3, (2, 2), (1, 1),
                                       rng=np.random.default_rng(5))
        assert not _on_lanes(lib)
        np.testing.assert_allclose(run_graph(lib, inputs), want, rtol=1e-4, atol=1e-4)
    finally:
        kernel_cache.clear_cache()


@pytest.mark.parametrize("cpu, want", [("znver4", 256), ("rocketlake", 0),
                                       ("sapphirerapids", 0)])
def test_host_switch_takes_the_cpu_then_the_isa(monkeypatch, cpu, want):
    monkeypatch.setattr(jit, "host_cpu", lambda: (cpu, "+avx512f,+avx2"))
    monkeypatch.setattr(common, "vector_isa", lambda: "avx512")
    table = conv_direct.STRIDED_ROWS_LANES_MAX_PIXELS
    assert host_key(table) == (cpu if cpu == "znver4" else "avx512")
    assert host_switch(table) == want
    assert host_switch({"avx512": 1, "avx2": 2}) == 1
