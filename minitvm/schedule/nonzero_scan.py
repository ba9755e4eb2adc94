"""Native kernels of ``nonzero`` (Relax's ``relax.nonzero``: the int64 ``(ndim, count)`` indices
of the non-zero elements, in row-major order): a count pass, whose result the caller binds to a
symbolic length, then a fill pass writing each non-zero element's coordinates at the next
column. Both walk the input once in order with a running count, so the result needs no sort;
NaN counts as non-zero and -0.0 as zero, as numpy's and ORT's ``nonzero``."""

from __future__ import annotations

from ..ir.op import OpPattern
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.function import PrimFunc
from .common import allocated, const_int, imm

__all__ = ["nonzero_count_prim_func", "nonzero_fill_prim_func"]


def _input(shape, dtype: str):
    """The input buffer, each symbolic dimension a fresh variable, and its loop extents."""
    dims = []
    for k, d in enumerate(shape):
        c = const_int(d)
        dims.append(c if c is not None else E.Var(f"n{k}", "int64"))
    extents = [imm(d) if isinstance(d, int) else E.Cast("int32", d) for d in dims]
    return decl_buffer(tuple(dims), dtype, "data"), extents


def _walk(data, extents, on_nonzero) -> S.Stmt:
    """Loops over ``data`` in row-major order running ``on_nonzero(indices)`` where the element
    is not zero."""
    idx = [E.Var(f"i{k}", "int32") for k in range(len(extents))]
    x = E.BufferLoad(data, list(idx))
    zero = E.const(False, "bool") if data.dtype == "bool" else E.const(0, data.dtype)
    body = S.IfThenElse(E.NE(x, zero), on_nonzero(idx))
    for v, ext in zip(reversed(idx), reversed(extents), strict=True):
        body = S.For(v, imm(0), ext, S.ForKind.SERIAL, body)
    return body


def _func(params, body, count) -> PrimFunc:
    return PrimFunc(params, allocated(count, body),
                    attrs={"tir.noalias": True, "op_pattern": int(OpPattern.OPAQUE)})


def nonzero_count_prim_func(shape, dtype: str) -> PrimFunc:
    """``(data, count [1] int64)``: the number of non-zero elements."""
    data, extents = _input(shape, dtype)
    out = decl_buffer((1,), "int64", "count")
    count = decl_buffer((1,), "int64", "nz_count", scope="local")
    c = E.BufferLoad(count, [imm(0)])
    body = S.SeqStmt([
        S.BufferStore(count, E.const(0, "int64"), [imm(0)]),
        _walk(data, extents, lambda idx: S.BufferStore(count, c + E.const(1, "int64"),
                                                       [imm(0)])),
        S.BufferStore(out, c, [imm(0)])])
    return _func([data, out], body, count)


def nonzero_fill_prim_func(shape, dtype: str) -> PrimFunc:
    """``(data, indices [ndim, k] int64)``: column ``j`` the coordinates of the ``j``-th
    non-zero element (``k`` the count pass's result, bound by the caller)."""
    data, extents = _input(shape, dtype)
    k = E.Var("num_nonzero", "int64")
    out = decl_buffer((len(extents), k), "int64", "indices")
    count = decl_buffer((1,), "int64", "nz_pos", scope="local")
    pos = E.BufferLoad(count, [imm(0)])

    def write(idx):
        stores = [S.BufferStore(out, E.Cast("int64", v), [imm(d), pos])
                  for d, v in enumerate(idx)]
        return S.SeqStmt([*stores, S.BufferStore(count, pos + E.const(1, "int64"), [imm(0)])])

    body = S.SeqStmt([S.BufferStore(count, E.const(0, "int64"), [imm(0)]),
                      _walk(data, extents, write)])
    return _func([data, out], body, count)
