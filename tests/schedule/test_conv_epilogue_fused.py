"""The implicit-GEMM conv2d with its elementwise epilogue (bias, residual add, relu, ...)
applied by the micro-kernel to its register tile and the output stored once, and with its input
channels in L1-sized blocks: numerics against numpy on odd shapes (channels not a multiple of
the tile, stride 2, padding, a grid wider than the output, the last partial pixel panel, both
loop orders, batches, two threads) and the structure of the lowered kernel."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.runtime import threadpool
from minitvm.schedule import conv_direct
from minitvm.schedule.common import vector_isa
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts

ISA = vector_isa()  # conv_direct's switches for it (on for AVX2 and AVX-512 alike)
FUSED = conv_direct.FUSED_EPILOGUE[ISA]


def _conv_ref(x, w, stride, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x.astype("float64"), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, :, ky:ky + stride * (oh - 1) + 1:stride,
                       kx:kx + stride * (ow - 1) + 1:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx].astype("float64"))
    return out


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


EPILOGUES = {
    # name: (relay builder (conv, bias, residual), numpy reference (conv, bias, residual))
    "bias_relu": (lambda y, b, r: relay.nn.relu(relay.nn.bias_add(y, b)),
                  lambda y, b, r: np.maximum(y + b.reshape(1, -1, 1, 1), 0)),
    "residual_relu": (lambda y, b, r: relay.nn.relu(relay.nn.bias_add(y, b) + r),
                      lambda y, b, r: np.maximum(y + b.reshape(1, -1, 1, 1) + r, 0)),
    "swish": (lambda y, b, r: y * relay.sigmoid(y),  # reads the conv twice
              lambda y, b, r: y * _sigmoid(y)),
    "reversed": (lambda y, b, r: relay.nn.relu(relay.reverse(y, axis=3)),  # another position
                 lambda y, b, r: np.maximum(y[..., ::-1], 0)),
}


def _run(shape, o, k, stride, pad, epi, threads=1, seed=0):
    rng = np.random.default_rng(seed)
    wv = rng.standard_normal((o, shape[1], k, k)).astype("float32")
    bv = rng.standard_normal(o).astype("float32")
    x = relay.var("x", shape=shape)
    y = relay.nn.conv2d(x, relay.const(wv), strides=(stride, stride), padding=(pad, pad),
                        kernel_size=(k, k), channels=o)
    oh = (shape[2] + 2 * pad - k) // stride + 1
    ow = (shape[3] + 2 * pad - k) // stride + 1
    rv = rng.standard_normal((shape[0], o, oh, ow)).astype("float32")
    r = relay.var("r", shape=rv.shape)
    build, ref = EPILOGUES[epi]
    out = build(y, relay.const(bv), r)
    args = [x, r] if epi == "residual_relu" else [x]
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function(args, out)), target="llvm")
    xv = rng.standard_normal(shape).astype("float32")
    before = threadpool.get_num_threads()
    try:
        threadpool.set_num_threads(threads)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(x=xv, **({"r": rv} if epi == "residual_relu" else {}))
        got = m.get_output(0).numpy()
    finally:
        threadpool.set_num_threads(before)
    want = ref(_conv_ref(xv, wv, stride, pad), bv, rv)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return lib


CASES = [
    # (N, C, H, W), O, K, stride, pad, epilogue
    ((1, 5, 13, 11), 7, 3, 1, 1, "residual_relu"),    # grid wider than the output, partial panel
    ((1, 7, 9, 13), 13, 1, 1, 0, "bias_relu"),        # 1x1: pieces cross row ends
    ((2, 7, 9, 13), 13, 1, 1, 0, "residual_relu"),    # (residual: an epilogue pass)
    ((2, 128, 5, 7), 128, 1, 1, 0, "residual_relu"),  # channel tiles outer: residual fused
    ((1, 6, 16, 32), 11, 3, 1, 1, "residual_relu"),   # row mode (OW a multiple of 16)
    ((2, 5, 15, 17), 9, 3, 2, 1, "residual_relu"),    # batch, stride 2
    ((1, 64, 20, 20), 13, 3, 1, 1, "residual_relu"),  # channel blocks, pixel panels outer
    ((1, 48, 17, 19), 10, 3, 2, 1, "bias_relu"),      # channel blocks of a stride-2 conv
    ((1, 66, 12, 12), 8, 3, 1, 1, "bias_relu"),       # blocks of 22 channels
    ((1, 96, 9, 9), 40, 3, 1, 1, "residual_relu"),    # channel blocks, channel tiles outer
    ((1, 96, 9, 9), 38, 3, 1, 1, "bias_relu"),        # ... with two short tiles (4 + 4)
    ((1, 200, 7, 7), 20, 1, 1, 0, "bias_relu"),       # 1x1, blocks of 50 channels
    ((1, 70, 10, 10), 14, 3, 1, 1, "residual_relu"),  # no block size divides 70: one pass
    ((1, 5, 12, 14), 6, 3, 1, 1, "swish"),
    ((1, 5, 12, 14), 6, 3, 1, 1, "reversed"),
]


@pytest.mark.parametrize("case", CASES)
def test_fused_conv_matches_numpy(case):
    _run(*case)


@pytest.mark.parametrize("case", [CASES[3], CASES[4], CASES[7]])
def test_fused_conv_two_threads_matches_numpy(case):
    _run(*case, threads=2, seed=1)


def _conv_prim(lib):
    (prim,) = [k.prim_func for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    return prim


def _out_buffer(prim):
    return prim.buffer_map[prim.params[-1]] if "workspace" not in \
        prim.buffer_map[prim.params[-1]].name else prim.buffer_map[prim.params[-2]]


@pytest.mark.skipif(not FUSED, reason="the fused epilogue is off (FUSED_EPILOGUE)")
@pytest.mark.parametrize("shape, o, k, stride", [
    ((1, 5, 13, 11), 7, 3, 1), ((1, 6, 16, 32), 11, 3, 1), ((1, 5, 15, 17), 9, 3, 2)])
@pytest.mark.usefixtures("direct_conv_only")  # (odd output channels: conv_lanes' too)
def test_output_written_once_by_the_micro_kernel(shape, o, k, stride):
    """Every store into the output applies the epilogue (relu: a Max) to the register tile,
    and nothing reads the output back: no grid buffer, crop or in-place epilogue pass."""
    lib = _run(shape, o, k, stride, 1, "bias_relu")
    prim = _conv_prim(lib)
    out = _out_buffer(prim)
    stores = [s for s in walk_stmts(prim.body)
              if isinstance(s, S.BufferStore) and s.buffer.data is out.data]
    assert stores
    for s in stores:
        nodes = list(post_order(s.value))
        assert any(isinstance(e, E.Max) for e in nodes)
        assert any(isinstance(e, E.BufferLoad) and e.buffer.name == "acc" for e in nodes)
        assert not any(isinstance(e, E.BufferLoad) and e.buffer.data is out.data
                       for e in nodes)
    names = {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}
    assert "conv_grid" not in names


@pytest.mark.skipif(not FUSED, reason="the fused epilogue is off (FUSED_EPILOGUE)")
def test_contiguous_grid_reads_residual_as_flat_vectors():
    """A 1x1 conv 7 wide (channel tiles outer): no padding columns, so the tile's pixels
    (crossing row ends) are contiguous in the output and in the residual, which the vector
    stores read through flat views; nothing is gathered through per-pixel row and column
    indices."""
    lib = _run((2, 128, 5, 7), 128, 1, 1, 0, "residual_relu")
    prim = _conv_prim(lib)
    out = _out_buffer(prim)
    vector_stores = [s for s in walk_stmts(prim.body) if isinstance(s, S.For)
                     and s.kind == S.ForKind.VECTORIZED and isinstance(s.body, S.BufferStore)
                     and s.body.buffer.data is out.data]
    assert vector_stores
    for loop in vector_stores:
        store = loop.body
        assert len(store.indices) == 1  # the flat view
        loads = [e for e in post_order(store.value) if isinstance(e, E.BufferLoad)]
        plane = [e for e in loads if e.buffer.name not in ("acc",) and len(e.indices) == 1
                 and e.buffer.name.endswith("_flat")]
        assert plane  # the residual
        assert not any(isinstance(e, (E.FloorDiv, E.FloorMod)) for e in post_order(store.value))


@pytest.mark.skipif(not conv_direct.CHANNEL_BLOCK[ISA], reason="CHANNEL_BLOCK is off")
@pytest.mark.parametrize("shape, o, blocks, scratch", [
    ((1, 64, 20, 20), 13, 2, "panel_sums"),   # 3x3: 32 channels a block
    ((1, 48, 17, 19), 10, 3, "panel_sums"),   # 3x3 stride 2: 16 (two column phases)
    ((1, 96, 9, 9), 40, 3, "tile_sums"),      # channel tiles outer
    ((1, 16, 20, 20), 13, None, None),        # few channels: one pass
])
@pytest.mark.usefixtures("direct_conv_only")  # (odd output channels: conv_lanes' too)
def test_channel_blocks(shape, o, blocks, scratch):
    stride = 2 if shape[1] == 48 else 1
    lib = _run(shape, o, 3, stride, 1, "bias_relu")
    prim = _conv_prim(lib)
    kb = [s for s in walk_stmts(prim.body) if isinstance(s, S.For)
          and s.loop_var.name.startswith("kb")]
    names = {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}
    if blocks is None:
        assert not kb and not names & {"panel_sums", "tile_sums"}
        return
    assert {int(s.extent.value) for s in kb} == {blocks}
    assert scratch in names


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_channel_block_sizes(isa, monkeypatch):
    """Blocks keep the panel's input window near CHANNEL_BLOCK_BYTES and divide the channels,
    on both ISAs (``CHANNEL_BLOCK``); with the switch off every conv takes one pass."""
    def g(c, k, s):
        return dict(c=c, kh=k, kw=k, sw=s, dw=1)

    monkeypatch.setattr(conv_direct, "vector_isa", lambda: isa)
    with monkeypatch.context() as off:
        off.setitem(conv_direct.CHANNEL_BLOCK, isa, False)
        assert conv_direct.channel_block(g(256, 3, 1)) == 256
        assert conv_direct.channel_block(g(64, 3, 1)) == 64
    assert conv_direct.CHANNEL_BLOCK[isa]
    assert conv_direct.channel_block(g(64, 3, 1)) == 32
    assert conv_direct.channel_block(g(512, 3, 1)) == 32
    assert conv_direct.channel_block(g(128, 3, 2)) == 16
    assert conv_direct.channel_block(g(66, 3, 1)) == 22
    assert conv_direct.channel_block(g(70, 3, 1)) == 70
    assert conv_direct.channel_block(g(3, 7, 2)) == 3
    assert conv_direct.channel_block(g(256, 1, 1)) == 64  # 96 channels fit; 64 divides 256


def _lowered_conv(epilogue):
    """TE conv2d (5 -> 6 channels, 3x3, pad 1) with an elementwise output stage
    ``epilogue(conv, n, o, i, j)``: (lowered PrimFunc, workspace bytes)."""
    from minitvm import te
    from minitvm.relay.backend import te_compiler
    from minitvm.schedule import lower_te

    x, w = relay.var("x", shape=(1, 5, 12, 14)), relay.var("w", shape=(6, 5, 3, 3))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w, padding=(1, 1)))))
    ins, _, (conv,) = te_compiler.build_te(mod["main"])
    y = te.compute(conv.shape, lambda n, o, i, j: epilogue(conv, n, o, i, j), name="epi")
    return lower_te(ins, [y], "f")


def _call(prim, ws, x, w):
    from minitvm import codegen

    out = np.full((1, 6, 12, 14), np.nan, np.float32)
    f = codegen.build(prim)["f"]
    f(x, w, out, *([np.zeros(max(ws, 64), np.uint8)] if ws else []))
    return out


def test_epilogue_reading_other_positions_gets_its_own_pass():
    """An output stage reading the conv at another position (here mirrored in width) cannot
    run on the register tile: the conv goes to a temporary that the stage then reads."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 5, 12, 14)).astype("float32")
    w = rng.standard_normal((6, 5, 3, 3)).astype("float32")
    prim, ws = _lowered_conv(lambda c, n, o, i, j: tvm.te.max(
        c[n, o, i, 13 - j], tvm.tir.const(0.0, "float32")))
    got = _call(prim, ws, x, w)
    np.testing.assert_allclose(got, np.maximum(_conv_ref(x, w, 1, 1)[..., ::-1], 0),
                               rtol=1e-4, atol=1e-4)


def test_epilogue_on_register_tile_lowered_directly():
    """A plain elementwise output stage built in TE is applied to the register tile."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 5, 12, 14)).astype("float32")
    w = rng.standard_normal((6, 5, 3, 3)).astype("float32")
    prim, ws = _lowered_conv(lambda c, n, o, i, j: c[n, o, i, j] * tvm.tir.const(
        2.0, "float32") + tvm.tir.Cast("float32", o))
    got = _call(prim, ws, x, w)
    want = _conv_ref(x, w, 1, 1) * 2 + np.arange(6).reshape(1, 6, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    if FUSED:
        names = {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}
        assert "conv_grid" not in names


@pytest.mark.skipif(not conv_direct.SPLIT_SHORT_TILE[ISA], reason="SPLIT_SHORT_TILE is off")
@pytest.mark.parametrize("full, rest, rows", [
    # full tiles, rows left, the tile heights by the ISA's mr (6: AVX2, 12: AVX-512; 8: a tile
    # knob)
    (2, 2, {6: {6, 4}, 8: {8, 5}, 12: {12, 7}}), (2, 1, {6: {6, 4, 3}, 8: {8, 5, 4}, 12: {12, 7, 6}}),
    (2, 4, {6: {6, 4}, 8: {8, 4}, 12: {12, 8}}), (6, 2, {6: {6, 4}, 8: {8, 5}, 12: {12, 7}})])
def test_short_last_tile_split(full, rest, rows, direct_conv_only):
    """A last channel tile of one or two rows (of 6, or 8 on AVX-512) is merged with the full
    tile before it and split into two of about equal height: 14 channels as 6 + 4 + 4, not
    6 + 6 + 2 (18 as 8 + 5 + 5); a last tile of 4 rows stays."""
    mr = conv_direct.default_tile()[0]
    o, rows = full * mr + rest, rows[mr]
    shape = (1, 96, 9, 9) if full == 6 else (1, 8, 12, 12)
    lib = _run(shape, o, 3, 1, 1, "bias_relu")
    prim = _conv_prim(lib)
    got = {int(s.buffer.shape[0]) for s in walk_stmts(prim.body)
           if isinstance(s, S.DeclBuffer) and s.buffer.name == "acc"}
    assert got == rows


def _reads_output_back(prim) -> bool:
    out = _out_buffer(prim)
    return any(isinstance(s, S.BufferStore) and any(
        isinstance(e, E.BufferLoad) and e.buffer.data is out.data for e in post_order(s.value))
        for s in walk_stmts(prim.body))


@pytest.mark.skipif(not FUSED, reason="the fused epilogue is off (FUSED_EPILOGUE)")
@pytest.mark.parametrize("shape, o, k, fused", [
    ((1, 8, 20, 22), 16, 3, False),  # pixel panels outer: the residual in a pass of its own
    ((1, 64, 8, 8), 64, 3, True),    # channel tiles outer: each tile reads its rows in order
])
def test_residual_fused_only_with_channel_tiles_outer(shape, o, k, fused, direct_conv_only):
    """With the pixel panels outer, an operand laid out like the output (a residual) would be
    read by each panel's tiles in as many scattered rows as there are channels: the epilogue
    then runs as an in-place pass after the conv; with the channel tiles outer it is fused."""
    from minitvm.schedule.conv_direct import geometry, weights_outer

    lib = _run(shape, o, k, 1, 1, "residual_relu")
    prim = _conv_prim(lib)
    assert _reads_output_back(prim) != fused
    (t,) = [s for s in _conv_stage(shape, o, k)]
    assert weights_outer(geometry(t)) == fused
    # a bias and relu alone are fused either way
    assert not _reads_output_back(_conv_prim(_run(shape, o, k, 1, 1, "bias_relu")))


def _conv_stage(shape, o, k):
    from minitvm.relay.backend import te_compiler

    x, w = relay.var("x", shape=shape), relay.var("w", shape=(o, shape[1], k, k))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w, padding=(k // 2, k // 2)))))
    _, _, outs = te_compiler.build_te(mod["main"])
    return outs
