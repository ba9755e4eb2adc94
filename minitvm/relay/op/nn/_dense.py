"""Matrix products: nn.dense, nn.matmul, nn.batch_matmul and nn.sparse_dense (CSR/BSR weights).

Numpy references: ``minitvm.topi.reference.nn``.
"""

from __future__ import annotations

from ....ir.op import OpPattern
from ....ir.type import TensorType
from ....tir.expr import Any
from ....topi.shape_conditions import agree
from ..op import define_op, register_numpy_only
from ..type_relations import check_num_args, is_static_dim, shape_str, tensor_arg
from . import attrs as A
from ._utils import arith


def _check_units(op_name, attrs, units):
    u = attrs.units
    if u is not None and u is not A.REQUIRED and not agree(units, int(u)):
        raise TypeError(f"{op_name}: attribute units={u} does not match the weight's {units} "
                        f"output units")


def matmul_rel(arg_types, attrs, op_name: str = "nn.matmul"):
    """``A (.., K) x B``: dense is B (units, K); matmul transposes A/B as the attrs say."""
    check_num_args(op_name, arg_types, 2)
    a = tensor_arg(arg_types, 0, op_name)
    b = tensor_arg(arg_types, 1, op_name)
    ta = bool(attrs.get("transpose_a", False))
    tb = bool(attrs.get("transpose_b", True)) if op_name == "nn.dense" else bool(
        attrs.get("transpose_b", False))
    if len(b.shape) != 2:
        raise TypeError(f"{op_name}: the weight must be 2-D, got {shape_str(b.shape)}")
    if len(a.shape) < (2 if ta else 1):
        raise TypeError(f"{op_name}: the data {shape_str(a.shape)} has too few dimensions")
    k_a = a.shape[-2] if ta else a.shape[-1]
    units, k_b = (b.shape[0], b.shape[1]) if tb else (b.shape[1], b.shape[0])
    if not agree(k_a, k_b):
        raise TypeError(
            f"{op_name}: the reduction dim of the data {shape_str(a.shape)} ({k_a}) does not "
            f"match the weight {shape_str(b.shape)} ({k_b})"
        )
    _check_units(op_name, attrs, units)
    shape = list(a.shape[:-2]) + [a.shape[-1], units] if ta else list(a.shape[:-1]) + [units]
    return TensorType(shape, attrs.out_dtype or a.dtype)


def batch_matmul_rel(arg_types, attrs, op_name: str = "nn.batch_matmul"):
    """``(B, M, K) x (B, N, K)`` (transpose_b) with batch broadcasting of size-1 batches."""
    check_num_args(op_name, arg_types, 2)
    a = tensor_arg(arg_types, 0, op_name)
    b = tensor_arg(arg_types, 1, op_name)
    if len(a.shape) != 3 or len(b.shape) != 3:
        raise TypeError(f"{op_name}: both inputs must be 3-D, got {shape_str(a.shape)} and "
                        f"{shape_str(b.shape)}")
    ba, m, ka = (a.shape[0], a.shape[2], a.shape[1]) if attrs.transpose_a else a.shape
    if attrs.transpose_b:
        bb, n, kb = b.shape
    else:
        bb, kb, n = b.shape
    if not agree(ka, kb):
        raise TypeError(f"{op_name}: reduction dims differ: {shape_str(a.shape)} "
                        f"(transpose_a={bool(attrs.transpose_a)}) vs {shape_str(b.shape)} "
                        f"(transpose_b={bool(attrs.transpose_b)})")
    if is_static_dim(ba) and ba == 1:
        batch = bb
    elif is_static_dim(bb) and bb == 1:
        batch = ba
    elif agree(ba, bb):
        batch = bb if isinstance(ba, Any) else ba
    else:
        raise TypeError(f"{op_name}: batch dims {ba} and {bb} do not broadcast "
                        f"({shape_str(a.shape)} vs {shape_str(b.shape)})")
    return TensorType((batch, m, n), attrs.out_dtype or a.dtype)


# --------------------------------------------------------------------------- sparse
def sparse_dense_rel(arg_types, attrs, op_name: str = "nn.sparse_dense"):
    """``dense x sparse^T`` (or ``sparse x dense^T`` when sparse_lhs); CSR or BSR sparse data."""
    check_num_args(op_name, arg_types, 4)
    dense = tensor_arg(arg_types, 0, op_name)
    sdata, sind, sptr = (tensor_arg(arg_types, i, op_name) for i in (1, 2, 3))
    if len(sdata.shape) not in (1, 3):
        raise TypeError(f"{op_name}: sparse data must be 1-D (CSR) or 3-D (BSR), got "
                        f"{shape_str(sdata.shape)}")
    if len(sind.shape) != 1 or len(sptr.shape) != 1:
        raise TypeError(f"{op_name}: sparse indices and indptr must be 1-D")
    if len(dense.shape) != 2:
        raise TypeError(f"{op_name}: the dense operand must be 2-D, got {shape_str(dense.shape)}")
    rows = arith(lambda p: p - 1, sptr.shape[0])
    if len(sdata.shape) == 3:
        rows = arith(lambda r, b: r * b, rows, sdata.shape[1])
    shape = (rows, dense.shape[0]) if attrs.sparse_lhs else (dense.shape[0], rows)
    return TensorType(shape, dense.dtype)


def _named(rel, name):
    def bound(arg_types, attrs):
        return rel(arg_types, attrs, name)

    bound.__name__ = f"{rel.__name__}[{name}]"
    return bound


_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE
define_op("nn.dense", _named(matmul_rel, "nn.dense"), pattern=_FUSABLE, attrs_type=A.DenseAttrs,
          num_inputs=2, describe="Y = X W^T.")
define_op("nn.matmul", _named(matmul_rel, "nn.matmul"), pattern=_FUSABLE,
          attrs_type=A.MatmulAttrs, num_inputs=2, describe="C = A B with optional transposes.")
define_op("nn.batch_matmul", batch_matmul_rel, pattern=_FUSABLE, attrs_type=A.BatchMatmulAttrs,
          num_inputs=2, describe="Batched matrix product.")
define_op("nn.sparse_dense", sparse_dense_rel, pattern=_FUSABLE, attrs_type=A.SparseDenseAttrs,
          num_inputs=4, describe="Dense x sparse^T with a CSR or BSR sparse matrix.")

# numpy-only on purpose (not a failed native lowering; see backend.fallback)
register_numpy_only("nn.sparse_dense", "sparse operand: work depends on the non-zero pattern")
