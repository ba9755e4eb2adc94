"""Large depthwise filters (5x5, 7x7: ``depthwise.ACCUMULATE_MIN_TAPS``) in input-row order
(``_block_accumulate``), the first row block skipping its taps on padding rows, and epilogues
reading an output-shaped operand at the pixel's own position (ConvMixer's residual) over the
flat plane (``FLAT_OWN_POSITION``): numbers against numpy, and the loop nests they write."""

import numpy as np
import pytest
from depthwise_cases import lower, run
from depthwise_cases import nodes as _nodes

from minitvm.schedule import depthwise
from minitvm.tir import expr as E
from minitvm.tir import stmt as S


def _build(shape, k, pad, epilogue, dilation=1):
    return lower(shape, k=k, pad=pad, dilation=dilation, epilogue=epilogue, bias=True)


def _run(shape, k, pad, epilogue, rng, dilation=1):
    """(output, reference, PrimFunc) of a ``k x k`` conv, bias added."""
    return run(shape, rng, k=k, pad=pad, dilation=dilation, epilogue=epilogue, bias=True,
               wscale=1 / k)


@pytest.mark.parametrize("shape,k,pad,epilogue", [
    ((1, 16, 28, 28), 7, 3, "gelu"),  # ConvMixer / ConvNeXt: rows of 28, 4 row blocks + 4 rows
    ((2, 13, 28, 28), 7, 3, "mixer"),  # odd channels, batch 2, residual over the flat plane
    ((1, 5, 56, 56), 7, 3, "none"),  # whole vectors of rows
    ((2, 7, 14, 14), 7, 3, "relu"),  # narrow rows (16 lanes), 2 rows after the block
    ((1, 9, 7, 7), 7, 3, "mixer"),  # a 7x7 plane: narrow rows, channel blocks, deferred
    ((1, 3, 24, 19), 7, 3, "gelu"),  # 24 rows: whole row blocks only; odd width
    ((1, 6, 17, 23), 7, 1, "relu"),  # padding 1: the first block's taps partly on padding
    ((1, 4, 20, 20), 7, 0, "none"),  # no padding rows to skip
    ((2, 11, 20, 19), 5, 2, "gelu"),  # 5x5
    ((1, 3, 12, 40), 5, 2, "mixer"),  # 5x5, 12 rows: one row block and its remainder
])
def test_large_filters_match_numpy(rng, shape, k, pad, epilogue):
    out, want, _ = _run(shape, k, pad, epilogue, rng)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)


def test_dilated_large_filter_matches_numpy(rng):
    # (a dilated filter's first block keeps its padding taps: rows not one a tap)
    out, want, _ = _run((1, 5, 26, 26), 5, 4, "relu", rng, dilation=2)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)


def _blocks(prim):
    """The let chains of the row blocks' vector loops: (names of the lets, the stores)."""
    out = []
    for f in _nodes(prim.body):
        if isinstance(f, S.For) and f.kind == S.ForKind.VECTORIZED and isinstance(
                f.body, S.LetStmt):
            body, lets = f.body, []
            while isinstance(body, S.LetStmt):
                lets.append((body.var, body.value))
                body = body.body
            out.append((lets, [s for s in _nodes(body) if isinstance(s, S.BufferStore)]))
    return out


def test_7x7_blocks_accumulate_in_input_row_order(monkeypatch):
    # each input vector is loaded right before its multiply-adds into the rows' accumulators
    # (``dw_acc``): only the block's partial sums and one input vector are live at a time
    # (whole-row tiles off: see test_depthwise_tiles.py for those)
    monkeypatch.setattr(depthwise, "TILED", False)
    prim, _ = _build((1, 16, 28, 28), 7, 3, "none")
    blocks = _blocks(prim)
    assert blocks
    for lets, stores in blocks:
        rows = len(stores)
        assert rows >= depthwise.ACCUMULATE_MIN_ROWS
        names = [v.name for v, _ in lets]
        assert set(n.rstrip("0123456789") for n in names) == {"dw_in", "dw_acc"}
        current = None
        for v, value in lets:
            if v.name.startswith("dw_in"):
                current = v
                continue
            loads = [n for n in _nodes(value) if isinstance(n, E.Var) and n.name.startswith(
                "dw_in")]
            assert loads == [current]  # the last input vector loaded, and only it
        # every output row's value (plus its bias) is its chain's last partial sum
        for s in stores:
            reads = [n.name for n in _nodes(s.value) if isinstance(n, E.Var)
                     and n.name.startswith("dw_")]
            assert len(reads) == 1 and reads[0].startswith("dw_acc")


def test_first_row_block_skips_taps_on_padding_rows(monkeypatch):
    # 28x28, 7x7, padding 3, 6 rows a block: the first block (peeled) reads rows -3..8, its rows
    # 0, 1, 2 have 3, 2, 1 filter rows on padding: (4 + 5 + 6 + 7 + 7 + 7) * 7 multiply-adds and
    # 9 input rows, where the others take 6 * 49 and 12 (whole-row tiles off)
    monkeypatch.setattr(depthwise, "TILED", False)
    prim, _ = _build((1, 16, 28, 28), 7, 3, "none")
    counts = sorted({(sum(v.name.startswith("dw_acc") for v, _ in lets),
                      sum(v.name.startswith("dw_in") for v, _ in lets), len(stores))
                     for lets, stores in _blocks(prim)})
    # (the last 4 rows: rows 25, 26, 27 have 1, 2, 3 filter rows below the plane)
    assert counts == [((7 + 6 + 5 + 4) * 7, 7 * 7, 4), (252, 9 * 7, 6), (294, 12 * 7, 6)]


def test_residual_epilogue_runs_over_the_flat_plane():
    # ConvMixer's x + bn(gelu(conv)) reads x at the pixel's own position: the epilogue runs over
    # the 28x28 plane in whole vectors (49 zmm, 98 ymm), x through its flat view, with no row loop
    prim, _ = _build((1, 16, 28, 28), 7, 3, "mixer")
    stores = [s for s in _nodes(prim.body) if isinstance(s, S.BufferStore)
              and s.buffer.name == "out0_flat"]
    assert stores
    for s in stores:
        reads = {n.buffer.name for n in _nodes(s.value) if isinstance(n, E.BufferLoad)}
        assert "in0_flat" in reads and "in0" not in reads
    loops = [f for f in _nodes(prim.body) if isinstance(f, S.For) and any(
        isinstance(n, S.BufferStore) and n.buffer.name == "out0_flat" for n in _nodes(f.body))]
    inner = {(f.kind, f.extent.value) for f in loops if f.loop_var.name.startswith(("dv", "dl"))}
    lanes = depthwise.VECTOR[depthwise.vector_isa()]
    assert inner == {(S.ForKind.SERIAL, 784 // lanes), (S.ForKind.VECTORIZED, lanes)}, inner


def test_residual_epilogue_flat_switch(rng, monkeypatch):
    # FLAT_OWN_POSITION off: the residual epilogue goes row by row, with the same numbers
    monkeypatch.setattr(depthwise, "FLAT_OWN_POSITION", False)
    out, want, prim = _run((1, 5, 28, 28), 7, 3, "mixer", rng)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
    assert not any(isinstance(s, S.BufferStore) and s.buffer.name == "out0_flat"
                   for s in _nodes(prim.body))


def test_accumulate_switch_matches_numpy(rng, monkeypatch):
    # ACCUMULATE_MIN_TAPS above a 7x7's taps: the let-all-loads blocks, the same numbers
    monkeypatch.setattr(depthwise, "ACCUMULATE_MIN_TAPS", 50)
    out, want, prim = _run((1, 7, 28, 28), 7, 3, "gelu", rng)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
    assert not any(v.name.startswith("dw_acc") for lets, _ in _blocks(prim) for v, _ in lets)


@pytest.mark.parametrize("hw,k,accumulates", [(7, 5, True), (7, 7, True), (14, 5, True),
                                              (7, 3, False), (28, 3, False)])
def test_which_planes_accumulate(rng, monkeypatch, hw, k, accumulates):
    # 5x5 filters on planes of rows of 8 lanes or fewer (7x7 planes, ``ACCUMULATE_MIN_TAPS_8``)
    # accumulate in their one block of 7 rows (``NARROW_BLOCK_MAX``); 3x3 filters keep ``_block``
    monkeypatch.setattr(depthwise, "TILED", False)  # (whole-row tiles accumulate too)
    out, want, prim = _run((1, 8, hw, hw), k, k // 2, "relu", rng)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
    acc = any(v.name.startswith("dw_acc") for lets, _ in _blocks(prim) for v, _ in lets)
    assert acc == accumulates
