"""Legalization of ``nn.conv1d`` (as a one-row conv2d: ``_conv1d_as_conv2d``), ``nn.conv2d`` (any
layout letters, groups, dilation) and ``nn.conv1d_transpose`` / ``nn.conv2d_transpose`` /
``nn.conv3d_transpose`` (NC[D][H]W data, IO[D][H]W kernels; conv3d_transpose as
conv2d_transposes per depth phase, ``_by_depth_phases``).

An NCHW/IOHW ``nn.conv2d_transpose`` (any stride, dilation, groups, output_padding) becomes one
``nn.conv2d`` per output phase (``topi.conv_transpose_phases``), interleaved by ``stack`` and
``reshape`` (and cropped where the phases are of unequal sizes), each legalized in turn: the
convs then take the native conv schedules, grouped or dilated as the transposed conv is. A
constant weight is sliced and regrouped here; another is sliced by ``take`` at each call.
Through the direct gather of ``nn_te.conv_transpose`` a 256 -> 128 channel 4x4 stride-2 layer
at 16x16 took 170 ms; so it takes 1.4 ms. A symbolic batch is carried through (the zeros' and
reshapes' shapes hold its expression); any other symbolic size keeps the gather. A UNet from
ONNX with a dynamic batch (three 2x2 stride-2 up-convs, 1x3x128x128) took 1.2 s per run through
the gather, and takes 26 ms so (ONNX Runtime 45 ms)."""

from __future__ import annotations

import warnings

import numpy as np

from ....ir.prim_expr import IntImm
from ....topi import dilated_phases, nn_te
from ....topi.conv_transpose_phases import phase_dilation, phase_rows, phases, regroup_weight
from ...expr import Call, Constant, const
from ...op import create as _create
from ...op import index as _index
from ...op import manipulate as _manip
from ...op import manipulate_extra as _manip_extra
from ...op.index import take
from ...op.nn import nn as _nn
from ...op.nn.convolution import conv2d, conv2d_transpose
from ...struct_info import TensorStructInfo
from .common import (
    arg_dtype,
    arg_shape,
    call_topi,
    get_legalize,
    out_dtype,
    out_shape,
    register_legalize,
    tie_dim,
)

__all__: list[str] = []


def _plain_layouts(call, spatial: str) -> bool:
    """Whether the layouts are plain permutations of their letters (packed layouts such as
    NCHW4c are not lowered here: the call is left as it is, with a warning)."""
    a = call.attrs
    out = a.out_layout or a.data_layout
    ok = (sorted(a.data_layout) == sorted("NC" + spatial) and sorted(out) == sorted(a.data_layout)
          and sorted(a.kernel_layout) == sorted("OI" + spatial))
    if not ok:
        warnings.warn(f"LegalizeOps: {call.op.name} with layouts {a.data_layout}/"
                      f"{a.kernel_layout}/{out} is left as it is (packed layouts are not "
                      "lowered)", stacklevel=3)
    return ok


def tie_channels(bb, call, transpose: bool = False):
    """``call`` with its data's channels tied to what the weight expects (``I`` x groups; a
    transposed conv's ``I``) where they are not provably equal (a symbolic channel count, of
    the data or the weight): a ``match_cast`` the VM checks when it runs, naming the conv, so
    a mismatch is a clear error where the kernel read past the channels it has or ignored
    some."""
    a = call.attrs
    data, weight = call.args[0], call.args[1]
    ws = weight.struct_info
    if not isinstance(ws, TensorStructInfo) or ws.shape is None or \
            "C" not in a.data_layout or "I" not in a.kernel_layout:
        return call
    want = ws.shape.values[a.kernel_layout.index("I")]
    if not transpose and int(a.groups) != 1:
        g = int(a.groups)
        want = IntImm(want.dtype, int(want.value) * g) if isinstance(want, IntImm) else want * g
    tied = tie_dim(bb, data, a.data_layout.index("C"), want,
                   f"{call.op.name.split('.')[-1]}_data_channels")
    if tied is data:
        return call
    return bb.normalize(Call(call.op, [tied, *call.args[1:]], call.attrs, call.sinfo_args,
                             call.span))


def _conv(name: str):
    spatial = "W" if name == "conv1d" else "HW"

    def legalize(bb, call):
        a = call.attrs
        if not _plain_layouts(call, spatial):
            return call
        call = tie_channels(bb, call)
        if name == "conv1d":
            return _conv1d_as_conv2d(bb, call)
        phased = _by_dilation_phases(bb, call)
        if phased is not None:
            return phased
        dtype = out_dtype(call)
        return call_topi(bb, lambda x, w: nn_te.conv(
            x, w, list(a.strides), list(a.padding), list(a.dilation), int(a.groups),
            a.data_layout, a.kernel_layout, a.out_layout or a.data_layout, dtype),
            call.args[0], call.args[1], name=name)

    return legalize


def _row_layout(layout: str) -> tuple[str, int]:
    """A 1-D layout with an H of extent 1 before its W, and W's axis (where H goes)."""
    i = layout.index("W")
    return layout[:i] + "H" + layout[i:], i


def _conv1d_as_conv2d(bb, call):
    """A conv1d as a conv2d over one row (Relay's legalization does the same): data and kernel
    gain an H axis of extent 1 before W (``expand_dims``), the result loses it (``squeeze``).
    conv2d has the native conv schedules (GEMM, direct, depthwise); the conv1d compute lowered
    to a plain loop nest (Whisper's 128-channel stride-2 conv over 200 frames: 4.1 ms so,
    0.1-0.2 ms as a conv2d, one thread). A constant kernel is reshaped here."""
    a = call.attrs
    data_layout, data_axis = _row_layout(a.data_layout)
    kernel_layout, kernel_axis = _row_layout(a.kernel_layout)
    out_layout, out_axis = _row_layout(a.out_layout or a.data_layout)
    x = _emit_legalized(bb, _manip.expand_dims(call.args[0], data_axis))
    w = call.args[1]
    if isinstance(w, Constant):
        w = const(np.ascontiguousarray(np.expand_dims(w.data.numpy(), kernel_axis)))
    else:
        w = _emit_legalized(bb, _manip.expand_dims(w, kernel_axis))
    (left, right), (stride,), (dilation,) = ((int(v) for v in t) for t in
                                             (a.padding, a.strides, a.dilation))
    y = _emit_legalized(bb, conv2d(x, w, [1, stride], [0, left, 0, right], [1, dilation],
                                   int(a.groups), data_layout, kernel_layout, out_layout,
                                   out_dtype(call)))
    squeeze = bb.normalize(_manip.squeeze(y, [out_axis]))
    return get_legalize(squeeze.op)(bb, squeeze)


def _by_dilation_phases(bb, call):
    """A dilated NCHW/OIHW 3x3 conv2d as one undilated conv over its dilation phases
    (``topi.dilated_phases``, as Relay's Legalize does), or None. The phases are image-major:
    with a symbolic batch ``n`` the conv's batch is ``n*dh*dw`` and every other kernel still
    computes each image from that image alone, so all of them run their static per-image
    schedules (``schedule.batch_loop``), the phase conv on Winograd's."""
    a = call.attrs
    if a.data_layout != "NCHW" or a.kernel_layout != "OIHW" or \
            (a.out_layout or "NCHW") != "NCHW":
        return None
    data, result = arg_shape(call, 0), out_shape(call)
    plan = dilated_phases.phase_plan(data, arg_shape(call, 1), a.strides, a.padding, a.dilation,
                                     a.groups, arg_dtype(call, 0), out_dtype(call))
    if plan is None or not all(isinstance(d, IntImm) for d in result[1:]):
        return None
    (dh, dw), pads = plan
    n = data[0] if not isinstance(data[0], IntImm) else int(data[0])
    c, h, w = (int(d) for d in data[1:])
    o, oh, ow = (int(d) for d in result[1:])

    def emit(expr):
        return _emit_legalized(bb, expr)

    x = emit(_manip.reshape(call.args[0], (n, c, h // dh, dh, w // dw, dw)))
    x = emit(_manip.permute_dims(x, list(dilated_phases.PHASE_AXES)))
    x = emit(_manip.reshape(x, (n * (dh * dw), c, h // dh, w // dw)))
    y = emit(conv2d(x, call.args[1], padding=pads, out_dtype=out_dtype(call)))
    y = emit(_manip.reshape(y, (n, dh, dw, o, oh // dh, ow // dw)))
    y = emit(_manip.permute_dims(y, list(dilated_phases.UNPHASE_AXES)))
    return emit(_manip.reshape(y, (n, o, oh, ow)))


register_legalize("relax.nn.conv1d", _conv("conv1d"))
register_legalize("relax.nn.conv2d", _conv("conv2d"))


def _conv_transpose(name: str, data_layout: str, kernel_layout: str):
    def legalize(bb, call):
        a = call.attrs
        if a.data_layout != data_layout or a.kernel_layout != kernel_layout or \
                (a.out_layout or data_layout) != data_layout:
            warnings.warn(f"LegalizeOps: {name} is lowered for {data_layout}/{kernel_layout} "
                          f"only; a call with {a.data_layout}/{a.kernel_layout} is left as it "
                          "is", stacklevel=2)
            return call
        call = tie_channels(bb, call, transpose=True)
        shape, dtype = out_shape(call), out_dtype(call)
        if name == "conv1d_transpose":
            return _conv1d_transpose_as_2d(bb, call)
        if name == "conv2d_transpose":
            out = _by_phases(bb, call)
            if out is not None:
                return out
        return call_topi(bb, lambda x, w: nn_te.conv_transpose(
            x, w, list(a.strides), list(a.padding), list(a.output_padding), list(a.dilation),
            int(a.groups), shape, dtype), call.args[0], call.args[1], name=name)

    return legalize


def _conv1d_transpose_as_2d(bb, call):
    """An NCW/IOW conv1d_transpose as a conv2d_transpose over one row (data and kernel gain an
    H axis of extent 1, the result loses it), which ``_by_phases`` turns into native conv2ds.
    Through the direct gather of ``nn_te.conv_transpose`` Conv-TasNet's decoder (64 -> 1
    channels, 16 taps, stride 8, 999 frames to 8000 samples, two sources) took 9.8 ms a
    source, over 70% of the model run."""
    a = call.attrs
    x = _emit_legalized(bb, _manip.expand_dims(call.args[0], 2))
    w = call.args[1]
    if isinstance(w, Constant):
        w = const(np.ascontiguousarray(np.expand_dims(w.data.numpy(), 2)))
    else:
        w = _emit_legalized(bb, _manip.expand_dims(w, 2))
    (left, right), (stride,), (dilation,), (extra,) = ((int(v) for v in t) for t in (
        a.padding, a.strides, a.dilation, a.output_padding))
    y = _emit_legalized(bb, conv2d_transpose(x, w, strides=(1, stride),
                                             padding=(0, left, 0, right),
                                             output_padding=(0, extra), dilation=(1, dilation),
                                             groups=int(a.groups), out_dtype=out_dtype(call)))
    squeeze = bb.normalize(_manip.squeeze(y, [2]))
    return get_legalize(squeeze.op)(bb, squeeze)


register_legalize("relax.nn.conv1d_transpose",
                  _conv_transpose("conv1d_transpose", "NCW", "IOW"))
register_legalize("relax.nn.conv2d_transpose",
                  _conv_transpose("conv2d_transpose", "NCHW", "IOHW"))


@register_legalize("relax.nn.conv3d_transpose")
def _conv3d_transpose(bb, call):
    a = call.attrs
    if a.data_layout != "NCDHW" or a.kernel_layout != "IODHW" or \
            (a.out_layout or "NCDHW") != "NCDHW":
        warnings.warn(f"LegalizeOps: conv3d_transpose is lowered for NCDHW/IODHW only; a call "
                      f"with {a.data_layout}/{a.kernel_layout} is left as it is", stacklevel=2)
        return call
    call = tie_channels(bb, call, transpose=True)
    out = _by_depth_phases(bb, call)
    if out is not None:
        return out
    shape, dtype = out_shape(call), out_dtype(call)
    return call_topi(bb, lambda x, w: nn_te.conv_transpose(
        x, w, list(a.strides), list(a.padding), list(a.output_padding), list(a.dilation),
        int(a.groups), shape, dtype), call.args[0], call.args[1], name="conv3d_transpose")


def _by_depth_phases(bb, call):
    """An NCDHW/IODHW conv3d_transpose as one conv2d_transpose per output depth phase (each
    legalized onto conv2d phases by ``_by_phases``), as Relay's ``legalize_conv3d_transpose``
    does: phase ``r``'s ``T`` depth taps gathered into the channels and the depth folded into
    the batch ``(N*QD, C*T, H, W)``, the weight ``(C*T, O/groups, KH, KW)``, the phases
    interleaved along the depth and the result transposed back. None for a symbolic size other
    than the batch. At one thread, 32->16 channels 2x2x2 stride 2 at 8x16x16 took 29.4 ms
    through the gather and takes 0.40 ms (ONNX Runtime 0.53 ms)."""
    a = call.attrs
    data, kernel, result = arg_shape(call, 0), arg_shape(call, 1), out_shape(call)
    if not all(isinstance(d, IntImm) for d in [*data[1:], *kernel, *result[1:]]):
        return None
    n = data[0] if not isinstance(data[0], IntImm) else int(data[0])
    (c, d, h, w), (_, og, kd, kh, kw), (o, od, oh, ow) = (
        [int(v) for v in ds] for ds in (data[1:], kernel, result[1:]))
    groups = int(a.groups)
    (sd, sh, sw), (dd, dh, dw) = ((int(v) for v in t) for t in (a.strides, a.dilation))
    pad = [int(v) for v in a.padding]
    pad = pad * 6 if len(pad) == 1 else pad * 2 if len(pad) == 3 else pad
    qd, step = phase_rows(sd, od), phase_dilation(sd, dd)
    x, weight = call.args
    dtype = out_dtype(call)

    def emit(expr):
        return _emit_legalized(bb, expr)

    def phase(ph):
        if not ph.taps:
            return emit(_create.zeros((n, qd, o, oh, ow), dtype))
        t = len(ph.taps)
        v = x
        if ph.before < 0 or ph.after < 0:  # (padding past the filter: input depths cropped)
            v = emit(_index.strided_slice(v, [2], [max(0, -ph.before)],
                                          [d - max(0, -ph.after)]))
        if ph.before > 0 or ph.after > 0:
            v = emit(_nn.pad(v, [0, 0, 0, 0, max(0, ph.before), max(0, ph.after), 0, 0, 0, 0]))
        if t == 1:  # (the padded depth is qd long)
            v = emit(_manip.reshape(v, (n, c, 1, qd, h, w)))
        else:  # (N, C, T, QD, H, W): tap k reads input depths k*step + [0, qd)
            v = emit(_manip_extra.stack([emit(_index.strided_slice(
                v, [2], [k * step], [k * step + qd])) for k in range(t)], axis=2))
        v = emit(_manip.permute_dims(v, [0, 3, 1, 2, 4, 5]))
        v = emit(_manip.reshape(v, (n * qd, c * t, h, w)))
        if isinstance(weight, Constant):
            k = weight.data.numpy()[:, :, ph.taps].transpose(0, 2, 1, 3, 4)
            k = const(np.ascontiguousarray(k.reshape(c * t, og, kh, kw)))
        else:
            k = emit(take(weight, const(np.array(ph.taps, "int64")), axis=2))
            k = emit(_manip.permute_dims(k, [0, 2, 1, 3, 4]))
            k = emit(_manip.reshape(k, (c * t, og, kh, kw)))
        y = emit(conv2d_transpose(v, k, strides=(sh, sw), padding=(pad[1], pad[2], pad[4],
                                                                   pad[5]),
                                  output_padding=tuple(int(p) for p in a.output_padding[1:]),
                                  dilation=(dh, dw), groups=groups, out_dtype=dtype))
        return emit(_manip.reshape(y, (n, qd, o, oh, ow)))

    parts = [phase(ph) for ph in phases(sd, pad[0], kd, d, od, dd)]
    y = parts[0] if sd == 1 else emit(_manip.reshape(
        emit(_manip_extra.stack(parts, axis=2)), (n, qd * sd, o, oh, ow)))
    if qd * sd != od:  # the last phases' extra depth
        y = emit(_index.strided_slice(y, [1], [0], [od]))
    return emit(_manip.permute_dims(y, [0, 2, 1, 3, 4]))


def _emit_legalized(bb, call):
    """``call`` (a Relax op call) bound through its own legalization (not visited again)."""
    call = bb.normalize(call)
    return bb.emit(get_legalize(call.op)(bb, call))


def _by_phases(bb, call):
    """An NCHW/IOHW conv2d_transpose (any stride, dilation, groups) as one conv2d per output
    phase, interleaved (None for a symbolic size other than the batch, which the zeros and
    reshapes carry as the expression it is)."""
    a = call.attrs
    data, kernel, result = arg_shape(call, 0), arg_shape(call, 1), out_shape(call)
    if not all(isinstance(d, IntImm) for d in [*data[1:], *kernel, *result[1:]]):
        return None
    n = data[0] if not isinstance(data[0], IntImm) else int(data[0])
    (c, h, w), (_, og, kh, kw), (o, oh, ow) = (
        [int(d) for d in ds] for ds in (data[1:], kernel, result[1:]))
    groups = int(a.groups)
    (sh, sw), (dh, dw) = ((int(v) for v in t) for t in (a.strides, a.dilation))
    pt, pl = (int(v) for v in a.padding[:2])
    rows, cols = phases(sh, pt, kh, h, oh, dh), phases(sw, pl, kw, w, ow, dw)
    qh, qw = phase_rows(sh, oh), phase_rows(sw, ow)
    dilation = phase_dilation(sh, dh), phase_dilation(sw, dw)
    x, weight = call.args
    dtype = out_dtype(call)
    cropped = {}  # the input without the rows and columns the padding reaches past, by crop

    def phase(ty, tx):
        if not ty.taps or not tx.taps:
            return _emit_legalized(bb, _create.zeros((n, o, qh, qw), dtype))
        size = len(ty.taps), len(tx.taps)
        if isinstance(weight, Constant):  # the filter slice, here
            k = const(regroup_weight(weight.data.numpy()[:, :, ty.taps][:, :, :, tx.taps],
                                     groups))
        else:  # sliced at each call
            k = _emit_legalized(bb, take(weight, const(np.array(ty.taps, "int64")), axis=2))
            k = _emit_legalized(bb, take(k, const(np.array(tx.taps, "int64")), axis=3))
            k = _regrouped(bb, k, groups, c, og, size)
        pads = ty.before, tx.before, ty.after, tx.after
        crop = tuple(max(0, -p) for p in pads)
        data = x
        if any(crop):
            if crop not in cropped:
                cropped[crop] = _emit_legalized(bb, _index.strided_slice(
                    x, [2, 3], [crop[0], crop[1]], [h - crop[2], w - crop[3]]))
            data = cropped[crop]
        dil = tuple(d if s > 1 else 1 for d, s in zip(dilation, size, strict=True))
        return _emit_legalized(bb, conv2d(data, k, padding=tuple(max(0, p) for p in pads),
                                          dilation=dil, groups=groups, out_dtype=dtype))

    def interleave(parts, axis, shape):
        if len(parts) == 1:
            return parts[0]
        stacked = _emit_legalized(bb, _manip_extra.stack(parts, axis=axis))
        return _emit_legalized(bb, _manip.reshape(stacked, shape))

    lines = [interleave([phase(ty, tx) for tx in cols], 4, (n, o, qh, qw * sw)) for ty in rows]
    out = interleave(lines, 3, (n, o, qh * sh, qw * sw))
    if (qh * sh, qw * sw) != (oh, ow):  # the last phases' extra row or column
        out = _emit_legalized(bb, _index.strided_slice(out, [2, 3], [0, 0], [oh, ow]))
    return out


def _regrouped(bb, k, groups: int, c: int, og: int, size):
    """The ``(in, out/groups, kh, kw)`` filter slice ``k`` in conv2d's ``(out, in/groups, kh,
    kw)`` layout, bound (``topi.conv_transpose_phases.regroup_weight``)."""
    if groups == 1:
        return _emit_legalized(bb, _manip.permute_dims(k, [1, 0, 2, 3]))
    cg = c // groups
    if cg == 1 and og == 1:  # depthwise, one output channel per input: already so
        return k
    if cg == 1 or og == 1:  # the swapped axes have one of size 1: a reshape
        return _emit_legalized(bb, _manip.reshape(k, (groups * og, cg, *size)))
    k = _emit_legalized(bb, _manip.reshape(k, (groups, cg, og, *size)))
    k = _emit_legalized(bb, _manip.permute_dims(k, [0, 2, 1, 3, 4]))
    return _emit_legalized(bb, _manip.reshape(k, (groups * og, cg, *size)))
