"""The 1x1 conv2d schedule (``schedule/conv_pointwise.py``, on AVX2 and AVX-512 machines: its
``ENABLED``; switched off, the 1x1 convs go to conv_direct's implicit GEMM): numerics against
numpy for both micro-kernels (pixel vectors, channel vectors) on odd channel counts, odd and
strided planes, batches, symbolic batches (Relax), two threads and every kind of epilogue; the
fallbacks (no kernel fits, weights that are not build-time constants); and the structure of the
lowered kernels (prepacked weights, tile heights, no phased copy, where the epilogue runs)."""

import numpy as np
import pytest
from conv_reference import conv_prim as _conv_prim
from conv_reference import run_graph as _run
from pointwise_cases import build_pointwise as _build

import minitvm as tvm
from minitvm import relax, relay, tir
from minitvm.schedule import conv_pointwise
from minitvm.schedule.common import vector_isa
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts

PW_ON = conv_pointwise.ENABLED[vector_isa()]  # the 1x1 schedule on the host's ISA (both ISAs)
needs_pointwise = pytest.mark.skipif(not PW_ON, reason="the 1x1 schedule is off for this ISA")


def _ref(x, w, strides=(1, 1), pad=0):
    """numpy 1x1 conv (float64): ``out[n, o, i, j] = sum_c w[o, c] x[n, c, i*sh, j*sw]``."""
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    sub = x[:, :, ::strides[0], ::strides[1]].astype("float64")
    return np.einsum("nchw,oc->nohw", sub, w[:, :, 0, 0].astype("float64"))



def _buffer_names(prim) -> set:
    return {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}


def _tile_rows(prim) -> set:
    return {int(s.buffer.shape[0]) for s in walk_stmts(prim.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == "pw_acc"}


CASES = [
    # (N, C, H, W), O, epilogue, strides, the kernel that takes it (``ENABLED``)
    ((1, 7, 4, 8), 13, "bias_clip", (1, 1), "pixels"),        # 13 channels: tiles 6, 6, 1
    ((2, 33, 8, 6), 20, "residual_relu", (1, 1), "pixels"),   # batch 2, residual fused
    ((3, 16, 16, 16), 24, "none", (1, 1), "pixels"),          # batch 3, no epilogue
    ((1, 40, 7, 7), 24, "bias_clip", (1, 1), "channels"),     # 49 pixels, a half panel (8)
    ((2, 13, 5, 7), 32, "residual", (1, 1), "channels"),      # residual read per lane
    ((1, 160, 14, 14), 16, "bias_clip", (1, 1), "channels"),  # pixel tiles outer
    ((2, 24, 14, 14), 40, "residual_relu", (1, 1), "pixels"),  # 196 pixels: last panel overlaps
    ((1, 20, 17, 17), 13, "bias_clip", (1, 1), "pixels"),     # 289 pixels: 15 of them twice
    ((1, 20, 17, 17), 16, "swish", (1, 1), "pixels"),
    ((1, 16, 3, 3), 48, "residual_relu", (1, 1), "channels"),  # 9 pixels: tiles 6 + 3
    ((1, 16, 9, 11), 40, "residual_relu", (2, 2), "channels"),  # strided: a subsampled copy
    ((2, 8, 20, 20), 8, "none", (2, 2), "channels"),
    ((1, 8, 9, 10), 16, "bias_clip", (2, 1), "channels"),
    ((1, 16, 9, 11), 40, "residual_relu", (1, 1), "channels"),  # odd plane (99 pixels)
    ((2, 8, 5, 4), 8, "none", (1, 1), "channels"),            # one half panel, batch 2
    ((2, 128, 7, 7), 64, "residual_relu", (1, 1), "channels"),  # 2 channel blocks of 64
    ((1, 150, 5, 5), 40, "bias_clip", (1, 1), "channels"),    # 3 blocks of 50, a half panel
    ((2, 33, 4, 8), 13, "swish", (1, 1), "pixels"),           # the epilogue reads it twice
    ((1, 33, 4, 8), 16, "reversed", (1, 1), "pixels"),        # another position: a temporary
    ((1, 9, 5, 7), 16, "reversed", (1, 1), "channels"),
    ((1, 7, 5, 7), 13, "bias_clip", (1, 1), None),            # 35 pixels, 13 channels: neither
    # ... but from 64 input channels channel vectors, a tail of 16 lanes for 13
    ((1, 64, 5, 7), 13, "bias_clip", (1, 1), "channels"),
    # many input channels and 256 or more output channels: pixel panels, the last overlapping
    ((1, 144, 14, 14), 256, "residual_relu", (1, 1), "pixels"),
]


@pytest.mark.parametrize("case", CASES)
def test_matches_numpy(case):
    shape, o, epi, strides, mode = case
    lib, feeds, want = _build(shape, o, epi, strides)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=1e-4, atol=1e-4)
    names = _buffer_names(_conv_prim(lib))
    if conv_pointwise.ENABLED[vector_isa()]:
        assert ("pw_acc" in names) == (mode is not None)
        assert "xph" not in names or mode is None  # no phased copy of the input


@pytest.mark.parametrize("shape, o, epi", [((1, 64, 32, 32), 64, "residual_relu"),
                                           ((1, 128, 14, 14), 96, "bias_clip"),
                                           ((1, 128, 14, 14), 256, "residual_relu")])
def test_two_threads_match_numpy(shape, o, epi):
    lib, feeds, want = _build(shape, o, epi, seed=1)
    np.testing.assert_allclose(_run(lib, feeds, threads=2), want, rtol=1e-4, atol=1e-4)
    if conv_pointwise.ENABLED[vector_isa()]:
        prim = _conv_prim(lib)
        assert any(isinstance(s, S.For) and s.kind == S.ForKind.PARALLEL
                   for s in walk_stmts(prim.body))


@pytest.mark.parametrize("shape, o, pad, groups", [((1, 8, 6, 8), 16, 1, 1),
                                                   ((1, 8, 4, 8), 16, 0, 2)])
def test_padded_or_grouped_1x1_takes_other_schedules(shape, o, pad, groups):
    rng = np.random.default_rng(2)
    wv = rng.standard_normal((o, shape[1] // groups, 1, 1)).astype("float32")
    xv = rng.standard_normal(shape).astype("float32")
    x = relay.var("x", shape=shape)
    y = relay.nn.conv2d(x, relay.const(wv), kernel_size=(1, 1), channels=o,
                        padding=(pad, pad), groups=groups)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    got = _run(lib, {"x": xv})
    if groups == 1:
        want = _ref(xv, wv, pad=pad)
    else:
        half = shape[1] // groups
        want = np.concatenate([_ref(xv[:, g * half:(g + 1) * half], wv[g * o // groups:
                               (g + 1) * o // groups]) for g in range(groups)], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert "pw_acc" not in _buffer_names(_conv_prim(lib))


@pytest.mark.parametrize("shape, o, mode", [((1, 12, 7, 7), 32, "channels"),
                                            ((2, 12, 4, 8), 20, "pixels")])
def test_weight_not_a_constant(shape, o, mode):
    """A weight given at run time: the pixel-vector kernel reads it in place; the channel-vector
    kernel needs it transposed at build time, so the implicit GEMM of conv_direct runs."""
    lib, feeds, want = _build(shape, o, "bias_clip", const_weight=False, seed=3)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=1e-4, atol=1e-4)
    if conv_pointwise.ENABLED[vector_isa()]:
        assert ("pw_acc" in _buffer_names(_conv_prim(lib))) == (mode == "pixels")


# ------------------------------------------------------------------------------ structure
def _weight_param(prim):
    return prim.buffer_map[prim.params[1]]


def _out_param(prim):
    (out,) = [b for b in prim.buffer_map.values() if b.name == "out0"]
    return out


@needs_pointwise
def test_pixel_kernel_structure():
    """Prepacked weights (one flat array, tile by tile), 6- and 5-channel tiles (20 = 5 x 4:
    no short tile; 7, 7 and 6 with the 8-row tiles of AVX-512's 32-lane panels), the residual
    read as flat vectors in the fused store, int64 reduction."""
    lib, feeds, want = _build((1, 16, 4, 8), 20, "residual_relu")
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=1e-4, atol=1e-4)
    prim = _conv_prim(lib)
    assert [int(d) for d in _weight_param(prim).shape] == [20 * 16]
    assert _tile_rows(prim) == ({7, 6} if conv_pointwise.default_width() > 16 else {5})
    out = _out_param(prim)
    stores = [s.body for s in walk_stmts(prim.body) if isinstance(s, S.For) and
              s.kind == S.ForKind.VECTORIZED and isinstance(s.body, S.BufferStore) and
              s.body.buffer.data is out.data]
    assert stores
    for st in stores:
        loads = [e for e in post_order(st.value) if isinstance(e, E.BufferLoad)]
        assert any(e.buffer.name == "in3_flat" for e in loads)  # the residual, contiguous
        assert not any(isinstance(e, (E.FloorDiv, E.FloorMod)) for e in post_order(st.value))
    # the reduction over the 16 input channels: an int64 loop, REDUCE_UNROLL channels a turn
    u = conv_pointwise.REDUCE_UNROLL
    red = [s for s in walk_stmts(prim.body) if isinstance(s, S.For) and
           s.loop_var.name.startswith("c") and int(s.extent.value) == 16 // u]
    assert red and all(s.loop_var.dtype == "int64" for s in red)
    assert all(isinstance(s.body, S.For) and s.body.kind == S.ForKind.UNROLLED and
               int(s.body.extent.value) == u for s in red)


@needs_pointwise
def test_channel_kernel_structure():
    """Weights transposed into panels of the tile width's channels at build time; 49 pixels as
    ``row_tiles``' tiles; the tile stored through its copy ``pw_res`` one output row at a time (a vector of
    its pixels), the residual read through a flat view along the pixels by that store, the
    only store into the output; nothing reads the output back."""
    lib, feeds, want = _build((1, 24, 7, 7), 40, "residual")
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=1e-4, atol=1e-4)
    prim = _conv_prim(lib)
    g = conv_pointwise.geometry(_conv_stage((1, 24, 7, 7), 40))
    wd = g["width"]
    assert [int(d) for d in _weight_param(prim).shape] == [-(-40 // wd), 24, wd]
    assert _tile_rows(prim) == {r for _, r, _ in conv_pointwise.row_tiles(49, g["rows"])}
    out = _out_param(prim)
    stores = [s for s in walk_stmts(prim.body) if isinstance(s, S.BufferStore) and
              s.buffer.data is out.data]
    assert stores
    for st in stores:
        loads = [e for e in post_order(st.value) if isinstance(e, E.BufferLoad)]
        assert any(e.buffer.name == "pw_res" for e in loads)
        assert any(e.buffer.name == "in3_flat" for e in loads)  # the residual
        assert not any(e.buffer.data is out.data for e in loads)
    rows = [s for s in walk_stmts(prim.body) if isinstance(s, S.For) and
            s.kind == S.ForKind.VECTORIZED and isinstance(s.body, S.BufferStore) and
            s.body.buffer.data is out.data]
    # a tile's pixels, one output row
    assert {int(s.extent.value) for s in rows} == {r for _, r, _ in
                                                   conv_pointwise.row_tiles(49, g["rows"])}


@needs_pointwise
@pytest.mark.parametrize("c, blocks", [(128, 2), (150, 3), (64, None), (131, None)])
def test_channel_blocks(c, blocks):
    """Weight panels outer (more channels than pixels) and more than 64 input channels: every
    pixel tile sums a block of channels (partial sums in ``pw_sums``) before the next block;
    a channel count with no divisor in [32, 64] is summed in one pass."""
    lib, feeds, want = _build((1, c, 5, 5), 48, "bias_clip", seed=8)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=1e-4, atol=1e-4)
    prim = _conv_prim(lib)
    kb = [s for s in walk_stmts(prim.body) if isinstance(s, S.For) and
          s.loop_var.name.startswith("kb")]
    assert ("pw_sums" in _buffer_names(prim)) == (blocks is not None)
    assert {int(s.extent.value) for s in kb} == ({blocks} if blocks else set())


def _conv_stage(shape, o, strides=(1, 1), k=1, pad=0):
    from minitvm.relay.backend import te_compiler

    x, w = relay.var("x", shape=shape), relay.var("w", shape=(o, shape[1], k, k))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w, strides=strides, padding=(pad, pad)))))
    _, _, (conv,) = te_compiler.build_te(mod["main"])
    return conv


def test_geometry_and_support():
    g = conv_pointwise.geometry(_conv_stage((1, 8, 4, 8), 12))
    assert g["mode"] == "pixels" and g["p"] == 32
    g = conv_pointwise.geometry(_conv_stage((2, 8, 7, 7), 24))
    assert g["mode"] == "channels" and g["panels_outer"] is False
    g = conv_pointwise.geometry(_conv_stage((1, 8, 7, 7), 64))
    assert g["panels_outer"] is True
    assert conv_pointwise.geometry(_conv_stage((1, 8, 4, 8), 12, strides=(2, 2))) is None
    # strided, 64 input channels: the subsampled copy, then channel vectors (odd O)
    g = conv_pointwise.geometry(_conv_stage((1, 64, 4, 8), 12, strides=(2, 2)))
    assert g["mode"] == "channels" and (g["sh"], g["sw"], g["p"]) == (2, 2, 8)
    assert conv_pointwise.geometry(_conv_stage((1, 8, 8, 8), 16, k=3, pad=1)) is None
    assert conv_pointwise.geometry(_conv_stage((1, 8, 8, 8), 16, pad=1)) is None
    assert conv_pointwise.supported(_conv_stage((1, 8, 4, 8), 12)) == \
        conv_pointwise.ENABLED[vector_isa()]


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_both_isas_take_the_1x1_schedule(isa, monkeypatch):
    """AVX2 and AVX-512 machines both take the 1x1 schedule (``ENABLED``: measured on a Zen 4
    with AVX-512); with the switch off for the ISA (the schedule AVX-512 had before), or
    generated convs off, the conv goes to conv_direct's implicit GEMM (the "gemm" rule)."""
    from minitvm.schedule.lower import select_rule
    from minitvm.schedule.options import LoweringOptions

    t = _conv_stage((1, 8, 4, 8), 12)
    monkeypatch.setattr(conv_pointwise, "vector_isa", lambda: isa)
    assert conv_pointwise.ENABLED[isa] and conv_pointwise.supported(t)
    assert select_rule(t, LoweringOptions()).name == "conv 1x1"
    assert not conv_pointwise.supported(t, LoweringOptions(generated_conv=False))
    monkeypatch.setitem(conv_pointwise.ENABLED, isa, False)
    assert not conv_pointwise.supported(t)
    assert select_rule(t, LoweringOptions()).name == "gemm"


def test_row_tiles_cover_extent():
    for extent in range(1, 300):
        groups = conv_pointwise.row_tiles(extent)
        at = 0
        for start, rows, count in groups:
            assert start == at and rows >= 1 and count >= 1
            at += rows * count
        assert at == extent
        if extent >= 20:  # 6s and 5s only: every tile has 10 or 12 accumulators
            assert {rows for _, rows, _ in groups} <= {5, 6}
    assert conv_pointwise.row_tiles(49) == [(0, 6, 4), (24, 5, 5)]
    assert conv_pointwise.row_tiles(4) == [(0, 4, 1)]


def test_packed_weight_layouts():
    rng = np.random.default_rng(6)
    w = rng.standard_normal((13, 7, 1, 1)).astype("float32")
    t = _conv_stage((1, 7, 4, 8), 13)
    shape, fn = conv_pointwise.packed_weight(t)
    packed = fn(w)
    assert shape == (13 * 7,) and packed.shape == shape
    rows_most = conv_pointwise.geometry(t)["rows"]
    for start, rows, count in conv_pointwise.row_tiles(13, rows_most):
        for k in range(count):
            o0 = start + k * rows
            for c in range(7):
                for ii in range(rows):
                    assert packed[o0 * 7 + c * rows + ii] == w[o0 + ii, c, 0, 0]
    w = rng.standard_normal((24, 5, 1, 1)).astype("float32")
    shape, fn = conv_pointwise.packed_weight(_conv_stage((1, 5, 7, 7), 24))
    packed = fn(w)
    wd = conv_pointwise.default_width()
    assert shape == (-(-24 // wd), 5, wd) and packed.shape == shape
    for j in range(shape[0]):  # panel j: output channels j*wd .., zero padded past 24
        lanes = min(wd, 24 - j * wd)
        np.testing.assert_array_equal(packed[j, :, :lanes], w[j * wd:j * wd + lanes, :, 0, 0].T)
        assert not packed[j, :, lanes:].any()
    import pickle

    assert np.array_equal(pickle.loads(pickle.dumps(fn))(w), packed)  # (the kernel cache)
    with pytest.raises(ValueError, match="not a 1x1 conv"):
        conv_pointwise.packed_weight(_conv_stage((1, 8, 8, 8), 16, k=3, pad=1))


# ------------------------------------------------------------------------------ Relax
@pytest.mark.parametrize("c, h, w, o", [(12, 4, 8, 20),   # pixel vectors, symbolic batch
                                        (12, 7, 7, 24),   # channel vectors
                                        (64, 5, 5, 37)])  # ... with a tail of 5 (8 lanes)
def test_relax_symbolic_batch_matches_numpy(c, h, w, o):
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, c, h, w], "float32"))
    rng = np.random.default_rng(7)
    wt = rng.standard_normal((o, c, 1, 1)).astype("float32")
    bias = rng.standard_normal((1, o, 1, 1)).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, relax.const(wt)))
            gv = bb.emit_output(bb.emit(relax.op.nn.relu(relax.op.add(y, relax.const(bias)))))
        bb.emit_func_output(gv)
    ex = relax.build(bb.get(), "llvm")
    (rec, _), = [v for k, v in ex.kernels.items() if "conv2d" in k]
    if conv_pointwise.ENABLED[vector_isa()]:
        # the symbolic batch is a loop over images (schedule/batch_loop.py), each image's
        # kernel static: conv_pointwise takes both, its weight prepacked at build time
        assert "pw_acc" in rec.prim_func.script()
    vm = relax.VirtualMachine(ex, tvm.cpu())
    for batch in (1, 3, 2):
        a = rng.standard_normal((batch, c, h, w)).astype("float32")
        want = np.maximum(_ref(a, wt) + bias, 0)
        np.testing.assert_allclose(vm["main"](a).numpy(), want, rtol=1e-4, atol=1e-4)


@needs_pointwise
def test_overlapping_last_panel():
    # 16-wide tiles at 14x14 = 196 pixels: 12 panels of 16, then one ending at pixel 195
    # (computing 180..191 again), with few input channels or many output channels; many input
    # channels and few output channels keep the channel vectors, and so does 7x7 (15 of 64
    # pixels would be computed twice)
    def mode(shape, o):
        return conv_pointwise.geometry(_conv_stage(shape, o), {"pw_width": 16})["mode"]

    assert mode((1, 96, 14, 14), 64) == "pixels"
    assert mode((1, 256, 14, 14), 64) == "channels"
    assert mode((1, 256, 14, 14), 1024) == "pixels"
    assert mode((1, 32, 7, 7), 64) == "channels"
    # 23x23 = 529 pixels overlap at either width (15 pixels twice)
    lib, feeds, want = _build((1, 96, 23, 23), 64, "residual_relu")
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=1e-4, atol=1e-4)
    bases = [s for s in walk_stmts(_conv_prim(lib).body) if isinstance(s, S.LetStmt)
             and s.var.name.startswith("pw_base")]
    wd = conv_pointwise.default_width()
    assert bases and all(isinstance(s.value, E.Min) and int(s.value.b.value) == 529 - wd
                         for s in bases)
    for shape in ((1, 256, 14, 14), (1, 32, 7, 7)):
        lib, feeds, want = _build(shape, 64, "residual_relu")
        np.testing.assert_allclose(_run(lib, feeds), want, rtol=1e-4, atol=1e-4)
        assert not any(isinstance(s, S.LetStmt) and s.var.name.startswith("pw_base")
                       for s in walk_stmts(_conv_prim(lib).body))
