"""Kernels of one scalar statement as a JSON-able expression, for the VM to evaluate in Python.

A loop over a run-time length compares and increments its counter (0-d int64 tensors) with
kernels of their own (``less``, ``add``); calling native code costs more than that work. When
every parameter of a PrimFunc is a 0-d integer or bool buffer and its body is one store of an
expression over loads of them, integer constants, integer arithmetic (``+ - *``, min, max),
comparisons, logic and integer casts, the kernel's spec carries the expression
(``spec["scalar"]``); ``runtime.relax_vm.kernel`` evaluates it with Python integers, wrapping
as the machine's fixed-width integers do. Anything else (floats, division, a loop, more than
``MAX_NODES`` nodes) gives None: the native call.
"""

from __future__ import annotations

from ...tir import expr as E
from ...tir.function import PrimFunc
from ...tir.stmt import BufferStore

__all__ = ["MAX_NODES", "SCALAR_DTYPES", "scalar_expression"]

MAX_NODES = 64  # a counter's compare or step is a handful; longer ones stay native
SCALAR_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                           "uint32", "uint64"})
_BINARY = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.Min: "min", E.Max: "max", E.LT: "<",
           E.LE: "<=", E.GT: ">", E.GE: ">=", E.EQ: "==", E.NE: "!=", E.And: "and",
           E.Or: "or"}


def scalar_expression(func: PrimFunc) -> dict | None:
    """``{"out": k, "expr": tree}`` for a PrimFunc storing one scalar expression into its
    parameter ``k``, or None. A tree node is ``[op, dtype, operands...]``: ``["load", dtype,
    k]`` (parameter ``k``'s value), ``["const", dtype, v]``, ``[binary op, dtype, a, b]``,
    ``["not", "bool", a]``, ``["cast", dtype, a]``."""
    if not isinstance(func, PrimFunc) or not isinstance(func.body, BufferStore):
        return None
    where = {}
    for k, p in enumerate(func.params):
        buf = func.buffer_map.get(p)
        if buf is None or len(buf.shape) != 0 or str(buf.dtype) not in SCALAR_DTYPES:
            return None  # (a scalar parameter, a tensor, a float)
        where[id(buf.data)] = k
    store = func.body
    out = where.get(id(store.buffer.data))
    if out is None or store.indices or getattr(store, "predicate", None) is not None:
        return None
    tree = _tree(store.value, where, [MAX_NODES])
    if tree is None or tree[1] != str(store.buffer.dtype):
        return None
    return {"out": out, "expr": tree}


def _tree(e, where: dict, budget: list):
    """``e`` as a tree node, or None; ``budget[0]``: the nodes left (the depth is bounded by
    it, so this recursion is too)."""
    budget[0] -= 1
    dtype = str(getattr(e, "dtype", ""))
    if budget[0] < 0 or dtype not in SCALAR_DTYPES:
        return None
    if isinstance(e, E.IntImm):
        return ["const", dtype, int(e.value)]
    if isinstance(e, E.BufferLoad):
        k = where.get(id(e.buffer.data))
        if k is None or e.indices or getattr(e, "predicate", None) is not None:
            return None
        return ["load", dtype, k]
    op = _BINARY.get(type(e))
    if op is not None:
        a = _tree(e.a, where, budget)
        b = _tree(e.b, where, budget) if a is not None else None
        if b is None or a[1] != b[1] or (op in ("and", "or") and a[1] != "bool"):
            return None
        return [op, dtype, a, b]
    if isinstance(e, E.Not):
        a = _tree(e.a, where, budget)
        return None if a is None or a[1] != "bool" else ["not", "bool", a]
    if isinstance(e, E.Cast):
        a = _tree(e.value, where, budget)
        return None if a is None else ["cast", dtype, a]
    return None
