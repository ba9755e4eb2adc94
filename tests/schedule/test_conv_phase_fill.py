"""The strided phase fill of ``conv_direct`` as ``conv_phase_fill.fill_strided``
(``PHASE_ROW_RUNS``): one loop over (channel, phased row) whose iterations copy the input rows
of every row phase in input order, rows of whole (unrolled) vectors with the last one
overlapping, single stores for padding columns, no scalar tail loop. Results match numpy on
odd and even sizes, short and long rows, paddings, stride 3, width-only strides, bands and two
threads, as with the fill before it (``PHASE_ROW_RUNS`` off)."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_prim, run_graph

from minitvm.arith import Analyzer
from minitvm.schedule import conv_direct, conv_phase_fill
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, substitute, walk_stmts


@pytest.fixture
def runs(monkeypatch, direct_conv_only):
    """``runs(on)``: ``PHASE_ROW_RUNS`` on or off on every ISA (rows in input order)."""
    def put(on: bool):
        monkeypatch.setattr(conv_direct, "PHASE_ROW_RUNS", {"avx512": on, "avx2": on})
        monkeypatch.setattr(conv_direct, "PHASE_ROWS_IN_ORDER", {"avx512": True, "avx2": True})
    return put


def _fill_loop(prim) -> S.For:
    loops = [s for s in walk_stmts(prim.body) if isinstance(s, S.For) and
             s.loop_var.name.startswith("pr")]
    assert len(loops) == 1
    return loops[0]


def _at(e, r, k: int) -> int:
    free = {v for v in post_order(e) if isinstance(v, E.Var) and v is not r}
    val = Analyzer().simplify(substitute(e, {r: E.IntImm(r.dtype, k), **{
        v: E.IntImm(v.dtype, 0) for v in free}}))
    assert isinstance(val, E.IntImm), val
    return int(val.value)


def test_each_iteration_copies_the_row_phases_in_input_order(runs):
    """Stride 2, 3x3, pad 1 on 5 channels of 22x40: the loop runs over 5 x 12 (channel,
    phased row) pairs; iteration k copies input rows 2k - 1 (the padding row at k = 0) and 2k
    of its channel, each into both column phases; the copies are vectors (a 40-wide row's 20
    columns of a phase: one whole vector and one overlapping it, or single stores on ISAs
    whose vector is wider than the run), with no loop inside the iteration but the vector
    lanes."""
    runs(True)
    lib, _, _ = build_conv((1, 5, 22, 40), 7, 3, strides=(2, 2), epi="none")
    loop = _fill_loop(conv_prim(lib))
    assert _at(loop.extent, loop.loop_var, 0) == 5 * 12
    copies = [s for s in walk_stmts(loop.body) if isinstance(s, S.BufferStore) and
              s.buffer.name.startswith("xph") and isinstance(s.value, E.BufferLoad)]
    rows = sorted({_at(c.value.indices[2], loop.loop_var, k) for c in copies for k in (3,)})
    assert rows == [5, 6]
    channels = {_at(c.value.indices[1], loop.loop_var, 13) for c in copies}
    assert channels == {1}
    inner = [s for s in walk_stmts(loop.body) if isinstance(s, S.For)]
    assert inner and all(s.kind == S.ForKind.VECTORIZED for s in inner)


@pytest.mark.parametrize("n,lanes_runs", [(5, 0), (16, 1), (20, 2), (48, 3), (200, 13)])
def test_runs_cover_each_column_once_or_with_equal_values(n, lanes_runs):
    """``_run`` stores columns ``[j0, j0 + n)`` exactly: single stores under a vector, else
    vectors whose union is the run (the last one ending at its end); over UNROLL_PIECES whole
    vectors a loop over them."""
    from minitvm.schedule.common import lanes
    from minitvm.tir.buffer import decl_buffer

    class Ctx:
        k = 0

        def fresh(self, name, dtype="int32"):
            self.k += 1
            return E.Var(f"{name}{self.k}", dtype)

    buf = decl_buffer((512,), "float32", "b")
    stmts = conv_phase_fill._run(Ctx(), buf, E.IntImm("int32", 0), 3, n,
                                 lambda j: E.FloatImm("float32", 1.0))
    width = lanes("float32")
    covered = []
    for s in stmts:
        if isinstance(s, S.BufferStore):
            covered.append(int(Analyzer().simplify(s.indices[0]).value))
            continue
        assert isinstance(s, S.For)
        if s.kind == S.ForKind.VECTORIZED:
            start = _at(s.body.indices[0], s.loop_var, 0)
            covered += range(start, start + width)
        else:  # a loop over whole vectors
            assert n // width > conv_phase_fill.UNROLL_PIECES
            vec = s.body
            for k in range(_at(s.extent, s.loop_var, 0)):
                start = _at(substitute(vec.body.indices[0], {vec.loop_var: E.IntImm(
                    "int32", 0)}), s.loop_var, k)
                covered += range(start, start + width)
    assert set(covered) == set(range(3, 3 + n))
    if n < width:
        assert len(stmts) == n


@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize("case", [
    # (N, C, H, W), O, k, strides, pads (Relay: vertical, horizontal or t, l, b, r), epilogue
    ((1, 5, 15, 15), 7, 3, (2, 2), (1, 1), "bias_relu"),          # odd sizes, short rows
    ((1, 3, 16, 18), 13, 3, (2, 2), (1, 1), "residual_relu"),     # even sizes, residual
    ((2, 17, 20, 21), 19, 3, (2, 2), (0, 1, 1, 0), "bias_relu"),  # asymmetric pads, batch 2
    ((1, 9, 33, 64), 21, 3, (2, 2), (0, 0), "none"),              # no padding, row mode
    ((1, 6, 19, 13), 5, 5, (3, 3), (2, 1), "bias_relu"),          # stride 3
    ((1, 4, 14, 15), 6, (3, 2), (1, 2), (1, 0, 1, 1), "none"),    # strided in width only
    ((1, 2, 9, 300), 5, 3, (2, 2), (1, 1), "bias_relu"),          # rows over 8 vectors
    ((1, 3, 24, 35), 8, 7, (2, 2), (3, 3), "bias_relu"),          # 7x7 stem: wide padding
])
def test_matches_numpy(case, on, runs):
    shape, o, k, strides, pads, epi = case
    runs(on)
    lib, feeds, want = build_conv(shape, o, k, strides=strides, pads=pads, epi=epi,
                                  rng=np.random.default_rng(3))
    for threads in (1, 2):
        np.testing.assert_allclose(run_graph(lib, feeds, threads), want, rtol=1e-4,
                                   atol=1e-4)


def test_banded_matches_numpy(runs, monkeypatch):
    """Band by band (a small band workspace forces several bands)."""
    runs(True)
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
