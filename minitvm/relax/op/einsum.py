"""``einsum``: Einstein summation over a tuple of tensors (TVM's ``EinsumAttrs``:
subscripts). Labelled dims must agree across operands; ellipsis dims broadcast."""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.op import Op, OpPattern
from ...topi.einsum import parse_einsum
from ..expr import Call, Expr, Tuple
from ..struct_info import StructInfo
from ._common import (
    UNKNOWN_NDIM,
    broadcast_shapes,
    fail,
    fmt_dim,
    fmt_sinfo,
    is_const,
    make_tensor,
    prove_not_equal,
    shape_values,
    tuple_tensor_fields,
)
from .base import register_op_rule
from .op_attrs import _attrs as _make_attrs

__all__ = ["einsum", "EinsumAttrs"]

EinsumAttrs = _make_attrs("EinsumAttrs", [("subscripts", "")], "Attributes of einsum.")
EinsumAttrs.__module__ = __name__


def _infer_einsum(call: Call, ctx) -> StructInfo:
    if len(call.args) != 1:
        fail(call, f"expects 1 argument (a tuple of tensors), got {len(call.args)}")
    xs = tuple_tensor_fields(call, 0)
    if not xs:
        fail(call, "expects at least one operand")
    dtype = xs[0].dtype
    for x in xs[1:]:
        if x.dtype != dtype and "void" not in (x.dtype, dtype):
            fail(call, f"operands must have one dtype, got {dtype} and {x.dtype}")
    try:
        spec = parse_einsum(str(call.attrs.subscripts), len(xs))
    except ValueError as err:
        fail(call, str(err).removeprefix("einsum: "))
    vdevice = xs[0].vdevice
    out_labels = spec.output
    for k, (x, labels) in enumerate(zip(xs, spec.inputs, strict=True)):
        named = len([c for c in labels if c != "..."])
        if x.ndim == UNKNOWN_NDIM:
            continue
        if ("..." in labels and x.ndim < named) or ("..." not in labels and x.ndim != named):
            fail(call, f"operand {k} {fmt_sinfo(x)} has {x.ndim} dims but its subscripts "
                       f"{''.join(labels)!r} name {named}")
    dims_of = [shape_values(x) for x in xs]
    if any(d is None for d in dims_of):
        if any(x.ndim == UNKNOWN_NDIM for x in xs) and "..." in out_labels:
            return make_tensor(None, dtype, UNKNOWN_NDIM, vdevice)
        ell = max((x.ndim - len(lb) + 1 for x, lb in zip(xs, spec.inputs, strict=True)
                   if "..." in lb and x.ndim != UNKNOWN_NDIM), default=0)
        ndim = len(out_labels) - (1 if "..." in out_labels else 0) + \
            (ell if "..." in out_labels else 0)
        return make_tensor(None, dtype, ndim, vdevice)
    label_dim: dict[str, object] = {}
    ell_shape: tuple = ()
    for k, (dims, labels) in enumerate(zip(dims_of, spec.inputs, strict=True)):
        n_ell = len(dims) - (len(labels) - 1) if "..." in labels else 0
        pos = 0
        for c in labels:
            if c == "...":
                sub = tuple(dims[pos:pos + n_ell])
                got = broadcast_shapes(call, ell_shape, sub, ctx)
                if got is None:
                    fail(call, f"the ellipsis dims {sub} of operand {k} do not broadcast with "
                               f"{ell_shape}")
                ell_shape = got
                pos += n_ell
                continue
            d = dims[pos]
            pos += 1
            prev = label_dim.get(c)
            if prev is None or is_const(prev, 1):
                label_dim[c] = d
            elif not is_const(d, 1) and prove_not_equal(prev, d, ctx):
                fail(call, f"label {c!r} is {fmt_dim(prev)} in one operand and {fmt_dim(d)} in "
                           f"operand {k} ({fmt_sinfo(xs[k])})")
    out = []
    for c in out_labels:
        if c == "...":
            out.extend(ell_shape)
        else:
            out.append(label_dim[c])
    return make_tensor(out, dtype, vdevice=vdevice)


register_op_rule("relax.einsum", _infer_einsum, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                 num_inputs=1, arguments=("operands",), attrs_type=EinsumAttrs)


def einsum(operands: Expr | Sequence[Expr], subscripts: str) -> Call:
    """Einstein summation of ``operands`` by ``subscripts`` (numpy's notation)."""
    if isinstance(operands, list | tuple):
        operands = Tuple(list(operands))
    return Call(Op.get("relax.einsum"), [operands], EinsumAttrs(subscripts=str(subscripts)))
