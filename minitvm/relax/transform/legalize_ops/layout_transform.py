"""Legalization of ``relax.layout_transform`` onto one te compute: each output element reads
the input at the inverse of the index map, or is ``pad_value`` (zero when unset) where the
inverse falls outside the input (the padding a non-dividing split adds)."""

from __future__ import annotations

from .... import te
from ....arith import Analyzer
from ....ir.prim_expr import FloatImm, IntImm
from ....tir import op as tir_op
from ....tir.stmt_functor import substitute
from ...expr import PrimValue
from .common import LegalizeError, call_topi, out_dtype, out_shape, register_legalize

__all__: list[str] = []


def _pad_expr(call, dtype: str):
    pad = call.attrs.pad_value
    v = pad.value if isinstance(pad, PrimValue) else pad
    if v is None:
        return FloatImm(dtype, 0.0) if "float" in dtype else IntImm(dtype, 0)
    if isinstance(v, (IntImm, FloatImm)):
        v = v.value
    return FloatImm(dtype, float(v)) if "float" in dtype else IntImm(dtype, int(v))


@register_legalize("relax.layout_transform")
def _layout_transform(bb, call):
    a = call.attrs
    if list(a.axis_separators or []) or list(a.input_axis_separators or []):
        raise LegalizeError("relax.layout_transform: axis_separators / input_axis_separators "
                            "(multi-dimensional physical buffers) are not supported by its "
                            "legalization")
    imap = a.index_map
    shape = out_shape(call)
    dtype = out_dtype(call)
    pad = _pad_expr(call, dtype)

    def te_layout_transform(x):
        try:
            inv, pred = imap.non_surjective_inverse(list(x.shape), Analyzer())
        except ValueError as err:
            raise LegalizeError(f"relax.layout_transform: {err}") from None
        padded = not (isinstance(pred, IntImm) and not pred.value)

        def body(*idx):
            vmap = dict(zip(inv.initial_indices, idx))
            src = [substitute(e, vmap) for e in inv.final_indices]
            load = x[tuple(src)]
            if not padded:
                return load
            return tir_op.if_then_else(substitute(pred, vmap), pad, load)

        return te.compute(shape, body, name="te_layout_transform")

    return call_topi(bb, te_layout_transform, call.args[0], name="te_layout_transform")
