"""The 1x1 conv schedule's software prefetches (``schedule/conv_pointwise.py``:
``PREFETCH_INPUT_BLOCKS``, ``PREFETCH_OUTPUT``, ``PREFETCH_CHANNEL_INPUT``, on for AVX-512 and
off for AVX2): which buffers they read ahead, that they change no result (numerics against
numpy on whole and overlapping panels, blocks of one panel and of several, residuals, batches),
and that the AVX2 kernels keep none. Forced on for both ISAs (with the 32-lane tiles) so that
any host runs them."""

import numpy as np
import pytest
from conv_reference import conv_prim as _conv_prim
from conv_reference import run_graph as _run
from pointwise_cases import build_pointwise

from minitvm.backend import kernel_cache
from minitvm.schedule import conv_pointwise
from minitvm.schedule.common import vector_isa
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts

needs_pointwise = pytest.mark.skipif(not conv_pointwise.ENABLED[vector_isa()],
                                     reason="the 1x1 schedule is off for this ISA")


@pytest.fixture(autouse=True)
def _fresh_kernels():
    """Kernels built with a switch monkeypatched are not reused by the next test."""
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


@pytest.fixture
def prefetching(monkeypatch):
    """32-lane tiles and AVX-512's prefetches whatever the host's ISA."""
    for name in ("WIDTH", "PREFETCH_INPUT_BLOCKS", "PREFETCH_OUTPUT", "PREFETCH_CHANNEL_INPUT"):
        value = getattr(conv_pointwise, name)["avx512"]
        monkeypatch.setattr(conv_pointwise, name, {"avx512": value, "avx2": value})


def _build(shape, o, residual: bool, seed=0):
    """(lib, feeds, expected) of a 1x1 conv + bias + relu (+ a residual before the relu)."""
    return build_pointwise(shape, o, "residual_relu" if residual else "relu", seed=seed)


def _prefetched(prim) -> dict:
    """Prefetch count per buffer name."""
    counts: dict = {}
    for s in walk_stmts(prim.body):
        if isinstance(s, S.Evaluate):
            for e in post_order(s.value):
                if isinstance(e, E.Call) and e.op_name == "tir.prefetch":
                    name = e.args[0].buffer.name
                    counts[name] = counts.get(name, 0) + 1
    return counts


CASES = [
    # (N, C, H, W), O, residual, mode
    ((1, 64, 16, 16), 40, True, "pixels"),    # 8 panels of 32, blocks of several, packed
    ((1, 260, 8, 8), 24, False, "pixels"),    # packed, blocks of one panel
    ((2, 48, 28, 28), 256, True, "pixels"),   # the last panel overlapping, batch 2
    ((1, 48, 20, 20), 64, True, "pixels"),    # in place, the last panel overlapping
    ((1, 24, 8, 12), 70, True, "pixels"),     # in place, 3 panels, 12- and 11-row tiles
    ((1, 512, 14, 14), 64, False, "channels"),  # pixel tiles outer, the input in place
    ((2, 160, 28, 28), 40, True, "channels"),  # a narrow channel panel, batch 2
]


@needs_pointwise
@pytest.mark.parametrize("shape, o, residual, mode", CASES)
def test_prefetching_kernels_match_numpy(shape, o, residual, mode, prefetching):
    lib, feeds, want = _build(shape, o, residual)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=2e-4, atol=2e-4)
    prim = _conv_prim(lib)
    counts = _prefetched(prim)
    if mode == "pixels":
        # the input one block on (in0's flat view), the output (and residual) one panel on:
        # a prefetch per cache line of a tile's rows
        assert counts.get("in0_flat", 0) > 0 and counts.get("out0_flat", 0) > 0
        assert ("in2_flat" in counts or "in3_flat" in counts) == residual
        assert "pw_panel" not in counts
    else:
        assert set(counts) == {"in0_flat"}  # the input rows, 16 pixels on


@needs_pointwise
def test_output_prefetches_cover_every_line_of_a_tile(prefetching):
    """64->40 + residual on a 16x16 plane: tiles of 10 output rows x 32 pixels, each prefetching
    its two lines per row of the output and of the residual."""
    lib, feeds, want = _build((1, 64, 16, 16), 40, True, seed=1)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=2e-4, atol=2e-4)
    counts = _prefetched(_conv_prim(lib))
    rows = {r for _, r, _ in conv_pointwise.row_tiles(40, conv_pointwise.ROWS_WIDE_PIXELS)}
    assert counts["out0_flat"] == 2 * sum(rows)  # (one tile body per height)
    residual = [n for n in counts if n not in ("out0_flat", "in0_flat")]
    assert len(residual) == 1 and counts[residual[0]] == counts["out0_flat"]


@needs_pointwise
def test_prefetches_off_keep_the_kernel(prefetching, monkeypatch):
    for name in ("PREFETCH_INPUT_BLOCKS", "PREFETCH_CHANNEL_INPUT"):
        monkeypatch.setattr(conv_pointwise, name, {"avx512": 0, "avx2": 0})
    monkeypatch.setattr(conv_pointwise, "PREFETCH_OUTPUT", {"avx512": None, "avx2": None})
    for shape, o, residual, _ in CASES[:1] + CASES[5:6]:
        lib, feeds, want = _build(shape, o, residual, seed=2)
        np.testing.assert_allclose(_run(lib, feeds), want, rtol=2e-4, atol=2e-4)
        assert not _prefetched(_conv_prim(lib))


def test_avx2_kernels_prefetch_nothing(monkeypatch):
    """On AVX2 (measured on AMD without them) the pixel and in-place channel kernels keep no
    prefetches and their 16-lane tiles of 6 rows."""
    monkeypatch.setattr(conv_pointwise, "vector_isa", lambda: "avx2")
    assert conv_pointwise.PREFETCH_INPUT_BLOCKS["avx2"] == 0
    assert conv_pointwise.PREFETCH_OUTPUT["avx2"] is None
    assert conv_pointwise.PREFETCH_CHANNEL_INPUT["avx2"] == 0
    for shape, o, residual in [((1, 64, 16, 16), 40, True), ((1, 512, 14, 14), 64, False)]:
        lib, feeds, want = _build(shape, o, residual, seed=3)
        np.testing.assert_allclose(_run(lib, feeds), want, rtol=2e-4, atol=2e-4)
        assert not _prefetched(_conv_prim(lib))
