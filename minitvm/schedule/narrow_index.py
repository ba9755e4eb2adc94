"""32-bit index arithmetic for a static block-form function written with 64-bit indices.

Relax writes every shape, loop and block variable as ``int64`` (TVM's Relax does too); Relay's
TE functions use ``int32``. The schedules build their loops from the types they are given, so a
Relax kernel computed the same convolution or pooling as Relay's with 64-bit loop counters,
sign extensions and 64-bit multiplies in its address arithmetic (det_postprocess's 64->96 3x3/2
conv at 16x16 ran 1.3x slower than Relay's). TVM narrows such functions the same way
(``NarrowDataType``, Relax's ``ForceNarrowIndexToInt32``).

``narrow_indices(func)`` applies when every buffer of ``func`` is static and holds fewer than
2**31 elements. Loop and block variables of constant range become ``int32``, buffer shapes
``int32`` constants, and every ``int64`` expression whose bound (from the variables' ranges) fits
in ``int32`` is computed in ``int32``. Values stay of their type: an ``int64`` stored, compared
with data or loaded from a buffer (an argmax's index, a gather's indices) stays ``int64``, and
a narrowed variable feeding one is widened back by a cast.
"""

from __future__ import annotations

from ..arith.bound import _node_bound, dtype_range
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import Buffer
from ..tir.function import PrimFunc
from ..tir.stmt_functor import (
    _copy,
    expr_children,
    post_order,
    transform_stmt,
    walk_stmts,
    with_children,
)
from .common import const_int

I32 = "int32"
I64 = "int64"
LIMIT = (1 << 31) - 1
_LO, _HI = -(1 << 31), LIMIT
# int64 nodes narrowed when their operands are (Cast: its operand); others keep their type
_ARITH = (E.Add, E.Sub, E.Mul, E.FloorDiv, E.FloorMod, E.Div, E.Mod, E.Min, E.Max)


def _buffers(root, func: PrimFunc) -> list[Buffer]:
    out = list(func.buffer_map.values())
    for s in walk_stmts(root):
        if isinstance(s, S.Block):
            out.extend(s.alloc_buffers)
            if s.match_buffers:
                return []
        elif isinstance(s, S.DeclBuffer):
            out.append(s.buffer)
    return out


def _fits(iv) -> bool:
    return _LO <= iv[0] and iv[1] <= _HI


def narrow_indices(func: PrimFunc) -> PrimFunc:
    """``func`` with its index arithmetic in ``int32`` (see the module docstring), or ``func``
    itself when a buffer is symbolic or too large, or nothing is ``int64``."""
    bufs = _buffers(func.body, func)
    if not bufs:
        return func
    for b in bufs:
        dims = [const_int(d) for d in b.shape]
        if any(d is None for d in dims) or b.strides or const_int(b.elem_offset) != 0:
            return func
        size = 1
        for d in dims:
            size *= d
        if size > LIMIT:
            return func
    ranges: dict[int, tuple] = {}  # id(var) -> (lo, hi) of every loop / block variable
    vmap: dict[int, E.Var] = {}  # id(int64 var) -> its int32 twin

    def bind(v, lo, extent):
        lo, ext = const_int(lo), const_int(extent)
        if lo is None or ext is None:
            return
        ranges[id(v)] = (lo, lo + max(ext, 1) - 1)
        if v.dtype == I64 and _fits(ranges[id(v)]):
            vmap[id(v)] = E.Var(v.name, I32)

    for s in walk_stmts(func.body):
        if isinstance(s, S.For):
            bind(s.loop_var, s.min, s.extent)
        elif isinstance(s, S.Block):
            for iv in s.iter_vars:
                bind(iv.var, iv.dom.min, iv.dom.extent)
    if not vmap and all(d.dtype != I64 for b in bufs for d in b.shape):
        return func

    def var_bound(v):
        return ranges.get(id(v), dtype_range(v.dtype))

    memo: dict[int, tuple] = {}  # id(expr) -> (its int32 form or None, its form of its type)

    def rewrite(root):
        for node in post_order(root):
            if id(node) in memo:
                continue
            kids = expr_children(node)
            got = [memo[id(k)] for k in kids]
            bound = _node_bound(node, [g[2] for g in got], var_bound)
            memo[id(node)] = (*_rewrite(node, kids, got, bound), bound)
        return memo[id(root)]

    def wide(root):  # root's form of its own type
        return rewrite(root)[1]

    def index(root):  # an index: int32 where it can be
        n32, w, _ = rewrite(root)
        return n32 if n32 is not None else w

    def exact32(root):  # a narrowed variable's value, min or extent
        n32, w, _ = rewrite(root)
        return n32 if n32 is not None else E.Cast(I32, w)

    new_bufs: dict[int, Buffer] = {}
    for b in bufs:
        if id(b) not in new_bufs and any(d.dtype == I64 for d in b.shape):
            new_bufs[id(b)] = Buffer(b.data, b.dtype, [E.IntImm(I32, const_int(d))
                                                       for d in b.shape],
                                     name=b.name, scope=b.scope)

    def nb(b):
        return new_bufs.get(id(b), b)

    def region(rs):
        return tuple(S.BufferRegion(nb(r.buffer), [E.Range.from_min_extent(
            index(x.min), index(x.extent)) for x in r.region]) for r in rs)

    def fstmt(s):
        if isinstance(s, S.BufferStore):
            return _copy(s, buffer=nb(s.buffer), value=wide(s.value),
                         indices=tuple(index(i) for i in s.indices))
        if isinstance(s, S.For):
            v = vmap.get(id(s.loop_var))
            if v is None:
                return _copy(s, min=wide(s.min), extent=wide(s.extent))
            return _copy(s, loop_var=v, min=exact32(s.min), extent=exact32(s.extent))
        if isinstance(s, S.Block):
            ivs = []
            for iv in s.iter_vars:
                v = vmap.get(id(iv.var))
                dom = E.Range.from_min_extent(exact32(iv.dom.min), exact32(iv.dom.extent)) \
                    if v is not None else iv.dom
                ivs.append(E.IterVar(dom, v if v is not None else iv.var, iv.iter_type,
                                     iv.thread_tag))
            return _copy(s, iter_vars=tuple(ivs), reads=region(s.reads),
                         writes=region(s.writes), alloc_buffers=[nb(b) for b in s.alloc_buffers])
        if isinstance(s, S.BlockRealize):
            vals = tuple(exact32(v) if iv.var.dtype == I32 and v.dtype == I64 else wide(v)
                         for v, iv in zip(s.iter_values, s.block.iter_vars, strict=True))
            return _copy(s, iter_values=vals, predicate=wide(s.predicate))
        if isinstance(s, S.DeclBuffer):
            return _copy(s, buffer=nb(s.buffer))
        if isinstance(s, S.Allocate):
            return _copy(s, extents=tuple(index(e) for e in s.extents),
                         condition=wide(s.condition))
        if isinstance(s, S.IfThenElse | S.AssertStmt):
            return _copy(s, condition=wide(s.condition))
        if isinstance(s, S.LetStmt | S.Evaluate | S.AttrStmt):
            return _copy(s, value=wide(s.value))
        return None

    def _rewrite(node, kids, got, bound):
        """(int32 form or None, form of node's type) of ``node`` from its kids' forms."""
        if isinstance(node, E.Var):
            v = vmap.get(id(node))
            return (v, E.Cast(I64, v)) if v is not None else (None, node)
        if isinstance(node, E.IntImm):
            return (E.IntImm(I32, node.value) if node.dtype == I64 and _fits(bound) else None,
                    node)
        if not kids:
            return None, node
        n32s = [g[0] for g in got]
        wides = [g[1] for g in got]
        if node.dtype == I64 and _fits(bound):
            if isinstance(node, _ARITH) and all(k is not None for k in n32s):
                n32 = type(node)(n32s[0], n32s[1])
                return n32, E.Cast(I64, n32)
            if isinstance(node, E.Cast):
                src = n32s[0] if n32s[0] is not None else \
                    wides[0] if wides[0].dtype == I32 else None
                if src is not None:
                    return src, E.Cast(I64, src)
            if isinstance(node, E.Select) and n32s[1] is not None and n32s[2] is not None:
                n32 = E.Select(wides[0], n32s[1], n32s[2])
                return n32, E.Cast(I64, n32)
        if isinstance(node, E.CmpOp) and not isinstance(node, E.And | E.Or) and \
                kids[0].dtype == I64 and n32s[0] is not None and n32s[1] is not None:
            return None, type(node)(n32s[0], n32s[1])
        if isinstance(node, E.BufferLoad):
            idx = tuple(n if n is not None else w for n, w in zip(n32s, wides, strict=True))
            return None, _copy(node, buffer=nb(node.buffer), indices=idx)
        if isinstance(node, E.Cast):
            src = n32s[0] if n32s[0] is not None else wides[0]
            return None, src if src.dtype == node.dtype else E.Cast(node.dtype, src)
        if all(w is k for w, k in zip(wides, kids, strict=True)):
            return None, node
        return None, with_children(node, wides)

    body = transform_stmt(func.body, None, fstmt)
    buffer_map = {p: nb(b) for p, b in func.buffer_map.items()}
    return PrimFunc(func.params, body, func.ret_type, buffer_map, func.attrs)
