"""The per-op legalization registry (op attribute ``FLegalize``) and the helpers the op-family
modules share: a legalization is ``fn(bb, call) -> Expr``, usually one ``bb.call_te`` of a topi
function producing ``R.call_tir(cls.<name>, (...), out_sinfo=...)``."""

from __future__ import annotations

from collections.abc import Callable

from ....ir.op import Op
from ....ir.prim_expr import IntImm, PrimExpr
from ...expr import Call, Expr, PrimValue, ShapeExpr
from ...op._common import prove_equal
from ...struct_info import PrimStructInfo, ShapeStructInfo, TensorStructInfo, TupleStructInfo

__all__ = ["register_legalize", "get_legalize", "LegalizeFunc", "call_topi", "out_shape",
           "out_dtype", "arg_shape", "arg_dtype", "prim_arg", "has_known_shapes",
           "LegalizeError", "legalizations", "tie_dim"]

LegalizeFunc = Callable[..., Expr]


class LegalizeError(ValueError):
    """A call that its legalization cannot lower (unsupported attributes), naming the op."""


def register_legalize(op_name: str, fn: LegalizeFunc | None = None, level: int = 10):
    """Set ``fn(bb, call) -> Expr`` as the legalization of ``op_name`` (usable as a
    decorator)."""

    def reg(f):
        Op.get(op_name).set_attr("FLegalize", f, level)
        return f

    return reg(fn) if fn is not None else reg


def get_legalize(op: Op) -> LegalizeFunc | None:
    return op.get_attr("FLegalize")


def legalizations() -> dict[str, LegalizeFunc]:
    """Every registered legalization by op name."""
    out = {}
    for name in Op.list_op_names():
        f = Op.get(name).get_attr("FLegalize")
        if f is not None:
            out[name] = f
    return out


def call_topi(bb, te_func, *args, name: str, **kwargs) -> Expr:
    """``bb.call_te(te_func, *args)`` with the PrimFunc named ``name`` (TVM's names)."""
    return bb.call_te(te_func, *args, primfunc_name_hint=name, **kwargs)


def _tensor(sinfo, what: str) -> TensorStructInfo:
    if not isinstance(sinfo, TensorStructInfo):
        raise LegalizeError(f"{what} is not a tensor: {sinfo}")
    return sinfo


def out_shape(call: Call, index: int | None = None) -> list[PrimExpr]:
    """The (possibly symbolic) result shape of ``call`` (field ``index`` of a tuple result)."""
    s = call.struct_info
    if index is not None:
        s = s.fields[index]
    return list(_tensor(s, f"the result of {call.op.name}").shape.values)


def out_dtype(call: Call) -> str:
    s = call.struct_info
    if isinstance(s, TupleStructInfo):
        s = s.fields[0]
    return _tensor(s, f"the result of {call.op.name}").dtype


def arg_shape(call: Call, i: int) -> list[PrimExpr]:
    return list(_tensor(call.args[i].struct_info, f"argument {i} of {call.op.name}")
                .shape.values)


def arg_dtype(call: Call, i: int) -> str:
    return _tensor(call.args[i].struct_info, f"argument {i} of {call.op.name}").dtype


def prim_arg(call: Call, i: int) -> PrimExpr:
    """The PrimExpr of a scalar argument (an ``R.prim_value`` or a known ``R.Prim``)."""
    a = call.args[i]
    if isinstance(a, PrimValue):
        return a.value
    s = a.struct_info
    if isinstance(s, PrimStructInfo) and s.value is not None:
        return s.value
    raise LegalizeError(f"{call.op.name}: argument {i} must be a known scalar, got {s}")


def known_struct_info(sinfo) -> bool:
    """Whether every tensor (and shape) in ``sinfo`` has a known shape and dtype."""
    stack = [sinfo]
    while stack:
        s = stack.pop()
        if isinstance(s, TensorStructInfo):
            if not isinstance(s.shape, ShapeExpr) or s.dtype == "void":
                return False
        elif isinstance(s, ShapeStructInfo):
            if s.values is None:
                return False
        elif isinstance(s, TupleStructInfo):
            stack.extend(s.fields)
    return True


def has_known_shapes(call: Call) -> bool:
    """TVM's condition to legalize: the result and every argument have known shapes (and,
    here, known dtypes)."""
    if not known_struct_info(call.struct_info):
        return False
    return all(known_struct_info(a.struct_info) for a in call.args)


def int_values(values) -> list[int]:
    """Python ints of static dims (an error naming the value otherwise)."""
    out = []
    for v in values:
        if isinstance(v, IntImm):
            out.append(int(v.value))
        elif isinstance(v, int):
            out.append(v)
        else:
            raise LegalizeError(f"expected a static integer, got {v}")
    return out


def tie_dim(bb, arg: Expr, axis: int, size: PrimExpr, name_hint: str = "") -> Expr:
    """``arg`` whose dimension ``axis`` is ``size`` (another operand's extent the kernel reads
    it by): ``arg`` itself where that is provably so, else a ``match_cast`` to it, which the VM
    checks at run time, where a kernel would read past the smaller operand. (A call outside any
    block, a function's bare result expression, has nowhere to bind the cast: left as it is.)
    ``name_hint`` names the cast's variable, which the VM's error names."""
    sinfo = arg.struct_info
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None or \
            not bb.block_is_open():
        return arg
    shape = list(sinfo.shape.values)
    if prove_equal(shape[axis], size):
        return arg
    shape[axis] = size
    return bb.match_cast(arg, TensorStructInfo(shape, sinfo.dtype, vdevice=sinfo.vdevice),
                         name_hint)
