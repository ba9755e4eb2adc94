"""Dense factorizations of batches of square matrices: ``linalg.cholesky_factor``,
``linalg.lu_factor`` and ``linalg.factored_solve`` (minitvm's own ops, no TVM counterpart),
the loop kernels the PyTorch importer composes ``torch.linalg`` from (``topi.linalg``: layouts;
``schedule.linalg``: loops; ``topi.reference.linalg``: references)."""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType
from ...topi.linalg import SOLVE_KINDS
from ...topi.shape_conditions import agree
from ...topi.utils import arith
from ..expr import Call
from .op import define_op
from .type_relations import check_num_args, tensor_arg, type_str

__all__ = ["cholesky_factor", "lu_factor", "factored_solve"]


class FactoredSolveAttrs(Attrs):
    __slots__ = ()
    _fields = (("kind", "lu"),)


def _square(name: str, arg_types, i: int = 0, extra_columns: int = 0) -> TensorType:
    """Argument ``i``: a float ``(batch, n, n + extra_columns)`` tensor. Any dim may be a
    run-time one (a batch of matrices, or their order): a symbolic order's columns are stated
    equal to ``n + extra_columns`` (``shape_conditions``, checked by a symbolic kernel at each
    call), an unknown one is checked where the shapes are known."""
    a = tensor_arg(arg_types, i, name)
    shape = tuple(a.shape)
    if len(shape) != 3:
        raise TypeError(f"{name}: expected a (batch, n, n) tensor, got {type_str(a)}")
    if not agree(shape[2], arith(lambda n: n + extra_columns, shape[1])):
        raise TypeError(f"{name}: expected square matrices"
                        f"{' and a pivot column' if extra_columns else ''}, got {type_str(a)}")
    if not a.dtype.startswith("float") or a.dtype == "float16":
        raise TypeError(f"{name}: expected float32 or float64 matrices, got {type_str(a)}")
    return a


def _cholesky_rel(arg_types, attrs):
    check_num_args("linalg.cholesky_factor", arg_types, 1)
    a = _square("linalg.cholesky_factor", arg_types)
    return TensorType(a.shape, a.dtype)


def _lu_rel(arg_types, attrs):
    check_num_args("linalg.lu_factor", arg_types, 1)
    a = _square("linalg.lu_factor", arg_types)
    b, n, _ = a.shape
    return TensorType((b, n, arith(lambda d: d + 1, n)), a.dtype)


def _solve_rel(arg_types, attrs):
    name = "linalg.factored_solve"
    check_num_args(name, arg_types, 2)
    if attrs.kind not in SOLVE_KINDS:
        raise TypeError(f"{name}: kind must be one of {SOLVE_KINDS}, got {attrs.kind!r}")
    f, rhs = tensor_arg(arg_types, 0, name), tensor_arg(arg_types, 1, name)
    try:
        _square(name, arg_types, 0, int(attrs.kind == "lu"))
    except TypeError as e:
        raise TypeError(f"{e}: a {attrs.kind} factor {type_str(f)} does not fit") from None
    b, n = f.shape[:2]
    if len(rhs.shape) != 3 or not (agree(rhs.shape[0], b) and agree(rhs.shape[1], n)) \
            or rhs.dtype != f.dtype:
        raise TypeError(f"{name}: a {attrs.kind} factor {type_str(f)} does not fit the "
                        f"right-hand sides {type_str(rhs)}")
    return TensorType(rhs.shape, rhs.dtype)


define_op("linalg.cholesky_factor", _cholesky_rel, pattern=OpPattern.OPAQUE, num_inputs=1,
          describe="Lower Cholesky factors of a batch of matrices (NaN past a failed pivot).")
define_op("linalg.lu_factor", _lu_rel, pattern=OpPattern.OPAQUE, num_inputs=1,
          describe="Packed LU with partial pivoting, the row exchanges in a last column.")
define_op("linalg.factored_solve", _solve_rel, pattern=OpPattern.OPAQUE,
          attrs_type=FactoredSolveAttrs, num_inputs=2,
          describe="Solve A X = B from A's LU (lu_factor) or Cholesky factor, or from a "
          "triangular A by one substitution.")


def cholesky_factor(a) -> Call:
    """``L`` with ``L L^T = A`` for ``A`` ``(B, n, n)`` (its lower triangle read)."""
    return Call(Op.get("linalg.cholesky_factor"), [a])


def lu_factor(a) -> Call:
    """``(B, n, n + 1)``: ``A``'s packed LU and, in the last column, each step's pivot row."""
    return Call(Op.get("linalg.lu_factor"), [a])


def factored_solve(factor, rhs, kind: str = "lu") -> Call:
    """``X`` with ``A X = rhs`` from ``A``'s ``lu_factor`` (``kind`` "lu") or
    ``cholesky_factor`` (``kind`` "cholesky"), or from a triangular ``A`` itself ("lower",
    "upper", "unit_lower", "unit_upper": one substitution reading only that triangle)."""
    return Call(Op.get("linalg.factored_solve"), [factor, rhs], FactoredSolveAttrs(kind=kind))
