"""``R.call_tir_inplace(gvar, args, inplace_indices, out_sinfo, tir_vars=None)``: call a
PrimFunc that writes some of its outputs into its own arguments. Output ``i`` is argument
``inplace_indices[i]`` (overwritten), or a fresh tensor when the index is -1; the PrimFunc
takes the arguments, then only the fresh outputs, then the ``tir_vars``. Pure, as in TVM: an
argument written in place must not be used after the call."""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.structural import structural_equal
from ..expr import Call, Expr, ShapeExpr, Tuple
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from ._common import fail
from .base import _args_tuple, _out_sinfo, register_op_rule
from .call_inplace import CallInplaceAttrs

__all__ = ["call_tir_inplace"]


def _infer_call_tir_inplace(call: Call, ctx) -> StructInfo:
    if len(call.sinfo_args) != 1:
        fail(call, f"expects exactly one output struct info in sinfo_args, got "
                   f"{len(call.sinfo_args)}")
    if len(call.args) not in (2, 3):
        fail(call, f"expects 2 or 3 arguments (callee, args tuple[, tir_vars]), got "
                   f"{len(call.args)}")
    out = call.sinfo_args[0]
    outs = list(out.fields) if isinstance(out, TupleStructInfo) else [out]
    idx = [int(i) for i in call.attrs.inplace_indices] if call.attrs is not None else []
    if len(idx) != len(outs):
        fail(call, f"has {len(outs)} output(s) but {len(idx)} inplace_indices {idx}")
    args = call.args[1]
    fields = list(args.fields) if isinstance(args, Tuple) else None
    used: set = set()
    for k, i in enumerate(idx):
        if i == -1:
            continue
        if fields is not None and not 0 <= i < len(fields):
            fail(call, f"inplace index {i} is out of range for {len(fields)} argument(s)")
        if i in used:
            fail(call, f"inplace index {i} is used for more than one output")
        used.add(i)
        if fields is not None:
            a = fields[i].struct_info_
            if isinstance(a, TensorStructInfo) and isinstance(outs[k], TensorStructInfo) and \
                    not _same_tensor(a, outs[k]):
                fail(call, f"output {k} is written into argument {i}, whose struct info {a} "
                           f"differs from the output's {outs[k]}")
    if not used:
        fail(call, "needs at least one in-place output (an index other than -1); use "
                   "call_tir otherwise")
    return out


def _same_tensor(a: TensorStructInfo, b: TensorStructInfo) -> bool:
    if a.dtype != b.dtype or a.ndim != b.ndim:
        return False
    if isinstance(a.shape, ShapeExpr) and isinstance(b.shape, ShapeExpr):
        return structural_equal(a.shape, b.shape)
    return True


register_op_rule("relax.call_tir_inplace", _infer_call_tir_inplace,
                 arguments=("func", "args", "packed_ints"), attrs_type=CallInplaceAttrs,
                 description="call a PrimFunc that writes outputs into its arguments")


def call_tir_inplace(gvar: GlobalVar, args, inplace_indices: int | Sequence[int],
                     out_sinfo, tir_vars=None) -> Call:
    """Call PrimFunc ``gvar`` on ``args``; output ``i`` is written into argument
    ``inplace_indices[i]`` (-1: a fresh output allocated from ``out_sinfo``)."""
    if not isinstance(gvar, GlobalVar):
        raise TypeError(f"call_tir_inplace expects a GlobalVar callee, got "
                        f"{type(gvar).__name__}")
    if isinstance(inplace_indices, int):
        inplace_indices = [inplace_indices]
    call_args = [gvar, _args_tuple(args)]
    if tir_vars is not None:
        call_args.append(tir_vars if isinstance(tir_vars, Expr) else ShapeExpr(tir_vars))
    return Call(Op.get("relax.call_tir_inplace"), call_args,
                CallInplaceAttrs(inplace_indices=tuple(int(i) for i in inplace_indices)),
                [_out_sinfo(out_sinfo, "call_tir_inplace")])
