"""The operator pattern of a PrimFunc, read from its blocks as TVM's Relax infers it
(``AnalyzeOpPatternKind``): what FuseOps needs to know about a legalized operator.

Per block (the root block aside), the single store ``C[v...] = f(loads)`` is compared with each
load:

- elementwise: a load indexed by exactly the store's index expressions;
- broadcast: the load's indices appear among the store's, in order (unit dims read at 0 skipped);
- injective: the store is indexed by plain variables and every load uses only those (a
  variable a ``Let`` of the block binds stands for the variables of its value: a gather whose
  computed index is let-bound before its negative-index wrap stays injective);
- otherwise, when the block has reduction iterators: a multiply-accumulate whose operands reuse
  data (matmul, conv) or a reduction that does not read its reduction variables directly
  (pooling) is output-elementwise-fusable, any other reduction a commutative reduce;
- anything else (no store, several stores, no reduction) is opaque.

The function's pattern is the most general of its blocks' (elementwise < broadcast < injective
< comm-reduce < out-elementwise-fusable < opaque), with TVM's softmax rule: an injective block
writing a parameter after a reduction makes the whole out-elementwise-fusable.
"""

from __future__ import annotations

from ...ir.op import OpPattern
from .. import expr as E
from .. import stmt as S
from ..function import PrimFunc
from ..stmt_functor import post_order, stmt_children, stmt_exprs

__all__ = ["analyze_op_pattern_kind", "OpPatternKind"]

OpPatternKind = OpPattern


def _same_array(a, b) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _is_const(e, value: int) -> bool:
    return isinstance(e, E.IntImm) and e.value == value


def _vars_in(e) -> list:
    return [n for n in post_order(e) if isinstance(n, E.Var)]


def _elemwise(store, load) -> bool:
    return _same_array(store.indices, load.indices)


def _broadcast(store, load) -> bool:
    j, n_store = 0, len(store.buffer.shape)
    for i, idx in enumerate(load.indices):
        if _is_const(load.buffer.shape[i], 1) and _is_const(idx, 0):
            continue
        while j < n_store and store.indices[j] is not idx:
            j += 1
        if j == n_store:
            return False
    return True


def _store_vars(store) -> set | None:
    out = set()
    for idx in store.indices:
        if not isinstance(idx, E.Var):
            return None
        out.add(id(idx))
    return out


def _injective(store, load, lets: dict) -> bool:
    vs = _store_vars(store)
    if vs is None:
        return False
    todo = [v for idx in load.indices for v in _vars_in(idx)]
    seen = set()
    while todo:  # (a let-bound variable: the variables of its value, iteratively)
        v = todo.pop()
        if id(v) in vs or id(v) in seen:
            continue
        seen.add(id(v))
        value = lets.get(id(v))
        if value is None:
            return False
        todo.extend(_vars_in(value))
    return True


def _allows_reuse(store, load) -> bool:
    """Some store variable is absent from the load's indices (the load is reused)."""
    vs = _store_vars(store)
    if vs is None:
        return False
    for idx in load.indices:
        for v in _vars_in(idx):
            vs.discard(id(v))
    return bool(vs)


def _strip_cast(e):
    while isinstance(e, E.Cast):
        e = e.value
    return e


def _is_fma(body) -> bool:
    """``C[i] = C[i] + A[...] * B[...]`` with both A and B reused across the output."""
    if not isinstance(body, S.BufferStore):
        return False
    add = _strip_cast(body.value)
    if not isinstance(add, E.Add):
        return False
    mul = _strip_cast(add.b)
    acc = _strip_cast(add.a)
    if not isinstance(mul, E.Mul) or not isinstance(acc, E.BufferLoad):
        return False
    if acc.buffer is not body.buffer or not _same_array(acc.indices, body.indices):
        return False
    lhs, rhs = _strip_cast(mul.a), _strip_cast(mul.b)
    if not isinstance(lhs, E.BufferLoad) or not isinstance(rhs, E.BufferLoad):
        return False
    return _allows_reuse(body, lhs) and _allows_reuse(body, rhs)


def _pure_reduce(reduce_vars, indices) -> bool:
    """Every index that uses a reduction variable is that variable itself."""
    rv = {id(v): v for v in reduce_vars}
    for idx in indices:
        used = next((v for v in _vars_in(idx) if id(v) in rv), None)
        if used is not None and idx is not rv[id(used)]:
            return False
    return True


def _block_accesses(block: S.Block):
    """Stores, loads and ``Let`` bindings (id of the variable -> its value) of ``block``'s body
    (its init and nested blocks excluded)."""
    stores, loads, lets = [], [], {}
    stack = [block.body]
    while stack:
        s = stack.pop()
        if s is None or isinstance(s, S.BlockRealize):
            continue
        if isinstance(s, S.BufferStore):
            stores.append(s)
        for e in stmt_exprs(s):
            for n in post_order(e):
                if isinstance(n, E.BufferLoad):
                    loads.append(n)
                elif isinstance(n, E.Let):
                    lets[id(n.var)] = n.value
        stack.extend(reversed(stmt_children(s)))
    return stores, loads, lets


def _blocks(func: PrimFunc):
    """Every block of ``func`` in program order (pre-order, iterative)."""
    stack = [func.body]
    while stack:
        s = stack.pop()
        if s is None:
            continue
        if isinstance(s, S.Block):
            yield s
        stack.extend(reversed(stmt_children(s)))


def analyze_op_pattern_kind(func: PrimFunc) -> int:
    """TVM's pattern kind (``OpPattern`` value) of PrimFunc ``func``."""
    if not isinstance(func, PrimFunc):
        raise TypeError(f"analyze_op_pattern_kind expects a tir.PrimFunc, got "
                        f"{type(func).__name__}")
    params = {id(b) for b in func.buffer_map.values()}
    kind = OpPattern.ELEMWISE
    for block in _blocks(func):
        if block.name_hint == "root":
            continue
        stores, loads, lets = _block_accesses(block)
        if not stores:
            kind = OpPattern.OPAQUE
            continue
        store = stores[0]
        if any(not _same_array(s.indices, store.indices) for s in stores[1:]):
            kind = OpPattern.OPAQUE
        pattern, has_elem = OpPattern.ELEMWISE, False
        for ld in loads:
            if _elemwise(store, ld):
                has_elem = True
            elif _broadcast(store, ld):
                pattern = max(pattern, OpPattern.BROADCAST)
            elif _injective(store, ld, lets):
                pattern = max(pattern, OpPattern.INJECTIVE)
            else:
                pattern = OpPattern.OPAQUE
                break
        if pattern == OpPattern.BROADCAST and has_elem:
            pattern = OpPattern.ELEMWISE
        if pattern != OpPattern.OPAQUE:
            writes_param = any(id(w.buffer) in params for w in block.writes)
            if writes_param and kind == OpPattern.COMM_REDUCE:
                kind = OpPattern.OUT_ELEMWISE_FUSABLE
            else:
                kind = max(kind, pattern)
            continue
        reduce_vars = [iv.var for iv in block.iter_vars if iv.iter_type == E.IterVar.CommReduce]
        if not reduce_vars:
            kind = OpPattern.OPAQUE
            continue
        if _is_fma(block.body) or any(not _pure_reduce(reduce_vars, ld.indices)
                                      for ld in loads):
            kind = max(kind, OpPattern.OUT_ELEMWISE_FUSABLE)
            continue
        kind = max(kind, OpPattern.COMM_REDUCE)
    return kind
