"""Relax builds of grouped / depthwise conv2d and window pools: LegalizeOps' block nests raise to
the stages Relay's computes make (``raise_patterns`` for the grouped channel index,
``raise_pool`` for the clamped, masked pool windows and the average's division), so they run on
the depthwise, channel-lanes and pool schedules. Numerics against numpy on the Relax VM, with a
static and a symbolic batch, and which schedule the kernel got."""

import numpy as np
import pytest
from schedule_isa import force_isa

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.codegen.build import build
from minitvm.relax.pipeline import get_pipeline
from minitvm.schedule import conv_winograd, optimize_prim_func, pool
from minitvm.schedule.raise_blocks import analyze_nest, segments, unwrap_root
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


# ---------------------------------------------------------------------------------- helpers
def _build(make_body, shape, symbolic=False):
    """A Relax module ``main(x) = make_body(bb, x)`` (leading dim ``n`` when ``symbolic``)."""
    dims = (tir.Var("n", "int64"), *shape[1:]) if symbolic else shape
    x = relax.Var("x", relax.TensorStructInfo(dims, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(make_body(bb, x))
        bb.emit_func_output(out)
    return bb.get()


def _run(mod, arrays):
    ex = relax.build(mod, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    return ex, [vm["main"](tvm.nd.array(a)).numpy() for a in arrays]


def _names(func) -> set:
    """The names of the buffers ``func`` allocates or declares."""
    out = set()
    for s in walk_stmts(func.body):
        if isinstance(s, S.DeclBuffer):
            out.add(s.buffer.name)
        elif isinstance(s, S.Allocate):
            out.add(s.buffer_var.name)
    return out


def _has_blocks(func) -> bool:
    return any(isinstance(s, S.BlockRealize) and s.block.iter_vars
               for s in walk_stmts(func.body))


def _kernel(ex, word):
    (rec, _), = [v for k, v in ex.kernels.items() if word in k]
    return rec.prim_func


def _inputs(shape, rng, batches):
    return [rng.standard_normal((b, *shape[1:])).astype("float32") for b in batches]


def _batches(shape, symbolic):
    """The batches run: the static one, or two sizes of a symbolic one."""
    return (1, 3) if symbolic else (shape[0],)


# ---------------------------------------------------------------------------------- convs
def _conv_ref(x, w, stride, pad, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    og = o // groups
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), "float64")
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for ky in range(kh):
            for kx in range(kw):
                patch = xs[:, :, ky:ky + stride * (oh - 1) + 1:stride,
                           kx:kx + stride * (ow - 1) + 1:stride]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, ky, kx])
    return out


def _epilogue(bb, y, kind):
    if kind == "relu":
        return relax.op.nn.relu(y)
    # hardswish as the ONNX importer writes it: y * clip(y + 3, 0, 6) / 6
    t = bb.emit(relax.op.clip(relax.op.add(y, relax.const(np.float32(3))), 0, 6))
    return relax.op.multiply(y, relax.op.divide(t, relax.const(np.float32(6))))


def _epilogue_ref(y, kind):
    return np.maximum(y, 0) if kind == "relu" else y * np.clip(y + 3, 0, 6) / 6


def _check_conv(rng, c, o, hw, k, stride, groups, epi, symbolic, marker):
    w = (rng.standard_normal((o, c // groups, k, k)) * 0.3).astype("float32")
    b = rng.standard_normal((1, o, 1, 1)).astype("float32")

    def body(bb, x):
        y = bb.emit(relax.op.nn.conv2d(x, relax.const(w), strides=stride, padding=k // 2,
                                       groups=groups))
        y = bb.emit(relax.op.add(y, relax.const(b)))
        return _epilogue(bb, y, epi)

    shape = (2, c, hw, hw)
    xs = _inputs(shape, rng, _batches(shape, symbolic))
    ex, outs = _run(_build(body, shape, symbolic), xs)
    for x, got in zip(xs, outs):
        want = _epilogue_ref(_conv_ref(x, w, stride, k // 2, groups) + b, epi)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    fast = _kernel(ex, "conv2d")
    assert not _has_blocks(fast)
    assert marker in _names(fast), sorted(_names(fast))


@pytest.mark.parametrize("k, stride", [(3, 1), (3, 2), (5, 1), (5, 2)])
@pytest.mark.parametrize("epi", ["relu", "hswish"])
def test_depthwise_runs_on_the_depthwise_schedule(rng, k, stride, epi):
    _check_conv(rng, 24, 24, 14, k, stride, 24, epi, False, "dw_xph")


@pytest.mark.parametrize("k, stride, epi", [(3, 2, "relu"), (5, 1, "hswish")])
def test_depthwise_symbolic_batch(rng, k, stride, epi):
    _check_conv(rng, 16, 16, 12, k, stride, 16, epi, True, "dw_xph")


def test_depthwise_7x7_plane_with_hardswish(rng):
    # MobileNetV3-small's late 5x5 depthwise layers: a 7x7 plane (the grid mode)
    _check_conv(rng, 48, 48, 7, 5, 1, 48, "hswish", False, "dw_xph")


def test_depthwise_channel_multiplier(rng):
    # two output channels per input channel: the index is ``ff // 2 * 1 + rc``
    _check_conv(rng, 8, 16, 10, 3, 1, 8, "relu", False, "dw_xph")


@pytest.mark.parametrize("isa, winograd, marker", [
    ("avx512", True, "cl_acc"),   # AVX-512: Winograd only past its gain; the lanes schedule
    ("avx2", True, "wg_x"),       # AVX2: every 3x3 stride-1 conv Winograd takes (MIN_GAIN)
    ("avx2", False, "cl_acc")])   # AVX2 with Winograd off: the lanes schedule, AVX2's tiles
@pytest.mark.parametrize("symbolic", [False, True])
def test_grouped_conv_on_channel_lanes(rng, monkeypatch, symbolic, isa, winograd, marker):
    # 4 groups of 16 channels, 3x3: 144 taps per output channel, the prepacked lanes schedule
    # or Winograd's, made as on each vector ISA (``schedule_isa``; the code is the host's)
    force_isa(monkeypatch, isa)
    monkeypatch.setattr(conv_winograd, "DEFAULT_ON", winograd)
    _check_conv(rng, 64, 64, 10, 3, 1, 4, "relu", symbolic, marker)


def test_grouped_conv_few_taps_on_the_depthwise_schedule(rng):
    # 8 groups of 4 channels: 36 taps per output channel
    _check_conv(rng, 32, 32, 9, 3, 2, 8, "relu", False, "dw_xph")


def test_grouped_conv_tag(rng):
    """The raised conv stage carries the groups, its operands the unpadded input and weight."""
    w = rng.standard_normal((32, 4, 3, 3)).astype("float32")
    mod = _build(lambda bb, x: relax.op.nn.conv2d(x, relax.const(w), padding=1, groups=8),
                 (1, 32, 9, 9))
    stage = _raised_output(get_pipeline("default_build")(mod), "conv2d")
    a = stage.op.attrs
    assert stage.op.tag == "conv2d_nchw"
    assert (a["groups"], a["strides"], a["padding"]) == (8, (1, 1), (1, 1, 1, 1))
    x, wt = a["operands"]
    assert [int(d) for d in x.shape] == [1, 32, 9, 9]
    assert [int(d) for d in wt.shape] == [32, 4, 3, 3]


# ---------------------------------------------------------------------------------- pools
def _pool_ref(x, kind, k, s, p, d, include, out_w, nd):
    """Pooling over the ``nd`` trailing axes to ``out_w`` outputs each (padding ``p`` both
    sides; ceil mode's overhang past the padding is never counted)."""
    def axis_taps(o, n):
        pos = o * s + np.arange(k) * d - p
        inside = (pos >= 0) & (pos < n)
        counted = (pos >= -p) & (pos < n + p) if include else inside
        return pos[inside], max(int(counted.sum()), 1)

    lead = x.shape[:-nd]
    out = np.zeros((*lead, *[out_w] * nd), "float64")
    sizes = x.shape[-nd:]
    for idx in np.ndindex(*[out_w] * nd):
        taps = [axis_taps(o, n) for o, n in zip(idx, sizes)]
        win = x[(..., *np.ix_(*[t[0] for t in taps]))] if nd == 2 else x[..., taps[0][0]]
        flat = win.reshape(*lead, -1)
        if kind == "max":
            out[(..., *idx)] = flat.max(axis=-1)
        else:
            out[(..., *idx)] = flat.sum(axis=-1) / np.prod([t[1] for t in taps])
    return out


def _pool_call(x, kind, nd, k, s, p, d, ceil, include):
    ops = {(1, "max"): relax.op.nn.max_pool1d, (1, "avg"): relax.op.nn.avg_pool1d,
           (2, "max"): relax.op.nn.max_pool2d, (2, "avg"): relax.op.nn.avg_pool2d}
    return ops[nd, kind](x, pool_size=k, strides=s, padding=p, dilation=d, ceil_mode=ceil,
                         count_include_pad=include)


def _check_pool(rng, kind, k, s, p, d=1, ceil=False, include=False, nd=2, symbolic=False,
                hw=13, c=6):
    shape = (2, c, hw, hw)[:2 + nd]
    xs = _inputs(shape, rng, _batches(shape, symbolic))
    mod = _build(lambda bb, x: _pool_call(x, kind, nd, k, s, p, d, ceil, include), shape,
                 symbolic)
    ex, outs = _run(mod, xs)
    for x, got in zip(xs, outs):
        want = _pool_ref(x.astype("float64"), kind, k, s, p, d, include, got.shape[-1], nd)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    fast = _kernel(ex, "pool")
    assert not _has_blocks(fast)
    # the direct form's row temporary (``pool_col``, strided windows), or its whole-vector
    # windows, or the row form's ``pool_vrow``: never the generic scalar reduction
    assert {"pool_col", "pool_vrow"} & _names(fast) or any(
        isinstance(st, S.For) and st.kind == S.ForKind.VECTORIZED for st in walk_stmts(fast.body))
    return mod


@pytest.mark.parametrize("k, s, p, d, ceil", [
    (3, 2, 1, 1, False),  # ResNet's stem pool
    (2, 2, 0, 1, False),
    (3, 1, 1, 1, False),
    (3, 2, 0, 1, True),  # ceil mode: the last window hangs over the input
    (3, 1, 2, 2, False),  # dilated
])
def test_max_pool(rng, k, s, p, d, ceil):
    _check_pool(rng, "max", k, s, p, d, ceil)


@pytest.mark.parametrize("k, s, p, ceil, include", [
    (3, 1, 1, False, False),
    (3, 1, 1, False, True),
    (3, 2, 1, True, True),
    (3, 2, 1, True, False),
    (2, 2, 0, False, False),
])
def test_avg_pool(rng, k, s, p, ceil, include):
    _check_pool(rng, "avg", k, s, p, 1, ceil, include)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_symbolic_batch(rng, kind):
    _check_pool(rng, kind, 3, 2, 1, include=kind == "avg", symbolic=True)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_1d(rng, kind):
    _check_pool(rng, kind, 3, 2, 1, nd=1, hw=20)


def test_max_pool_of_negative_inputs(rng):
    # the padding is the lowest finite value, not 0: an all-negative window keeps its maximum
    x = -np.abs(rng.standard_normal((1, 3, 8, 8))).astype("float32") - 1
    mod = _build(lambda bb, v: relax.op.nn.max_pool2d(v, pool_size=3, strides=2, padding=1),
                 x.shape)
    _, (got,) = _run(mod, [x])
    np.testing.assert_allclose(got, _pool_ref(x, "max", 3, 2, 1, 1, False, 4, 2), rtol=1e-6)


def _raised_output(mod, word):
    """The raised TE stage writing the output of ``mod``'s PrimFunc named with ``word``."""
    (func,) = [f for gv, f in mod.functions.items()
               if isinstance(f, tir.PrimFunc) and word in gv.name_hint]
    _, stmts = unwrap_root(func)
    nests = [analyze_nest(st) for st in stmts]
    groups = segments(nests, {id(b) for b in func.buffer_map.values()})
    assert all(g.raised for g in groups)
    return groups[-1].outputs[-1][0]


@pytest.mark.parametrize("kind, include, ceil, want_kind", [
    ("max", False, False, "max"), ("avg", False, False, "avg"), ("avg", True, True, "avg")])
def test_pool_tag(kind, include, ceil, want_kind):
    """The raised pool is one stage with Relay's pool attrs (an average's division folded in,
    count_include_pad read from the divisor), which ``pool.supported`` takes."""
    mod = _build(lambda bb, x: _pool_call(x, kind, 2, 3, 2, 1, 1, ceil, include),
                 (1, 4, 12, 12))
    stage = _raised_output(get_pipeline("default_build")(mod), "pool")
    a = stage.op.attrs
    assert stage.op.tag == pool.POOL_TAG and a["kind"] == want_kind
    assert (a["pool_size"], a["strides"], a["dilation"]) == ((3, 3), (2, 2), (1, 1))
    assert a["padding"][:2] == (1, 1) and a["count_include_pad"] == include
    assert [int(v) for v in a["operands"][0].shape] == [1, 4, 12, 12]
    assert pool.supported(stage)


def test_nhwc_pool_is_left_to_the_generic_reduction(rng):
    """A pool whose window is not on the trailing axes gets no pool tag (and stays right)."""
    x = rng.standard_normal((1, 9, 9, 4)).astype("float32")
    mod = _build(lambda bb, v: relax.op.nn.max_pool2d(v, pool_size=3, strides=2, padding=1,
                                                      layout="NHWC"), x.shape)
    stage = _raised_output(get_pipeline("default_build")(mod), "pool")
    assert stage.op.tag != pool.POOL_TAG
    _, (got,) = _run(mod, [x])
    want = _pool_ref(x.transpose(0, 3, 1, 2), "max", 3, 2, 1, 1, False, 5, 2)
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1), rtol=1e-6)


def _window_max(masked: bool):
    """A 3x3 stride-1 max over clamped indices of an 8x8 plane, masked by a Select or not."""
    x = te.placeholder((1, 2, 8, 8), name="x")
    ry, rx = te.reduce_axis((0, 3), name="ry"), te.reduce_axis((0, 3), name="rx")

    def body(n, c, i, j):
        iy, ix = i + ry - 1, j + rx - 1
        v = x[n, c, tir.min(tir.max(iy, 0), 7), tir.min(tir.max(ix, 0), 7)]
        if masked:
            inside = tir.all(iy >= 0, iy < 8, ix >= 0, ix < 8)
            v = tir.Select(inside, v, tir.min_value("float32"))
        return te.max(v, axis=[ry, rx])

    return te.create_prim_func([x, te.compute((1, 2, 8, 8), body, name="window")])


@pytest.mark.parametrize("masked", [True, False])
def test_only_a_masked_window_is_a_pool(rng, masked):
    """Clamped indices without the mask repeat the edge (no pool's padding): left untagged,
    and both compute what the blocks say."""
    func = _window_max(masked)
    _, stmts = unwrap_root(func)
    (nest,) = [analyze_nest(st) for st in stmts]
    (seg,) = segments([nest], {id(b) for b in func.buffer_map.values()})
    assert (seg.outputs[0][0].op.tag == pool.POOL_TAG) == masked
    ref, fast = build(func)["main"], build(optimize_prim_func(func))["main"]
    x = rng.standard_normal((1, 2, 8, 8)).astype("float32")
    want, got = np.zeros((1, 2, 8, 8), "float32"), np.zeros((1, 2, 8, 8), "float32")
    ref(x, want)
    fast(x, got)
    np.testing.assert_array_equal(got, want)
