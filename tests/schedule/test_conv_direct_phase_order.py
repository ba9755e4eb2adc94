"""The strided phase fill of ``conv_direct`` in input-row order (``PHASE_ROWS_IN_ORDER``):
consecutive iterations of the fill loop copy consecutive input rows (each into its row phase),
not every other row; results match numpy on odd and even sizes, paddings, channel counts not
a multiple of 16 and fused epilogues, with the order on and off, with and without bands."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_prim, run_graph

from minitvm.arith import Analyzer
from minitvm.schedule import conv_direct
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, substitute, walk_stmts


@pytest.fixture
def order(monkeypatch, direct_conv_only):
    """Set ``PHASE_ROWS_IN_ORDER`` on every ISA: ``order(True)`` / ``order(False)``."""
    def put(on: bool):
        monkeypatch.setattr(conv_direct, "PHASE_ROWS_IN_ORDER", {"avx512": on, "avx2": on})
    return put


def _fill_rows(prim) -> list[int]:
    """The input row (``x``'s third index) the phase fill's copy reads at each iteration of
    its row loop, for its first 12 iterations (the loop of the copies into ``xph``)."""
    copies = [s for s in walk_stmts(prim.body) if isinstance(s, S.BufferStore) and
              s.buffer.name.startswith("xph") and isinstance(s.value, E.BufferLoad)]
    assert copies
    load = copies[0].value
    loops = [s for s in walk_stmts(prim.body) if isinstance(s, S.For) and
             s.loop_var.name.startswith("pr")]
    assert len(loops) == 1
    r = loops[0].loop_var
    free = {v for v in post_order(load.indices[2]) if isinstance(v, E.Var) and v is not r}
    ana = Analyzer()
    rows = []
    for k in range(12):
        e = substitute(load.indices[2], {r: E.IntImm(r.dtype, k), **{
            v: E.IntImm(v.dtype, 0) for v in free}})
        val = ana.simplify(e)
        assert isinstance(val, E.IntImm), val
        rows.append(int(val.value))
    return rows


@pytest.mark.parametrize("on", [True, False])
def test_fill_reads_input_rows_in_order(on, order):
    """Stride 2, 3x3, pad 1: in order, iterations 0, 1, 2, ... read input rows -1 (the padding
    row, which the fill skips), 0, 1, 2, ...; the other order reads every other row (row
    phase 0's rows -1, 1, 3, ... first)."""
    order(on)
    lib, _, _ = build_conv((1, 5, 22, 22), 7, 3, strides=(2, 2), epi="none")
    rows = _fill_rows(conv_prim(lib))
    if on:
        assert rows == [k - 1 for k in range(12)]
    else:
        assert rows == [2 * k - 1 for k in range(12)]


@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize("case", [
    # (N, C, H, W), O, k, strides, pads (Relay: vertical, horizontal or t, l, b, r), epilogue
    ((1, 5, 15, 15), 7, 3, (2, 2), (1, 1), "bias_relu"),          # odd sizes
    ((1, 3, 16, 18), 13, 3, (2, 2), (1, 1), "residual_relu"),     # even sizes, residual
    ((2, 17, 20, 21), 19, 3, (2, 2), (0, 1, 1, 0), "bias_relu"),  # asymmetric pads, batch 2
    ((1, 9, 33, 64), 21, 3, (2, 2), (0, 0), "none"),              # no padding, row mode
    ((1, 6, 19, 13), 5, 5, (3, 3), (2, 1), "bias_relu"),          # stride 3
    ((1, 4, 14, 15), 6, (3, 2), (1, 2), (1, 0, 1, 1), "none"),    # strided in width only
])
def test_matches_numpy(case, on, order):
    shape, o, k, strides, pads, epi = case
    order(on)
    lib, feeds, want = build_conv(shape, o, k, strides=strides, pads=pads, epi=epi,
                                  rng=np.random.default_rng(3))
    for threads in (1, 2):
        np.testing.assert_allclose(run_graph(lib, feeds, threads), want, rtol=1e-4,
                                   atol=1e-4)


@pytest.mark.parametrize("on", [True, False])
def test_banded_matches_numpy(on, order, monkeypatch):
    """Band by band (a small band workspace forces several bands): each band's rows in order."""
    order(on)
    monkeypatch.setattr(conv_direct, "BAND_MIN_BYTES", 0)
    monkeypatch.setattr(conv_direct, "BANDS", {"avx512": True, "avx2": True})
    monkeypatch.setattr(conv_direct, "BAND_BYTES", 21120)  # bands of 4 output rows
    lib, feeds, want = build_conv((1, 8, 64, 64), 18, 3, strides=(2, 2), epi="bias_relu",
                                  rng=np.random.default_rng(5))
    assert any(isinstance(s, S.For) and s.loop_var.name.startswith("band")
               for s in walk_stmts(conv_prim(lib).body))
    for threads in (1, 2):
        np.testing.assert_allclose(run_graph(lib, feeds, threads), want, rtol=1e-4,
                                   atol=1e-4)
