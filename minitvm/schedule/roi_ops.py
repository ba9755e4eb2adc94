"""Native kernels of the RoI poolings: ONNX ``RoiAlign`` (tag ``roi_align_onnx``) and NCHW
``ROIPool`` (tag ``roi_pool``: ONNX MaxRoiPool, Relay ``vision.roi_pool``), for Relay's stages
(the rule table) and as PrimFuncs of their own for Relax (``roi_align_prim_func``,
``roi_pool_prim_func``).

A box's sample positions and bilinear weights are the same for every channel: per box and bin
they are scalars computed once, and each sample's four corners are read for all channels at
once into a [bins, C] accumulator, written out as [C, bins]. When the boxes read many corners
per pixel of the maps (``READS_PER_PIXEL``), the maps are first copied channels-last ([N, H,
W, C]) and each corner is unit-stride vectors; a few boxes on a large map instead gather each
corner's channels at the plane stride (the copy would cost more than the boxes). ONNX Runtime
(and the dense-product form this replaces: one-hot interpolation matrices and batched matmuls,
2.1x ONNX Runtime) computes every (channel, bin, sample) on its own. The grid may be adaptive
(``ceil(bin size)`` samples a side): a per-box loop extent. The arithmetic follows ONNX
Runtime's order (``topi.roi_align.roi_align_onnx_np`` is the reference).
"""

from __future__ import annotations

from ..ir.op import OpPattern
from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import op as tir_op
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.function import PrimFunc
from ..topi.roi_align import ROI_ALIGN_ONNX_TAG, ROI_POOL_TAG, RoiAlignSpec
from .common import LowerCtx, allocated, const_int, dtype_bytes, imm, lanes, vector_inner
from .lower import Rule, register_rule

# the channels-last copy pays when the boxes read this many corners (a vector of channels
# each) per pixel of the maps (a fraction). Zen 4, one thread, 7x7 bins, grid 2 (ms,
# channels-last / strided gathers / ONNX Runtime): 256 channels, 4 boxes on 200x200 (0.08
# reads a pixel) 35.0 / 0.36 / 0.88; 16 on 100x100 (1.25) 2.70 / 1.07 / 2.27; 64 channels, 8 on
# 64x64 (1.53) 0.31 / 0.60 / 0.32; 256, 100 on 100x100 (7.8) 4.36 / 6.70 / 13.4; 64, 64 on
# 32x32 (49) 0.35 / 4.61 / 2.02
READS_PER_PIXEL = (3, 2)
TILE = 16  # channels and pixels a tile of the channels-last copy

__all__ = ["emit_roi_align", "emit_roi_pool", "roi_align_prim_func", "roi_pool_prim_func",
           "round_half_away"]


def _i32(v) -> E.PrimExpr:
    return E.as_index(v, "int32")


def _let(ctx, name: str, value: E.PrimExpr, body_fn) -> S.Stmt:
    v = ctx.fresh(name, value.dtype)
    return S.LetStmt(v, value, body_fn(v))


def _lets(ctx, named: dict, body_fn) -> S.Stmt:
    """Nested LetStmts binding each ``name: value`` in turn; ``body_fn(vars dict)``."""
    names, bound = list(named), {}

    def step(k):
        if k == len(names):
            return body_fn(bound)
        value = named[names[k]]
        value = value(bound) if callable(value) else value

        def inner(v):
            bound[names[k]] = v
            return step(k + 1)

        return _let(ctx, names[k], value, inner)

    return step(0)


def _channels_last(ctx, xf, xt, n, c: int, h: int, w: int) -> S.Stmt:
    """``xt[(b, y, x), ch] = x[b, ch, y, x]``: the feature maps channels-last, once a call.

    Pixel by pixel over every channel, the reads of one pixel are a cache line per channel at
    the plane stride, which the next pixels read again. When that stride is a multiple of 4
    KiB (power-of-two maps) those lines share an L1 set and evict each other: then the copy
    goes in tiles of ``TILE`` channels x ``TILE`` pixels, read and written by whole lines.
    (Zen 4, ms: 64 x 64 x 64 0.76 -> 0.23 tiled; 256 x 100 x 100 2.06, 3.45 tiled; 256 x 200
    x 200 8.2, 11.2 tiled.)"""
    b, pb, cb = ctx.fresh("b"), ctx.fresh("pb"), ctx.fresh("cb")
    hw = h * w
    if (hw * dtype_bytes(xf.dtype)) % 4096:
        p, ch = ctx.fresh("p"), ctx.fresh("ch")
        store = S.BufferStore(xt, E.BufferLoad(xf, [(b * imm(c) + ch) * imm(hw) + p]),
                              [(b * imm(hw) + p) * imm(c) + ch])
        return S.For(b, imm(0), _i32(n), S.ForKind.SERIAL, S.For(
            p, imm(0), imm(hw), S.ForKind.SERIAL, S.For(ch, imm(0), imm(c), S.ForKind.SERIAL,
                                                         store)))

    def tile(p0, pn: int, c0, cn: int):
        ch, pi = ctx.fresh("ch"), ctx.fresh("pi")
        p, cc = p0 + pi, c0 + ch
        store = S.BufferStore(xt, E.BufferLoad(xf, [(b * imm(c) + cc) * imm(hw) + p]),
                              [(b * imm(hw) + p) * imm(c) + cc])
        return S.For(ch, imm(0), imm(cn), S.ForKind.SERIAL,
                     S.For(pi, imm(0), imm(pn), S.ForKind.SERIAL, store))

    def split(extent: int, var, body_fn):
        """``body_fn(start, count)`` over ``extent`` in tiles of TILE (and a tail)."""
        full, tail = divmod(extent, TILE)
        parts = [S.For(var, imm(0), imm(full), S.ForKind.SERIAL,
                       body_fn(var * imm(TILE), TILE))] if full else []
        if tail:
            parts.append(body_fn(imm(full * TILE), tail))
        return parts[0] if len(parts) == 1 else S.SeqStmt(parts)

    return S.For(b, imm(0), _i32(n), S.ForKind.SERIAL, split(hw, pb, lambda p0, pn: split(
        c, cb, lambda c0, cn: tile(p0, pn, c0, cn))))


def _write_out(ctx, acc, of, r, c: int, bins: int, value_fn) -> S.Stmt:
    """``out[r, ch, bin] = value_fn(acc[bin, ch])``."""
    ch, k = ctx.fresh("ch"), ctx.fresh("k")
    store = S.BufferStore(of, value_fn(E.BufferLoad(acc, [k * imm(c) + ch])),
                          [(r * imm(c) + ch) * imm(bins) + k])
    return S.For(ch, imm(0), imm(c), S.ForKind.SERIAL,
                 S.For(k, imm(0), imm(bins), S.ForKind.SERIAL, store))


def _nhwc_size(n, c: int, h: int, w: int):
    return n * h * w * c if isinstance(n, int) else _i32(n) * imm(h * w * c)


def _last(n) -> E.PrimExpr:
    """The last image's index (box batch indices are clamped to the batch)."""
    return imm(n - 1) if isinstance(n, int) else _i32(n) - imm(1)


def _dims(buf) -> list:
    return [const_int(d) if const_int(d) is not None else d for d in buf.shape]


def _channels_last_pays(nroi, reads: int, n, h: int, w: int) -> E.PrimExpr | bool:
    """Does copying the maps channels-last pay for itself: do the boxes' corner reads (``reads``
    a box) number ``READS_PER_PIXEL`` x the pixels to copy? (Else each corner gathers its
    channels at the plane stride: a few boxes on a large map.) A bool when the counts are
    static."""
    num, den = READS_PER_PIXEL
    if isinstance(nroi, int) and isinstance(n, int):
        return den * nroi * reads >= num * n * h * w
    return E.GE(_i32(nroi) * imm(den * reads), _i32(n) * imm(num * h * w))


def _either(ctx, pays, fast, direct) -> S.Stmt:
    """``fast()`` (channels-last) or ``direct()`` as ``pays`` says (a run-time branch when it
    is an expression)."""
    if isinstance(pays, bool):
        return fast() if pays else direct()
    return S.IfThenElse(pays, fast(), direct())


def emit_roi_align(ctx, spec: RoiAlignSpec, x, rois, idx, out) -> S.Stmt:
    """Statements computing ONNX RoiAlign of ``x`` [N, C, H, W] (C, H, W static) over ``rois``
    [R, 4] of images ``idx`` [R] into ``out`` [R, C, out_h, out_w] (see the module)."""
    n, c, h, w = _dims(x)
    nroi = _dims(rois)[0]
    dt = x.dtype

    def f(v):
        return E.const(float(v), dt)

    xf, rf, bf, of = (ctx.flat_view(b) for b in (x, rois, idx, out))
    oh, ow = spec.out_h, spec.out_w
    bins = oh * ow
    xt = decl_buffer((_nhwc_size(n, c, h, w),), dt, "roi_nhwc")
    acc = decl_buffer((bins * c,), dt, "roi_acc")
    avg = spec.mode == "avg"
    off = f(0.5 if spec.half_pixel else 0.0)

    def extent(a, b):
        return b - a if spec.half_pixel else E.Max(b - a, f(1.0))

    def grid(size):
        return imm(spec.grid) if spec.grid else E.Cast("int32", tir_op.ceil(size))

    def axis(pos, size: int):
        """(low index, high index, fraction) of a sample coordinate not below -1."""
        p = E.Max(pos, f(0.0))
        low = E.Cast("int32", p)
        edge = E.GE(low, imm(size - 1))
        return {"lo": E.Select(edge, imm(size - 1), low),
                "hi": E.Select(edge, imm(size - 1), low + imm(1)),
                "l": E.Select(edge, f(0.0), p - E.Cast(dt, low))}

    def boxes_loop(direct: bool) -> S.Stmt:
        """Every box; its corners read from the channels-last copy, or (``direct``) from the
        NCHW maps at the plane stride."""
        r = ctx.fresh("r")

        def coord(k):
            return E.BufferLoad(rf, [r * imm(4) + imm(k)]) * f(spec.scale) - off

        def row_base(v, y):
            if direct:
                return v["b"] * imm(c * h * w) + y * imm(w)
            return (v["b"] * imm(h) + y) * imm(w)

        def px(row, col, k):
            if direct:
                return E.BufferLoad(xf, [row + col + k * imm(h * w)])
            return E.BufferLoad(xt, [(row + col) * imm(c) + k])

        def per_box(v):
            i, j, iy, ix = (ctx.fresh(s) for s in ("i", "j", "iy", "ix"))
            base = (i * imm(ow) + j) * imm(c)

            def sample(yv, xv):
                """acc[bin] (+)= the sample's weighted corners (ONNX Runtime's order)."""
                hy, ly, hx, lx = f(1.0) - yv["l"], yv["l"], f(1.0) - xv["l"], xv["l"]

                def body(wts):
                    def lane(k):
                        t = [wts["w1"] * px(wts["p_ll"], xv["lo"], k),
                             wts["w2"] * px(wts["p_ll"], xv["hi"], k),
                             wts["w3"] * px(wts["p_hl"], xv["lo"], k),
                             wts["w4"] * px(wts["p_hl"], xv["hi"], k)]
                        a = E.BufferLoad(acc, [base + k])
                        if avg:
                            return S.BufferStore(acc, a + (((t[0] + t[1]) + t[2]) + t[3]),
                                                 [base + k])
                        return S.BufferStore(acc, E.Max(a, E.Max(E.Max(E.Max(t[0], t[1]), t[2]),
                                                                 t[3])), [base + k])

                    return vector_inner(ctx, c, lanes(dt), lane)

                return _lets(ctx, {"w1": hy * hx, "w2": hy * lx, "w3": ly * hx, "w4": ly * lx,
                                   "p_ll": row_base(v, yv["lo"]), "p_hl": row_base(v, yv["hi"])},
                             body)

            def outside():
                if avg:  # its weights are 0
                    return None
                return vector_inner(ctx, c, lanes(dt), lambda k: S.BufferStore(
                    acc, E.Max(E.BufferLoad(acc, [base + k]), f(0.0)), [base + k]))

            def x_loop(yy, yv):
                def at_x(xx):
                    inside = E.And(E.And(E.GE(yy, f(-1.0)), E.LE(yy, f(h))),
                                   E.And(E.GE(xx, f(-1.0)), E.LE(xx, f(w))))
                    return S.IfThenElse(inside, _lets(ctx, axis(xx, w),
                                                      lambda xv: sample(yv, xv)), outside())

                pos = v["x0"] + E.Cast(dt, j) * v["bw"] + \
                    (E.Cast(dt, ix) + f(0.5)) * v["bw"] / E.Cast(dt, v["gw"])
                return S.For(ix, imm(0), v["gw"], S.ForKind.SERIAL, _let(ctx, "xx", pos, at_x))

            def y_loop():
                pos = v["y0"] + E.Cast(dt, i) * v["bh"] + \
                    (E.Cast(dt, iy) + f(0.5)) * v["bh"] / E.Cast(dt, v["gh"])

                def at_y(yy):
                    return _lets(ctx, axis(yy, h), lambda yv: x_loop(yy, yv))

                return S.For(iy, imm(0), v["gh"], S.ForKind.SERIAL, _let(ctx, "yy", pos, at_y))

            init = vector_inner(ctx, c, lanes(dt), lambda k: S.BufferStore(
                acc, f(0.0) if avg else f(float("-inf")), [base + k]))
            bin_loop = S.For(i, imm(0), imm(oh), S.ForKind.SERIAL, S.For(
                j, imm(0), imm(ow), S.ForKind.SERIAL, S.SeqStmt([init, y_loop()])))
            if avg:
                inv = f(1.0) / E.Cast(dt, E.Max(v["gh"] * v["gw"], imm(1)))
                write = _write_out(ctx, acc, of, r, c, bins, lambda a: a * inv)
            else:
                empty = E.Or(E.LE(v["gh"], imm(0)), E.LE(v["gw"], imm(0)))
                write = _write_out(ctx, acc, of, r, c, bins,
                                   lambda a: E.Select(empty, f(0.0), a))
            return S.SeqStmt([bin_loop, write])

        box = {"b": E.Max(E.Min(_i32(E.BufferLoad(bf, [r])), _last(n)), imm(0)),
               "x0": coord(0), "y0": coord(1), "x1": coord(2), "y1": coord(3),
               "bw": lambda v: extent(v["x0"], v["x1"]) / f(ow),
               "bh": lambda v: extent(v["y0"], v["y1"]) / f(oh),
               "gw": lambda v: grid(v["bw"]), "gh": lambda v: grid(v["bh"])}
        return S.For(r, imm(0), _i32(nroi), S.ForKind.SERIAL, _lets(ctx, box, per_box))

    def fast():
        return allocated(acc, allocated(xt, S.SeqStmt([_channels_last(ctx, xf, xt, n, c, h, w),
                                                       boxes_loop(False)])))

    def direct():
        return allocated(acc, boxes_loop(True))

    pays = _channels_last_pays(nroi, bins * max(spec.grid, 1) ** 2 * 4, n, h, w)
    return _either(ctx, pays, fast, direct)


def emit_roi_pool(ctx, pooled, scale: float, x, rois, out, half_away: bool = False,
                  nhwc: bool = False) -> S.Stmt:
    """Statements computing ROIPool (max over quantized bins, empty bins 0, Caffe's and ONNX
    Runtime's MaxRoiPool) of ``x`` [N, C, H, W] over ``rois`` [R, 5] (batch, x1, y1, x2, y2)
    into ``out`` [R, C, ph, pw]. The scaled corners are rounded half to even, as TVM's
    ``vision.roi_pool``, or with ``half_away`` away from zero, as ONNX Runtime's ``round``.
    ``nhwc``: ``x`` is [N, H, W, C] and ``out`` [R, ph, pw, C] (no copy, no transposition)."""
    n, h, w, c = _dims(x) if nhwc else [_dims(x)[k] for k in (0, 2, 3, 1)]
    nroi = _dims(rois)[0]
    dt = x.dtype
    ph, pw = pooled

    def f(v):
        return E.const(float(v), dt)

    xf, rf, of = (ctx.flat_view(b) for b in (x, rois, out))
    bins = ph * pw
    xt = xf if nhwc else decl_buffer((_nhwc_size(n, c, h, w),), dt, "roi_nhwc")
    acc = decl_buffer((bins * c,), dt, "roi_acc")

    def boxes_loop(direct: bool) -> S.Stmt:
        """Every box; its pixels read channels-last (the copy, or NHWC maps), or (``direct``)
        from the NCHW maps at the plane stride."""
        r = ctx.fresh("r")

        def rnd(k):
            v = E.BufferLoad(rf, [r * imm(5) + imm(k)]) * f(scale)
            return E.Cast("int32", round_half_away(v) if half_away else tir_op.round(v))

        def per_box(v):
            i, j, yy, xx = (ctx.fresh(s) for s in ("i", "j", "yy", "xx"))
            base = (i * imm(pw) + j) * imm(c)

            def clip(e, size):
                return E.Min(E.Max(e, imm(0)), imm(size))

            def lo(k, bin_size, start, size):
                return clip(E.Cast("int32", tir_op.floor(E.Cast(dt, k) * bin_size)) + start, size)

            def hi(k, bin_size, start, size):
                return clip(E.Cast("int32", tir_op.ceil(E.Cast(dt, k + imm(1)) * bin_size)) +
                            start, size)

            edges = {"hs": lo(i, v["bh"], v["sh"], h), "he": hi(i, v["bh"], v["sh"], h),
                     "ws": lo(j, v["bw"], v["sw"], w), "we": hi(j, v["bw"], v["sw"], w)}

            def one_bin(e):
                empty = E.Or(E.LE(e["he"], e["hs"]), E.LE(e["we"], e["ws"]))
                init = vector_inner(ctx, c, lanes(dt), lambda k: S.BufferStore(
                    acc, E.Select(empty, f(0.0), tir_op.min_value(dt)), [base + k]))

                def lane(k):
                    if direct:
                        px = E.BufferLoad(xf, [(v["b"] * imm(c) + k) * imm(h * w) +
                                               yy * imm(w) + xx])
                    else:
                        px = E.BufferLoad(xt, [((v["b"] * imm(h) + yy) * imm(w) + xx) * imm(c) +
                                               k])
                    return S.BufferStore(acc, E.Max(E.BufferLoad(acc, [base + k]), px),
                                         [base + k])

                window = S.For(yy, e["hs"], e["he"] - e["hs"], S.ForKind.SERIAL, S.For(
                    xx, e["ws"], e["we"] - e["ws"], S.ForKind.SERIAL,
                    vector_inner(ctx, c, lanes(dt), lane)))
                return S.SeqStmt([init, window])

            bin_loop = S.For(i, imm(0), imm(ph), S.ForKind.SERIAL, S.For(
                j, imm(0), imm(pw), S.ForKind.SERIAL, _lets(ctx, edges, one_bin)))
            if nhwc:
                k = ctx.fresh("k")
                write = S.For(k, imm(0), imm(bins * c), S.ForKind.SERIAL, S.BufferStore(
                    of, E.BufferLoad(acc, [k]), [r * imm(bins * c) + k]))
            else:
                write = _write_out(ctx, acc, of, r, c, bins, lambda a: a)
            return S.SeqStmt([bin_loop, write])

        box = {"b": E.Max(E.Min(E.Cast("int32", E.BufferLoad(rf, [r * imm(5)])), _last(n)),
                          imm(0)),
               "sw": rnd(1), "sh": rnd(2), "ew": rnd(3), "eh": rnd(4),
               "bh": lambda v: E.Cast(dt, E.Max(v["eh"] - v["sh"] + imm(1), imm(1))) / f(ph),
               "bw": lambda v: E.Cast(dt, E.Max(v["ew"] - v["sw"] + imm(1), imm(1))) / f(pw)}
        return S.For(r, imm(0), _i32(nroi), S.ForKind.SERIAL, _lets(ctx, box, per_box))

    if nhwc:
        return allocated(acc, boxes_loop(False))

    def fast():
        return allocated(xt, S.SeqStmt([_channels_last(ctx, xf, xt, n, c, h, w),
                                        boxes_loop(False)]))

    # (a bin reads about 4 pixels, as a 2 x 2 RoiAlign sample does)
    pays = _channels_last_pays(nroi, bins * 4, n, h, w)
    return allocated(acc, _either(ctx, pays, fast, lambda: boxes_loop(True)))


def round_half_away(v: E.PrimExpr) -> E.PrimExpr:
    """C's ``round``: to the nearest integer, halves away from zero (exact: no ``+ 0.5``)."""
    t = tir_op.trunc(v)
    one = E.const(1.0, v.dtype)
    step = E.Select(E.LT(v, E.const(0.0, v.dtype)), E.const(-1.0, v.dtype), one)
    return E.Select(E.GE(tir_op.fabs(v - t), E.const(0.5, v.dtype)), t + step, t)


# ---------------------------------------------------------------------------------- Relay
def _supported(tag):
    def supported(t, options=None) -> bool:
        if not isinstance(t.op, ComputeOp) or t.op.tag != tag:
            return False
        x = t.op.attrs["operands"][0]
        return all(const_int(d) is not None for d in x.shape[1:]) and x.dtype == t.dtype

    return supported


def _emit_align(ctx, t, out, bodies) -> S.Stmt:
    x, rois, idx = (ctx.buf[id(s)] for s in t.op.attrs["operands"])
    return emit_roi_align(ctx, t.op.attrs["spec"], x, rois, idx, out)


def _emit_pool(ctx, t, out, bodies) -> S.Stmt:
    x, rois = (ctx.buf[id(s)] for s in t.op.attrs["operands"])
    a = t.op.attrs
    return emit_roi_pool(ctx, a["pooled"], a["scale"], x, rois, out, nhwc=a["nhwc"])


register_rule(ROI_ALIGN_ONNX_TAG, Rule("RoiAlign: channels-last gathers", "roi_align_onnx",
                                       _supported(ROI_ALIGN_ONNX_TAG), _emit_align,
                                       symbolic=True, materialize=True))
register_rule(ROI_POOL_TAG, Rule("ROIPool: channels-last window maxima", "roi_pool",
                                 _supported(ROI_POOL_TAG), _emit_pool, symbolic=True,
                                 materialize=True))


# ---------------------------------------------------------------------------------- Relax
def _prim_func(shapes, dtypes, names, emit_fn) -> PrimFunc:
    """A PrimFunc of buffers ``shapes`` (ints or tir Vars) whose body ``emit_fn(ctx, *bufs)``
    writes (the last buffer is the output); plain loops, compiled as written."""
    bufs = [decl_buffer(tuple(s), d, nm) for s, d, nm in zip(shapes, dtypes, names, strict=True)]
    ctx = LowerCtx(own_temps=True)
    body = emit_fn(ctx, *bufs)
    for view in reversed(ctx.ws_views):
        body = S.DeclBuffer(view, body)
    return PrimFunc(bufs, body, attrs={"tir.noalias": True, "op_pattern": int(OpPattern.OPAQUE)})


def roi_align_prim_func(spec: RoiAlignSpec, x_shape, num_rois, dtype: str,
                        idx_dtype: str) -> PrimFunc:
    """ONNX RoiAlign as a PrimFunc ``(x, rois, batch_indices, out)``; ``num_rois`` and the
    batch may be tir Vars."""
    shapes = [x_shape, (num_rois, 4), (num_rois,), (num_rois, x_shape[1], spec.out_h,
                                                      spec.out_w)]
    return _prim_func(shapes, [dtype, dtype, idx_dtype, dtype], ["x", "rois", "idx", "out"],
                      lambda ctx, x, r, b, o: emit_roi_align(ctx, spec, x, r, b, o))


def roi_pool_prim_func(pooled, scale: float, x_shape, num_rois, dtype: str,
                       half_away: bool = True) -> PrimFunc:
    """ROIPool as a PrimFunc ``(x, rois, out)``; by default ONNX MaxRoiPool's rounding."""
    shapes = [x_shape, (num_rois, 5), (num_rois, x_shape[1], *pooled)]
    return _prim_func(shapes, [dtype, dtype, dtype], ["x", "rois", "out"],
                      lambda ctx, x, r, o: emit_roi_pool(ctx, tuple(pooled), scale, x, r, o,
                                                         half_away))
