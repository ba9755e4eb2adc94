"""Raise a block-form PrimFunc back to tensor expressions, so the shared schedules apply.

A PrimFunc from ``te.create_prim_func``, Relax's LegalizeOps or FuseTIR is a root block whose
body is a sequence of loop nests, each running one ``T.block`` that stores one element of one
buffer (a reduction block adds ``T.init``). ``analyze_nest`` checks that a nest is such a
block, ``raise_nest`` turns it into a TE stage (a ``ComputeOp`` over the stages or
placeholders it reads; a reduction block becomes a ``te`` reduction) tagged by
``raise_patterns.op_tag`` when it is a GEMM or a conv2d (grouped and depthwise too) and by
``raise_pool.pool_tag`` when it is a window pool, by ``raise_scan`` when it is a prefix scan or a
top-k selection, as the rule table keys them; an average pool's division by its counts becomes
one mean stage (``raise_pool.fused_mean``).
Statements it cannot raise are kept as they are; ``segments`` groups the top-level statements
into runs of raised stages and kept statements, in program order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..te.tensor import ComputeOp, PlaceholderOp, Tensor
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import Buffer
from ..tir.expr import IterVar, Range
from ..tir.stmt_functor import post_order, stmt_exprs, transform_expr, walk_stmts
from . import resize
from .common import const_int, same_dims
from .pool import POOL_TAG
from .raise_patterns import gemm_tag, op_tag  # noqa: F401  (gemm_tag re-exported)
from .raise_pool import bins_tag, fused_mean, pool_tag
from .raise_scan import scan_tag, selection_stage


@dataclass
class Nest:
    """One top-level statement: a raisable block nest (``block`` set) or a kept statement."""

    stmt: S.Stmt
    block: S.Block | None = None
    out: Buffer | None = None
    reads: list = field(default_factory=list)  # buffers read (raisable nests)


@dataclass
class Segment:
    """Consecutive nests lowered together (``raised``) or kept as written."""

    nests: list
    raised: bool
    inputs: list = field(default_factory=list)  # (te placeholder, buffer)
    outputs: list = field(default_factory=list)  # (te tensor, buffer)


def unwrap_root(func) -> tuple[S.Block | None, list]:
    """The root block (None when the body has none) and its top-level statements."""
    body = func.body
    root = None
    if isinstance(body, S.BlockRealize) and not body.iter_values and S.is_true(body.predicate):
        blk = body.block
        if not blk.iter_vars and blk.init is None and not blk.match_buffers:
            root, body = blk, blk.body
    stmts = list(body.seq) if isinstance(body, S.SeqStmt) else [body]
    return root, stmts


def _buffer_plain(b: Buffer) -> bool:
    return not b.strides and const_int(b.elem_offset) == 0 and b.scope == "global"


def _loads(e) -> list:
    return [n for n in post_order(e) if isinstance(n, E.BufferLoad)]


def analyze_nest(stmt: S.Stmt) -> Nest:
    """``Nest(stmt, block, out, reads)`` when ``stmt`` is a raisable loop nest, else kept."""
    kept = Nest(stmt)
    loops, s = [], stmt
    while isinstance(s, S.For):
        if s.kind != S.ForKind.SERIAL or const_int(s.min) != 0 or s.annotations:
            return kept
        loops.append(s)
        s = s.body
    if not isinstance(s, S.BlockRealize) or not S.is_true(s.predicate):
        return kept
    blk = s.block
    if blk.alloc_buffers or blk.match_buffers or not isinstance(blk.body, S.BufferStore):
        return kept
    loop_of = {id(lp.loop_var): lp for lp in loops}
    used = set()
    for iv, val in zip(blk.iter_vars, s.iter_values):
        lp = loop_of.get(id(val)) if isinstance(val, E.Var) else None
        if lp is None or id(val) in used or const_int(iv.dom.min) != 0 or \
                not same_dims([iv.dom.extent], [lp.extent]) or \
                iv.iter_type not in (IterVar.DataPar, IterVar.CommReduce):
            return kept
        used.add(id(val))
    if len(used) != len(loops):
        return kept
    st = blk.body
    spatial = [iv for iv in blk.iter_vars if iv.iter_type == IterVar.DataPar]
    reduce = [iv for iv in blk.iter_vars if iv.iter_type == IterVar.CommReduce]
    out = st.buffer
    if not _buffer_plain(out) or len(st.indices) != len(spatial) or \
            any(i is not iv.var for i, iv in zip(st.indices, spatial)) or \
            not same_dims(out.shape, [iv.dom.extent for iv in spatial]):
        return kept
    if (blk.init is None) != (not reduce) or st.value.dtype != out.dtype:
        return kept
    loop_ids = {id(lp.loop_var) for lp in loops}
    value_nodes = list(post_order(st.value))  # one walk, read for both checks below
    inits = [list(post_order(blk.init.value))] if blk.init is not None else []
    for nodes in (value_nodes, *inits):
        if any(isinstance(v, E.Var) and id(v) in loop_ids for v in nodes):
            return kept  # the body reads a loop variable directly, not through the block's
    reads = []
    for ld in (n for n in value_nodes if isinstance(n, E.BufferLoad)):
        if not _buffer_plain(ld.buffer):
            return kept
        if ld.buffer is out and not reduce:
            return kept  # reads what it overwrites: keep the block's own order
        if ld.buffer is not out and all(ld.buffer is not b for b in reads):
            reads.append(ld.buffer)
    if reduce and _reduction_parts(blk) is None:
        return kept
    return Nest(stmt, blk, out, reads)


_COMBINERS = {E.Add: lambda x, y: x + y, E.Mul: lambda x, y: x * y,
              E.Max: lambda x, y: E.Max(x, y), E.Min: lambda x, y: E.Min(x, y)}


def _reduction_parts(blk: S.Block):
    """``(combiner class, source, identity)`` of a reduction block, or None."""
    st, init = blk.body, blk.init
    if not isinstance(init, S.BufferStore) or init.buffer is not st.buffer or \
            len(init.indices) != len(st.indices) or \
            any(a is not b for a, b in zip(init.indices, st.indices)):
        return None
    ident = init.value
    if not isinstance(ident, (E.IntImm, E.FloatImm)) or ident.dtype != st.buffer.dtype:
        return None
    v = st.value
    if type(v) not in _COMBINERS:
        return None

    def is_cur(e):
        return isinstance(e, E.BufferLoad) and e.buffer is st.buffer and \
            len(e.indices) == len(st.indices) and \
            all(a is b for a, b in zip(e.indices, st.indices))

    if is_cur(v.a):
        src = v.b
    elif is_cur(v.b):
        src = v.a
    else:
        return None
    if any(ld.buffer is st.buffer for ld in _loads(src)):
        return None
    return type(v), src, ident


# ---------------------------------------------------------------------------------- raising
def _new_tensor(name: str, tag: str, attrs, axis, body, shape) -> Tensor:
    op = ComputeOp(name, tag, attrs, axis, body)
    t = Tensor(op, 0, shape, body.dtype)
    op._outputs = [t]
    return t


def placeholder_for(buf: Buffer) -> Tensor:
    op = PlaceholderOp(buf.name, buf.shape, buf.dtype)
    t = Tensor(op, 0, buf.shape, buf.dtype)
    op._outputs = [t]
    return t


def raise_nest(nest: Nest, tensor_of) -> Tensor:
    """The TE stage of raisable ``nest``; ``tensor_of(buffer)`` gives the tensors it reads."""
    blk = nest.block
    vmap, axis, raxis = {}, [], []
    for iv in blk.iter_vars:
        v = E.Var(iv.var.name, iv.var.dtype)
        vmap[iv.var] = v
        new = IterVar(Range.from_min_extent(E.IntImm(iv.dom.extent.dtype, 0), iv.dom.extent), v,
                      iv.iter_type)
        (axis if iv.iter_type == IterVar.DataPar else raxis).append(new)

    def to_te(e):
        # one rebuild: the block's iteration vars renamed, its loads read the raised tensors
        # (a load's indices are renamed before the load itself is visited)
        def fpost(n):
            if isinstance(n, E.Var):
                return vmap.get(n)
            if isinstance(n, E.BufferLoad):
                return E.ProducerLoad(tensor_of(n.buffer), n.indices)
            return None

        return transform_expr(e, fpost)

    st = blk.body
    if raxis:
        kind, src, ident = _reduction_parts(blk)
        lhs, rhs = E.Var("x", ident.dtype), E.Var("y", ident.dtype)
        comb = E.CommReducer([lhs], [rhs], [_COMBINERS[kind](lhs, rhs)], [ident])
        body = E.Reduce(comb, [to_te(src)], raxis, None, 0, [ident])
    else:
        body = to_te(st.value)
    t = _new_tensor(blk.name_hint, "", blk.annotations, axis, body, nest.out.shape)
    tag, attrs = op_tag(t)
    if not tag and not raxis:  # (a resize keeps its settings but not its tag in a PrimFunc)
        tag, attrs = resize.raised_tag(t)
    if not tag and raxis:
        tag, attrs = pool_tag(t)
    if not tag and raxis:
        tag, attrs = bins_tag(t)
    if not tag and raxis:
        tag, attrs = scan_tag(t)
        picked = None if tag else selection_stage(t)
        if picked is not None:  # (topk / sort / argsort: the selection stage)
            return picked
    if tag:
        t.op.tag = tag
        t.op.attrs = {**t.op.attrs, **attrs}
        if tag == POOL_TAG:  # (named as topi names it: "max_pool2d", "sum_pool2d")
            t.op.name = f"{attrs['kind']}_pool{len(t.shape) - 2}d"
    elif not raxis:
        t = fused_mean(t) or t  # an average pool's division by its counts: one mean stage
    return t


# ---------------------------------------------------------------------------------- segments
def segments(nests: list, param_bufs: set) -> list[Segment]:
    """Group ``nests`` into raised and kept segments and raise the raised ones.

    A buffer written by two statements, or read by a statement before the one writing it, is
    left to the kept statements' order. ``param_bufs`` are the ids of the function's buffers.
    """
    writers: dict[int, int] = {}
    for n in nests:
        bufs = [n.out] if n.block is not None else _stored(n.stmt)
        for b in bufs:
            writers[id(b)] = writers.get(id(b), 0) + 1
    raisable = [n.block is not None and writers[id(n.out)] == 1 for n in nests]
    groups: list[Segment] = []
    for n, ok in zip(nests, raisable):
        if groups and groups[-1].raised == ok:
            groups[-1].nests.append(n)
        else:
            groups.append(Segment([n], ok))
    for k, seg in enumerate(groups):
        if seg.raised:
            later = set()
            for g in groups[k + 1:]:
                for n in g.nests:
                    later.update(id(b) for b in (n.reads if n.block is not None
                                                 else _referenced(n.stmt)))
            if not _raise_segment(seg, param_bufs, later):
                seg.raised = False
    return groups


def _raise_segment(seg: Segment, param_bufs: set, read_later: set) -> bool:
    """Raise the nests of ``seg`` into one TE graph; False when they must stay as written."""
    produced: dict[int, Tensor] = {}
    inputs: dict[int, tuple] = {}

    def tensor_of(buf):
        if id(buf) in produced:
            return produced[id(buf)]
        if id(buf) not in inputs:
            inputs[id(buf)] = (placeholder_for(buf), buf)
        return inputs[id(buf)][0]

    for n in seg.nests:
        produced[id(n.out)] = raise_nest(n, tensor_of)
    if any(k in produced for k in inputs):
        return False  # a buffer read before the statement writing it: keep the order
    seg.inputs = list(inputs.values())
    seg.outputs = [(produced[id(n.out)], n.out) for n in seg.nests
                   if id(n.out) in param_bufs or id(n.out) in read_later]
    return True


def _stored(stmt) -> list:
    out = []
    for s in walk_stmts(stmt):
        if isinstance(s, S.BufferStore) and all(s.buffer is not b for b in out):
            out.append(s.buffer)
    return out


def _referenced(stmt) -> set:
    """Ids of every buffer a statement loads or stores."""
    out = set()
    for s in walk_stmts(stmt):
        if isinstance(s, S.BufferStore):
            out.add(id(s.buffer))
        for e in stmt_exprs(s):
            out.update(id(ld.buffer) for ld in _loads(e))
    return out


def referenced_buffers(stmt) -> set:
    """Ids of every buffer ``stmt`` loads or stores (nested blocks included)."""
    return _referenced(stmt)
