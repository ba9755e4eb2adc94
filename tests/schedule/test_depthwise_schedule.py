"""The depthwise conv2d schedule (``minitvm.schedule.depthwise``): which stages it takes, the
loop nest it writes (phased copy, no bounds checks, epilogue fused into the conv's store), and
its numbers against a numpy reference on odd shapes, strides, paddings and epilogues."""

import conv_reference
import numpy as np
import pytest
from depthwise_cases import depthwise_conv as _conv
from depthwise_cases import nodes as _nodes
from depthwise_cases import reference as _reference
from depthwise_cases import relay_te as _te
from depthwise_cases import run as _run
from schedule_isa import force_isa

import minitvm as tvm
from minitvm import codegen, relay
from minitvm.contrib import graph_executor
from minitvm.relay.backend import te_compiler
from minitvm.schedule import LoweringOptions, depthwise, depthwise_flat, lower_te, select_rule
from minitvm.te.create_prim_func import topo_order
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order


# ------------------------------------------------------------------------------ numerics
@pytest.mark.parametrize("shape,kw", [
    ((1, 13, 9, 11), dict(stride=1, pad=1)),  # channels not a multiple of 8, odd H and W
    ((2, 13, 9, 11), dict(stride=1, pad=1, epilogue="relu6")),  # batch > 1
    ((1, 13, 9, 11), dict(stride=2, pad=1)),
    ((2, 21, 15, 17), dict(stride=2, pad=1, epilogue="relu6")),
    ((1, 24, 16, 16), dict(stride=1, pad=1, epilogue="relu6")),  # row mode (OW = 2 vectors)
    ((1, 8, 32, 32), dict(stride=2, pad=1, epilogue="bias")),  # row mode, strided
    ((1, 9, 7, 7), dict(stride=1, pad=0)),  # no padding
    ((1, 5, 12, 13), dict(k=5, stride=2, pad=2)),
    ((1, 6, 11, 10), dict(stride=1, pad=2, dilation=2, epilogue="relu6")),
    ((1, 7, 10, 9), dict(stride=1, pad=1, mult=2, epilogue="relu6")),  # channel multiplier 2
    ((1, 11, 13, 12), dict(stride=3, pad=1)),
    ((2, 10, 9, 9), dict(stride=1, pad=1, epilogue="hardswish")),  # epilogue reads it twice
    ((1, 33, 3, 3), dict(stride=1, pad=1, epilogue="relu6")),  # planes smaller than a vector
    ((1, 6, 5, 9), dict(k=1, stride=1, pad=0)),  # a 1x1 depthwise filter
])
def test_depthwise_matches_numpy(rng, shape, kw):
    out, want, _ = _run(shape, rng, **kw)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_depthwise_large_plane_runs_parallel_and_matches(rng):
    # 32 x 56 x 56: enough work for the thread pool; a ReLU6 epilogue fused
    out, want, prim = _run((1, 32, 56, 56), rng, stride=1, pad=1, epilogue="relu6")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert isinstance(prim.body, S.For) and prim.body.kind == S.ForKind.PARALLEL


def test_asymmetric_padding_matches_numpy(rng):
    # padding (top, left, bottom, right) = (0, 1, 2, 0), stride 2
    x = relay.var("x", shape=(1, 5, 10, 11))
    w = relay.var("w", shape=(5, 1, 3, 3))
    ins, _, outs = _te([x, w], relay.nn.conv2d(x, w, strides=(2, 2), padding=(0, 1, 2, 0),
                                               groups=5))
    prim, _ = lower_te(ins, outs, "f")
    xv = rng.standard_normal((1, 5, 10, 11), dtype=np.float32)
    wv = rng.standard_normal((5, 1, 3, 3), dtype=np.float32)
    xp = np.pad(xv.astype(np.float64), ((0, 0), (0, 0), (0, 2), (1, 0)))
    want = np.zeros((1, 5, 5, 5))
    for ky in range(3):
        for kx in range(3):
            want += xp[:, :, ky:ky + 9:2, kx:kx + 9:2] * wv[None, :, 0, ky, kx, None, None]
    out = np.empty(want.shape, np.float32)
    codegen.build(prim)["f"](xv, wv, out)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_conv_read_by_two_outputs_keeps_its_own_buffer(rng):
    # the conv feeds two outputs: no epilogue is fused, the conv is computed once into a
    # temporary both read
    x = relay.var("x", shape=(1, 6, 9, 9))
    w = relay.var("w", shape=(6, 1, 3, 3))
    y = relay.nn.conv2d(x, w, padding=(1, 1), groups=6)
    ins, _, outs = _te([x, w], relay.Tuple([relay.nn.relu(y), y * relay.const(2.0)]))
    prim, ws = lower_te(ins, outs, "f")
    assert "conv2d" in _allocs(prim)
    xv = rng.standard_normal((1, 6, 9, 9), dtype=np.float32)
    wv = rng.standard_normal((6, 1, 3, 3), dtype=np.float32)
    o1, o2 = np.empty((1, 6, 9, 9), np.float32), np.empty((1, 6, 9, 9), np.float32)
    extra = [np.zeros(max(ws, 64), np.uint8)] if ws else []
    codegen.build(prim)["f"](xv, wv, o1, o2, *extra)
    want = _reference(xv, wv, 1, 1, 1, 1)
    np.testing.assert_allclose(o1, np.maximum(want, 0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(o2, want * 2, rtol=1e-4, atol=1e-4)


def test_epilogue_reading_other_positions_reads_a_temporary(rng):
    # an output stage reading the conv upside down (not at its own position): the conv goes to
    # a temporary first, which the flipped epilogue then reads
    x = relay.var("x", shape=(1, 6, 9, 8))
    w = relay.var("w", shape=(6, 1, 3, 3))
    ins, _, outs = _te([x, w], relay.nn.conv2d(x, w, padding=(1, 1), groups=6))
    conv = outs[0]
    flip = tvm.te.compute(conv.shape, lambda n, c, y, xx: conv[n, c, 8 - y, xx] * 2.0,
                          name="flip")
    prim, ws = lower_te(ins, [flip], "f")
    assert "conv2d" in _allocs(prim)
    xv = rng.standard_normal((1, 6, 9, 8), dtype=np.float32)
    wv = rng.standard_normal((6, 1, 3, 3), dtype=np.float32)
    out = np.empty((1, 6, 9, 8), np.float32)
    extra = [np.zeros(max(ws, 64), np.uint8)] if ws else []
    codegen.build(prim)["f"](xv, wv, out, *extra)
    want = _reference(xv, wv, 1, 1, 1, 1)[:, :, ::-1] * 2
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------------------ structure
def _stage(outs, name):
    (t,) = [t for t in topo_order(list(outs)) if t.name == name]
    return t


def test_rule_takes_depthwise_only():
    opts = LoweringOptions(blas=False)
    _, outs, _ = _conv((1, 8, 10, 10), epilogue="relu6")
    rule = select_rule(_stage(outs, "conv2d"), opts)
    assert rule is not None and rule.name == "depthwise" and rule.epilogue
    # a dense conv keeps the implicit GEMM; a grouped conv with 2 channels per group (18 taps
    # per output channel) takes this schedule too
    x, w = relay.var("x", shape=(1, 8, 10, 10)), relay.var("w", shape=(16, 8, 3, 3))
    _, _, outs = _te([x, w], relay.nn.conv2d(x, w, padding=(1, 1)))
    assert select_rule(_stage(outs, "conv2d"), opts).name == "gemm"
    w2 = relay.var("w", shape=(8, 2, 3, 3))
    _, _, outs = _te([x, w2], relay.nn.conv2d(x, w2, padding=(1, 1), groups=4))
    t = _stage(outs, "conv2d")
    assert depthwise.supported(t) and select_rule(t, opts).name == "depthwise"


def test_float64_depthwise_is_left_to_the_generic_schedule():
    x = relay.var("x", shape=(1, 8, 10, 10), dtype="float64")
    w = relay.var("w", shape=(8, 1, 3, 3), dtype="float64")
    _, _, outs = _te([x, w], relay.nn.conv2d(x, w, padding=(1, 1), groups=8))
    assert not depthwise.supported(_stage(outs, "conv2d"))


def _stores(prim, name):
    root = prim.body if hasattr(prim, "params") else prim
    return [s for s in _nodes(root) if isinstance(s, S.BufferStore) and s.buffer.name == name]


def _allocs(prim):
    return sorted(s.buffer_var.name for s in _nodes(prim.body) if isinstance(s, S.Allocate))


def _lets(prim) -> dict:
    """Let-bound variable name -> the buffers its value loads."""
    return {s.var.name: {n.buffer.name for n in post_order(s.value) if isinstance(n, E.BufferLoad)}
            for s in _nodes(prim.body) if isinstance(s, S.LetStmt)}


def _sources(value, lets) -> set:
    """The buffers store value ``value`` reads, directly or through let-bound variables."""
    out = set()
    for n in post_order(value):
        if isinstance(n, E.BufferLoad):
            out.add(n.buffer.name)
        elif isinstance(n, E.Var) and n.name in lets:
            out |= lets[n.name]
    return out


def _tap_count(value) -> int:
    """The distinct taps (loads of the phased plane, let-bound row vectors) ``value`` sums."""
    return sum(1 for n in post_order(value)  # (post_order visits a shared node once)
               if (isinstance(n, E.BufferLoad) and n.buffer.name == "dw_xph")
               or (isinstance(n, E.Var) and n.name.startswith("dw_in")))


def test_row_mode_fuses_the_epilogue_into_the_store(rng, monkeypatch):
    # OW = 32 (two AVX-512 vectors, four AVX2 ones): every output vector is stored once, as
    # clip(taps + bias), and the conv has no buffer of its own; the taps' input vectors are
    # let-bound, loaded once per block of rows (whole-row tiles off: test_depthwise_tiles.py;
    # the whole plane copied first: the copy by row blocks in test_depthwise_stream_fill.py)
    monkeypatch.setattr(depthwise, "TILED", False)
    monkeypatch.setattr(depthwise, "STREAM_FILL", {"avx512": False, "avx2": False})
    out, want, prim = _run((1, 8, 32, 32), rng, stride=1, pad=1, epilogue="relu6")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert _allocs(prim) == ["dw_xph"]
    lets = _lets(prim)
    stores = _stores(prim, "out0")
    assert stores, "the kernel writes the output"
    for s in stores:
        kinds = {type(n) for n in post_order(s.value)}
        assert E.Min in kinds and E.Max in kinds  # the clip
        assert _sources(s.value, lets) == {"dw_xph", "in1", "in2"}  # taps, weights and bias:
        # no re-read of out0
        assert _tap_count(s.value) == 9
    # weights: scalars loaded once before the loops; inputs: row vectors of the phased plane
    assert set().union(*lets.values()) == {"in1", "dw_xph"}
    # no bounds checks in the whole kernel: the padding is in the copy
    assert not any(isinstance(n, (E.Select, S.IfThenElse)) for n in _nodes(prim.body))


@pytest.mark.parametrize("k,stride,rows,isa", [(3, 1, 6, None), (5, 1, 6, None),
                                              (3, 2, 4, "avx512"), (3, 2, 2, "avx2"),
                                              (5, 2, 1, None)])
def test_row_blocks_share_their_input_vectors(rng, monkeypatch, k, stride, rows, isa):
    # ROW_BLOCK output rows at a time: the input rows they read are loaded once each; a 3x3 at
    # stride 1 over 6 rows needs 8 input rows x 3 column offsets, not 6 x 9 taps (whole-row
    # tiles off); a strided 3x3 takes 4 rows on AVX-512, 2 on AVX2 (16 registers)
    if isa is not None:
        force_isa(monkeypatch, isa)
    monkeypatch.setattr(depthwise, "TILED", False)
    shape = (1, 4, 64 * stride, 64 * stride)
    out, want, prim = _run(shape, rng, k=k, stride=stride, pad=k // 2, epilogue="relu6")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    g = depthwise.geometry(_stage(_conv(shape, k=k, stride=stride, pad=k // 2)[1], "conv2d"))
    assert depthwise._row_block(g) == rows
    vec = [s for s in _nodes(prim.body) if isinstance(s, S.For)
           and s.kind == S.ForKind.VECTORIZED and isinstance(s.body, S.LetStmt)]
    assert vec
    for f in vec:
        body, inputs = f.body, 0
        while isinstance(body, S.LetStmt):
            inputs += body.var.name.startswith("dw_in")
            body = body.body
        stores = [st for st in _nodes(body) if isinstance(st, S.BufferStore)]
        n = len(stores)  # the block's rows (the last block may be shorter)
        assert n in (rows, 64 % rows)
        if stride == 1:  # every input row vector loaded once; a 5x5's first block (peeled,
            # ``depthwise.ACCUMULATE_MIN_TAPS``) loads none of the padding rows above the plane
            assert inputs in ((n + k - 1) * k, (n + k - 1 - (k // 2 if k >= 5 else 0)) * k)
        assert inputs <= n * k * k


@pytest.mark.skipif(depthwise.VECTOR[depthwise.vector_isa()] == 8,
                    reason="narrow rows: 8 lanes are part of a 16-lane (AVX-512) vector")
def test_narrow_rows_pack_the_plane_then_the_epilogue(rng, monkeypatch):
    # OW = 7: each output row is one 8-lane vector from its row of the phased plane, stored into
    # the packed plane ``dw_conv`` (its eighth lane lands on the next row's first pixel, written
    # after it); the epilogue then runs over the 49 values in whole vectors. (A 7x7 plane's
    # epilogues run after the block's convs, each channel a plane of ``dw_convs``; 14x14 run each
    # channel's conv and epilogue together.) The copies share one plane here (the copies made
    # first, each into a plane of its own: test_depthwise_fills_first.py).
    monkeypatch.setattr(depthwise, "FILLS_FIRST", {"avx512": False, "avx2": False})
    for hw, conv_buf in [(7, "dw_convs"), (14, "dw_conv")]:
        out, want, prim = _run((1, 16, hw, hw), rng, stride=1, pad=1, epilogue="relu6")
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
        assert _allocs(prim) == [conv_buf, "dw_xph"]
    prim = _run((1, 16, 7, 7), rng, stride=1, pad=1, epilogue="relu6")[2]
    loops = [f for f in _nodes(prim.body) if isinstance(f, S.For) and f.loop_var.name.startswith(
        "dc")]
    assert len(loops) == 2  # the convs, then the epilogues
    assert _stores(loops[0], "dw_conv") and not _stores(loops[0], "out0_flat")
    assert _stores(loops[1], "out0_flat") and not _stores(loops[1], "dw_conv")
    lets = _lets(prim)
    conv = _stores(prim, "dw_conv")
    assert conv and all(_tap_count(s.value) == 9 and _sources(s.value, lets) == {
        "dw_xph", "in1"} for s in conv)
    assert {s.extent.value for s in _nodes(prim.body) if isinstance(s, S.For) and
            s.kind == S.ForKind.VECTORIZED and any(isinstance(n, S.BufferStore) and
                                                   n.buffer.name == "dw_conv"
                                                   for n in _nodes(s.body))} == {8}
    flat = _stores(prim, "out0_flat")
    assert flat and all(_sources(s.value, lets) == {"dw_conv", "in2"} for s in flat)


def test_grid_mode_computes_the_grid_then_the_epilogue(rng, monkeypatch):
    # OW = 5 with phase rows of 7 (narrower than a vector): the taps fill a [OH, Wq] grid in
    # whole vectors; each output element is then written once through the epilogue (the
    # channels-in-lanes blocks of such planes off: test_depthwise_channel_lanes; flat mode off:
    # test_depthwise_flat)
    monkeypatch.setattr(depthwise, "LANES_MAX_PLANE", 0)
    monkeypatch.setattr(depthwise_flat, "FLAT_MAX_WIDTH", 0)
    out, want, prim = _run((1, 16, 5, 5), rng, stride=1, pad=1, epilogue="relu6")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert _allocs(prim) == ["dw_grid", "dw_xph"]
    for s in _stores(prim, "out0"):
        loads = {n.buffer.name for n in post_order(s.value) if isinstance(n, E.BufferLoad)}
        assert loads == {"dw_grid", "in2"}
    grid_stores = _stores(prim, "dw_grid")
    assert grid_stores and all(
        sum(isinstance(n, E.BufferLoad) and n.buffer.name == "dw_xph"
            for n in post_order(s.value)) == 9 for s in grid_stores)


@pytest.mark.parametrize("shape", [(1, 8, 32, 32), (1, 8, 14, 14), (1, 8, 7, 7), (1, 8, 5, 5)])
def test_epilogue_reading_the_conv_twice_shares_one_value(rng, monkeypatch, shape):
    # hardswish reads the conv twice: both reads are the same expression object (emitted
    # once), each output position is stored once (whole-row tiles, channel lanes and flat mode
    # off: the 5x5 plane takes the grid)
    monkeypatch.setattr(depthwise, "TILED", False)
    monkeypatch.setattr(depthwise, "LANES_MAX_PLANE", 0)
    monkeypatch.setattr(depthwise_flat, "FLAT_MAX_WIDTH", 0)
    out, want, prim = _run(shape, rng, stride=1, pad=1, epilogue="hardswish")
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    stores = _stores(prim, "out0") + _stores(prim, "out0_flat")
    assert stores
    for s in stores:
        assert not any(isinstance(n, E.BufferLoad) and n.buffer.name == "out0"
                       for n in post_order(s.value))
        temps = [n for n in post_order(s.value) if isinstance(n, E.BufferLoad)
                 and n.buffer.name in ("dw_conv", "dw_grid")]
        assert len(temps) + _tap_count(s.value) == (1 if temps else 9)


@pytest.mark.parametrize("shape,k,pass_buffer", [
    ((1, 8, 14, 14), 5, "dw_conv"),  # short rows: the epilogue in a pass of its own
    ((2, 6, 28, 28), 5, "dw_conv"),
    ((1, 8, 14, 14), 3, "dw_conv"),  # 3x3 too (narrow rows on AVX-512)
    ((1, 8, 28, 28), 3, "dw_conv"),
    ((1, 8, 40, 40), 5, None),  # rows of 40: fused
    ((1, 4, 56, 56), 3, None),
    ((1, 8, 7, 7), 5, "dw_conv"),  # narrow rows
    ((2, 5, 3, 3), 3, "dw_dense"),  # grid mode: a plane of 9, two overlapping 8-lane vectors
])
def test_transcendental_epilogue_pass(rng, monkeypatch, shape, k, pass_buffer):
    if pass_buffer == "dw_dense":  # (the grid's pass: flat mode, test_depthwise_flat, off)
        monkeypatch.setattr(depthwise_flat, "FLAT_MAX_WIDTH", 0)
    out, want, prim = _run(shape, rng, k=k, pad=k // 2, epilogue="silu")
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
    allocs = _allocs(prim)
    assert any(a.startswith("dw_conv") for a in allocs) == (pass_buffer == "dw_conv")
    assert ("dw_dense" in allocs) == (pass_buffer == "dw_dense")
    lets = _lets(prim)
    if pass_buffer:  # the taps' pass stores the sums; the epilogue pass reads them once each,
        # over the packed plane in whole vectors
        assert _stores(prim, "out0_flat") and not _stores(prim, "out0")
        assert all("dw_xph" not in _sources(st.value, lets) for st in _stores(prim, "out0_flat"))


def test_per_pixel_epilogue_stays_row_by_row(rng):
    # an operand read per pixel: the packed plane's epilogue runs row by row, at each pixel's
    # own position (7x7: narrow rows; 14x14 with a 5x5: the transcendental pass), unless it is
    # of the output's shape (a residual: ``depthwise.FLAT_OWN_POSITION``), read through its flat
    # view over the plane's whole vectors
    for hw, k, rows in [(7, 3, 1), (14, 5, 1), (7, 3, 7), (14, 5, 14)]:
        x, w = relay.var("x", shape=(1, 8, hw, hw)), relay.var("w", shape=(8, 1, k, k))
        r = relay.var("r", shape=(1, 8, rows, hw))
        y = relay.nn.conv2d(x, w, padding=(k // 2, k // 2), groups=8)
        ins, _, outs = _te([x, w, r], relay.sigmoid(y) + r)
        prim, _ = lower_te(ins, outs, "f")
        assert any(a.startswith("dw_conv") for a in _allocs(prim))
        if rows == 1:  # (one row broadcast down the plane)
            assert _stores(prim, "out0") and not _stores(prim, "out0_flat")
        else:
            flat = _stores(prim, "out0_flat")
            assert flat and not _stores(prim, "out0")
            assert all(_sources(st.value, _lets(prim)) == {"dw_conv", "in2_flat"} for st in flat)
        f = codegen.build(prim)["f"]
        xs, ws, rs = (rng.standard_normal(s, dtype=np.float32) for s in
                      [(1, 8, hw, hw), (8, 1, k, k), (1, 8, rows, hw)])
        out = np.empty((1, 8, hw, hw), np.float32)
        f(xs, ws, rs, out)
        want = _reference(xs, ws, 1, k // 2, 1, 1)
        np.testing.assert_allclose(out, 1 / (1 + np.exp(-want)) + rs, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("c,hw,blocked", [(16, 7, 4), (6, 7, 2), (5, 14, 1), (8, 28, 4),
                                           (8, 36, 1)])
def test_small_planes_zero_their_padding_once_per_channel_block(rng, c, hw, blocked):
    # planes of at most BLOCK_MAX_PLANE pixels: CHANNEL_BLOCK channels a task (fewer when the
    # channels do not divide), the phased plane zeroed once before them, each channel copying
    # only its interior
    out, want, prim = _run((2, c, hw, hw), rng, k=5, pad=2, epilogue="silu")
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
    g = depthwise.geometry(_stage(_conv((2, c, hw, hw), k=5, pad=2)[1], "conv2d"))
    assert depthwise._channel_block(g) == blocked
    zero_stores = [s for s in _stores(prim, "dw_xph") if isinstance(s.value, E.FloatImm)]
    loops = [s for s in _nodes(prim.body) if isinstance(s, S.For) and s.loop_var.name.startswith(
        "dc")]
    if blocked > 1:  # (7x7: the convs' loop, then the epilogues'; the copies' loop first
        # where ``depthwise.FILLS_FIRST``)
        deferred = hw * hw <= depthwise.DEFER_MAX_PLANE
        assert len(loops) == (1 + deferred + (deferred and depthwise._fills_first(g)))
        assert all(f.extent.value == blocked for f in loops)
        assert not any(isinstance(n, S.BufferStore) and isinstance(n.value, E.FloatImm)
                       for f in loops for n in _nodes(f.body))  # no zeros inside the loops
        assert zero_stores
    else:
        assert not loops


@pytest.mark.parametrize("isa,hw,stride,blocked", [
    ("avx2", 56, 2, 1),  # 28x28 out: past BLOCK_MAX_STRIDED_PLANE on AVX2
    ("avx2", 28, 2, 4),  # 14x14 out: blocks of 4
    ("avx2", 28, 1, 4),  # a stride-1 28x28 plane keeps them
    ("avx512", 56, 2, 4),  # AVX-512: up to BLOCK_MAX_PLANE
])
def test_avx2_strided_planes_block_only_up_to_their_limit(rng, monkeypatch, isa, hw, stride,
                                                          blocked):
    force_isa(monkeypatch, isa)
    shape = (1, 8, hw, hw)
    out, want, prim = _run(shape, rng, stride=stride, epilogue="relu6")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    g = depthwise.geometry(_stage(_conv(shape, stride=stride)[1], "conv2d"))
    assert depthwise._channel_block(g) == blocked
    loops = [s for s in _nodes(prim.body) if isinstance(s, S.For) and s.loop_var.name.startswith(
        "dc")]
    assert bool(loops) == (blocked > 1)


def test_conv_without_epilogue_writes_the_output_directly(rng, monkeypatch):
    monkeypatch.setattr(depthwise, "LANES_MAX_PLANE", 0)  # (the planes' grid mode)
    _, _, prim = _run((1, 8, 9, 9), rng, stride=2, pad=1)
    assert _allocs(prim) == ["dw_grid", "dw_xph"]  # no temporary for the conv stage


def test_strided_copy_is_vectorized_by_column_phase(rng, monkeypatch):
    # stride 2 in width: each column phase of a row is one vectorized copy whose input load
    # has stride 2 (which the code generator makes whole loads and shuffles, no per-lane loads)
    # (the whole plane copied first: the copy by row blocks in test_depthwise_stream_fill.py)
    monkeypatch.setattr(depthwise, "STREAM_FILL", {"avx512": False, "avx2": False})
    _, _, prim = _run((1, 4, 32, 32), rng, stride=2, pad=1)
    copies = [s for s in _nodes(prim.body) if isinstance(s, S.For)
              and s.kind == S.ForKind.VECTORIZED and isinstance(s.body, S.BufferStore)
              and s.body.buffer.name == "dw_xph" and isinstance(s.body.value, E.BufferLoad)]
    assert len(copies) == 4  # 2 row phases x 2 column phases
    for c in copies:
        col = c.body.value.indices[-1]  # (j*8 + lane + j0) * 2 + (px - 1)
        assert any(isinstance(n, E.Mul) and getattr(n.b, "value", None) == 2
                   for n in post_order(col))
    ir = codegen.build(prim).get_source()
    assert "<i32 0, i32 2, i32 4, i32 6" in ir  # the even lanes picked by a shuffle


# ------------------------------------------------------------------------------ end to end
def test_relay_build_depthwise_block_matches_numpy(rng):
    # expand 1x1 -> depthwise 3x3 stride 2 + ReLU6 -> project 1x1, batch 2, odd sizes
    x = relay.var("x", shape=(2, 5, 15, 13))
    w1 = relay.var("w1", shape=(18, 5, 1, 1))
    wd = relay.var("wd", shape=(18, 1, 3, 3))
    bd = relay.var("bd", shape=(1, 18, 1, 1))
    w2 = relay.var("w2", shape=(6, 18, 1, 1))
    y = relay.clip(relay.nn.conv2d(x, w1), 0.0, 6.0)
    y = relay.clip(relay.nn.conv2d(y, wd, strides=(2, 2), padding=(1, 1), groups=18) + bd,
                   0.0, 6.0)
    y = relay.nn.conv2d(y, w2)
    mod = tvm.IRModule.from_expr(relay.Function([x, w1, wd, bd, w2], y))
    vals = {"x": rng.standard_normal((2, 5, 15, 13), dtype=np.float32),
            "w1": rng.standard_normal((18, 5, 1, 1), dtype=np.float32),
            "wd": rng.standard_normal((18, 1, 3, 3), dtype=np.float32),
            "bd": rng.standard_normal((1, 18, 1, 1), dtype=np.float32),
            "w2": rng.standard_normal((6, 18, 1, 1), dtype=np.float32)}
    params = {k: v for k, v in vals.items() if k != "x"}
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    assert not lib.get_lib().fallback_functions
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", vals["x"])
    g.run()
    got = g.get_output(0).numpy()
    h = np.clip(np.einsum("oc,nchw->nohw", vals["w1"][:, :, 0, 0], vals["x"]), 0, 6)
    h = _reference(h, vals["wd"], 2, 1, 1, 1, vals["bd"], "relu6")
    want = np.einsum("oc,nchw->nohw", vals["w2"][:, :, 0, 0], h)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,kw", [
    ((2, 13, 9, 11), dict(stride=1, pad=1, epilogue="relu6")),
    ((1, 8, 32, 32), dict(stride=1, pad=1, epilogue="relu6")),  # row mode at 16 lanes
    ((1, 12, 16, 16), dict(stride=1, pad=1, epilogue="hardswish")),
    ((1, 9, 28, 27), dict(stride=2, pad=1, epilogue="relu6")),
])
def test_avx512_vector_width_matches_numpy(rng, monkeypatch, shape, kw):
    # the 16-lane schedule chosen on AVX-512 hosts, run here through LLVM's legalization
    monkeypatch.setattr(depthwise, "vector_isa", lambda: "avx512")
    assert depthwise.geometry(_stage(_conv(shape, **kw)[1], "conv2d"))["lanes"] == 16
    out, want, _ = _run(shape, rng, **kw)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("isa,width,lanes", [("avx512", 28, 16), ("avx2", 14, 8),
                                             ("avx512", 14, None), ("avx512", 7, None)])
def test_rows_not_a_whole_number_of_vectors_end_with_an_overlapping_one(
        rng, monkeypatch, isa, width, lanes):
    # rows of 14 with 8 lanes: each row two 8-lane vectors (at 0 and 6) stored straight through
    # the epilogue, no grid; rows that fit one vector (14 in 16 lanes, 7 in 8) take narrow rows
    # (whole-row tiles off)
    monkeypatch.setattr(depthwise, "vector_isa", lambda: isa)
    monkeypatch.setattr(depthwise, "TILED", False)
    out, want, prim = _run((1, 8, width, width), rng, stride=1, pad=1, epilogue="relu6")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    if lanes is None:
        assert any(a.startswith("dw_conv") for a in _allocs(prim))
        return
    assert _allocs(prim) == ["dw_xph"]
    vec = {s.extent.value for s in _nodes(prim.body) if isinstance(s, S.For) and
           s.kind == S.ForKind.VECTORIZED and any(isinstance(n, S.BufferStore) and
                                                  n.buffer.name == "out0"
                                                  for n in _nodes(s.body))}
    assert vec == {lanes}


def _grouped_reference(x, w, b, groups, stride, pad):
    n, c, h, wd = x.shape
    o, cg, k, _ = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    out = np.zeros((n, o, oh, ow))
    m = o // groups
    for ky in range(k):
        for kx in range(k):
            win = xp[:, :, ky:ky + stride * (oh - 1) + 1:stride, kx:kx + stride * (ow - 1) + 1:stride]
            win = win.reshape(n, groups, cg, oh, ow)
            wt = w[:, :, ky, kx].reshape(groups, m, cg)
            out += np.einsum("ngchw,gmc->ngmhw", win, wt).reshape(n, o, oh, ow)
    return np.maximum(out + b[None, :, None, None], 0)


@pytest.mark.parametrize("shape,o,groups,k,stride", [
    ((1, 16, 14, 14), 16, 4, 3, 1),  # ResNeXt-like: 4 channels a group, 4 outputs
    ((2, 12, 9, 11), 18, 6, 3, 2),  # 2 channels a group, 3 outputs, stride 2, odd sizes
    ((1, 8, 7, 7), 16, 2, 5, 1),  # 4 channels a group, 8 outputs, grid mode, 5x5
])
def test_grouped_conv_runs_on_the_depthwise_schedule(rng, shape, o, groups, k, stride):
    c = shape[1]
    x = relay.var("x", shape=shape)
    w = relay.var("w", shape=(o, c // groups, k, k))
    b = relay.var("b", shape=(o,))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(
        x, w, strides=(stride, stride), padding=(k // 2, k // 2), groups=groups), b))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w, b], y)))
    ins, _, outs = te_compiler.build_te(mod["main"])
    conv = next(t for t in topo_order(outs) if getattr(t.op, "tag", "") == "conv2d_nchw")
    assert depthwise.supported(conv)
    prim, ws = lower_te(ins, outs, "f")
    assert "dw_xph" in _allocs(prim)
    xs = rng.standard_normal(shape, dtype=np.float32)
    ws_, bs = (rng.standard_normal(s, dtype=np.float32) for s in [(o, c // groups, k, k), (o,)])
    out = np.full(tuple(int(d) for d in outs[0].shape), np.nan, np.float32)
    extra = [np.zeros(max(ws, 64), np.uint8)] if ws else []
    codegen.build(prim)["f"](xs, ws_, bs, out, *extra)
    np.testing.assert_allclose(out, _grouped_reference(xs, ws_, bs, groups, stride, k // 2),
                               rtol=2e-5, atol=2e-5)


def test_grouped_conv_with_many_taps_keeps_the_gemm():
    x = relay.var("x", shape=(1, 64, 8, 8))
    w = relay.var("w", shape=(64, 32, 3, 3))  # 288 taps per output channel
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w, padding=(1, 1), groups=2))))
    _, _, outs = te_compiler.build_te(mod["main"])
    assert not depthwise.supported(outs[0])


# --------------------------------------------- row blocks, narrow rows, channel blocks: numbers
_PLANES = [(hw, stride, k) for hw, stride in [(7, 1), (14, 1), (14, 2), (13, 1), (28, 1), (28, 2),
                                             (56, 1), (30, 2)] for k in (3, 5)]


# (each plane and filter with two of the five epilogue kinds, in turn: each kind on six or
# seven of them; the 7x7 planes, whose epilogues are deferred, with all five)
@pytest.mark.parametrize("plane, epilogue", conv_reference.taking_turns(
    _PLANES, ["none", "bias", "relu6", "hardswish", "silu"], per_case=2,
    every={i for i, (hw, _, _) in enumerate(_PLANES) if hw == 7}))
def test_row_blocks_and_packed_planes_match_numpy(rng, plane, epilogue):
    # every path of ``_channel`` against numpy, per epilogue kind and filter size: row blocks
    # (whole blocks and a shorter last one), narrow rows (7 and 14 wide), the packed plane's
    # epilogue pass, channel blocks (8 channels: 4 a task) and the deferred epilogues of 7x7
    hw, stride, k = plane
    out, want, _ = _run((1, 8, hw, hw), rng, k=k, stride=stride, pad=k // 2, epilogue=epilogue)
    np.testing.assert_allclose(out, want, rtol=3e-5, atol=3e-5)


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
@pytest.mark.parametrize("shape,kw", [
    ((2, 6, 7, 7), dict(k=5, pad=2, epilogue="silu")),  # batch 2, 2 channels a task
    ((1, 5, 14, 14), dict(k=3, pad=1, epilogue="hardswish")),  # 5 channels: one a task
    ((1, 4, 7, 7), dict(k=3, pad=1, mult=2, epilogue="silu")),  # channel multiplier 2
    ((1, 8, 9, 9), dict(k=3, pad=1, dilation=2, epilogue="relu6")),  # dilated: wider phases
    ((1, 8, 20, 20), dict(k=5, stride=3, pad=2, epilogue="silu")),  # stride 3
    ((2, 16, 11, 11), dict(k=5, stride=2, pad=2, epilogue="silu")),  # 6x6 output
])
def test_depthwise_paths_match_numpy_on_both_isas(rng, monkeypatch, isa, shape, kw):
    monkeypatch.setattr(depthwise, "vector_isa", lambda: isa)
    out, want, _ = _run(shape, rng, **kw)
    np.testing.assert_allclose(out, want, rtol=3e-5, atol=3e-5)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_channel_blocks_on_the_thread_pool(rng, threads):
    # 288 blocks of 4 channels (7x7, 5x5: enough multiply-adds for the thread pool), each task
    # with its own phased plane and packed planes
    from minitvm.runtime import threadpool
    old = threadpool.get_num_threads()
    threadpool.set_num_threads(threads)
    try:
        out, want, prim = _run((1, 1152, 7, 7), rng, k=5, pad=2, epilogue="silu")
    finally:
        threadpool.set_num_threads(old)
    np.testing.assert_allclose(out, want, rtol=3e-5, atol=3e-5)
    top = prim.body
    while isinstance(top, S.DeclBuffer):  # (the output's flat view)
        top = top.body
    assert isinstance(top, S.For) and top.kind == S.ForKind.PARALLEL
    assert top.extent.value == 1152 // depthwise.CHANNEL_BLOCK
