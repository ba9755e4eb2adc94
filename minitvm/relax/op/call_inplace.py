"""``call_inplace_packed``: call a packed function that writes some results into its own
arguments (``inplace_indices[i]`` is the argument output ``i`` reuses, -1 for a fresh one).
The call counts as pure, as in TVM: the arguments it overwrites must not be used afterwards."""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.op import Op
from ..expr import Call, Expr, ExternFunc
from ..struct_info import StructInfo, TupleStructInfo
from ._common import fail
from .base import register_op_rule
from .op_attrs import _attrs as _make_attrs

__all__ = ["call_inplace_packed", "CallInplaceAttrs"]

CallInplaceAttrs = _make_attrs("CallInplaceAttrs", [("inplace_indices", ())],
                               "Attributes of call_inplace_packed / call_tir_inplace.")
CallInplaceAttrs.__module__ = __name__


def _infer_call_inplace_packed(call: Call, ctx) -> StructInfo:
    if not call.args:
        fail(call, "expects the packed function as its first argument")
    if len(call.sinfo_args) != 1:
        fail(call, f"expects one sinfo_args entry (the result), got {len(call.sinfo_args)}")
    out = call.sinfo_args[0]
    n_out = len(out.fields) if isinstance(out, TupleStructInfo) else 1
    idx = [int(i) for i in call.attrs.inplace_indices]
    if len(idx) != n_out:
        fail(call, f"has {n_out} output(s) but {len(idx)} inplace_indices {idx}")
    n_args = len(call.args) - 1
    used = set()
    for i in idx:
        if i == -1:
            continue
        if not 0 <= i < n_args:
            fail(call, f"inplace index {i} is out of range for {n_args} argument(s)")
        if i in used:
            fail(call, f"inplace index {i} is used for more than one output")
        used.add(i)
    if not used:
        fail(call, "needs at least one in-place output (an index other than -1); use "
                   "call_pure_packed otherwise")
    return out


register_op_rule("relax.call_inplace_packed", _infer_call_inplace_packed,
                 arguments=("func", "args"), attrs_type=CallInplaceAttrs)


def call_inplace_packed(func: str | ExternFunc, *args: Expr,
                        inplace_indices: int | Sequence[int],
                        sinfo_args: StructInfo | Sequence[StructInfo]) -> Call:
    """Call packed ``func`` on ``args``; output ``i`` is written into argument
    ``inplace_indices[i]``. ``sinfo_args`` is the struct info of the result."""
    if isinstance(func, str):
        func = ExternFunc(func)
    if isinstance(inplace_indices, int):
        inplace_indices = [inplace_indices]
    if isinstance(sinfo_args, StructInfo):
        sinfo_args = [sinfo_args]
    sinfo_args = list(sinfo_args)
    if len(sinfo_args) > 1:
        sinfo_args = [TupleStructInfo(sinfo_args)]
    return Call(Op.get("relax.call_inplace_packed"), [func, *args],
                CallInplaceAttrs(inplace_indices=tuple(int(i) for i in inplace_indices)),
                sinfo_args)
