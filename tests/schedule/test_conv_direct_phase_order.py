"""The strided phase fill of ``conv_direct`` in input-row order (``PHASE_ROWS_IN_ORDER``):
consecutive iterations of the fill loop copy consecutive input rows (each into its row phase),
not every other row; each row's copy prefetches the row of the next channel
(``PREFETCH_NEXT_CHANNEL``). Results match numpy on odd and even sizes, paddings, channel
counts not a multiple of 16 and fused epilogues, with both on and off, with and without
bands."""

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
    """Set ``PHASE_ROWS_IN_ORDER`` and ``PREFETCH_NEXT_CHANNEL`` on every ISA: ``order(True)``
    / ``order(False)`` (``order(on, prefetch)`` sets the prefetch apart), with the fill of
    ``_phase_strided`` (``PHASE_ROW_RUNS`` off: ``test_conv_phase_fill`` covers the other)."""
    def put(on: bool, prefetch: bool | None = None):
        pf = on if prefetch is None else prefetch
        monkeypatch.setattr(conv_direct, "PHASE_ROW_RUNS", {"avx512": False, "avx2": False})
        monkeypatch.setattr(conv_direct, "PHASE_ROWS_IN_ORDER", {"avx512": on, "avx2": on})
        monkeypatch.setattr(conv_direct, "PREFETCH_NEXT_CHANNEL", {"avx512": pf, "avx2": pf})
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
    ((1, 1, 37, 41), 17, 3, (2, 2), (1, 1), "bias_relu"),          # one channel: no prefetch
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


def _prefetches(prim) -> list:
    """The ``tir.prefetch`` calls in ``prim``'s phase fill loop."""
    loops = [s for s in walk_stmts(prim.body) if isinstance(s, S.For) and
             s.loop_var.name.startswith("pr")]
    assert len(loops) == 1
    return [e for s in walk_stmts(loops[0].body) if isinstance(s, S.Evaluate)
            for e in post_order(s.value) if isinstance(e, E.Call) and e.op == "tir.prefetch"]


@pytest.mark.parametrize("prefetch", [True, False])
def test_fill_prefetches_next_channel_rows(prefetch, order):
    """On: one prefetch per 64-byte line of an input row (40 columns: 3), at the next channel
    (the last channel: itself) and the row the copy reads (clamped to the image); off: none."""
    order(True, prefetch)
    lib, _, _ = build_conv((1, 5, 22, 40), 7, 3, strides=(2, 2), epi="none")
    calls = _prefetches(conv_prim(lib))
    if not prefetch:
        assert calls == []
        return
    assert len(calls) == 3
    assert [int(c.args[0].indices[3].value) for c in calls] == [0, 16, 32]
    loop = [s for s in walk_stmts(conv_prim(lib).body) if isinstance(s, S.For) and
            s.loop_var.name.startswith("pr")][0]
    r = loop.loop_var
    ana = Analyzer()
    idx = calls[0].args[0].indices
    free = {v for e in idx for v in post_order(e) if isinstance(v, E.Var) and v is not r}

    def at(k, e):
        v = ana.simplify(substitute(e, {r: E.IntImm(r.dtype, k), **{
            f: E.IntImm(f.dtype, 0) for f in free}}))
        return int(v.value)

    hq2 = 2 * 12  # iterations of one channel: 12 phased rows of each of 2 row phases
    assert [at(k, idx[1]) for k in (0, hq2 - 1, hq2, 4 * hq2, 5 * hq2 - 1)] == [1, 1, 2, 4, 4]
    assert [at(k, idx[2]) for k in (0, 1, 5, hq2 - 1)] == [0, 0, 4, 21]


def test_one_channel_has_no_prefetch(order):
    order(True)
    lib, _, _ = build_conv((1, 1, 22, 40), 7, 3, strides=(2, 2), epi="none")
    assert _prefetches(conv_prim(lib)) == []
