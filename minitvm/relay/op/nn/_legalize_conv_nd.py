"""Legalize of ``nn.conv1d``, ``nn.conv1d_transpose``, ``nn.conv2d_transpose``, ``nn.conv3d``
and ``nn.conv3d_transpose`` on CPUs, onto ``nn.conv2d`` and its native kernels (conv3d:
``legalize_conv3d``; conv3d_transpose: ``legalize_conv3d_transpose``).

``nn.conv1d`` (NCW/OIW) is a conv2d over one row: ``expand_dims`` of data and weight, the conv2d,
``squeeze`` (the weight's expand_dims folds away with a constant weight). Before, it ran as a
numpy kernel: a 1-D CNN of two convs (64->128 channels width 5, 128->128 width 3, with ReLUs)
over 4000 samples took 23.2 ms against ONNX Runtime's 8.2 ms at one thread, and 7.6 ms as
conv2d.

A strided ``nn.conv2d_transpose`` becomes one ordinary convolution per output phase
(``topi.conv_transpose_phases``): ``sh * sw`` ``nn.conv2d`` calls, each computing only the
products that are not zero, interleaved by ``stack`` and ``reshape``. The convs take the native
conv schedules; the filter slices are ``take``s of the weight, folded to constants by
FoldConstant when the weight is one. Grouped (and depthwise) transposed convs become grouped
convs, their weight regrouped from ``(in, out/groups)`` to ``(out, in/groups)``; dilated ones
become dilated convs (dilation ``d / gcd(s, d)``), with the phases no tap reaches as zeros.
Phases of unequal sizes are computed one row longer and the result cropped; padding past the
filter crops the input. A symbolic batch (``Any``) is rewritten too: the reshapes keep it by
Relay's ``0`` and the phases no tap reaches are ``zeros_like`` another phase (on the VM a 256 ->
128 channel 4x4 stride-2 layer at 16x16 took 70 ms at batch 1 with the op kept, and takes 5.8
ms). Only a layout other than NCHW/IOHW or another symbolic size keeps the op.

DCGAN's generator (four 4x4 stride-2 transposed convs) took 86 ms through the numpy fallback,
and takes 10.8 ms so, against ONNX Runtime's 11.1 ms at one thread. Also at one thread: a
4-group 64-channel 4x4 stride-2 layer at 32x32 took 14.2 ms through the numpy fallback against
ORT's 0.77 ms, and takes about 1.0 ms as ORT does in the same runs; a 32-channel 3x3
dilation-2 layer took 0.82 ms against 0.23 ms, and takes 0.18 ms (ORT 0.23-0.30 ms); a
depthwise 64-channel 4x4 stride-2 layer took 3-4 ms, and takes 0.19 ms (ORT 0.63-0.93 ms).
The interleaving ``stack``/``reshape`` kernel is then the larger part of a depthwise layer.

Difference from TVM: TVM keeps both ops (its ``legalize_conv2d_transpose`` only rewrites NHWC to
NCHW) and computes them with kernels of their own.
"""

from __future__ import annotations

import numpy as np

from ....ir.prim_expr import Any
from ....ir.type import TensorType
from ....topi.conv_transpose_phases import phase_dilation, phase_rows, phases
from ....topi.utils import pad_tuple
from ...expr import const
from ..op import register_legalize
from ..tensor import zeros, zeros_like
from ..transform import expand_dims, reshape, squeeze, stack, strided_slice, transpose
from ..transform_index import take
from .nn import conv2d, conv2d_transpose
from .nn import pad as nn_pad


@register_legalize("nn.conv1d")
def legalize_conv1d(attrs, inputs, types):
    """An NCW/OIW ``nn.conv1d`` as ``nn.conv2d`` over one row (None for other layouts)."""
    if attrs.data_layout != "NCW" or attrs.kernel_layout != "OIW" or \
            (attrs.out_layout or "NCW") != "NCW":
        return None
    data, weight = inputs
    left, right = (int(p) for p in attrs.padding)
    ksize = None if attrs.kernel_size is None else (1, int(attrs.kernel_size[0]))
    out = conv2d(expand_dims(data, 2), expand_dims(weight, 2), strides=(1, int(attrs.strides[0])),
                 padding=(0, left, 0, right), dilation=(1, int(attrs.dilation[0])),
                 groups=int(attrs.groups), channels=attrs.channels, kernel_size=ksize,
                 out_dtype=attrs.out_dtype)
    return squeeze(out, axis=[2])


@register_legalize("nn.conv2d_transpose")
def legalize_conv2d_transpose(attrs, inputs, types):
    """An NCHW/IOHW ``nn.conv2d_transpose`` (any stride, dilation, groups, output_padding) as
    one ``nn.conv2d`` per output phase, then interleaved (None where that does not apply: the
    op stays)."""
    data, weight = inputs
    dt, wt, ot = types
    if attrs.data_layout != "NCHW" or attrs.kernel_layout != "IOHW" or \
            (attrs.out_layout or "NCHW") != "NCHW":
        return None
    try:  # only the batch may be symbolic
        (c, h, w), (_, og, kh, kw), (o, oh, ow) = (
            [int(d) for d in t] for t in (dt.shape[1:], wt.shape, ot.shape[1:]))
    except (TypeError, ValueError):
        return None
    groups = int(attrs.groups)
    (sh, sw), (dh, dw) = ((int(v) for v in t) for t in (attrs.strides, attrs.dilation))
    pt, pl = (int(p) for p in attrs.padding[:2])
    rows, cols = phases(sh, pt, kh, h, oh, dh), phases(sw, pl, kw, w, ow, dw)
    qh, qw = phase_rows(sh, oh), phase_rows(sw, ow)
    dilation = phase_dilation(sh, dh), phase_dilation(sw, dw)
    cropped = {}  # the input without the rows and columns the padding reaches past, by crop

    def phase(ty, tx):
        k = take(take(weight, const(np.array(ty.taps, "int32")), axis=2),
                 const(np.array(tx.taps, "int32")), axis=3)
        size = len(ty.taps), len(tx.taps)
        dil = tuple(d if s > 1 else 1 for d, s in zip(dilation, size, strict=True))
        pads = ty.before, tx.before, ty.after, tx.after
        crop = tuple(max(0, -p) for p in pads)
        x = data
        if any(crop):
            if crop not in cropped:
                cropped[crop] = strided_slice(data, begin=[crop[0], crop[1]],
                                              end=[h - crop[2], w - crop[3]], axes=[2, 3])
            x = cropped[crop]
        return conv2d(x, _regrouped(k, groups, c, og, size),
                      padding=tuple(max(0, p) for p in pads), dilation=dil, groups=groups,
                      channels=o, kernel_size=size, out_dtype=attrs.out_dtype)

    convs = {(i, j): phase(ty, tx) for i, ty in enumerate(rows) for j, tx in enumerate(cols)
             if ty.taps and tx.taps}
    batch = _static(dt.shape[0])  # None: symbolic, kept by the reshapes' 0 and zeros_like

    def zero():  # a phase no tap reaches
        if batch is not None:
            return zeros((batch, o, qh, qw), ot.dtype)
        return zeros_like(next(iter(convs.values())))

    if batch is None and not convs:  # (all zeros, of a symbolic batch: the op stays)
        return None
    n = 0 if batch is None else batch
    lines = []
    for i in range(sh):  # each row phase: its column phases interleaved along the width
        line = [convs[i, j] if (i, j) in convs else zero() for j in range(sw)]
        lines.append(line[0] if sw == 1 else reshape(stack(line, axis=4), (n, o, qh, qw * sw)))
    out = lines[0] if sh == 1 else reshape(stack(lines, axis=3), (n, o, qh * sh, qw * sw))
    if (qh * sh, qw * sw) != (oh, ow):  # the last phases' extra row or column
        out = strided_slice(out, begin=[0, 0], end=[oh, ow], axes=[2, 3])
    return out


def _static(dim) -> int | None:
    """A static dimension's size (None for ``Any`` or a variable)."""
    try:
        return int(dim)
    except (TypeError, ValueError):
        return None


def _regrouped(k, groups: int, c: int, og: int, size):
    """The ``(in, out/groups, kh, kw)`` filter slice ``k`` in conv2d's ``(out, in/groups, kh,
    kw)`` layout (``topi.conv_transpose_phases.regroup_weight``)."""
    if groups == 1:
        return transpose(k, (1, 0, 2, 3))
    cg = c // groups
    if cg == 1 and og == 1:  # depthwise, one output channel per input: already so
        return k
    if cg == 1 or og == 1:  # the swapped axes have one of size 1: a reshape
        return reshape(k, (groups * og, cg, *size))
    k = transpose(reshape(k, (groups, cg, og, *size)), (0, 2, 1, 3, 4))
    return reshape(k, (groups * og, cg, *size))


@register_legalize("nn.conv3d")
def legalize_conv3d(attrs, inputs, types):
    """An NCDHW/OIDHW float32 ``nn.conv3d`` of static shapes as one ``nn.conv2d`` (of as many
    groups) over the depth folded into the batch (as ``topi.nn_nd.conv3d_folded``
    does in TE): the data gathered into ``(N*OD, C*KD, H, W)`` by a depth ``pad``, one
    ``strided_slice`` per depth tap, ``stack`` and ``reshape``; the weight reshaped to
    ``(O, C*KD, KH, KW)`` (folded by FoldConstant when it is a constant, so the conv2d
    schedules take it prepacked); the result reshaped and transposed back. None otherwise.

    At one thread, against ONNX Runtime: 32->64 channels 3x3x3 at 8x16x16 took 182 ms (the
    op's direct loop nest) and takes 1.0 ms (ORT 2.7); the TE compute's own fold, whose
    weight reshape is not constant-folded, 2.1 ms. Grouped convs fold the same way: a group's
    channels ``c`` become the contiguous folded channels ``c * KD + kd``, so the conv2d takes
    the same ``groups`` (X3D's depthwise 3x3x3 over 48 channels at 8x16x16: 949 -> 225 us)."""
    data, weight = inputs
    dt, wt, ot = types
    if attrs.data_layout != "NCDHW" or attrs.kernel_layout != "OIDHW" or \
            (attrs.out_layout or "NCDHW") != "NCDHW" or \
            {dt.dtype, wt.dtype, ot.dtype} != {"float32"}:
        return None
    dims = [_static(d) for t in (dt, wt, ot) for d in t.shape]
    if any(d is None for d in dims):
        return None
    n, c, _, h, w, o, cg, kd, kh, kw, _, _, od, oh, ow = dims
    (sd, sh, sw), (dd, dh, dw) = ((int(v) for v in t) for t in (attrs.strides, attrs.dilation))
    pad = [int(p) for p in attrs.padding]
    pad = pad * 6 if len(pad) == 1 else pad * 2 if len(pad) == 3 else pad
    x = data
    if pad[0] or pad[3]:
        x = nn_pad(x, ((0, 0), (0, 0), (pad[0], pad[3]), (0, 0), (0, 0)))
    taps = [strided_slice(x, begin=[k * dd], end=[k * dd + (od - 1) * sd + 1], strides=[sd],
                          axes=[2]) for k in range(kd)]
    x = transpose(stack(taps, axis=2), (0, 3, 1, 2, 4, 5))  # (N, OD, C, KD, H, W)
    y = conv2d(reshape(x, (n * od, c * kd, h, w)), reshape(weight, (o, cg * kd, kh, kw)),
               strides=(sh, sw), padding=(pad[1], pad[2], pad[4], pad[5]), dilation=(dh, dw),
               groups=int(attrs.groups), channels=o, kernel_size=(kh, kw),
               out_dtype=attrs.out_dtype)
    return transpose(reshape(y, (n, od, o, oh, ow)), (0, 2, 1, 3, 4))


@register_legalize("nn.conv3d_transpose")
def legalize_conv3d_transpose(attrs, inputs, types):
    """An NCDHW/IODHW ``nn.conv3d_transpose`` (any stride, padding, output_padding, dilation,
    groups; static sizes but for the batch) as one ``nn.conv2d_transpose`` per output depth phase,
    each legalized in turn onto ``nn.conv2d`` per height/width phase. Depth phase ``r`` (of
    ``sd``) is a stride-1 conv along the depth with the phase's taps
    (``topi.conv_transpose_phases.phases``): its ``T`` taps' input depths are gathered into the
    channels and the depth folded into the batch, ``(N*QD, C*T, H, W)``, with the weight
    ``(C*T, O/groups, KH, KW)`` (a constant once FoldConstant ran); the phases are interleaved
    along the depth by ``stack`` and ``reshape`` and the result transposed back to NCDHW. A
    symbolic batch is kept by the reshapes' ``-1`` (the zero phases are ``zeros_like``). None
    otherwise (the op's own compute, a direct gather, then runs).

    At one thread, against ONNX Runtime: 32->16 channels 2x2x2 stride 2 at 8x16x16 took 16.7
    ms through the numpy kernel and takes 0.28-0.33 ms (ORT 0.46-0.56 ms); 16->8 channels
    3x3x3 stride 2, padding 1, output_padding 1 took 24.0 ms and takes 0.22-0.26 ms (ORT
    0.65-0.75 ms)."""
    data, weight = inputs
    dt, wt, ot = types
    if attrs.data_layout != "NCDHW" or attrs.kernel_layout != "IODHW" or \
            (attrs.out_layout or "NCDHW") != "NCDHW":
        return None
    dims = [_static(d) for t in (dt, wt, ot) for d in t.shape]
    if any(d is None for d in dims[1:5] + dims[5:10] + dims[11:]):
        return None
    n, c, d, h, w, _, og, kd, kh, kw, _, o, od, oh, ow = dims  # (n None: a symbolic batch)
    groups = int(attrs.groups)
    (sd, sh, sw), (dd, dh, dw) = ((int(v) for v in t) for t in (attrs.strides, attrs.dilation))
    pad = [int(p) for p in attrs.padding]
    pad = pad * 6 if len(pad) == 1 else pad * 2 if len(pad) == 3 else pad
    qd = phase_rows(sd, od)
    step = phase_dilation(sd, dd)
    out_dtype = attrs.out_dtype or ot.dtype

    def phase(ph):
        t = len(ph.taps)
        x = data
        if ph.before < 0 or ph.after < 0:  # (padding past the filter: input depths cropped)
            x = strided_slice(x, begin=[max(0, -ph.before)], end=[d - max(0, -ph.after)],
                              axes=[2])
        if ph.before > 0 or ph.after > 0:
            x = nn_pad(x, ((0, 0), (0, 0), (max(0, ph.before), max(0, ph.after)), (0, 0),
                           (0, 0)))
        if t == 1:  # (the padded depth is qd long)
            x = reshape(x, (-1, c, 1, qd, h, w))
        else:  # (N, C, T, QD, H, W): tap k reads input depths k*step + [0, qd)
            x = stack([strided_slice(x, begin=[k * step], end=[k * step + qd], axes=[2])
                       for k in range(t)], axis=2)
        x = reshape(transpose(x, (0, 3, 1, 2, 4, 5)), (-1, c * t, h, w))
        k = take(weight, const(np.array(ph.taps, "int32")), axis=2)  # (C, O/g, T, KH, KW)
        k = reshape(transpose(k, (0, 2, 1, 3, 4)), (c * t, og, kh, kw))
        y = conv2d_transpose(x, k, strides=(sh, sw), padding=(pad[1], pad[2], pad[4], pad[5]),
                             dilation=(dh, dw), groups=groups, channels=o, kernel_size=(kh, kw),
                             output_padding=tuple(int(v) for v in attrs.output_padding[1:]),
                             out_dtype=attrs.out_dtype)
        nq = Any() if n is None else n * qd
        y2 = legalize_conv2d_transpose(y.attrs, list(y.args), [
            TensorType((nq, c * t, h, w), dt.dtype), TensorType((c * t, og, kh, kw), wt.dtype),
            TensorType((nq, o, oh, ow), out_dtype)])
        return reshape(y if y2 is None else y2, (-1, qd, o, oh, ow))

    depth = phases(sd, pad[0], kd, d, od, dd)
    convs = {r: phase(ph) for r, ph in enumerate(depth) if ph.taps}
    if not convs and n is None:  # (all zeros, of a symbolic batch: the op stays)
        return None
    parts = [convs[r] if r in convs else zeros((n, qd, o, oh, ow), ot.dtype) if n is not None
             else zeros_like(next(iter(convs.values()))) for r in range(sd)]
    y = parts[0] if sd == 1 else reshape(stack(parts, axis=2), (-1, qd * sd, o, oh, ow))
    if qd * sd != od:  # the last phases' extra depth
        y = strided_slice(y, begin=[0], end=[od], axes=[1])
    return transpose(y, (0, 2, 1, 3, 4))


@register_legalize("nn.conv1d_transpose")
def legalize_conv1d_transpose(attrs, inputs, types):
    """An NCW/IOW ``nn.conv1d_transpose`` (vocoders, audio decoders) as a conv2d_transpose over
    one row, itself legalized here into per-phase convs (None when that one would stay)."""
    if attrs.data_layout != "NCW" or attrs.kernel_layout != "IOW" or \
            (attrs.out_layout or "NCW") != "NCW":
        return None
    data, weight = inputs
    left, right = (int(p) for p in pad_tuple(attrs.padding, 1, "nn.conv1d_transpose"))
    ksize = None if attrs.kernel_size is None else (1, int(attrs.kernel_size[0]))
    call = conv2d_transpose(expand_dims(data, 2), expand_dims(weight, 2),
                            strides=(1, int(attrs.strides[0])), padding=(0, left, 0, right),
                            dilation=(1, int(attrs.dilation[0])), groups=int(attrs.groups),
                            channels=attrs.channels, kernel_size=ksize,
                            output_padding=(0, int(attrs.output_padding[0])),
                            out_dtype=attrs.out_dtype)
    row = [TensorType(tuple(t.shape[:2]) + (1,) + tuple(t.shape[2:]), t.dtype) for t in types]
    out = legalize_conv2d_transpose(call.attrs, list(call.args), row)
    return None if out is None else squeeze(out, axis=[2])
