"""Matrix-shaped ops: ``einsum``, ``trilu``, ``matrix_set_diag``. References:
``minitvm.topi.reference.algorithm``."""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.prim_expr import Any
from ...ir.type import TensorType, TupleType
from ...tir import op as tir_op
from ...topi.shape_conditions import agree, at_most
from ...topi.utils import is_static_dim
from ..expr import Call, Expr, Tuple, const
from .op import define_op
from .type_relations import broadcast_shapes, check_num_args, tensor_arg, type_str

__all__ = ["einsum", "trilu", "matrix_set_diag"]


class EinsumAttrs(Attrs):
    __slots__ = ()
    _fields = (("equation", ""),)


class TriluAttrs(Attrs):
    __slots__ = ()
    _fields = (("upper", True),)


class MatrixSetDiagAttrs(Attrs):
    __slots__ = ()
    _fields = (("k1", 0), ("k2", 0), ("super_diag_right_align", False),
               ("sub_diag_right_align", True))


def _label_sizes_agree(a, b) -> bool:
    """May one label have sizes ``a`` and ``b``? Static ones must be equal or one 1 (numpy
    broadcasts it); with a symbolic one they are stated equal (a run-time 1 breaks the
    condition, and that shape is typed on its own)."""
    if is_static_dim(a) and is_static_dim(b):
        return a == b or 1 in (a, b)
    if (is_static_dim(a) and a == 1) or (is_static_dim(b) and b == 1):
        return True
    return agree(a, b)


def _label_size(a, b):
    """The size of a label seen with sizes ``a`` and ``b`` (``_label_sizes_agree``): not the
    broadcast 1, not an unknown ``Any`` where the other is known."""
    if is_static_dim(a) and a == 1:
        return b
    if (is_static_dim(b) and b == 1) or isinstance(b, Any):
        return a
    return b if isinstance(a, Any) else a


def einsum_output_shape(equation: str, shapes: list) -> tuple:
    """The output shape of ``np.einsum(equation, *arrays)`` for arrays of ``shapes`` (labels are
    letters; ``...`` broadcasts), or a TypeError naming the mismatch."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(shapes):
        raise TypeError(f"einsum: the equation {equation!r} names {len(inputs)} operands, "
                        f"got {len(shapes)}")
    sizes: dict[str, int] = {}
    ell: tuple = ()
    for term, shape in zip(inputs, shapes):
        labels = term.replace("...", "")
        if not labels.isalpha() and labels:
            raise TypeError(f"einsum: invalid subscripts {term!r} in {equation!r}")
        n_ell = len(shape) - len(labels)
        if ("..." in term and n_ell < 0) or ("..." not in term and n_ell != 0):
            raise TypeError(f"einsum: subscripts {term!r} do not match an operand of rank "
                            f"{len(shape)}")
        before = term.split("...")[0] if "..." in term else term
        dims = list(shape)
        if "..." in term:
            ell = broadcast_shapes(ell, tuple(dims[len(before):len(before) + n_ell]), "einsum")
            dims = dims[:len(before)] + dims[len(before) + n_ell:]
        own: dict = {}  # (a label repeated in one operand, a diagonal: no broadcast, numpy's)
        for label, d in zip(labels, dims, strict=False):
            if label in own and not agree(own[label], d):
                raise TypeError(f"einsum: label {label!r} repeats in {term!r} with sizes "
                                f"{own[label]} and {d}")
            own.setdefault(label, d)
            old = sizes.get(label)
            if old is not None and not _label_sizes_agree(old, d):
                raise TypeError(f"einsum: label {label!r} has sizes {old} and {d}")
            sizes[label] = d if old is None else _label_size(old, d)
    if not arrow:
        counts: dict[str, int] = {}
        for term in inputs:
            for ch in term.replace("...", ""):
                counts[ch] = counts.get(ch, 0) + 1
        rhs = ("..." if ell else "") + "".join(sorted(c for c, n in counts.items() if n == 1))
    out = []
    head, _, tail = rhs.partition("...")
    for label in head:
        if label not in sizes:
            raise TypeError(f"einsum: output label {label!r} is not an input label")
        out.append(sizes[label])
    if "..." in rhs:
        out.extend(ell)
    for label in tail:
        if label not in sizes:
            raise TypeError(f"einsum: output label {label!r} is not an input label")
        out.append(sizes[label])
    return tuple(out)


def _einsum_rel(arg_types, attrs):
    check_num_args("einsum", arg_types, 1)
    tup = arg_types[0]
    if not isinstance(tup, TupleType) or not tup.fields:
        raise TypeError(f"einsum: expects a tuple of tensors, got {type_str(tup)}")
    fields = [tensor_arg(tup.fields, i, "einsum") for i in range(len(tup.fields))]
    shape = einsum_output_shape(attrs.equation, [f.shape for f in fields])
    return TensorType(shape, fields[0].dtype)


def _trilu_rel(arg_types, attrs):
    check_num_args("trilu", arg_types, 2)
    x = tensor_arg(arg_types, 0, "trilu")
    if len(x.shape) < 2:
        raise TypeError(f"trilu: the input must have rank >= 2, got {type_str(x)}")
    return TensorType(x.shape, x.dtype)


def _matrix_set_diag_rel(arg_types, attrs):
    check_num_args("matrix_set_diag", arg_types, 2)
    x = tensor_arg(arg_types, 0, "matrix_set_diag")
    if len(x.shape) < 2:
        raise TypeError(f"matrix_set_diag: the input must have rank >= 2, got {type_str(x)}")
    k1, k2 = int(attrs.k1), int(attrs.k2)
    if k1 > k2:
        raise TypeError(f"matrix_set_diag: k1={attrs.k1} must not exceed k2={attrs.k2}")
    diag = tensor_arg(arg_types, 1, "matrix_set_diag")
    _check_diagonals(x, diag, k1, k2)
    return TensorType(x.shape, x.dtype)


def _check_diagonals(x: TensorType, diag: TensorType, k1: int, k2: int) -> None:
    """``diag`` holds diagonals ``k1..k2`` of ``x``: ``x``'s batch dims, (with several, one row
    per diagonal,) then at least the longest diagonal's length (the kernel reads that many)."""
    rows, cols = x.shape[-2:]
    batch = list(x.shape[:-2]) + ([] if k1 == k2 else [k2 - k1 + 1])
    ok = len(diag.shape) == len(batch) + 1 and all(
        agree(d, b) for d, b in zip(diag.shape[:-1], batch, strict=True))
    if ok and not any(isinstance(d, Any) for d in (rows, cols)):
        longest = None
        for d in range(k1, k2 + 1):
            length = _tmin(rows + min(d, 0), cols - max(d, 0))
            longest = length if longest is None else _tmax(longest, length)
        ok = at_most(longest, diag.shape[-1])
    if not ok:
        raise TypeError(f"matrix_set_diag: the diagonals {type_str(diag)} do not fit "
                        f"diagonals {k1}..{k2} of {type_str(x)}")


def _tmin(a, b):
    return min(a, b) if is_static_dim(a) and is_static_dim(b) else tir_op.min(a, b)


def _tmax(a, b):
    return max(a, b) if is_static_dim(a) and is_static_dim(b) else tir_op.max(a, b)


define_op("einsum", _einsum_rel, pattern=OpPattern.INJECTIVE, attrs_type=EinsumAttrs,
          num_inputs=1, describe="Einstein summation over a tuple of tensors.")
define_op("trilu", _trilu_rel, pattern=OpPattern.INJECTIVE, attrs_type=TriluAttrs,
          num_inputs=2, describe="Upper or lower triangle of the last two dims (offset k).")
define_op("matrix_set_diag", _matrix_set_diag_rel, pattern=OpPattern.INJECTIVE,
          attrs_type=MatrixSetDiagAttrs, num_inputs=2,
          describe="Replace diagonals k1..k2 of the last two dims.")


def einsum(data, equation: str) -> Call:
    tup = data if isinstance(data, Expr) else Tuple(list(data))
    return Call(Op.get("einsum"), [tup], EinsumAttrs(equation=equation))


def trilu(data, k, upper: bool = True) -> Call:
    k = k if isinstance(k, Expr) else const(int(k), "int32")
    return Call(Op.get("trilu"), [data, k], TriluAttrs(upper=bool(upper)))


def matrix_set_diag(data, diagonal, k=0, align: str = "RIGHT_LEFT") -> Call:
    k1, k2 = (k, k) if isinstance(k, int) else (int(k[0]), int(k[1]))
    if align not in ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"):
        raise ValueError(f"matrix_set_diag: align must be RIGHT_LEFT, LEFT_RIGHT, LEFT_LEFT or "
                         f"RIGHT_RIGHT, got {align!r}")
    sup, sub = align.split("_")  # superdiagonals' alignment, then subdiagonals'
    return Call(Op.get("matrix_set_diag"), [data, diagonal],
                MatrixSetDiagAttrs(k1=k1, k2=k2, super_diag_right_align=sup == "RIGHT",
                                   sub_diag_right_align=sub == "RIGHT"))
