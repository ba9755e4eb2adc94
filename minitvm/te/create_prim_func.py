"""``te.create_prim_func``: turn a TE dataflow graph into a PrimFunc with one block per stage."""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import Buffer, decl_buffer
from ..tir.expr import Range
from ..tir.function import PrimFunc
from ..tir.stmt_functor import post_order, substitute, transform_expr
from .tensor import ComputeOp, Operation, PlaceholderOp, Tensor


def topo_order(outputs: list[Tensor]) -> list[Tensor]:
    """All tensors reachable from ``outputs``, producers first (iterative DFS)."""
    order, state = [], {}
    stack = [(t, False) for t in reversed(outputs)]
    while stack:
        t, done = stack.pop()
        if done:
            if state.get(id(t)) != 2:
                state[id(t)] = 2
                order.append(t)
            continue
        if id(t) in state:
            continue
        state[id(t)] = 1
        stack.append((t, True))
        stack.extend((i, False) for i in reversed(t.op.input_tensors) if id(i) not in state)
    return order


def _is_symbolic(shape) -> bool:
    return any(not isinstance(s, E.IntImm) for s in shape)


def _regions(loads, skip: Buffer | None) -> list[S.BufferRegion]:
    """One region per buffer covering all of its point accesses, in first-use order."""
    by_buf: dict[int, list] = {}
    bufs: list[Buffer] = []
    for ld in loads:
        if ld.buffer is skip:
            continue
        if id(ld.buffer) not in by_buf:
            by_buf[id(ld.buffer)] = []
            bufs.append(ld.buffer)
        by_buf[id(ld.buffer)].append(ld.indices)
    out = []
    for b in bufs:
        accesses = by_buf[id(b)]
        region = []
        for d in range(len(b.shape)):
            idx = [a[d] for a in accesses]
            texts = {repr(i) for i in idx}
            if len(texts) == 1:
                region.append(Range.from_min_extent(idx[0], 1))
                continue
            offs = [_split_offset(i) for i in idx]
            if all(o is not None for o in offs) and len({repr(o[0]) for o in offs}) == 1:
                lo = min(o[1] for o in offs)
                hi = max(o[1] for o in offs)
                base = offs[0][0]
                region.append(Range.from_min_extent(base + lo if lo else base, hi - lo + 1))
            else:
                region.append(Range.from_min_extent(E._to_expr(0, b.shape[d].dtype), b.shape[d]))
        out.append(S.BufferRegion(b, region))
    return out


def _split_offset(e):
    if isinstance(e, E.Add) and isinstance(e.b, E.IntImm):
        return e.a, e.b.value
    if isinstance(e, E.Sub) and isinstance(e.b, E.IntImm):
        return e.a, -e.b.value
    if isinstance(e, E.Var):
        return e, 0
    return None


def _stage(t: Tensor, buffers: dict) -> S.Stmt:
    """The loop nest and block computing tensor ``t``."""
    op: ComputeOp = t.op
    out = buffers[id(t)]
    axes = [(iv, E.IterVar.DataPar) for iv in op.axis]
    axes += [(iv, E.IterVar.CommReduce) for iv in op.reduce_axis]
    loop_vars, block_vars, vmap = [], [], {}
    for iv, _ in axes:
        loop_vars.append(E.Var(iv.var.name, iv.var.dtype))
        bv = E.Var("v_" + iv.var.name, iv.var.dtype)
        block_vars.append(bv)
        vmap[iv.var] = bv

    def to_buffer(e):
        if isinstance(e, E.ProducerLoad):
            return E.BufferLoad(buffers[id(e.producer)], e.indices)
        return None

    def lower(e):
        return substitute(transform_expr(e, to_buffer), vmap)

    out_idx = [vmap[iv.var] for iv in op.axis]
    init = None
    body = op.body
    if isinstance(body, E.Reduce):
        comb = body.combiner
        cur = E.BufferLoad(out, out_idx)
        src = lower(body.source[0])
        value = substitute(comb.result[0], {comb.lhs[0]: cur, comb.rhs[0]: src})
        stmt = S.BufferStore(out, value, out_idx)
        if not S.is_true(body.condition):
            stmt = S.IfThenElse(lower(body.condition), stmt)
        ident = body.init[0] if body.init else comb.identity_element[0]
        init = S.BufferStore(out, lower(ident), out_idx)
    else:
        stmt = S.BufferStore(out, lower(body), out_idx)
    loads = []
    S_ = [stmt]
    for s in S_:
        exprs = [s.value, *s.indices] if isinstance(s, S.BufferStore) else [s.condition,
                                                                            s.then_case.value]
        for e in exprs:
            loads.extend(n for n in post_order(e) if isinstance(n, E.BufferLoad))
    reads = _regions(loads, out if init is not None else None)
    writes = [S.BufferRegion(out, [Range.from_min_extent(v, 1) for v in out_idx])]
    iter_vars = [E.IterVar(Range.from_min_extent(iv.dom.min, iv.dom.extent), bv, kind)
                 for (iv, kind), bv in zip(axes, block_vars)]
    block = S.Block(iter_vars, reads, writes, op.name, stmt, init=init,
                    annotations=_block_annotations(op.attrs))
    nest: S.Stmt = S.BlockRealize(loop_vars, True, block)
    for (iv, _), lv in reversed(list(zip(axes, loop_vars))):
        nest = S.For(lv, iv.dom.min, iv.dom.extent, S.ForKind.SERIAL, nest)
    return nest


def _block_annotations(attrs: dict) -> dict:
    """A compute's attrs as block annotations, less those naming TE tensors or operations: they
    belong to the TE graph (the resize rows schedule reads them there), and a PrimFunc holding
    them would hold the whole graph, whose tensors and operations refer to each other."""
    def te_level(v) -> bool:
        if isinstance(v, tuple | list):
            return any(te_level(x) for x in v)
        return isinstance(v, Tensor | Operation)

    return {k: v for k, v in attrs.items() if not te_level(v)}


def create_prim_func(ops: list, index_dtype_override: str | None = None) -> PrimFunc:
    """A PrimFunc computing the TE graph whose arguments are ``ops`` (inputs then outputs)."""
    args = list(ops)
    for a in args:
        if not isinstance(a, Tensor):
            raise TypeError(f"create_prim_func expects te.Tensors, got {type(a).__name__}")
    tensors = topo_order(args)
    arg_ids = {id(a) for a in args}
    buffers: dict[int, Buffer] = {}
    for t in tensors:
        if isinstance(t.op, PlaceholderOp) and id(t) not in arg_ids:
            raise ValueError(f"placeholder {t.name!r} is used but not in the argument list")
        buffers[id(t)] = decl_buffer(t.shape, t.dtype, t.name)
    params, buffer_map = [], {}
    for a in args:
        buf = buffers[id(a)]
        handle = E.Var(("var_" + a.name) if _is_symbolic(a.shape) else a.name, "handle")
        params.append(handle)
        buffer_map[handle] = buf
    stages = [_stage(t, buffers) for t in tensors if isinstance(t.op, ComputeOp)]
    allocs = [buffers[id(t)] for t in tensors
              if isinstance(t.op, ComputeOp) and id(t) not in arg_ids]
    body = S.SeqStmt(stages) if len(stages) != 1 else stages[0]
    root = S.BlockRealize([], True, S.Block([], [], [], "root", body, alloc_buffers=allocs))
    attrs = {"global_symbol": "main", "tir.noalias": True}
    return PrimFunc(params, root, None, buffer_map, attrs)
