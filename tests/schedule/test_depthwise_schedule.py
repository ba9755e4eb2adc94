"""The depthwise conv2d schedule (``minitvm.schedule.depthwise``): which stages it takes, the
loop nest it writes (phased copy, no bounds checks, epilogue fused into the conv's store), and
its numbers against a numpy reference on odd shapes, strides, paddings and epilogues."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import codegen, relay
from minitvm.contrib import graph_executor
from minitvm.relay.backend import te_compiler
from minitvm.schedule import LoweringOptions, depthwise, lower_te, select_rule
from minitvm.te.create_prim_func import topo_order
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, post_order_visit


def _te(params, body):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, body)))
    return te_compiler.build_te(mod["main"])


def _conv(shape, k=3, stride=1, pad=1, dilation=1, mult=1, epilogue="none"):
    """A fused depthwise conv function: (TE inputs, outputs, relay params)."""
    c = shape[1]
    x = relay.var("x", shape=shape)
    w = relay.var("w", shape=(c * mult, 1, k, k))
    y = relay.nn.conv2d(x, w, strides=(stride, stride), padding=(pad, pad),
                        dilation=(dilation, dilation), groups=c)
    params = [x, w]
    if epilogue != "none":
        b = relay.var("b", shape=(1, c * mult, 1, 1))
        params.append(b)
        y = y + b
        if epilogue == "relu6":
            y = relay.clip(y, 0.0, 6.0)
        elif epilogue == "hardswish":  # reads the conv twice
            y = y * relay.clip(y + relay.const(3.0), 0.0, 6.0) / relay.const(6.0)
        elif epilogue == "silu":  # reads it twice, through a transcendental function
            y = y * relay.sigmoid(y)
    ins, _, outs = _te(params, y)
    return ins, outs, params


def _reference(x, w, stride, pad, dilation, mult, bias=None, epilogue="none"):
    n, c, h, wd = x.shape
    k = w.shape[2]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    xp = np.repeat(xp, mult, axis=1)  # output channel o reads input channel o // mult
    span = dilation * (k - 1) + 1
    oh = (h + 2 * pad - span) // stride + 1
    ow = (wd + 2 * pad - span) // stride + 1
    out = np.zeros((n, c * mult, oh, ow))
    for ky in range(k):
        for kx in range(k):
            y0, x0 = ky * dilation, kx * dilation
            win = xp[:, :, y0:y0 + stride * (oh - 1) + 1:stride, x0:x0 + stride * (ow - 1) + 1:stride]
            out += win * w[None, :, 0, ky, kx, None, None]
    if bias is not None:
        out = out + bias
        if epilogue == "relu6":
            out = np.clip(out, 0, 6)
        elif epilogue == "hardswish":
            out = out * np.clip(out + 3, 0, 6) / 6
        elif epilogue == "silu":
            out = out / (1 + np.exp(-out))
    return out


def _nodes(root) -> list:
    """Every statement and expression under ``root``, children first."""
    out = []
    post_order_visit(root, out.append)
    return out


def _run(shape, rng, **kw):
    ins, outs, _ = _conv(shape, **kw)
    prim, ws = lower_te(ins, outs, "f")
    f = codegen.build(prim)["f"]
    c, mult, k = shape[1], kw.get("mult", 1), kw.get("k", 3)
    x = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal((c * mult, 1, k, k), dtype=np.float32)
    args = [x, w]
    bias = None
    if kw.get("epilogue", "none") != "none":
        bias = rng.standard_normal((1, c * mult, 1, 1), dtype=np.float32)
        args.append(bias)
    want = _reference(x, w, kw.get("stride", 1), kw.get("pad", 1), kw.get("dilation", 1), mult,
                      bias, kw.get("epilogue", "none"))
    out = np.full(want.shape, np.nan, np.float32)
    extra = [np.zeros(max(ws, 64), np.uint8)] if ws else []
    f(*args, out, *extra)
    return out, want, prim


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
    return [s for s in _nodes(prim.body) if isinstance(s, S.BufferStore)
            and s.buffer.name == name]


def _allocs(prim):
    return sorted(s.buffer_var.name for s in _nodes(prim.body) if isinstance(s, S.Allocate))


def test_row_mode_fuses_the_epilogue_into_the_store(rng):
    # OW = 16 (two AVX2 vectors, one AVX-512 vector): every output vector is stored once, as
    # clip(taps + bias), and the conv has no buffer of its own
    _, _, prim = _run((1, 8, 16, 16), rng, stride=1, pad=1, epilogue="relu6")
    assert _allocs(prim) == ["dw_xph"]
    stores = _stores(prim, "out0")
    assert stores, "the kernel writes the output"
    for s in stores:
        kinds = {type(n) for n in post_order(s.value)}
        assert E.Min in kinds and E.Max in kinds  # the clip
        loads = {n.buffer.name for n in post_order(s.value) if isinstance(n, E.BufferLoad)}
        assert loads == {"dw_xph", "in2"}  # taps and bias: no re-read of out0 (the weights
        # are let-bound scalars, loaded once before the loops)
    lets = [s for s in _nodes(prim.body) if isinstance(s, S.LetStmt)]
    assert {n.buffer.name for s in lets for n in post_order(s.value)
            if isinstance(n, E.BufferLoad)} == {"in1"}
    # no bounds checks in the whole kernel: the padding is in the copy
    assert not any(isinstance(n, (E.Select, S.IfThenElse)) for n in _nodes(prim.body))


def test_grid_mode_computes_the_grid_then_the_epilogue(rng):
    # OW = 7: the taps fill a [OH, Wq] grid in whole vectors; each output element is then
    # written once through the epilogue
    _, _, prim = _run((1, 16, 7, 7), rng, stride=1, pad=1, epilogue="relu6")
    assert _allocs(prim) == ["dw_grid", "dw_xph"]
    for s in _stores(prim, "out0"):
        loads = {n.buffer.name for n in post_order(s.value) if isinstance(n, E.BufferLoad)}
        assert loads == {"dw_grid", "in2"}
    grid_stores = _stores(prim, "dw_grid")
    assert grid_stores and all(
        sum(isinstance(n, E.BufferLoad) and n.buffer.name == "dw_xph"
            for n in post_order(s.value)) == 9 for s in grid_stores)


@pytest.mark.parametrize("shape", [(1, 8, 16, 16), (1, 8, 14, 14), (1, 8, 7, 7)])
def test_epilogue_reading_the_conv_twice_shares_one_value(rng, shape):
    # hardswish reads the conv twice: both reads are the same expression object (emitted
    # once), each output position is stored once, and rows of 8 or more take the row mode
    out, want, prim = _run(shape, rng, stride=1, pad=1, epilogue="hardswish")
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    for s in _stores(prim, "out0"):
        assert not any(isinstance(n, E.BufferLoad) and n.buffer.name == "out0"
                       for n in post_order(s.value))
        taps = [n for n in post_order(s.value)  # (post_order visits a shared node once)
                if isinstance(n, E.BufferLoad) and n.buffer.name in ("dw_xph", "dw_grid")]
        assert len(taps) == (1 if shape[3] < 8 else 9)
    assert ("dw_grid" in _allocs(prim)) == (shape[3] < 8)


@pytest.mark.parametrize("shape,k,pass_buffer", [
    ((1, 8, 14, 14), 5, "dw_conv"),  # 5x5, short rows: the epilogue in a pass of its own
    ((2, 6, 28, 28), 5, "dw_conv"),
    ((1, 8, 14, 14), 3, None),  # 3x3: fused
    ((1, 8, 40, 40), 5, None),  # rows of 40: fused
    ((1, 8, 7, 7), 5, "dw_dense"),  # grid mode: over the packed plane, whole vectors
    ((2, 5, 3, 3), 3, "dw_dense"),  # a plane of 9: two overlapping 8-lane vectors
])
def test_transcendental_epilogue_pass(rng, shape, k, pass_buffer):
    out, want, prim = _run(shape, rng, k=k, pad=k // 2, epilogue="silu")
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
    allocs = _allocs(prim)
    assert ("dw_conv" in allocs) == (pass_buffer == "dw_conv")
    assert ("dw_dense" in allocs) == (pass_buffer == "dw_dense")
    if pass_buffer:  # the taps' pass stores the sums; the epilogue pass reads them once each
        assert all(not any(isinstance(n, E.BufferLoad) and n.buffer.name == "dw_xph"
                           for n in post_order(st.value)) for st in _stores(prim, "out0_flat")
                   + _stores(prim, "out0"))


def test_grid_mode_cheap_or_per_pixel_epilogue_stays_row_by_row(rng):
    # hardswish has no transcendental function: the crop applies it row by row
    _, _, prim = _run((1, 8, 7, 7), rng, epilogue="hardswish")
    assert "dw_dense" not in _allocs(prim)
    # a residual read per pixel keeps the row-by-row crop too
    x, w = relay.var("x", shape=(1, 8, 7, 7)), relay.var("w", shape=(8, 1, 3, 3))
    r = relay.var("r", shape=(1, 8, 7, 7))
    y = relay.nn.conv2d(x, w, padding=(1, 1), groups=8)
    ins, _, outs = _te([x, w, r], relay.sigmoid(y) + r)
    prim, _ = lower_te(ins, outs, "f")
    assert "dw_dense" not in _allocs(prim) and "dw_grid" in _allocs(prim)
    f = codegen.build(prim)["f"]
    xs, ws, rs = (rng.standard_normal(s, dtype=np.float32) for s in
                  [(1, 8, 7, 7), (8, 1, 3, 3), (1, 8, 7, 7)])
    out = np.empty((1, 8, 7, 7), np.float32)
    f(xs, ws, rs, out)
    want = _reference(xs, ws, 1, 1, 1, 1)
    np.testing.assert_allclose(out, 1 / (1 + np.exp(-want)) + rs, rtol=2e-5, atol=2e-5)


def test_conv_without_epilogue_writes_the_output_directly(rng):
    _, _, prim = _run((1, 8, 9, 9), rng, stride=2, pad=1)
    assert _allocs(prim) == ["dw_grid", "dw_xph"]  # no temporary for the conv stage


def test_strided_copy_is_vectorized_by_column_phase(rng):
    # stride 2 in width: each column phase of a row is one vectorized copy whose input load
    # has stride 2 (which the code generator makes whole loads and shuffles, no per-lane loads)
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


@pytest.mark.parametrize("isa,width,lanes", [("avx512", 14, 8), ("avx512", 28, 16),
                                             ("avx2", 14, 8), ("avx512", 7, None)])
def test_rows_not_a_whole_number_of_vectors_end_with_an_overlapping_one(
        rng, monkeypatch, isa, width, lanes):
    # 14x14 planes: each row two 8-lane vectors (at 0 and 6) stored straight through the
    # epilogue, no grid; 7x7 planes keep the grid
    monkeypatch.setattr(depthwise, "vector_isa", lambda: isa)
    out, want, prim = _run((1, 8, width, width), rng, stride=1, pad=1, epilogue="relu6")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    if lanes is None:
        assert "dw_grid" in _allocs(prim)
        return
    assert _allocs(prim) == ["dw_xph"]
    vec = {s.extent.value for s in _nodes(prim.body) if isinstance(s, S.For) and
           s.kind == S.ForKind.VECTORIZED and isinstance(s.body, S.BufferStore) and
           s.body.buffer.name == "out0"}
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
