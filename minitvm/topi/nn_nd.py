"""Tensor-expression computes (``FTECompute``) of the N-d and detection ops lowered natively:
nn.conv3d, nn.conv3d_transpose, nn.max_pool3d / avg_pool3d, adaptive 3-D and global 1-D/3-D pools, vision.yolo_reorg,
sliding_window, meshgrid, nn.fifo_buffer and the cross-entropy losses.

Out-of-range window taps read a clamped index and are masked with ``Select`` (every load stays
in bounds); the schedules treat these stages as generic reductions or injective loop nests.
"""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .shape import pool_tuple, spatial_axes
from .utils import (
    compute,
    dims,
    ieee_max,
    ishape,
    lowest,
    out_dims,
    out_tensor_types,
    pad_tuple,
    static_shape,
)
from .utils import i32 as _i


def _acc(x, dtype):
    return x if x.dtype == dtype else E.Cast(dtype, x)


def _static(t, x) -> bool:
    """Whether result type ``t`` and te tensor ``x`` have static shapes (else the computes
    written for symbolic sizes build them)."""
    return all(isinstance(d, int) for d in (*out_dims(t), *dims(x)))


def _all(conds):
    out = conds[0]
    for c in conds[1:]:
        out = E.And(out, c)
    return out


def _masked_load(x, idx, axes, sizes):
    """(in-bounds condition, load at indices clamped into bounds) for the ``axes`` of idx."""
    fixed, conds = list(idx), []
    for ax, n in zip(axes, sizes):
        j = idx[ax]
        conds.append(E.And(j >= 0, j < n))
        fixed[ax] = E.Max(E.Min(j, _i(n - 1)), _i(0))
    return _all(conds), x[tuple(fixed)]


# ------------------------------------------------------------------ conv3d
def conv3d_folded(x, w, strides, padding, dilation, out_dtype: str = "float32",
                  kernel_depth: int | None = None, pad_in_gather: bool = True):
    """``nn.conv3d`` of NCDHW data ``x`` and an OIDHW weight ``w`` (one group) as one conv2d
    over the depth folded into the batch, or None where this form does not apply (groups > 1
    is the caller's to exclude; non-float32 tensors, symbolic shapes).

    Stages: ``conv3d_fold`` gathers ``(N*OD, C*KD, H, W)``, whose channel ``c*KD + kz`` at
    batch ``b*OD + z`` is channel ``c`` of input depth ``z*sd + kz*dd - pad_front`` (zero
    outside the input); the weight is read as ``(O, C*KD, KH, KW)`` (``conv3d_weight``, the
    same memory as OIDHW: a reshape); the ordinary ``nn.conv2d`` compute (tag
    ``conv2d_nchw``, so the conv2d schedule rules take it) runs over them with the height and
    width strides, dilations and paddings; ``conv3d_unfold`` reads its ``(N*OD, O, OH, OW)``
    result back as ``(N, O, OD, OH, OW)``.

    ``pad_in_gather``: the gather pads the height and width too (``(N*OD, C*KD, H', W')``) and
    the conv2d reads no out-of-bounds tap: the form Relax's own conv2d has, which the
    raised-block patterns (``schedule.raise_patterns``) recognize in a PrimFunc; Relay's
    lowering, which sees the stage's tag, pads in the conv2d (faster there: 1.13 against
    1.42 ms for 3->32 channels 3x5x5 stride (1, 2, 2) at 8x64x64). ``kernel_depth`` given:
    ``w`` is the weight already reshaped (a constant reshaped at build time, so that the
    conv2d schedules take it prepacked).
    """
    from ..ir.type import TensorType
    from .utils import get_compute

    if x.dtype != "float32" or w.dtype != "float32" or out_dtype != "float32":
        return None
    try:
        n, c, d, h, wd = ishape(x)
        if kernel_depth is None:
            o, cw, kd, kh, kw = ishape(w)
        else:
            (o, ckd, kh, kw), kd = ishape(w), int(kernel_depth)
            cw = ckd // kd
    except (TypeError, ValueError):
        return None  # (symbolic dims)
    if cw != c or (kernel_depth is not None and cw * kd != ckd):
        return None
    sd, sh, sw = (int(v) for v in strides)
    dd, dh, dw = (int(v) for v in dilation)
    pad = [int(p) for p in pad_tuple(padding, 3, "nn.conv3d")]
    pf = pad[0]
    od = (d + pad[0] + pad[3] - (kd - 1) * dd - 1) // sd + 1
    oh = (h + pad[1] + pad[4] - (kh - 1) * dh - 1) // sh + 1
    ow = (wd + pad[2] + pad[5] - (kw - 1) * dw - 1) // sw + 1
    if min(od, oh, ow) <= 0:
        return None

    pt, pl = (pad[1], pad[2]) if pad_in_gather else (0, 0)
    hp, wp = (h + pad[1] + pad[4], wd + pad[2] + pad[5]) if pad_in_gather else (h, wd)
    depth_in = pf == 0 and (od - 1) * sd + (kd - 1) * dd < d

    def gather(bz, ci, y, xx):
        b, z = bz // _i(od), bz % _i(od)
        ch, kz = ci // _i(kd), ci % _i(kd)
        iz = z * _i(sd) + kz * _i(dd) - _i(pf)
        iy, ix = (y - _i(pt) if pt else y), (xx - _i(pl) if pl else xx)
        axes = ([] if depth_in else [2]) + ([3] if (hp, pt) != (h, 0) else []) + \
            ([4] if (wp, pl) != (wd, 0) else [])
        if not axes:
            return x[b, ch, iz, iy, ix]
        cond, v = _masked_load(x, (b, ch, iz, iy, ix), axes, [(d, h, wd)[a - 2] for a in axes])
        return E.Select(cond, v, E.const(0, x.dtype))

    folded = te.compute((n * od, c * kd, hp, wp), gather, name="conv3d_fold")
    weight = w if kernel_depth is not None else te.compute(
        (o, c * kd, kh, kw), lambda oc, ci, y, xx: w[oc, ci // _i(kd), ci % _i(kd), y, xx],
        name="conv3d_weight")
    attrs = _Conv2dAttrs((sh, sw), (dh, dw), (0, 0, 0, 0) if pad_in_gather else
                         (pad[1], pad[2], pad[4], pad[5]))
    out2 = get_compute("nn.conv2d")(attrs, [folded, weight],
                                    TensorType((n * od, o, oh, ow), out_dtype))[0]
    return te.compute((n, o, od, oh, ow),
                      lambda b, oc, z, y, xx: out2[b * _i(od) + z, oc, y, xx],
                      name="conv3d_unfold")


class _Conv2dAttrs:
    """The attributes the ``nn.conv2d`` compute reads (NCHW / OIHW, one group)."""

    data_layout, kernel_layout, out_layout, groups = "NCHW", "OIHW", "", 1

    def __init__(self, strides, dilation, padding):
        self.strides, self.dilation, self.padding = strides, dilation, padding


@compute("nn.conv3d")
def _conv3d(attrs, inputs, out_type):
    """NCDHW / OIDHW only. One group of float32 tensors: ``conv3d_folded`` (a conv2d over the
    depth folded into the batch, on the conv2d schedules); otherwise (groups > 1, other
    dtypes) the direct loop nest ``conv3d_ncdhw``, a generic reduction."""
    t = out_tensor_types(out_type)[0]
    shape = static_shape(t)
    x, w = inputs
    if attrs.data_layout != "NCDHW" or attrs.kernel_layout != "OIDHW" or \
            (attrs.out_layout or "NCDHW") != "NCDHW":
        raise ValueError("conv3d is lowered natively for NCDHW/OIDHW only")
    _, _, d, h, wd = ishape(x)
    o, cg, kd, kh, kw = ishape(w)
    groups = int(attrs.groups)
    if groups == 1:
        fast = conv3d_folded(x, w, attrs.strides, attrs.padding, attrs.dilation, t.dtype,
                             pad_in_gather=False)
        if fast is not None and ishape(fast) == tuple(shape):
            return [fast]
    og = o // groups
    st = [int(s) for s in attrs.strides]
    dl = [int(v) for v in attrs.dilation]
    pad = pad_tuple(attrs.padding, 3)
    rc = te.reduce_axis((0, cg), name="rc")
    rk = [te.reduce_axis((0, k), name=f"r{a}") for k, a in zip((kd, kh, kw), "dhw")]
    padded = any(pad)

    def body(b, oc, z, y, xx):
        ic = (oc // og) * cg + rc if groups > 1 else rc
        pos = [o_ * s + r * dd - p for o_, s, r, dd, p in zip((z, y, xx), st, rk, dl, pad[:3])]
        idx = (b, ic, *pos)
        if padded:
            cond, v = _masked_load(x, idx, (2, 3, 4), (d, h, wd))
            v = E.Select(cond, v, E.const(0, x.dtype))
        else:
            v = x[idx]
        return te.sum(_acc(v, t.dtype) * _acc(w[oc, rc, rk[0], rk[1], rk[2]], t.dtype),
                      axis=[rc, *rk])

    return [te.compute(shape, body, name="conv3d", tag="conv3d_ncdhw")]


@compute("nn.conv3d_transpose")
def _conv3d_transpose(attrs, inputs, out_type):
    """NCDHW / IODHW only: the direct gather ``nn_te.conv_transpose`` (every output element
    sums the input positions that scatter onto it), a generic reduction. Relay's Legalize
    (``legalize_conv3d_transpose``) takes the static cases onto conv2d phases first; this is
    what runs for the rest (the VM's symbolic shapes)."""
    from .nn_te import conv_transpose

    t = out_tensor_types(out_type)[0]
    if attrs.data_layout != "NCDHW" or attrs.kernel_layout != "IODHW" or \
            (attrs.out_layout or "NCDHW") != "NCDHW":
        raise ValueError("conv3d_transpose is lowered natively for NCDHW/IODHW only")
    x, w = inputs
    return [conv_transpose(x, w, list(attrs.strides), list(pad_tuple(attrs.padding, 3)),
                           list(attrs.output_padding), list(attrs.dilation), int(attrs.groups),
                           static_shape(t), t.dtype)]


# ------------------------------------------------------------------ windowed 3-D pools
def _pool3d(kind):
    def fcompute(attrs, inputs, out_type):
        t = out_tensor_types(out_type)[0]
        x = inputs[0]
        if attrs.layout != "NCDHW":
            raise ValueError("3-D pooling is lowered natively for NCDHW only")
        if not _static(t, x):  # (symbolic sizes: the N-d window pool, masked per window)
            from .pooling import window_pool

            return window_pool(x, kind, out_dims(t), [2, 3, 4],
                               *(pool_tuple(v, 3) for v in (attrs.pool_size, attrs.strides,
                                                            attrs.dilation)),
                               pad_tuple(attrs.padding, 3),
                               bool(getattr(attrs, "count_include_pad", False)),
                               f"{kind}_pool3d")
        shape = static_shape(t)
        sizes = ishape(x)[2:]
        ks = [int(k) for k in attrs.pool_size]
        st = [int(s) for s in attrs.strides]
        dl = [int(v) for v in attrs.dilation]
        pad = pad_tuple(attrs.padding, 3)
        rk = [te.reduce_axis((0, k), name=f"r{a}") for k, a in zip(ks, "dhw")]

        def taps(o):
            return [oi * s + r * dd - p for oi, s, r, dd, p in zip(o, st, rk, dl, pad[:3])]

        if kind == "max":
            def body(b, c, *o):
                cond, v = _masked_load(x, (b, c, *taps(o)), (2, 3, 4), sizes)
                # TVM's topi pads a max pool with the dtype's lowest finite value
                return ieee_max(E.Select(cond, v, tir_op.min_value(x.dtype)), axis=rk)

            return [te.compute(shape, body, name="max_pool3d")]

        inside = not any(int(p) for p in pad) and all(  # (ceil_mode's last windows are not)
            (int(shape[2 + a]) - 1) * st[a] + (ks[a] - 1) * dl[a] < int(sizes[a])
            for a in range(3))
        if inside:  # every window inside the input: no masks, a constant count (PyTorch's
            # LocalResponseNorm pools (1, 1, 68, 56, 56) by (5, 1, 1): 584 -> 146 us)
            area = E.const(ks[0] * ks[1] * ks[2], t.dtype)
            s = te.compute(shape, lambda b, c, *o: te.sum(
                _acc(x[(b, c, *taps(o))], t.dtype), axis=rk), name="avg_pool3d_sum")
            return [te.compute(shape, lambda *i: s[i] / area, name="avg_pool3d")]

        def total(b, c, *o):
            cond, v = _masked_load(x, (b, c, *taps(o)), (2, 3, 4), sizes)
            return te.sum(E.Select(cond, _acc(v, t.dtype), E.const(0, t.dtype)), axis=rk)

        include = bool(attrs.count_include_pad)

        def count(b, c, *o):
            conds = []
            for j, n, p, q in zip(taps(o), sizes, pad[:3], pad[3:]):
                lo, hi = (-p, n + q) if include else (0, n)
                conds.append(E.And(j >= lo, j < hi))
            return te.sum(E.Select(_all(conds), E.const(1, t.dtype), E.const(0, t.dtype)),
                          axis=rk)

        s = te.compute(shape, total, name="avg_pool3d_sum")
        rk = [te.reduce_axis((0, k), name=f"q{a}") for k, a in zip(ks, "dhw")]
        n = te.compute(shape, count, name="avg_pool3d_count")
        one = E.const(1, t.dtype)
        return [te.compute(shape, lambda *i: s[i] / E.Max(n[i], one), name="avg_pool3d")]

    return fcompute


compute("nn.max_pool3d")(_pool3d("max"))
compute("nn.avg_pool3d")(_pool3d("avg"))


# ------------------------------------------------------------------ adaptive / global pools
def _adaptive(kind, spatial):
    def fcompute(attrs, inputs, out_type):
        t = out_tensor_types(out_type)[0]
        x = inputs[0]
        if not _static(t, x):  # (symbolic sizes: the N-d adaptive pool, bins as expressions)
            from .pooling import adaptive_pool

            return adaptive_pool(x, kind, out_dims(t),
                                 spatial_axes(attrs.layout, len(x.shape), spatial, "pool"),
                                 f"adaptive_{kind}_pool")
        shape = static_shape(t)
        xs = ishape(x)
        axes = spatial_axes(attrs.layout, len(xs), spatial, "pool")
        ins = [xs[a] for a in axes]
        outs = [shape[a] for a in axes]
        # the widest bin [floor(i n / o), ceil((i + 1) n / o)) of each axis
        widths = [max(-(-(i + 1) * n // o) - (i * n) // o for i in range(o))
                  for n, o in zip(ins, outs)]
        rk = [te.reduce_axis((0, k), name=f"r{j}") for j, k in enumerate(widths)]

        def bounds(i, n, o):
            return E.FloorDiv(i * n, _i(o)), E.FloorDiv((i + 1) * n + _i(o - 1), _i(o))

        def window(idx):
            src, conds = list(idx), []
            for a, n, o, r in zip(axes, ins, outs, rk):
                lo, hi = bounds(idx[a], n, o)
                src[a] = E.Min(lo + r, _i(n - 1))
                conds.append(lo + r < hi)
            return _all(conds), x[tuple(src)]

        if kind == "max":
            def body(*idx):
                cond, v = window(idx)
                return ieee_max(E.Select(cond, v, lowest(x.dtype)), axis=rk)

            return [te.compute(shape, body, name="adaptive_max_pool")]

        def body(*idx):
            cond, v = window(idx)
            return te.sum(E.Select(cond, _acc(v, t.dtype), E.const(0, t.dtype)), axis=rk)

        s = te.compute(shape, body, name="adaptive_pool_sum")

        def mean(*idx):
            cnt = None
            for a, n, o in zip(axes, ins, outs):
                lo, hi = bounds(idx[a], n, o)
                cnt = hi - lo if cnt is None else cnt * (hi - lo)
            return s[idx] / E.Cast(t.dtype, cnt)

        return [te.compute(shape, mean, name="adaptive_avg_pool")]

    return fcompute


# (nn.adaptive_{max,avg}_pool1d: topi/pooling.py, with the window pools the pool schedule takes)
for _kind in ("max", "avg"):
    compute(f"nn.adaptive_{_kind}_pool3d")(_adaptive(_kind, "DHW"))
    for _nd, _sp in ((1, "W"), (3, "DHW")):
        compute(f"nn.global_{_kind}_pool{_nd}d")(_adaptive(_kind, _sp))


# ------------------------------------------------------------------ rearrangements
def _yolo_reorg_symbolic(x, s: int, shape):
    """``vision.yolo_reorg`` over run-time sizes: Darknet's order within each image (an output
    image holds exactly the input image's ``C * H * W`` values, so the batch index carries
    over), the sizes as the kernel's expressions (the type rule stated their divisibility)."""
    _, c, h, w = dims(x)
    idt = next(d.dtype for d in (*dims(x), *shape) if not isinstance(d, int))

    def k_(v):  # an index of the sizes' type
        return E.as_index(v, idt)

    c, h, w = k_(c), k_(h), k_(w)
    ss = k_(s)
    oc, oh, ow = E.FloorDiv(c, k_(s * s)), k_(shape[2]), k_(shape[3])

    def body(n, k, y, xx):
        flat = (k_(k) * oh + k_(y)) * ow + k_(xx)  # (within the image)
        i, j = E.FloorMod(flat, w), E.FloorMod(E.FloorDiv(flat, w), h)
        kk = E.FloorDiv(flat, w * h)
        off = E.FloorDiv(kk, oc)
        src = (E.FloorMod(kk, oc) * (h * ss) + j * ss + E.FloorDiv(off, ss)) * (w * ss) \
            + i * ss + E.FloorMod(off, ss)
        return x[n, E.FloorDiv(src, h * w), E.FloorMod(E.FloorDiv(src, w), h),
                 E.FloorMod(src, w)]

    return te.compute(list(shape), body, name="yolo_reorg")


@compute("vision.yolo_reorg")
def _yolo_reorg(attrs, inputs, out_type):
    x = inputs[0]
    s = int(attrs.stride)
    if not _static(out_tensor_types(out_type)[0], x):  # (one kernel for every size)
        return [_yolo_reorg_symbolic(x, s, out_dims(out_tensor_types(out_type)[0]))]
    b, c, h, w = ishape(x)
    oc = c // (s * s)
    shape = static_shape(out_tensor_types(out_type)[0])

    def body(n, k, y, xx):
        # the output's flat position in the (B, C, H, W) order of Darknet's loop
        flat = ((n * _i(c * s * s) + k) * _i(h // s) + y) * _i(w // s) + xx
        i = E.FloorMod(flat, _i(w))
        j = E.FloorMod(E.FloorDiv(flat, _i(w)), _i(h))
        kk = E.FloorMod(E.FloorDiv(flat, _i(w * h)), _i(c))
        bb = E.FloorDiv(flat, _i(w * h * c))
        off = E.FloorDiv(kk, _i(oc))
        src = ((bb * _i(oc) + E.FloorMod(kk, _i(oc))) * _i(h * s)
               + j * _i(s) + E.FloorDiv(off, _i(s))) * _i(w * s) + i * _i(s) + E.FloorMod(off, _i(s))
        return x[E.FloorDiv(src, _i(c * h * w)), E.FloorMod(E.FloorDiv(src, _i(h * w)), _i(c)),
                 E.FloorMod(E.FloorDiv(src, _i(w)), _i(h)), E.FloorMod(src, _i(w))]

    return [te.compute(shape, body, name="yolo_reorg")]


@compute("sliding_window")
def _sliding_window(attrs, inputs, out_type):
    x = inputs[0]
    axis = int(attrs.axis)
    axis = axis + len(dims(x)) if axis < 0 else axis
    strides = [int(s) for s in attrs.strides]
    nd = len(strides)
    shape = out_dims(out_tensor_types(out_type)[0])

    def body(*i):
        lead, counts, win = i[:axis], i[axis:axis + nd], i[axis + nd:]
        return x[(*lead, *(c * _i(s) + w for c, s, w in zip(counts, strides, win)))]

    return [te.compute(shape, body, name="sliding_window")]


@compute("meshgrid")
def _meshgrid(attrs, inputs, out_type):
    types = out_tensor_types(out_type)
    xy = attrs.indexing == "xy" and len(inputs) >= 2
    outs = []
    for k, (x, t) in enumerate(zip(inputs, types)):
        axis = {0: 1, 1: 0}.get(k, k) if xy else k

        def body(*i, x=x, axis=axis):
            return x[i[axis]] if len(dims(x)) == 1 else x[()]

        outs.append(te.compute(out_dims(t), body, name=f"meshgrid{k}"))
    return outs


@compute("nn.fifo_buffer")
def _fifo_buffer(attrs, inputs, out_type):
    data, buf = inputs
    bs = dims(buf)
    axis = int(attrs.axis)
    axis = axis + len(bs) if axis < 0 else axis
    nd_, nb = dims(data)[axis], bs[axis]

    def c(v):  # (an int as a constant; a symbolic size's expression as it is)
        return _i(v) if isinstance(v, int) else v

    def body(*i):
        j = i[axis] + c(nd_)  # position in concat(buffer, data)
        from_buf = list(i)
        from_buf[axis] = E.Min(j, c(nb - 1))
        from_data = list(i)
        from_data[axis] = E.Max(j - c(nb), _i(0))
        return E.Select(j < c(nb), buf[tuple(from_buf)], data[tuple(from_data)])

    return [te.compute(tuple(bs), body, name="fifo_buffer")]


# ------------------------------------------------------------------ losses
def _cross_entropy(logits: bool):
    def fcompute(attrs, inputs, out_type):
        x, y = inputs
        t = out_tensor_types(out_type)[0]
        xs = dims(x)
        rs = [te.reduce_axis((0, n), name=f"r{j}") for j, n in enumerate(xs)]
        # (a symbolic batch: its size converted)
        batch = E.FloatImm(t.dtype, float(xs[0])) if isinstance(xs[0], int) else \
            E.Cast(t.dtype, xs[0])

        def term():
            v = x[tuple(rs)] if logits else tir_op.log(x[tuple(rs)])
            return te.sum(v * y[tuple(rs)], axis=rs)

        s = te.compute((), term, name="cross_entropy_sum")
        return [te.compute((), lambda: -s[()] / batch,
                           name="cross_entropy")]

    return fcompute


compute("nn.cross_entropy")(_cross_entropy(False))
compute("nn.cross_entropy_with_logits")(_cross_entropy(True))
