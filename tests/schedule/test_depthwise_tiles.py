"""Whole-row tiles of the depthwise schedule (``depthwise.TILED``: ``_tile_accumulate``), the
narrow tail vectors of rows that are no whole number of vectors (``NARROW_TAILS``) and the
narrow-row planes' blocks at known rows (``NARROW_BLOCK_MAX``): numbers against numpy on plane
widths around the vector multiples, filters 3x3 to 7x7 and the fused epilogues; the tiles'
vectors, accumulators and loads; the switches off give the same numbers."""

import numpy as np
import pytest
from depthwise_cases import lower, run
from depthwise_cases import nodes as _nodes

import minitvm as tvm
from minitvm import codegen, relay
from minitvm.relay.backend import te_compiler
from minitvm.schedule import depthwise, depthwise_loops, depthwise_taps, lower_te
from minitvm.tir import expr as E
from minitvm.tir import stmt as S


def _lower(shape, k, stride=1, epilogue="none"):
    return lower(shape, k=k, stride=stride, pad=k // 2, epilogue=epilogue, bias=True)


def _run(rng, shape, k, stride=1, epilogue="none"):
    """(output, reference, PrimFunc) of a ``k x k`` conv (padding ``k // 2``), bias added."""
    return run(shape, rng, k=k, stride=stride, pad=k // 2, epilogue=epilogue, bias=True,
               wscale=1 / k)


def _tiles(prim):
    """Every tile's let chain: (its lets, the stores after them), outermost lets first (the
    chains storing explicit ramps, not the vectorized loops' blocks)."""
    inner = set()
    chains = []
    for n in _nodes(prim.body):
        if isinstance(n, S.LetStmt) and n.var.name.startswith("dw_in"):
            chains.append(n)
            body = n.body
            while isinstance(body, S.LetStmt):
                inner.add(id(body))
                body = body.body
    out = []
    for n in chains:
        if id(n) in inner:
            continue
        lets, body = [], n
        while isinstance(body, S.LetStmt):
            lets.append((body.var, body.value))
            body = body.body
        stores = [s for s in _nodes(body) if isinstance(s, S.BufferStore)]
        if all(isinstance(s.indices[-1], E.Ramp) for s in stores):
            out.append((lets, stores))
    return out


@pytest.mark.parametrize("ow,lanes,want", [
    (56, 16, [(0, 16), (16, 16), (32, 16), (48, 8)]),  # ConvNeXt's first stage: 3.5 vectors
    (28, 16, [(0, 16), (12, 16)]),  # 12 left: a whole vector over the first
    (20, 16, [(0, 16), (16, 4)]),
    (17, 16, [(0, 16), (13, 4)]),  # at least 4 lanes
    (16, 16, [(0, 16)]),
    (112, 16, [(k * 16, 16) for k in range(7)]),
    (56, 8, [(k * 8, 8) for k in range(7)]),
    (25, 8, [(0, 8), (8, 8), (16, 8), (21, 4)]),
])
def test_segments_cover_the_row_with_a_narrow_last_vector(ow, lanes, want):
    segs = depthwise_loops._segments(ow, lanes)
    assert segs == want
    covered = np.zeros(ow, bool)
    for j, n in segs:
        assert 0 <= j and j + n <= ow
        covered[j:j + n] = True
    assert covered.all()


def test_segments_without_narrow_tails(monkeypatch):
    monkeypatch.setattr(depthwise, "NARROW_TAILS", False)
    assert depthwise_loops._segments(56, 16) == [(0, 16), (16, 16), (32, 16), (40, 16)]


@pytest.mark.parametrize("shape,k,epilogue", [
    ((1, 3, 56, 56), 7, "none"),  # ConvNeXt's 64 at 56x56: tiles of 4 rows x 3.5 vectors
    ((2, 5, 13, 56), 7, "relu6"),  # 13 rows: 3 tiles + a row; batch 2
    ((1, 3, 9, 57), 7, "hardswish"),  # 57 = 3 x 16 + 9: a 16-lane last vector over the third
    ((1, 4, 11, 63), 5, "relu6"),
    ((1, 2, 10, 64), 7, "none"),  # whole vectors only
    ((1, 3, 12, 48), 5, "silu"),  # rows of 48: 3 vectors, the epilogue fused
    ((1, 2, 9, 40), 3, "silu"),  # 40 = 2 x 16 + 8
    ((1, 3, 30, 28), 7, "none"),  # rows of 28: 8-row tiles, 3 + 6 rows
    ((1, 4, 28, 28), 7, "gelu"),  # rows of 28 with GELU: tiles into the packed plane
    ((2, 3, 28, 28), 7, "mixer"),  # ConvMixer's residual over the flat plane
    ((1, 3, 17, 33), 3, "relu6"),  # 33 = 2 x 16 + 1: a 4-lane last vector
    ((1, 2, 20, 20), 5, "silu"),  # 20 = 16 + 4
    ((1, 3, 7, 31), 7, "none"),  # fewer rows than a tile, all next to padding
    ((1, 2, 16, 16), 3, "hardswish"),  # one vector a row
    ((1, 2, 8, 112), 7, "relu6"),  # 7 vectors a row: tiles of 4 and of 3 vectors
    ((1, 3, 24, 24), 3, "mixer"),
])
def test_tiles_match_numpy(rng, shape, k, epilogue):
    out, want, prim = _run(rng, shape, k, epilogue=epilogue)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
    if depthwise.vector_isa() == "avx512":
        assert _tiles(prim)


@pytest.mark.parametrize("shape,k,epilogue", [
    ((1, 3, 15, 56), 7, "none"),  # 7 vectors of 8: tiles of 4 rows x 4 vectors and x 3
    ((1, 2, 9, 12), 5, "relu6"),  # 12 = 8 + 4
    ((1, 2, 14, 14), 3, "silu"),  # 14 = 8 + an 8-lane one over it
    ((1, 3, 10, 21), 7, "mixer"),
])
def test_tiles_match_numpy_on_avx2(rng, monkeypatch, shape, k, epilogue):
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx2")
    out, want, prim = _run(rng, shape, k, epilogue=epilogue)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
    assert _tiles(prim)


@pytest.mark.parametrize("shape,k,stride,epilogue", [
    ((1, 3, 112, 112), 3, 2, "relu6"),  # rows of 56 at stride 2: per-vector blocks, 3.5 vectors
    ((1, 2, 40, 40), 5, 2, "silu"),  # rows of 20
    ((1, 3, 56, 56), 5, 2, "hardswish"),  # rows of 28
])
def test_strided_rows_with_narrow_tails_match_numpy(rng, shape, k, stride, epilogue):
    out, want, _ = _run(rng, shape, k, stride, epilogue)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("tiled,narrow", [(False, True), (True, False), (False, False)])
def test_switches_give_the_same_numbers(rng, monkeypatch, tiled, narrow):
    monkeypatch.setattr(depthwise, "TILED", tiled)
    monkeypatch.setattr(depthwise, "NARROW_TAILS", narrow)
    for shape, k, epilogue in [((1, 3, 13, 56), 7, "relu6"), ((1, 2, 12, 28), 7, "gelu"),
                               ((1, 2, 9, 33), 3, "silu")]:
        out, want, prim = _run(rng, shape, k, epilogue=epilogue)
        np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
        ramps = [s for s in _nodes(prim.body) if isinstance(s, S.BufferStore)
                 and isinstance(s.indices[-1], E.Ramp)]
        assert bool(ramps) == tiled


def _vector_stores(prim, name):
    """Lanes of the vector stores into buffer ``name`` (explicit ramps and vectorized loops)."""
    lanes = []
    for n in _nodes(prim.body):
        if isinstance(n, S.BufferStore) and n.buffer.name == name and isinstance(
                n.indices[-1], E.Ramp):
            lanes.append(n.indices[-1].lanes)
        elif isinstance(n, S.For) and n.kind == S.ForKind.VECTORIZED and any(
                isinstance(s, S.BufferStore) and s.buffer.name == name for s in _nodes(n.body)):
            lanes.append(n.extent.value)
    return lanes


def test_rows_of_56_are_tiles_of_four_rows_and_three_and_a_half_vectors(monkeypatch):
    # ConvNeXt's 64 channels at 56x56, 7x7: each tile stores 4 rows of 16 + 16 + 16 + 8 lanes
    # straight into the output (no vectorized loop); each (input row, column offset) is 4 loads,
    # each accumulator a chain over the 49 taps (fewer next to the padding rows)
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx512")
    prim, _ = _lower((1, 2, 56, 56), 7)
    assert not any(isinstance(n, S.For) and n.kind == S.ForKind.VECTORIZED and any(
        isinstance(s, S.BufferStore) and s.buffer.name == "out0" for s in _nodes(n.body))
        for n in _nodes(prim.body))
    tiles = _tiles(prim)
    counts = set()
    for lets, stores in tiles:
        assert sorted(s.indices[-1].lanes for s in stores) == sorted([16, 16, 16, 8] * 4)
        loads = [v for v, _ in lets if v.name.startswith("dw_in")]
        accs = [v for v, _ in lets if v.name.startswith("dw_acc")]
        counts.add((len(loads), len(accs)))
        # every multiply-add reads the last (up to 4) input vectors loaded
        recent = []
        for v, value in lets:
            if v.name.startswith("dw_in"):
                recent = (recent + [v])[-4:]
                continue
            ins = [n for n in _nodes(value) if isinstance(n, E.Var) and n.name.startswith(
                "dw_in")]
            assert len(ins) == 1 and ins[0] in recent
    # the first tile (peeled, rows 0-3) skips the 3 padding rows above; the last (rows 52-55)
    # the 3 below; the others read 4 + 6 input rows
    interior = ((4 + 6) * 7 * 4, 4 * 49 * 4)
    edge = (7 * 7 * 4, (4 + 5 + 6 + 7) * 7 * 4)
    assert counts == {interior, edge}


def test_wide_rows_split_into_tiles_of_at_most_the_accumulators(monkeypatch):
    # rows of 112 (7 vectors), 4 rows: tiles of 4 vectors and of 3, at most TILE_MAX_ACCS
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx512")
    prim, _ = _lower((1, 2, 16, 112), 7)
    sizes = sorted({len(stores) for _, stores in _tiles(prim)})
    assert sizes == [4 * 3, 4 * 4]
    for _, stores in _tiles(prim):
        assert len(stores) <= depthwise.TILE_MAX_ACCS["avx512"]


def test_avx2_tiles_leave_registers_for_the_inputs_and_the_tap(monkeypatch):
    """AVX2's 16 registers: tiles of at most 8 accumulators (rows of 112 in 8-lane vectors: 4
    rows of 2 vectors), where 16 spilled."""
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx2")
    prim, _ = _lower((1, 2, 16, 112), 3)
    sizes = sorted({len(stores) for _, stores in _tiles(prim)})
    assert sizes and max(sizes) <= depthwise.TILE_MAX_ACCS["avx2"] == 8
    assert 4 * 2 in sizes


def _rolled_tile_loops(prim) -> list:
    """The serial loops over a row's tiles (``ROLL_TILES``: loop variables named ``dg``)."""
    return [n for n in _nodes(prim.body) if isinstance(n, S.For) and n.loop_var.name.startswith("dg")]


def test_a_row_of_same_shape_tiles_is_one_rolled_loop(monkeypatch):
    """AVX2, rows of 48: three tiles of 4 rows x 2 vectors (rows of 112: seven), one loop of 3
    over them in each row block (the peeled first block, the blocks' loop, the last), not 3
    copies; the same numbers as the unrolled tiles (bit for bit), in fewer statements."""
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx2")
    shape = (1, 2, 12, 48)
    out, want, prim = _run(np.random.default_rng(0), shape, 3, epilogue="relu6")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    loops = _rolled_tile_loops(prim)
    assert loops and all(n.extent.value == 3 for n in loops)
    monkeypatch.setattr(depthwise, "ROLL_TILES", False)
    out2, _, unrolled = _run(np.random.default_rng(0), shape, 3, epilogue="relu6")
    assert not _rolled_tile_loops(unrolled)
    assert len(_nodes(prim.body)) * 2 < len(_nodes(unrolled.body))
    np.testing.assert_array_equal(out, out2)


@pytest.mark.parametrize("tiles,run", [
    ([[(0, 8), (8, 8)], [(16, 8), (24, 8)], [(32, 8), (40, 8)], [(48, 8)]], 3),
    ([[(0, 8), (8, 8)], [(16, 8), (20, 4)]], 1),  # a narrow tail: not the same shape
    ([[(0, 16)]], 1), ([[(0, 16)], [(16, 16)]], 2)])
def test_repeated_tiles(tiles, run):
    assert depthwise_taps._repeats(tiles) == run


def test_row_vectors_roll_once_their_copies_pass_the_statement_budget(monkeypatch):
    """A row block whose body is large (4 rows of a 3x3 at stride 2: ~30 statements) loops
    over a row's 7 vectors rather than unrolling them (``UNROLL_MAX_STMTS``); the padding
    copies' one-store bodies stay unrolled. The same numbers either way, bit for bit. (AVX2
    takes 2-row blocks now, whose bodies unroll: the block pinned to 4 rows here.)"""
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx2")
    monkeypatch.setattr(depthwise, "ROW_BLOCK_STRIDED", {"avx512": 4, "avx2": 4})
    shape = (1, 2, 24, 112)

    def row_loops(prim):
        return {n.kind for n in _nodes(prim.body) if isinstance(n, S.For)
                and n.loop_var.name.startswith("dv") and isinstance(n.body, S.For) and any(
                    isinstance(s, S.LetStmt) for s in _nodes(n.body))}

    out, want, prim = _run(np.random.default_rng(1), shape, 3, stride=2, epilogue="relu6")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert row_loops(prim) == {S.ForKind.SERIAL}
    assert any(n.kind == S.ForKind.UNROLLED for n in _nodes(prim.body) if isinstance(n, S.For))
    monkeypatch.setattr(depthwise, "UNROLL_MAX_STMTS", 10 ** 9)
    out2, _, unrolled = _run(np.random.default_rng(1), shape, 3, stride=2, epilogue="relu6")
    assert row_loops(unrolled) == {S.ForKind.UNROLLED}
    np.testing.assert_array_equal(out, out2)


@pytest.mark.parametrize("isa,ow,lanes,height", [
    ("avx512", 56, 16, 4), ("avx512", 28, 16, 8), ("avx512", 112, 16, 4), ("avx512", 16, 16, 8),
    ("avx512", 40, 16, 5), ("avx2", 56, 8, 4), ("avx2", 16, 8, 4), ("avx2", 8, 8, 8)])
def test_tile_height(monkeypatch, isa, ow, lanes, height):
    monkeypatch.setattr(depthwise, "vector_isa", lambda: isa)
    g = {"ow": ow, "lanes": lanes}
    assert depthwise._tile_height(g) == height


def test_packed_epilogue_plane_takes_the_tiles(monkeypatch):
    # rows of 28 with GELU (a transcendental epilogue on short rows): the tiles store the conv
    # into the packed plane ``dw_conv`` as ramps, the epilogue then runs over it in whole vectors
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx512")
    prim, _ = _lower((1, 2, 28, 28), 7, epilogue="gelu")
    conv = [s for s in _nodes(prim.body) if isinstance(s, S.BufferStore)
            and s.buffer.name == "dw_conv"]
    assert conv and all(isinstance(s.indices[-1], E.Ramp) for s in conv)
    assert sorted({s.indices[-1].lanes for s in conv}) == [16]
    assert set(_vector_stores(prim, "out0_flat")) == {16}


def test_hardswish_on_a_tile_reads_its_accumulator_once(monkeypatch):
    # the epilogue reads the conv twice: both reads are the tile's accumulator variable
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx512")
    prim, _ = _lower((1, 2, 32, 32), 3, epilogue="hardswish")
    stores = [s for s in _nodes(prim.body) if isinstance(s, S.BufferStore)
              and s.buffer.name == "out0"]
    assert stores
    for s in stores:
        assert not any(isinstance(n, E.BufferLoad) and n.buffer.name == "out0"
                       for n in _nodes(s.value))
        accs = {id(n) for n in _nodes(s.value) if isinstance(n, E.Var)
                and n.name.startswith("dw_acc")}
        assert len(accs) == 1


def test_narrow_tails_in_strided_rows(monkeypatch):
    # 112x112 at stride 2 (rows of 56, per-vector blocks): 3 vectors of 16 and one of 8 a row
    # block, where the switch off gives 4 of 16 (the last over the third)
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx512")
    prim, _ = _lower((1, 2, 112, 112), 3, 2, "relu6")
    assert set(_vector_stores(prim, "out0")) == {16, 8}
    monkeypatch.setattr(depthwise, "NARROW_TAILS", False)
    prim, _ = _lower((1, 2, 112, 112), 3, 2, "relu6")
    assert set(_vector_stores(prim, "out0")) == {16}


@pytest.mark.parametrize("shape,k,epilogue", [
    ((1, 9, 7, 7), 5, "silu"),  # one block of 7 rows, the block's epilogues deferred
    ((2, 5, 7, 7), 7, "relu6"),
    ((1, 4, 9, 9), 7, "mixer"),  # 9 rows: ROW_BLOCK's 6 and 3
    ((1, 3, 13, 13), 5, "gelu"),
    ((1, 6, 14, 14), 7, "none"),  # 6 + 6 + 2 rows
    ((1, 3, 8, 8), 5, "hardswish"),
    ((1, 4, 8, 12), 7, "relu6"),  # one block of 8 rows of 12
    ((1, 5, 7, 7), 3, "silu"),  # 3x3: ``_block``, one block of 6 rows and one row
])
@pytest.mark.parametrize("block_max", [8, 0])
def test_narrow_row_blocks_match_numpy(rng, monkeypatch, shape, k, epilogue, block_max):
    monkeypatch.setattr(depthwise, "NARROW_BLOCK_MAX", block_max)
    out, want, _ = _run(rng, shape, k, epilogue=epilogue)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("hw,counts", [
    # 7 rows next to 3 padding rows each side: 4 + 5 + 6 + 7 + 6 + 5 + 4 filter rows of 7 taps,
    # the 7 input rows of 7 column offsets
    (7, [((4 + 5 + 6 + 7 + 6 + 5 + 4) * 7, 7 * 7, 7)]),
    # 8 rows: 4 + 5 + 6 + 7 + 7 + 6 + 5 + 4 filter rows, the 8 input rows
    (8, [((4 + 5 + 6 + 7 + 7 + 6 + 5 + 4) * 7, 8 * 7, 8)]),
])
def test_narrow_row_blocks_skip_their_padding_rows(monkeypatch, hw, counts):
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx512")
    prim, _ = _lower((1, 4, hw, hw), 7)
    found = []
    for n in _nodes(prim.body):
        if isinstance(n, S.For) and n.kind == S.ForKind.VECTORIZED and isinstance(
                n.body, S.LetStmt):
            body, names = n.body, []
            while isinstance(body, S.LetStmt):
                names.append(body.var.name)
                body = body.body
            stores = [s for s in _nodes(body) if isinstance(s, S.BufferStore)]
            found.append((sum(m.startswith("dw_acc") for m in names),
                          sum(m.startswith("dw_in") for m in names), len(stores)))
    assert sorted(set(found)) == counts
    assert len(found) == 1


@pytest.mark.parametrize("c,mult,k,dilation,h,w", [
    (3, 2, 7, 1, 10, 56),  # channel multiplier 2: each output channel's tiles on its input plane
    (2, 1, 5, 2, 12, 40),  # dilated 5x5 (taps 2 apart): tiles of rows 40
    (2, 3, 3, 1, 9, 20),
])
def test_tiles_with_multiplier_and_dilation_match_numpy(rng, c, mult, k, dilation, h, w):
    pad = dilation * (k // 2)
    x = relay.var("x", shape=(1, c, h, w))
    wt = relay.var("w", shape=(c * mult, 1, k, k))
    y = relay.nn.relu(relay.nn.conv2d(x, wt, padding=(pad, pad), dilation=(dilation, dilation),
                                      groups=c, channels=c * mult, kernel_size=(k, k)))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, wt], y)))
    ins, _, outs = te_compiler.build_te(mod["main"])
    prim, ws = lower_te(ins, outs, "f")
    xs = rng.standard_normal((1, c, h, w), dtype=np.float32)
    ws_ = rng.standard_normal((c * mult, 1, k, k), dtype=np.float32)
    xp = np.repeat(np.pad(xs.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad))), mult,
                   axis=1)  # output channel o reads input channel o // mult
    want = np.zeros((1, c * mult, h, w))
    for ky in range(k):
        for kx in range(k):
            want += xp[:, :, ky * dilation:ky * dilation + h, kx * dilation:kx * dilation + w] * \
                ws_[None, :, 0, ky, kx, None, None]
    out = np.full(want.shape, np.nan, np.float32)
    codegen.build(prim)["f"](xs, ws_, out, *([np.zeros(max(ws, 64), np.uint8)] if ws else []))
    np.testing.assert_allclose(out, np.maximum(want, 0), rtol=2e-5, atol=2e-5)
    if depthwise.vector_isa() == "avx512":
        assert _tiles(prim)


@pytest.mark.parametrize("k,stride,tiled", [(5, 2, True), (7, 2, True), (3, 2, False),
                                            (3, 1, True)])
def test_which_strides_take_tiles(rng, monkeypatch, k, stride, tiled):
    # at stride 2 only filters of TILE_STRIDED_MIN_TAPS taps or more (5x5 up) take tiles
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx512")
    out, want, prim = _run(rng, (1, 3, 24 * stride, 24 * stride), k, stride, "relu6")
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
    assert bool(_tiles(prim)) == tiled
