"""conv2d with the output channels in the vector lanes (``conv_lanes``): Relay convs with
constant weights (on AVX2 and AVX-512, ``conv_lanes.ENABLED``) read them prepacked and match
numpy on odd shapes, padding, strides, dilation, fused epilogues and batches at one and two
threads; everything else, and every conv with the switch off, keeps the implicit GEMM of
``conv_direct``."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_ref, grouped_conv_ref, taking_turns, with_epilogue
from conv_reference import conv_kernel as _conv_kernel

import minitvm as tvm
from minitvm import relax, relay, tir
from minitvm.contrib import graph_executor
from minitvm.runtime import threadpool
from minitvm.schedule import conv_direct, conv_lanes, conv_lanes_emit, depthwise
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

LANES_ON = conv_lanes.ENABLED[vector_isa()]  # conv_lanes on the host's ISA (both ISAs)
needs_lanes = pytest.mark.skipif(not LANES_ON, reason="conv_lanes is off for this ISA (ENABLED)")



pytestmark = pytest.mark.usefixtures("no_winograd")  # (conftest)

_build = build_conv
_epilogue = with_epilogue


def _uses_lanes(kernel) -> bool:
    return any(isinstance(s, S.DeclBuffer) and s.buffer.name == "cl_acc"
               for s in walk_stmts(kernel.prim_func.body))


LANES_CASES = [  # shape, output channels, filter, strides, padding, dilation, epilogue
    ((1, 5, 9, 11), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "bias_relu"),   # odd everything
    ((1, 64, 7, 7), 64, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "residual_relu"),  # 49 = 6s + 5s
    ((2, 7, 13, 10), 32, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), "residual_relu"),  # stride 2
    ((1, 3, 23, 19), 48, (5, 3), (2, 1), (2, 0, 1, 2), (1, 2), "none"),  # asymmetric, dilated
    ((1, 8, 17, 17), 16, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), "bias_relu"),  # dilation 2
    ((1, 16, 14, 14), 32, (1, 3), (1, 1), (0, 1, 0, 1), (1, 1), "bias_relu"),  # a 1x3 filter
    ((2, 6, 30, 30), 16, (3, 3), (3, 3), (0, 0, 0, 0), (1, 1), "none"),  # stride 3, no padding
    ((3, 4, 8, 8), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "bias_relu"),  # a batch, per image
    ((5, 32, 15, 15), 32, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "residual_relu"),  # by image
    # channel blocks: 64 channels in 4 blocks over 2 bands of pixel tiles (the second one
    # ragged), the tiles cut in 4 parts for the pool (one channel tile only)
    ((1, 64, 20, 20), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "residual_relu"),
    ((2, 40, 11, 13), 32, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), "bias_relu"),  # 5x5: 4 blocks
]


# (the loop orders take turns over the cases; the two whose input channels run in blocks, which
# the orders nest differently, run in both. Case 1 is left out: in its turn, "bands" at the
# default knobs, it builds on either ISA the very kernel test_conv_lanes_width's
# bands-64-case0 builds (the same conv, 64 wide on AVX-512 or 16 on AVX2, the same input path))
@pytest.mark.parametrize("case, order", [
    p for p in taking_turns(LANES_CASES, conv_lanes.ORDERS, every={9, 10})
    if p.id != "bands-case1"])
def test_lanes_conv_matches_numpy(case, order, restore_threads, force_knobs):
    shape, o, k, strides, pads, dil, epi = case
    force_knobs(lanes_order=order)
    lib, inputs, want = _build(shape, o, k, strides, pads, dil, epi, np.random.default_rng(0))
    kernel = _conv_kernel(lib)
    assert _uses_lanes(kernel) == conv_lanes.ENABLED[vector_isa()]
    for threads in (1, 2):
        threadpool.set_num_threads(threads)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(**inputs)
        np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


@needs_lanes
def test_weight_is_taken_prepacked_and_input_padded_once():
    """The kernel's weight parameter has the packed shape ``[O/16, C, KH, KW, 16]`` and the
    input is copied once into a padded buffer (no phased planes, no pixel grid), or, where
    the tiles read the input itself (``conv_lanes.DIRECT``, ``DIRECT_STRIDED``), not copied
    at all."""
    lib, _, _ = _build((1, 6, 12, 12), 32, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), "bias_relu",
                       np.random.default_rng(1))
    kernel = _conv_kernel(lib)
    prim = kernel.prim_func
    shapes = [tuple(int(d) for d in prim.buffer_map[p].shape) for p in prim.params]
    assert (2, 6, 3, 3, 16) in shapes
    names = {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}
    direct = conv_lanes.direct_default(dict(sh=2, sw=2))  # (a stride-2 conv)
    assert ("xpad" in names) != direct and ("cl_opix" in names) == direct
    assert not names & {"xph", "conv_grid", "acc"}
    assert any(c.shape == (2, 6, 3, 3, 16) for c in kernel.consts) or kernel.input_packs


@pytest.mark.parametrize("shape, o, pads", [
    ((1, 4, 16, 16), 16, (1, 1, 1, 1)),  # OW = 16: a whole number of pixel vectors
])  # (planes of any size run on conv_lanes: test_conv_lanes_small_planes)
def test_other_convs_keep_the_implicit_gemm(shape, o, pads):
    lib, inputs, want = _build(shape, o, (3, 3), (1, 1), pads, (1, 1), "bias_relu",
                               np.random.default_rng(2))
    assert not _uses_lanes(_conv_kernel(lib))
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(**inputs)
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


def test_relax_symbolic_batch_keeps_the_implicit_gemm():
    """Relax passes weights unpacked: a symbolic-batch conv stays on conv_direct and matches
    numpy at several batch sizes."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 5, 14, 14], "float32"))
    rng = np.random.default_rng(3)
    wt = rng.standard_normal((32, 5, 3, 3)).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, relax.const(wt), padding=1))
            gv = bb.emit_output(bb.emit(relax.op.nn.relu(y)))
        bb.emit_func_output(gv)
    ex = relax.build(bb.get(), "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    for batch in (1, 3):
        a = rng.standard_normal((batch, 5, 14, 14)).astype("float32")
        want = np.maximum(conv_ref(a, wt, (1, 1), (1, 1, 1, 1), (1, 1)), 0)
        np.testing.assert_allclose(vm["main"](a).numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("extent", [20, 21, 25, 49, 196, 784, 3136, 401])
def test_pixel_tiles_cover_the_plane_exactly(extent):
    groups = conv_lanes.pixel_tiles(extent)
    covered = [p for first, pixels, count in groups for p in range(first, first + pixels * count)]
    assert covered == list(range(extent))
    assert {pixels for _, pixels, _ in groups} <= {6, 5}


def test_pixel_tiles_reject_tiny_planes():
    with pytest.raises(ValueError, match="not a sum of 6s and 5s"):
        conv_lanes.pixel_tiles(7)


def test_pack_weight_layout():
    w = np.arange(32 * 3 * 2 * 3, dtype="float32").reshape(32, 3, 2, 3)
    p = conv_lanes.PackWeight(32, 3, 2, 3)(w)
    assert p.shape == (2, 3, 2, 3, 16)
    for o in (0, 17, 31):
        np.testing.assert_array_equal(p[o // 16, :, :, :, o % 16], w[o])


def _conv_stage(shape, o, k):
    from minitvm.relay.backend import te_compiler

    x, w = relay.var("x", shape=shape), relay.var("w", shape=(o, shape[1], k, k))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w, padding=(k // 2, k // 2)))))
    _, _, outs = te_compiler.build_te(mod["main"])
    (t,) = outs
    return t


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_both_isas_take_conv_lanes(isa, monkeypatch):
    """AVX2 and AVX-512 machines both take conv_lanes (``ENABLED``: measured on a Zen 4 with
    AVX-512), conv_direct then leaving the weight to be prepacked for it; with the switch off
    for the ISA (the schedule AVX-512 had before) conv_lanes declines every conv and
    conv_direct takes the weight unpacked."""
    from minitvm.schedule import LoweringOptions

    t = _conv_stage((1, 8, 14, 14), 32, 3)
    assert conv_lanes.geometry(t) is not None
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: isa)
    assert conv_lanes.ENABLED[isa] and conv_lanes.supported(t)
    assert conv_direct.packs_weight(t, LoweringOptions()) == (
        not conv_direct.geometry(t)["rows_mode"])
    monkeypatch.setitem(conv_lanes.ENABLED, isa, False)
    assert not conv_lanes.supported(t)
    assert not conv_direct.packs_weight(t, LoweringOptions())


def test_channel_block_sizes():
    """Blocks keep a channel tile's weights near CHANNEL_BLOCK_BYTES (16 KB: 28 channels of a
    3x3 filter) and divide the channel count; few channels take one pass."""
    def g(c, k):
        return dict(c=c, kh=k, kw=k, lanes_cblock=conv_lanes.CHANNEL_BLOCK_BYTES)

    assert conv_lanes.channel_block(g(64, 3)) == 16
    assert conv_lanes.channel_block(g(512, 3)) == 16
    assert conv_lanes.channel_block(g(96, 3)) == 24
    assert conv_lanes.channel_block(g(40, 5)) == 10
    assert conv_lanes.channel_block(g(32, 3)) == 32
    assert conv_lanes.channel_block(g(58, 3)) == 58  # no divisor between 14 and 28


@needs_lanes
def test_blocked_loops_and_parallel_parts(force_knobs):
    """In the "channels" order, 64 channels of a 3x3 conv run in 4 blocks over bands of pixel
    tiles, with their partial sums in a scratch; one channel tile of a big conv is cut in parts
    for the pool."""
    force_knobs(lanes_order="channels")
    lib, _, _ = _build((1, 64, 20, 20), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "bias_relu",
                       np.random.default_rng(4))
    prim = _conv_kernel(lib).prim_func
    loops = {s.loop_var.name.rstrip("0123456789"): s for s in walk_stmts(prim.body)
             if isinstance(s, S.For)}
    assert int(loops["kb"].extent.value) == 4
    assert "band" in loops
    names = {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}
    assert "cl_sums" in names
    par = [s for s in walk_stmts(prim.body) if isinstance(s, S.For)
           and s.kind == S.ForKind.PARALLEL and s.loop_var.name.startswith("o")]
    assert par and int(par[0].extent.value) == conv_lanes.PARALLEL_PARTS


@needs_lanes
@pytest.mark.parametrize("solo", [False, True])
def test_bands_order_loops(force_knobs, monkeypatch, solo):
    """In the "bands" order the parallel loop runs bands of pixel tiles, as many as a multiple of
    ``lanes_parts``; inside one, every channel tile, its blocks of input channels, then the
    band's tiles (on AVX2 65 six-pixel tiles of a 20x20 plane in 4 bands of 17, the last one
    ragged; on AVX-512's 16-lane tiles 26 of 12 pixels in 4 bands of 7); the smaller tiles
    follow per channel tile (over the padded copy: ``lanes_direct`` groups the pixels in
    classes). With ``conv_lanes_emit.SOLO_BANDS`` the split is chosen at run time: on one thread the serial
    split's bands of up to ``_band_tiles`` tiles."""
    monkeypatch.setattr(conv_lanes_emit, "SOLO_BANDS", solo)
    force_knobs(lanes_order="bands", lanes_direct=False)
    lib, _, _ = _build((1, 64, 20, 20), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "bias_relu",
                       np.random.default_rng(4))
    prim = _conv_kernel(lib).prim_func
    loops = [s for s in walk_stmts(prim.body) if isinstance(s, S.For)]
    (_, _, count), *_ = conv_lanes.plane_tiles(dict(lanes_width=16), 400)
    pk = next(s for s in loops if s.loop_var.name.startswith("pk"))
    assert any(isinstance(s, S.IfThenElse) for s in walk_stmts(pk.body))  # 4 x 17 > 65
    names = [s.loop_var.name.rstrip("0123456789") for s in loops]
    if solo:
        lets = {s.var.name.rstrip("0123456789"): s.value for s in walk_stmts(prim.body)
                if isinstance(s, S.LetStmt) and s.var.name.startswith(("nbands", "band"))}
        # (parallel: 4 bands of ceil(count / 4) tiles; alone: fewer, larger bands, as many
        # tiles as one scratch of partial sums holds)
        nb, band = ([int(lets[k].true_value.value), int(lets[k].false_value.value)]
                    for k in ("nbands", "band"))
        assert nb[1] == 4 and band[1] == -(-count // 4)
        assert nb[0] < 4 and band[0] > band[1] and nb[0] == -(-count // band[0])
        par = [s for s in loops if s.kind == S.ForKind.PARALLEL and s.loop_var.name[0] == "b"]
        assert par[0].extent.name.startswith("nbands") and pk.extent.name.startswith("band")
        assert names.index("b") < names.index("ob") < names.index("kb") < names.index("pk")
        return
    par = [s for s in loops if s.kind == S.ForKind.PARALLEL and s.loop_var.name.startswith("o")]
    assert int(par[0].extent.value) == 4  # (4 parts on the pool: conv_lanes.PARALLEL_PARTS)
    assert names.index("o") < names.index("ob") < names.index("kb") < names.index("pk")
    assert int(pk.extent.value) == -(-count // 4)


def test_default_order():
    """Bands of pixel tiles outer when the weights are small enough to be re-read from L2 by
    every band and the plane gives enough bands; the channel tiles outer otherwise."""
    def g(c, o, plane, k=3):
        return dict(c=c, o=o, kh=k, kw=k, grid=plane * plane,
                    parallel=o * c * k * k * plane * plane >= conv_lanes.PARALLEL_MIN_MACS)

    assert conv_lanes.default_knobs(g(64, 64, 56))["lanes_order"] == "bands"
    assert conv_lanes.default_knobs(g(128, 128, 28))["lanes_order"] == "bands"
    assert conv_lanes.default_knobs(g(256, 256, 14))["lanes_order"] == "channels"  # 2.4 MB
    assert conv_lanes.default_knobs(g(512, 512, 7))["lanes_order"] == "channels"
    assert conv_lanes.default_knobs(g(8, 16, 6))["lanes_order"] == "channels"  # one band


@needs_lanes
@pytest.mark.parametrize("shape, o, groups, k, strides, epi", [
    ((1, 64, 12, 12), 64, 4, 3, (1, 1), "bias_relu"),  # 16 channels a group, 16 outputs
    ((2, 64, 11, 9), 64, 2, 3, (2, 2), "residual_relu"),  # 32 a group, 32 outputs, stride 2
    ((1, 32, 10, 10), 32, 2, 5, (1, 1), "none"),  # 16 a group, 5x5
])
def test_grouped_conv_on_channel_lanes(shape, o, groups, k, strides, epi, rng):
    """A grouped conv with many taps per output channel runs here, each 16-channel tile over
    its own group's input channels, with the weight prepacked; with the weight passed at run
    time, depthwise's schedule where it applies (16 channels a group, 144 taps), else here with
    the weight packed per call (``conv_lanes_emit.pack_at_run_time``), the same result."""
    few_taps = (shape[1] // groups) * k * k <= depthwise.MAX_GROUP_TAPS
    pads = (k // 2,) * 4
    wv = rng.standard_normal((o, shape[1] // groups, k, k)).astype("float32")
    xv = rng.standard_normal(shape).astype("float32")
    bias = rng.standard_normal(o).astype("float32")
    want = grouped_conv_ref(xv, wv, groups, strides, pads)
    for constant in (True, False):
        x = relay.var("x", shape=shape)
        w = relay.const(wv) if constant else relay.var("w", shape=wv.shape)
        y = relay.nn.conv2d(x, w, strides=strides, padding=pads[:2], groups=groups,
                            kernel_size=(k, k), channels=o)
        args, inputs = [x], {"x": xv}
        if not constant:
            args.append(w)
            inputs["w"] = wv
        y, expect = _epilogue(y, want, epi, bias, args, inputs, rng)
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(tvm.IRModule.from_expr(relay.Function(args, y)), target="llvm")
        assert _uses_lanes(_conv_kernel(lib)) == (LANES_ON and (constant or not few_taps))
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.set_input(**inputs)
        m.run()
        np.testing.assert_allclose(m.get_output(0).numpy(), expect, rtol=1e-4, atol=1e-4)


def test_grouped_rule_thresholds():
    """Few taps per output channel (ResNeXt's 4 channels a group) stay on depthwise's schedule;
    16 channels a group of 8 outputs run here, each group zero-padded to a 16-lane tile
    (Zen 4, one thread, ms, 128 -> 64 g8 at 14x14 GEMM 0.103 -> here 0.064, ONNX Runtime
    0.134)."""
    def stage(c, o, groups):
        from minitvm.relay.backend import te_compiler

        x, w = relay.var("x", shape=(1, c, 14, 14)), relay.var("w", shape=(o, c // groups, 3, 3))
        mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
            [x, w], relay.nn.conv2d(x, w, padding=(1, 1), groups=groups))))
        return te_compiler.build_te(mod["main"])[2][0]

    assert not conv_lanes.grouped_supported(stage(128, 128, 32))  # 36 taps
    assert conv_lanes.grouped_supported(stage(128, 64, 8)) == LANES_ON  # 8 outputs, padded
    assert conv_lanes.grouped_supported(stage(512, 512, 32)) == LANES_ON  # 144 taps
