"""LowerAllocTensor (TVM's ``relax.transform.LowerAllocTensor``): every allocation memory
planning left as ``R.builtin.alloc_tensor`` (outputs, tensors that escape) gets a storage of its
own: ``R.memory.alloc_storage`` of its byte size, then ``R.memory.alloc_tensor`` at offset 0."""

from __future__ import annotations

from ...ir.op import Op
from ...ir.prim_expr import IntImm
from ..expr import Call, Function, PrimValue, ShapeExpr, StringImm, Var, VarBinding
from ..op import memory
from .lower_utils import (
    Namer,
    dtype_bytes,
    function_rewrite_pass,
    normalized,
    rewrite_function_seqs,
    simplify,
)
from .utils import register

__all__ = ["LowerAllocTensor", "lower_alloc_tensor"]


def lower_alloc_tensor(func: Function, mod=None) -> tuple[Function, int]:
    """``func`` with each builtin.alloc_tensor as alloc_storage + alloc_tensor; and the count."""
    namer = Namer(func)
    count = 0

    def rewrite(bindings, body, _top):
        nonlocal count
        out = []
        for b in bindings:
            v = b.value
            if not (isinstance(b, VarBinding) and isinstance(v, Call) and isinstance(v.op, Op)
                    and v.op.name == "relax.builtin.alloc_tensor"):
                out.append(b)
                continue
            shape, dtype = v.args[0], v.args[1]
            if not isinstance(shape, ShapeExpr):
                raise ValueError(f"LowerAllocTensor: {b.var.name_hint!r} is allocated with a "
                                 "shape that is not a literal R.shape([...])")
            size = IntImm("int64", dtype_bytes(dtype.value))
            for d in shape.values:
                size = size * d
            device = v.args[2] if len(v.args) > 2 else PrimValue(0)
            scope = v.args[3] if len(v.args) > 3 else StringImm("global")
            s = normalized(memory.alloc_storage(ShapeExpr([simplify(size)]), device, scope,
                                                dtype), mod)
            sv = Var(namer.fresh("storage"), s.struct_info)
            out.append(VarBinding(sv, s))
            t = normalized(memory.alloc_tensor(sv, 0, shape, dtype), mod)
            out.append(VarBinding(b.var, t, b.span))
            count += 1
        return out, body

    new = rewrite_function_seqs(func, rewrite)
    return (new if count else func), count


@register("LowerAllocTensor")
def LowerAllocTensor():  # noqa: N802 - TVM's name
    """Module pass (opt 0): the remaining builtin.alloc_tensor calls get their own storage."""
    return function_rewrite_pass(lower_alloc_tensor, "LowerAllocTensor", "allocations lowered")
