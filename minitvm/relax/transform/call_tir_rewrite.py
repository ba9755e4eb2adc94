"""CallTIRRewrite (TVM's ``relax.transform.CallTIRRewrite``): destination-passing calls made
explicit. ``lv = R.call_tir(cls.f, (x, w), out_sinfo=R.Tensor((n, 128), "float32"))`` becomes

    alloc = R.builtin.alloc_tensor(R.shape([n, 128]), R.dtype("float32"), R.prim_value(0),
                                   R.str("global"))
    _ = cls.f(x, w, alloc)
    lv = alloc

(a tuple of allocations for several outputs; ``tir_vars`` are passed last as a shape;
``call_dps_packed`` becomes ``R.call_packed`` of the function with the outputs appended;
``call_tir_inplace`` allocates only the outputs whose in-place index is -1, the others are
the arguments the PrimFunc writes).
The calls are impure, so the pass runs after ToNonDataflow in the build pipeline."""

from __future__ import annotations

from ...ir.op import Op
from ..expr import Call, ExternFunc, Function, ShapeExpr, Tuple, VarBinding
from ..struct_info import ObjectStructInfo, TensorStructInfo, TupleStructInfo
from .lower_utils import (
    AllocSinfo,
    Leaves,
    Namer,
    function_rewrite_pass,
    normalized,
    rewrite_function_seqs,
    typed_var,
)
from .utils import register

__all__ = ["CallTIRRewrite", "call_tir_rewrite"]

_DPS_OPS = frozenset({"relax.call_tir", "relax.call_dps_packed", "relax.call_tir_inplace"})


def _is_dps(value) -> bool:
    return isinstance(value, Call) and isinstance(value.op, Op) and value.op.name in _DPS_OPS


def call_tir_rewrite(func: Function, mod=None) -> tuple[Function, int]:
    """``func`` with every call_tir / call_dps_packed binding made explicit; and the count."""
    namer = Namer(func)
    leaves = Leaves()
    allocs_sinfo = AllocSinfo(mod)
    alloc_op = Op.get("relax.builtin.alloc_tensor")
    # one empty-tuple / opaque struct info for every kernel / packed call (not one each)
    kernel_sinfo, packed_sinfo = TupleStructInfo([]), ObjectStructInfo()
    device, scope = leaves.prim(0), leaves.string("global")
    count = 0

    def rewrite(bindings, body, _top):
        nonlocal count
        out = []
        for b in bindings:
            v = b.value
            if not isinstance(b, VarBinding) or not _is_dps(v):
                out.append(b)
                continue
            count += 1
            outs = v.sinfo_args[0]
            fields = list(outs.fields) if isinstance(outs, TupleStructInfo) else [outs]
            args = list(v.args[1].fields) if isinstance(v.args[1], Tuple) else [v.args[1]]
            inplace = [int(i) for i in v.attrs.inplace_indices] \
                if v.op.name == "relax.call_tir_inplace" else [-1] * len(fields)
            allocs, results = [], []
            for s, idx in zip(fields, inplace, strict=True):
                if idx >= 0:  # written into the argument: no allocation
                    results.append(args[idx])
                    continue
                if not isinstance(s, TensorStructInfo) or not isinstance(s.shape, ShapeExpr):
                    raise ValueError(f"CallTIRRewrite: output of {b.var.name_hint!r} needs a "
                                     f"tensor struct info with a known shape, got {s}")
                # the output's own shape node (IR nodes may be shared): a copy of its
                # dimensions and their struct info was an eighth of the pass
                a = allocs_sinfo.call(alloc_op, (s.shape, leaves.dtype(s.dtype), device, scope),
                                      s.shape, s.dtype)
                av = typed_var(namer.fresh("alloc"), a._checked_type)
                out.append(VarBinding(av, a))
                allocs.append(av)
                results.append(av)
            callee = v.args[0]
            if v.op.name == "relax.call_dps_packed" and isinstance(callee, str):
                callee = ExternFunc(callee)
            call_args = args + allocs
            if len(v.args) == 3:  # tir_vars
                call_args.append(v.args[2])
            call = Call(callee, call_args, None, None, v.span)
            # a kernel returns nothing; a packed function's result is opaque, as TVM infers
            # for a call of an ExternFunc without sinfo_args (what its TVMScript parses to)
            call._checked_type = packed_sinfo if isinstance(callee, ExternFunc) \
                else kernel_sinfo
            out.append(VarBinding(typed_var(namer.fresh("_"), call._checked_type), call))
            res = results[0] if len(results) == 1 and not isinstance(outs, TupleStructInfo) \
                else normalized(Tuple(results), mod)
            out.append(VarBinding(b.var, res, b.span))
        return out, body

    new = rewrite_function_seqs(func, rewrite)
    return (new if count else func), count


@register("CallTIRRewrite")
def CallTIRRewrite():  # noqa: N802 - TVM's name
    """Module pass (opt 0): explicit output allocation for call_tir / call_dps_packed."""
    return function_rewrite_pass(call_tir_rewrite, "CallTIRRewrite", "calls rewritten")

