"""FoldConstant (TVM's ``relax.transform.FoldConstant``): evaluate at compile time what only
depends on constants.

- Every use of a variable bound to a constant becomes the constant; a variable bound to a shape
  value used as an operator argument becomes the shape value.
- Inside dataflow blocks, a call of a Relax operator whose arguments are all constants and whose
  result is a tensor of static shape and known dtype is evaluated and replaced by the resulting
  constant. TVM legalizes the operator to TIR and runs the built PrimFunc; here the operator's
  numpy reference is run: the shared ``topi`` reference of the same name (``relax.add`` ->
  ``topi.get_reference("add")``). A result whose shape or dtype disagrees with the call's struct
  info, or a reference that fails, leaves the call as it is. ``relax.tensor_to_shape`` of a
  constant becomes a shape value and ``relax.shape_to_tensor`` of a static shape a constant.
- Bindings left unused are removed (TVM runs RemoveAllUnused afterwards too).

Not folded (TVM folds them by building TIR, which this package cannot run): ``call_tir`` of
PrimFuncs, and operators without a topi reference.
"""

from __future__ import annotations

import numpy as np

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.prim_expr import FloatImm, IntImm
from ...ir.type import TensorType
from ...runtime.ndarray import NDArray, aligned
from ...transform.stats import record_stat
from ..expr import (
    Call,
    Constant,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from ..struct_info import TensorStructInfo
from .dead_code_elimination import remove_all_unused
from .function_pass import function_pass
from .normalize import NormalizingMutator
from .utils import register

__all__ = ["FoldConstant", "fold_constant", "evaluate_call", "run_reference", "op_reference"]


class _AttrsView:
    """Relax call attributes as a topi reference reads them (missing fields with the Relay
    defaults a reference may consult)."""

    _DEFAULTS = {"exclude": False}

    def __init__(self, attrs):
        self._attrs = attrs

    def __getattr__(self, name):
        attrs = object.__getattribute__(self, "_attrs")
        if attrs is not None:
            try:
                return getattr(attrs, name)
            except (AttributeError, KeyError):
                pass
        if name in _AttrsView._DEFAULTS:
            return _AttrsView._DEFAULTS[name]
        raise AttributeError(name)

    def __getitem__(self, name):
        return self.__getattr__(name)

    def get(self, name, default=None):
        try:
            return self.__getattr__(name)
        except AttributeError:
            return default


def _static_tensor(sinfo):
    """(shape, dtype) of a tensor struct info with a static shape and known dtype, else None."""
    if not isinstance(sinfo, TensorStructInfo) or sinfo.is_unknown_dtype:
        return None
    dims = sinfo.dims()
    if dims is None or not all(isinstance(d, IntImm) for d in dims):
        return None
    return tuple(int(d.value) for d in dims), sinfo.dtype


#: Relax operators whose topi reference has another name, with the same attributes
_REFERENCE_NAMES = {"permute_dims": "transpose", "astype": "cast"}


def _matmul(attrs, args, out_type):
    return np.matmul(args[0], args[1]).astype(out_type.dtype, copy=False)


def _reshape(attrs, args, out_type):
    """The data in the call's static result shape (its shape argument resolved there)."""
    return args[0].reshape(tuple(int(d) for d in out_type.shape))


def _broadcast_to(attrs, args, out_type):
    return np.broadcast_to(args[0], tuple(int(d) for d in out_type.shape))


def _clip(attrs, args, out_type):
    """Relax's clip: its bounds are operands (scalars), not Relay's ``a_min`` / ``a_max``."""
    return np.clip(args[0], args[1], args[2]).astype(out_type.dtype, copy=False)


#: Relax operators evaluated directly (no topi reference has their semantics). expand_dims and
#: squeeze take Relax's attributes (a list of axes), which the Relay-shaped references reject:
#: both only reshape, to the call's static result shape.
_DIRECT = {"matmul": _matmul, "reshape": _reshape, "broadcast_to": _broadcast_to,
           "expand_dims": _reshape, "squeeze": _reshape, "clip": _clip}
#: ... of them, those whose shape argument (a static ShapeExpr) may be folded with them
_SHAPE_ARG = {"relax.reshape", "relax.broadcast_to"}
#: ... and those with scalar operands (``R.prim_value`` of a constant) folded as numbers
_PRIM_ARG = {"relax.clip"}


def op_reference(op: Op):
    """The numpy implementation ``impl(attrs, arrays, out_type)`` of a Relax operator, or
    None: the topi reference of the op's name without ``relax.`` (a few renamed)."""
    from ... import topi

    name = op.name[len("relax."):] if op.name.startswith("relax.") else op.name
    direct = _DIRECT.get(name)
    if direct is not None:
        return direct
    return topi.get_reference(_REFERENCE_NAMES.get(name, name))


def run_reference(call: Call, arrays: list, sinfo=None):
    """Evaluate a call of a Relax operator on numpy ``arrays`` with its numpy reference; the
    call's struct info must be a tensor of static shape and known dtype. None when that is not
    possible (no reference, a reference that rejects the attributes, a result that disagrees
    with the struct info). ``sinfo`` overrides the call's struct info (an interpreter that
    knows the values of its symbolic dimensions)."""
    op = call.op
    if not isinstance(op, Op):
        return None
    out = _static_tensor(sinfo if sinfo is not None else call._checked_type)
    if out is None:
        return None
    ref = op_reference(op)
    if ref is None:
        return None
    shape, dtype = out
    try:
        result = ref(_AttrsView(call.attrs), arrays, TensorType(shape, dtype))
    except Exception:  # a reference that cannot handle these attrs: leave the call alone
        return None
    if isinstance(result, tuple | list):
        return None
    result = np.asarray(result)
    if tuple(result.shape) != shape or str(result.dtype) != dtype:
        return None
    # written once into a 64-byte aligned buffer (a folded weight transpose of BERT-base:
    # 340 MB), which the executable then keeps as it is rather than copying it again to align
    # it; the struct info's shape is kept (a rank-0 result stays rank 0)
    return aligned(result).reshape(shape)


def evaluate_call(call: Call):
    """The constant ``call`` (a call of a Relax operator on constants) evaluates to, or None
    when it cannot be evaluated here."""
    op = call.op
    if not isinstance(op, Op):
        return None
    if op.name == "relax.tensor_to_shape":
        arg = call.args[0] if call.args else None
        if isinstance(arg, Constant):
            data = arg.data.numpy()
            if data.ndim == 1 and data.dtype.kind in "iu":
                return ShapeExpr([int(v) for v in data])
        return None
    if op.name == "relax.shape_to_tensor":
        arg = call.args[0] if call.args else None
        if isinstance(arg, ShapeExpr) and all(
                isinstance(v, IntImm) and v.dtype == "int64" for v in arg.values):
            return Constant(NDArray(np.array([v.value for v in arg.values], dtype="int64")))
        return None
    if not call.args or not all(isinstance(a, Constant) or op.name in _SHAPE_ARG and
                                isinstance(a, ShapeExpr) and _static_dims(a) or
                                op.name in _PRIM_ARG and _scalar(a) is not None
                                for a in call.args):
        return None  # (a reshape of a constant to a static shape: a scale, a bias, folds too)
    result = run_reference(call, [a.data.numpy() if isinstance(a, Constant) else
                                  _scalar(a) if isinstance(a, PrimValue) else
                                  np.array([int(v.value) for v in a.values], "int64")
                                  for a in call.args])
    if result is None:
        return None
    return Constant(NDArray(result))


def _scalar(arg):
    """The number an ``R.prim_value`` of a constant holds (a clip's bound), else None."""
    if isinstance(arg, PrimValue) and isinstance(arg.value, IntImm | FloatImm):
        return arg.value.value
    return None


def _static_dims(shape: ShapeExpr) -> bool:
    return all(isinstance(v, IntImm) for v in shape.values)


class _ConstantFolder(NormalizingMutator):
    def __init__(self, mod=None):
        super().__init__(mod)
        self.bound: dict = {}  # var (after remapping) -> its bound value
        self.folded = 0

    def visit_var_binding_(self, binding) -> None:
        super().visit_var_binding_(binding)
        emitted = self.builder_._frames[-1].bindings[-1]
        self.bound[emitted.var] = emitted.value

    def _use(self, op):
        var = self.var_remap_.get(op, op)
        value = self.bound.get(var)
        if isinstance(value, Constant):
            return value
        return var

    visit_var_ = _use
    visit_dataflow_var_ = _use

    def visit_call_(self, op: Call):
        post = super().visit_call_(op)
        if not isinstance(post.op, Op):
            return post
        args = []
        changed = False
        for a in post.args:
            if isinstance(a, Var):
                value = self.bound.get(a)
                if isinstance(value, ShapeExpr):
                    args.append(value)
                    changed = True
                    continue
            args.append(a)
        if changed:
            post = Call(post.op, args, post.attrs, post.sinfo_args, post.span)
        if not self.builder_.current_block_is_dataflow():
            return post
        self.builder_.normalize(post)
        folded = evaluate_call(post)
        if folded is None:
            return post
        self.folded += 1
        return folded


_LEAVES = (Var, GlobalVar, ExternFunc, PrimValue, StringImm, DataTypeImm)
_LEAF_TYPES = frozenset((Var, DataflowVar, GlobalVar, ExternFunc, PrimValue, StringImm,
                         DataTypeImm))  # (the exact types of ``_LEAVES``' common members)


def _plain_operand(a) -> bool:
    """A call operand the folder leaves as it is: a variable or an immediate, or a tuple of them
    (no constant, no shape value, nothing nested that could hold one)."""
    if isinstance(a, Tuple):
        return all(isinstance(f, _LEAVES) for f in a.fields)
    return isinstance(a, _LEAVES)


def _nothing_to_fold(func) -> bool:
    """Whether the folder would give ``func`` back as it is: flat blocks (nothing nested) in
    which no variable is bound to a constant or a shape value and no operator call has only
    constant arguments. One pass over the bindings, instead of rebuilding every one (a
    100,000-binding chain of kernel calls: 1.9 CPU s per FoldConstant, twice per build)."""
    body = getattr(func, "body", None)
    if not isinstance(body, SeqExpr) or not isinstance(body.body, _LEAVES):
        return False
    leaf_types = _LEAF_TYPES
    for block in body.blocks:
        for b in block.bindings:
            v = b.value
            if type(v) is Call:
                if not isinstance(v.op, Op | GlobalVar | ExternFunc | Var):
                    return False
                # plain operands (checked by type first: a call_tir's callee and argument
                # tuple, most bindings) ...
                only_prims = True
                for a in v.args:
                    t = type(a)
                    if t is not PrimValue:
                        only_prims = False
                    if t not in leaf_types and not _plain_operand(a):
                        return False
                # ... of which only prim values may be all constant (what ``evaluate_call``
                # may fold)
                if only_prims and v.args and isinstance(v.op, Op):
                    return False
            elif isinstance(v, Call):
                if not isinstance(v.op, Op | GlobalVar | ExternFunc | Var):
                    return False
                if isinstance(v.op, Op) and v.args and all(
                        isinstance(a, Constant | ShapeExpr | PrimValue) for a in v.args):
                    return False  # (what ``evaluate_call`` may fold)
                if not all(_plain_operand(a) for a in v.args):
                    return False
            elif isinstance(v, TupleGetItem):
                if not isinstance(v.tuple_value, Var):
                    return False
            elif not _plain_operand(v):
                return False
    return True


def fold_constant(func, mod=None):
    """``func`` with constant calls evaluated (and how many calls were folded)."""
    if _nothing_to_fold(func):
        return remove_all_unused(func, mod)[0], 0
    m = _ConstantFolder(mod)
    out = m.visit_expr(func)
    out, _ = remove_all_unused(out, mod)
    return out, m.folded


@register("FoldConstant")
def FoldConstant():  # noqa: N802 - TVM's name
    """Function pass (opt 0): evaluate operator calls on constants inside dataflow blocks."""

    def transform(func, mod, ctx):
        out, n = fold_constant(func, mod)
        if n:
            record_stat("calls folded", n)
        return out

    return function_pass(transform, opt_level=0, name="FoldConstant",
                         needs=["relax_normalized"], keeps=["relax_normalized"])
