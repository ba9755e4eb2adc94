"""Flat mode of the depthwise schedule (``minitvm.schedule.depthwise_flat``): narrow stride-1
planes (rows as wide as the input's, at most ``FLAT_MAX_WIDTH``) as one run of pixels, the
column offsets that wrap masked, against the float64 reference; which planes take it."""

import numpy as np
import pytest
from depthwise_cases import depthwise_conv, nodes, reference, run
from schedule_isa import force_isa

from minitvm import codegen, relay
from minitvm.schedule import depthwise, depthwise_flat, lower_te
from minitvm.te.create_prim_func import topo_order
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order


def _allocs(prim):
    return sorted(s.buffer_var.name for s in nodes(prim.body) if isinstance(s, S.Allocate))


def _geometry(shape, **kw):
    _, outs, _ = depthwise_conv(shape, **kw)
    (t,) = [t for t in topo_order(list(outs)) if t.name == "conv2d"]
    return depthwise.geometry(t)


@pytest.mark.parametrize("shape,kw", [
    ((1, 64, 25, 5), dict(epilogue="relu")),  # DS-CNN's blocks (49x10 MFCCs after the stem)
    ((2, 16, 25, 5), dict(epilogue="relu6")),  # a batch
    ((1, 12, 9, 3), dict()),  # no epilogue, channels not a multiple of 8
    ((1, 8, 11, 7), dict(epilogue="hardswish")),  # reads the conv twice (over narrow rows)
    ((1, 8, 10, 3), dict(k=5, pad=2, epilogue="silu")),  # 5x5, a transcendental epilogue
    ((1, 6, 12, 3), dict(pad=2, dilation=2, epilogue="relu6")),  # dilated
    ((1, 8, 13, 5), dict(epilogue="mixer")),  # a residual read at the pixel's own position
    ((1, 5, 2, 3), dict(epilogue="relu")),  # a plane of 6: one vector over it
])
def test_flat_mode_matches_numpy(rng, shape, kw):
    assert depthwise.flat_mode(_geometry(shape, **kw))
    out, want, prim = run(shape, rng, **kw)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert _allocs(prim) == ["dw_flat"]  # no grid, no packed plane: straight to the output


def test_flat_mode_rows_of_height_not_same(rng):
    # padding 1 on the rows and 1 on the columns but a 3x1 filter... the rows need not be
    # "same": a 3x3 filter padded (0, 1, 2, 1) keeps OW == W while OH = H
    x = relay.var("x", shape=(1, 8, 9, 4))
    w = relay.var("w", shape=(8, 1, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(0, 1, 2, 1), groups=8))
    from depthwise_cases import relay_te

    ins, _, outs = relay_te([x, w], y)
    prim, _ = lower_te(ins, outs, "f")
    assert _allocs(prim) == ["dw_flat"]
    xv = rng.standard_normal((1, 8, 9, 4), dtype=np.float32)
    wv = rng.standard_normal((8, 1, 3, 3), dtype=np.float32)
    xp = np.pad(xv.astype(np.float64), ((0, 0), (0, 0), (0, 2), (1, 1)))
    want = sum(xp[:, :, ky:ky + 9, kx:kx + 4] * wv[None, :, 0, ky, kx, None, None]
               for ky in range(3) for kx in range(3))
    out = np.full((1, 8, 9, 4), np.nan, np.float32)
    codegen.build(prim)["f"](xv, wv, out)
    np.testing.assert_allclose(out, np.maximum(want, 0), rtol=1e-4, atol=1e-4)


def test_only_the_wrapping_column_offsets_are_masked(rng):
    # a 3x3 filter: the sums of column offsets -1 and +1 are selected by the pixel's column,
    # the centre column's is not; every vector reads 9 taps (of the channel's run or, inside
    # the plane, of the input)
    _, _, prim = run((1, 8, 25, 5), rng, epilogue="relu")
    stores = [s for s in nodes(prim.body) if isinstance(s, S.BufferStore)
              and s.buffer.name == "out0_flat"]
    assert stores
    for s in stores:
        selects = [n for n in post_order(s.value) if isinstance(n, E.Select)]
        assert len(selects) == 2
        assert sum(isinstance(n, E.BufferLoad) and n.buffer.name in ("dw_run", "in0_flat")
                   for n in post_order(s.value)) == 9


@pytest.mark.parametrize("shape,kw", [
    ((1, 8, 16, 16), dict()),  # row mode (rows of a vector)
    ((1, 8, 7, 7), dict()),  # narrow rows in one block
    ((1, 8, 14, 7), dict(k=5, pad=2)),  # narrow rows, a 5x5 filter
    ((1, 8, 13, 9), dict(stride=2)),  # strided
    ((1, 8, 10, 6), dict(pad=0)),  # OW < W
    ((1, 8, 3, 3), dict(mult=2)),  # a channel multiplier
])
def test_other_planes_keep_their_modes(shape, kw):
    assert not depthwise.flat_mode(_geometry(shape, **kw))


def test_epilogue_reading_other_positions_is_not_flat(rng):
    # the flat store needs an epilogue reading per pixel only the conv and own-position
    # operands: one reading a neighbour's pixel makes the conv go to a temporary (grid mode)
    x = relay.var("x", shape=(1, 8, 12, 5))
    w = relay.var("w", shape=(8, 1, 3, 3))
    from depthwise_cases import relay_te

    ins, _, outs = relay_te([x, w], relay.nn.conv2d(x, w, padding=(1, 1), groups=8))
    conv = outs[0]
    import minitvm as tvm

    flip = tvm.te.compute(conv.shape, lambda n, c, y, xx: conv[n, c, 11 - y, xx] + 1.0,
                          name="flip")
    prim, ws = lower_te(ins, [flip], "f")
    xv = rng.standard_normal((1, 8, 12, 5), dtype=np.float32)
    wv = rng.standard_normal((8, 1, 3, 3), dtype=np.float32)
    out = np.empty((1, 8, 12, 5), np.float32)
    extra = [np.zeros(max(ws, 64), np.uint8)] if ws else []
    codegen.build(prim)["f"](xv, wv, out, *extra)
    want = reference(xv, wv, 1, 1, 1, 1)[:, :, ::-1] + 1
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_channel_blocks_divide_the_channels():
    assert depthwise_flat.channel_block(_geometry((1, 64, 25, 5))) == 8
    assert depthwise_flat.channel_block(_geometry((1, 12, 25, 5))) == 4
    assert depthwise_flat.channel_block(_geometry((1, 7, 25, 5))) == 1


def test_run_layout_holds_every_tap():
    # the run's zeros before the plane cover the first pixel's top-left tap, its length the
    # last pixel's bottom-right one, in whole vectors
    g = _geometry((1, 8, 25, 5), k=5, pad=2)
    lead, stride = depthwise_flat.layout(g)
    assert lead == 2 * 5 + 2
    assert stride % g["lanes"] == 0 and stride >= lead + 25 * 5 + 2 * 5 + 2


@pytest.mark.parametrize("isa, vectors, edges", [("avx512", 8, 2), ("avx2", 16, 3)])
def test_interior_vectors_read_the_input_in_place(rng, monkeypatch, isa, vectors, edges):
    # 25x5: the output vectors' taps reach 6 pixels either way; those at the plane's ends
    # read the zero-margined run, those between them the input itself, whose copy then
    # covers only the pixels the edge vectors reach. 16 lanes: 8 vectors, the first and the
    # last (overlapping) one at the edges; 8 lanes: 16 vectors, the first and the last two
    # (starting at 112 and 117 of 125)
    force_isa(monkeypatch, isa)
    assert len(depthwise_flat.vector_starts(125, depthwise.VECTOR[isa])) == vectors
    out, want, prim = run((1, 8, 25, 5), rng, epilogue="relu")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    stores = [s for s in nodes(prim.body) if isinstance(s, S.BufferStore)
              and s.buffer.name == "out0_flat"]
    reads = [{n.buffer.name for n in post_order(s.value) if isinstance(n, E.BufferLoad)}
             for s in stores]
    assert len(reads) == vectors
    assert sum("dw_run" in r for r in reads) == edges
    assert sum("in0_flat" in r and "dw_run" not in r for r in reads) == vectors - edges
    copies = [s for s in nodes(prim.body) if isinstance(s, S.BufferStore)
              and s.buffer.name == "dw_run"]
    assert copies  # (the edges' input: 22 of the 125 pixels at each end)
    monkeypatch.setattr(depthwise_flat, "DIRECT_INTERIOR", False)
    out2, want2, _ = run((1, 8, 25, 5), rng, epilogue="relu")
    np.testing.assert_allclose(out2, want2, rtol=1e-4, atol=1e-4)


def test_vector_starts_and_spans():
    assert depthwise_flat.vector_starts(125, 16) == [0, 16, 32, 48, 64, 80, 96, 109]
    assert depthwise_flat.vector_starts(32, 16) == [0, 16]
    assert depthwise_flat.vector_starts(9, 16) == []
    assert depthwise_flat._spans([(-6, 22), (103, 131)], 125) == [(0, 22), (103, 125)]
    assert depthwise_flat._spans([(0, 30), (20, 40)], 35) == [(0, 35)]


def test_plane_whose_vectors_all_read_inside_needs_no_copy(rng):
    # a 1x1 depthwise filter: every output vector's tap stays inside the plane, so nothing is
    # copied (the symbolic-batch Relay VM test's depthwise case)
    x = relay.var("x", shape=(1, 8, 16, 4))
    w = relay.var("w", shape=(8, 1, 1, 1))
    from depthwise_cases import relay_te

    ins, _, outs = relay_te([x, w], relay.nn.conv2d(x, w, groups=8))
    prim, _ = lower_te(ins, outs, "f")
    assert _allocs(prim) == ["dw_flat"]
    assert not [s for s in nodes(prim.body) if isinstance(s, S.BufferStore)
                and s.buffer.name == "dw_run"]
    xv = rng.standard_normal((1, 8, 16, 4), dtype=np.float32)
    wv = rng.standard_normal((8, 1, 1, 1), dtype=np.float32)
    out = np.full((1, 8, 16, 4), np.nan, np.float32)
    codegen.build(prim)["f"](xv, wv, out)
    np.testing.assert_allclose(out, xv * wv[None, :, 0, 0, None], rtol=1e-5, atol=1e-6)
