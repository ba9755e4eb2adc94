"""Legalization of ``nn.conv1d`` / ``nn.conv2d`` (any layout letters, groups, dilation) and
``nn.conv1d_transpose`` / ``nn.conv2d_transpose`` (NC[H]W data, IO[H]W kernels).

A strided ``nn.conv2d_transpose`` with one group and no dilation becomes one ``nn.conv2d`` per
output phase (``topi.conv_transpose_phases``), interleaved by ``stack`` and ``reshape``, each
legalized in turn: the convs then take the native conv schedules. A constant weight is sliced
here; another is sliced by ``take`` at each call. Through the direct gather of
``nn_te.conv_transpose`` a 256 -> 128 channel 4x4 stride-2 layer at 16x16 took 170 ms; so it
takes 1.4 ms. The other transposed convs keep the gather."""

from __future__ import annotations

import warnings

import numpy as np

from ....ir.prim_expr import IntImm
from ....topi import nn_te
from ....topi.conv_transpose_phases import phases
from ...expr import Constant, const
from ...op import manipulate as _manip
from ...op import manipulate_extra as _manip_extra
from ...op.index import take
from ...op.nn.convolution import conv2d
from .common import arg_shape, call_topi, get_legalize, out_dtype, out_shape, register_legalize

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


def _conv(name: str):
    spatial = "W" if name == "conv1d" else "HW"

    def legalize(bb, call):
        a = call.attrs
        if not _plain_layouts(call, spatial):
            return call
        dtype = out_dtype(call)
        return call_topi(bb, lambda x, w: nn_te.conv(
            x, w, list(a.strides), list(a.padding), list(a.dilation), int(a.groups),
            a.data_layout, a.kernel_layout, a.out_layout or a.data_layout, dtype),
            call.args[0], call.args[1], name=name)

    return legalize


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
        shape, dtype = out_shape(call), out_dtype(call)
        if name == "conv2d_transpose":
            out = _by_phases(bb, call)
            if out is not None:
                return out
        return call_topi(bb, lambda x, w: nn_te.conv_transpose(
            x, w, list(a.strides), list(a.padding), list(a.output_padding), list(a.dilation),
            int(a.groups), shape, dtype), call.args[0], call.args[1], name=name)

    return legalize


register_legalize("relax.nn.conv1d_transpose",
                  _conv_transpose("conv1d_transpose", "NCW", "IOW"))
register_legalize("relax.nn.conv2d_transpose",
                  _conv_transpose("conv2d_transpose", "NCHW", "IOHW"))


def _emit_legalized(bb, call):
    """``call`` (a Relax op call) bound through its own legalization (not visited again)."""
    call = bb.normalize(call)
    return bb.emit(get_legalize(call.op)(bb, call))


def _by_phases(bb, call):
    """A strided NCHW/IOHW conv2d_transpose as one conv2d per output phase, interleaved (None
    where that does not apply: a group or dilation, a symbolic size, unequal phases)."""
    a = call.attrs
    if int(a.groups) != 1 or any(int(d) != 1 for d in a.dilation):
        return None
    dims = [arg_shape(call, 0), arg_shape(call, 1), out_shape(call)]
    if not all(isinstance(d, IntImm) for ds in dims for d in ds):
        return None
    (n, _, h, w), (_, o, kh, kw), (_, _, oh, ow) = ([int(d) for d in ds] for ds in dims)
    sh, sw = (int(v) for v in a.strides)
    pt, pl = (int(v) for v in a.padding[:2])
    rows, cols = phases(sh, pt, kh, h, oh), phases(sw, pl, kw, w, ow)
    if rows is None or cols is None:
        return None
    x, weight = call.args
    dtype = out_dtype(call)

    def phase(ty, tx):
        (taps_y, top, bottom), (taps_x, left, right) = ty, tx
        if isinstance(weight, Constant):  # the filter slice, here
            k = const(np.ascontiguousarray(weight.data.numpy()[:, :, taps_y][:, :, :, taps_x]
                                           .transpose(1, 0, 2, 3)))
        else:  # sliced at each call
            k = _emit_legalized(bb, take(weight, const(np.array(taps_y, "int64")), axis=2))
            k = _emit_legalized(bb, take(k, const(np.array(taps_x, "int64")), axis=3))
            k = _emit_legalized(bb, _manip.permute_dims(k, [1, 0, 2, 3]))
        return _emit_legalized(bb, conv2d(x, k, padding=(top, left, bottom, right),
                                          out_dtype=dtype))

    def interleave(parts, axis, shape):
        if len(parts) == 1:
            return parts[0]
        stacked = _emit_legalized(bb, _manip_extra.stack(parts, axis=axis))
        return _emit_legalized(bb, _manip.reshape(stacked, shape))

    lines = [interleave([phase(ty, tx) for tx in cols], 4, (n, o, oh // sh, ow)) for ty in rows]
    return interleave(lines, 3, (n, o, oh, ow))
