"""Legalization of the data-movement ops: permute_dims, reshape, flatten, expand_dims, squeeze,
concat, split, broadcast_to, repeat (``topi.transpose``, ``topi.reshape``...)."""

from __future__ import annotations

from ....topi import broadcast as topi_bcast
from ....topi import manipulation as topi_manip
from ...expr import Tuple, TupleGetItem
from .common import arg_shape, call_topi, out_shape, register_legalize

__all__ = ["CONCAT_AXIS_ATTR"]

CONCAT_AXIS_ATTR = "minitvm.concat_axis"  # a concatenation kernel's axis (PrimFunc attr)


@register_legalize("relax.permute_dims")
def _permute_dims(bb, call):
    axes = call.attrs.axes
    axes = None if axes is None else [int(a) for a in axes]
    return call_topi(bb, lambda x: topi_manip.transpose(x, axes), call.args[0], name="transpose")


def _reshape_to(bb, call, name="reshape"):
    shape = out_shape(call)
    x = _size_checked(bb, call.args[0], shape, name)
    return call_topi(bb, lambda x: topi_manip.reshape(x, shape), x, name=name)


def _size_checked(bb, x, shape, name):
    """``x``, passed through a run-time element-count check first when the sizes of ``x`` and
    the target ``shape`` cannot be proved equal (a shape given as an argument): the fused
    kernel indexes ``x`` with the target shape, so a larger one would read out of bounds."""
    from ....tir import expr as T
    from ...expr import ShapeExpr
    from ...op.base import call_pure_packed
    from ..lower_utils import simplify

    sinfo = x.struct_info
    if getattr(sinfo, "shape", None) is None or not hasattr(sinfo.shape, "values"):
        return x
    src = list(sinfo.shape.values)

    def prod(dims):
        p = T.IntImm("int64", 1)
        for d in dims:
            p = p * (d if d.dtype == "int64" else T.Cast("int64", d))
        return p

    try:
        diff = simplify(prod(src) - prod(shape))
    except Exception:  # an expression the analyzer cannot take: check at run time
        diff = None
    if isinstance(diff, T.IntImm) and diff.value == 0:
        return x
    return bb.emit(call_pure_packed("vm.builtin.check_reshape", x, ShapeExpr(shape),
                                    sinfo_args=sinfo), name_hint=f"{name}_checked")


register_legalize("relax.reshape", _reshape_to)
register_legalize("relax.flatten", _reshape_to)


@register_legalize("relax.expand_dims")
def _expand_dims(bb, call):
    axes = [int(a) for a in call.attrs.axis]
    return call_topi(bb, lambda x: topi_manip.expand_dims(x, axes), call.args[0],
                     name="expand_dims")


@register_legalize("relax.squeeze")
def _squeeze(bb, call):
    axis = call.attrs.axis
    axes = None if axis is None else [int(a) for a in axis]
    return call_topi(bb, lambda x: topi_manip.squeeze(x, axes), call.args[0], name="squeeze")


def _tensor_fields(bb, tup):
    """The fields of a tuple argument (a tuple value is split with TupleGetItem first)."""
    if isinstance(tup, Tuple):
        return list(tup.fields)
    n = len(tup.struct_info.fields)
    return [bb.emit(TupleGetItem(tup, k)) for k in range(n)]


@register_legalize("relax.concat")
def _concat(bb, call):
    fields = _tensor_fields(bb, call.args[0])
    axis = int(call.attrs.axis) if call.attrs.axis is not None else 0
    # marked for the VM's native entry, which may run it in place (its parts written into it)
    nd = len(out_shape(call))
    return call_topi(bb, lambda xs: topi_manip.concatenate(xs, axis), fields, name="concatenate",
                     primfunc_attrs={CONCAT_AXIS_ATTR: axis % nd})


@register_legalize("relax.split")
def _split(bb, call):
    axis = int(call.attrs.axis)
    nd = len(arg_shape(call, 0))
    axis %= nd
    n_out = len(call.struct_info.fields)
    pos, cuts = None, []
    for k in range(n_out - 1):
        size = out_shape(call, k)[axis]
        pos = size if pos is None else pos + size
        cuts.append(pos)
    from ....arith import Analyzer

    ana = Analyzer()
    cuts = [ana.simplify(c) for c in cuts]
    ios, length = call.attrs.indices_or_sections, arg_shape(call, 0)[axis]
    if isinstance(ios, tuple) and all(isinstance(v, int) for v in ios) and hasattr(
            length, "value"):  # (known indices: each piece starts at its own, clamped)
        starts = [min(max(int(v), 0), length.value) for v in ios]
        sizes = [out_shape(call, k)[axis] for k in range(n_out)]
        return call_topi(bb, lambda x: topi_manip.split(x, starts, axis, sizes), call.args[0],
                         name="split")
    return call_topi(bb, lambda x: topi_manip.split(x, cuts, axis), call.args[0], name="split")


@register_legalize("relax.broadcast_to")
def _broadcast_to(bb, call):
    shape = out_shape(call)
    return call_topi(bb, lambda x: topi_bcast.broadcast_to(x, shape), call.args[0],
                     name="broadcast_to")


@register_legalize("relax.repeat")
def _repeat(bb, call):
    reps, axis = int(call.attrs.repeats), call.attrs.axis
    axis = None if axis is None else int(axis)
    return call_topi(bb, lambda x: topi_manip.repeat(x, reps, axis), call.args[0], name="repeat")
