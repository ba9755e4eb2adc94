"""Schedules: a TE graph of one fused function to one PrimFunc with fast loop nests.

Injective stages are inlined into their consumers (no intermediate tensor for an elementwise
chain); what remains is materialized: outputs, reductions and GEMM anchors. Each materialized
stage becomes one loop nest: outer loops fused and run in parallel when the work is large, the
innermost loop split into 16-lane vector chunks plus a scalar tail. Reductions vectorize either
across output elements (small windows: pooling, depthwise conv) or with vector partial sums along
the reduction (softmax, layer norm, GEMV). Dense, matmul, batch_matmul and conv2d (by im2col)
call a GEMM (``gemm.py``) and apply their fused epilogue in place on the GEMM output.
"""

from __future__ import annotations

from ...te.create_prim_func import _topo
from ...te.tensor import ComputeOp, PlaceholderOp
from ...tir import expr as E
from ...tir import stmt as S
from ...tir.buffer import decl_buffer
from ...tir.function import PrimFunc
from ...tir.stmt_functor import post_order, substitute, transform_expr
from ..op._compute._common import prod as _prod
from ..op._compute._common import static_shape as _shape
from . import gemm, pool_schedule

PARALLEL_MIN_WORK = 1 << 18  # elements (times reduction length) before a loop runs in parallel
STACK_TEMP_BYTES = 64 * 1024  # temporaries up to this size live on the stack
SMALL_REDUCE = 64  # reductions this short are unrolled and vectorized across outputs
GEMM_TAGS = ("dense", "matmul", "batch_matmul", "conv2d_nchw")


def _i(v: int) -> E.IntImm:
    return E.IntImm("int32", v)


def _lanes(dtype: str) -> int:
    bits = int("".join(c for c in dtype if c.isdigit()) or 8) if dtype != "bool" else 8
    return 8 if bits == 64 else 16


def _nbytes(dtype: str) -> int:
    if dtype == "bool":
        return 1
    return int("".join(c for c in dtype if c.isdigit())) // 8


class LoweringError(ValueError):
    """A fused function that this back end cannot lower natively (it falls back to numpy)."""


class _Ctx:
    """State of one lowering: buffers of materialized tensors and the workspace layout."""

    def __init__(self):
        self.buf: dict[int, object] = {}
        self.ws_bytes = 0
        self.ws = None
        self.stack_temps: list = []
        self.ws_views: list = []
        self.counter = 0
        self.packed: set = set()  # ids of dense anchors whose weight input is prepacked

    def fresh(self, name: str) -> E.Var:
        self.counter += 1
        return E.Var(f"{name}{self.counter}", "int32")

    def workspace(self):
        if self.ws is None:
            self.ws = _param_buffer((1,), "uint8", "workspace")
        return self.ws

    def temp(self, shape, dtype: str, name: str):
        """A temporary buffer: on the stack when small, else a slice of the workspace param."""
        shape = tuple(shape) or (1,)
        nbytes = _prod(shape) * _nbytes(dtype)
        if nbytes <= STACK_TEMP_BYTES:
            b = decl_buffer(shape, dtype, name)
            self.stack_temps.append(b)
            return b
        off = -(-self.ws_bytes // 64) * 64
        self.ws_bytes = off + nbytes
        ws = self.workspace()
        view = decl_buffer(shape, dtype, name, data=ws.data, elem_offset=off // _nbytes(dtype))
        self.ws_views.append(view)
        return view


# ---------------------------------------------------------------------------------- inlining
def _is_gemm(t) -> bool:
    return isinstance(t.op, ComputeOp) and t.op.tag in GEMM_TAGS and gemm.use_gemm(t)


def plan(outputs, inputs):
    """Topological order and which tensors are materialized (not inlined)."""
    order = _topo(list(outputs))
    out_ids = {id(t) for t in outputs}
    in_ids = {id(t) for t in inputs}
    for t in order:
        if isinstance(t.op, PlaceholderOp) and id(t) not in in_ids:
            raise LoweringError(f"placeholder {t.name!r} is not an input of the function")
    materialize = set(out_ids)
    for t in order:
        if not isinstance(t.op, ComputeOp):
            continue
        if isinstance(t.op.body, E.Reduce):
            materialize.add(id(t))
        if _is_gemm(t) or pool_schedule.supported(t):
            for src in t.op.attrs["operands"]:
                if isinstance(src.op, ComputeOp):
                    materialize.add(id(src))
    return order, materialize


def _inline_all(order, materialize, ctx) -> dict:
    """``id(tensor) -> body`` with loads of inlined producers replaced by their bodies."""
    bodies: dict[int, object] = {}

    for t in order:
        if not isinstance(t.op, ComputeOp):
            continue

        def fpost(e):
            if not isinstance(e, E.ProducerLoad):
                return None
            p = e.producer
            if id(p) in ctx.buf:
                b = ctx.buf[id(p)]
                return E.BufferLoad(b, e.indices if e.indices else (_i(0),))
            body = bodies[id(p)]
            return substitute(body, {iv.var: ix for iv, ix in zip(p.op.axis, e.indices)})

        bodies[id(t)] = transform_expr(t.op.body, fpost)
    return bodies


# ---------------------------------------------------------------------------------- loops
def _outer_loops(ctx, dims, parallel: bool, body_fn):
    """Loop over ``dims`` (fused into one loop, parallel when asked); ``body_fn(idx_list)``."""
    if not dims:
        return body_fn([])
    n = _prod(dims)
    v = ctx.fresh("o")
    idx, rest = [], v
    for k in range(len(dims) - 1, -1, -1):
        d = dims[k]
        if d == 1:
            idx.append(_i(0))
        elif k == 0 or all(x == 1 for x in dims[:k]):
            idx.append(rest)
            rest = _i(0)
        else:
            idx.append(E.FloorMod(rest, d))
            rest = E.FloorDiv(rest, d)
    idx.reverse()
    kind = S.ForKind.PARALLEL if parallel and n > 1 else S.ForKind.SERIAL
    return S.For(v, 0, n, kind, body_fn(idx))


def _vector_inner(ctx, extent: int, lanes: int, body_fn):
    """``for j in [0, extent)``: vector chunks of ``lanes`` plus a scalar tail."""
    parts = []
    nvec = extent // lanes if extent >= lanes else 0
    if nvec:
        vo, vi = ctx.fresh("vo"), ctx.fresh("vi")
        inner = S.For(vi, 0, lanes, S.ForKind.VECTORIZED, body_fn(vo * lanes + vi))
        parts.append(S.For(vo, 0, nvec, S.ForKind.SERIAL, inner) if nvec > 1 else
                     substitute(inner, {vo: _i(0)}))
    tail = extent - nvec * lanes
    if tail:
        t = ctx.fresh("t")
        parts.append(S.For(t, nvec * lanes, tail, S.ForKind.SERIAL, body_fn(t)))
    return S.SeqStmt(parts) if len(parts) != 1 else parts[0]


def _sub_axes(body, axis, idx):
    return substitute(body, {iv.var: ix for iv, ix in zip(axis, idx)})


def injective_nest(ctx, t, buf, body):
    """The loop nest storing the inlined ``body`` of tensor ``t`` into ``buf``."""
    shape = _shape(t)
    if not shape:
        return S.BufferStore(buf, body, [_i(0)])
    total = _prod(shape)
    lanes = _lanes(t.dtype)

    def store(outer):
        def at(j):
            idx = outer + [j]
            return S.BufferStore(buf, _sub_axes(body, t.op.axis, idx), idx)

        return _vector_inner(ctx, shape[-1], lanes, at)

    return _outer_loops(ctx, list(shape[:-1]), total >= PARALLEL_MIN_WORK, store)


def _reduce_parts(t, body):
    if not isinstance(body, E.Reduce) or len(body.source) != 1:
        raise LoweringError(f"stage {t.name!r}: unsupported reduction")
    if not S.is_true(body.condition):
        raise LoweringError(f"stage {t.name!r}: conditional reductions are not lowered")
    comb = body.combiner
    ident = body.init[0] if body.init else comb.identity_element[0]

    def combine(a, b):
        return substitute(comb.result[0], {comb.lhs[0]: a, comb.rhs[0]: b})

    return body.source[0], ident, combine


def reduce_nest(ctx, t, buf, body):
    """The loop nest of a reduction stage (see the module docstring for the strategies)."""
    src, ident, combine = _reduce_parts(t, body)
    shape = _shape(t)
    raxes = list(body.axis)
    rext = [int(r.dom.extent) for r in raxes]
    rmin = [int(r.dom.min) for r in raxes]
    rtotal = _prod(rext)
    work = _prod(shape) * rtotal
    lanes = _lanes(t.dtype)
    parallel = work >= PARALLEL_MIN_WORK
    if not shape:
        shape = (1,)
        out_axes = []
    else:
        out_axes = list(t.op.axis)

    def src_at(idx, rvals):
        e = substitute(src, {iv.var: ix for iv, ix in zip(out_axes, idx)})
        return substitute(e, {r.var: v for r, v in zip(raxes, rvals)})

    def store_idx(idx):
        return idx if out_axes else [_i(0)]

    if rtotal <= SMALL_REDUCE and shape[-1] >= 8 and out_axes:
        # unrolled window, vectorized across the innermost output axis
        points = [[]]
        for mn, ext in zip(rmin, rext):
            points = [p + [_i(mn + k)] for p in points for k in range(ext)]

        def store(outer):
            def at(j):
                idx = outer + [j]
                stmts = [S.BufferStore(buf, ident, idx)]
                for p in points:
                    stmts.append(S.BufferStore(buf, combine(E.BufferLoad(buf, idx),
                                                            src_at(idx, p)), idx))
                return S.SeqStmt(stmts)

            return _vector_inner(ctx, shape[-1], lanes, at)

        return _outer_loops(ctx, list(shape[:-1]), parallel, store)

    def per_output(idx):
        sidx = store_idx(idx)
        cur = E.BufferLoad(buf, sidx)
        last = rext[-1]
        rvars = [ctx.fresh("r") for _ in raxes]

        def loops(inner_body, upto):
            s = inner_body
            for k in range(upto - 1, -1, -1):
                s = S.For(rvars[k], rmin[k], rext[k], S.ForKind.SERIAL, s)
            return s

        init = S.BufferStore(buf, ident, sidx)
        if last < 2 * lanes:
            upd = S.BufferStore(buf, combine(cur, src_at(idx, rvars)), sidx)
            return S.SeqStmt([init, loops(upd, len(raxes))])
        acc = decl_buffer((lanes,), t.dtype, "acc")
        vi, ko = ctx.fresh("vi"), ctx.fresh("ko")
        nvec = last // lanes
        acc_init = S.For(vi, 0, lanes, S.ForKind.VECTORIZED, S.BufferStore(acc, ident, [vi]))
        vi2 = ctx.fresh("vi")
        rv = [*rvars[:-1], _i(rmin[-1]) + ko * lanes + vi2]
        acc_upd = S.For(vi2, 0, lanes, S.ForKind.VECTORIZED, S.BufferStore(
            acc, combine(E.BufferLoad(acc, [vi2]), src_at(idx, rv)), [vi2]))
        vec_loop = loops(S.For(ko, 0, nvec, S.ForKind.SERIAL, acc_upd), len(raxes) - 1)
        lane = ctx.fresh("l")
        hsum = S.For(lane, 0, lanes, S.ForKind.SERIAL,
                     S.BufferStore(buf, combine(cur, E.BufferLoad(acc, [lane])), sidx))
        parts = [acc_init, vec_loop, init, hsum]
        tail = last - nvec * lanes
        if tail:
            tv = ctx.fresh("tr")
            rt = [*rvars[:-1], tv]
            upd = S.BufferStore(buf, combine(cur, src_at(idx, rt)), sidx)
            parts.append(loops(S.For(tv, rmin[-1] + nvec * lanes, tail, S.ForKind.SERIAL, upd),
                               len(raxes) - 1))
        body_s = S.SeqStmt(parts)
        return S.Allocate(acc.data, t.dtype, [lanes], True, S.DeclBuffer(acc, body_s))

    return _outer_loops(ctx, list(shape if out_axes else ()), parallel, per_output)


# ---------------------------------------------------------------------------------- driver
def _loads_only_at(expr, buf, axis) -> bool:
    """True when every load of ``buf`` in ``expr`` is at exactly the axis variables."""
    want = [iv.var for iv in axis]
    for n in post_order(expr):
        if isinstance(n, E.BufferLoad) and n.buffer is buf:
            if len(n.indices) != len(want) or any(a is not b for a, b in zip(n.indices, want)):
                return False
    return True


def _epilogue_consumer(order, outputs, anchor, materialize):
    """The output that ``anchor``'s GEMM may write directly (its only materialized consumer)."""
    users = [t for t in order if isinstance(t.op, ComputeOp) and id(t) in materialize
             and t is not anchor and _depends_on(t, anchor, materialize)]
    if len(users) != 1 or users[0] not in outputs:
        return None
    u = users[0]
    if _shape(u) != _shape(anchor) or u.dtype != anchor.dtype or isinstance(u.op.body, E.Reduce):
        return None
    return u


def _depends_on(t, anchor, materialize) -> bool:
    """Does ``t`` read ``anchor`` directly or through inlined stages?"""
    stack, seen = list(t.op.input_tensors), set()
    while stack:
        s = stack.pop()
        if s is anchor:
            return True
        if id(s) in seen or id(s) in materialize or not isinstance(s.op, ComputeOp):
            continue
        seen.add(id(s))
        stack.extend(s.op.input_tensors)
    return False


def _packable(order, t):
    """The generated dense anchor that is ``t``'s only reader as its weight, or None."""
    readers = [u for u in order if isinstance(u.op, ComputeOp)
               and any(x is t for x in u.op.input_tensors)]
    if len(readers) != 1 or not _is_gemm(readers[0]) or not gemm.use_generated_dense(readers[0]):
        return None
    a, w = readers[0].op.attrs["operands"]
    return readers[0] if w is t and a is not t else None


def lower_te(inputs, outputs, name: str = "main", prepack=frozenset(),
             packs: dict | None = None) -> tuple[PrimFunc, int]:
    """Lower a TE graph to a PrimFunc ``f(*inputs, *outputs[, workspace])``.

    Returns the function and its workspace size in bytes (0 when it needs none). Inputs at
    positions ``prepack`` are constants: a dense weight among them is taken prepacked (the
    numpy transform is recorded in ``packs``).
    """
    ctx = _Ctx()
    order, materialize = plan(outputs, inputs)
    params = []
    for k, t in enumerate(inputs):
        anchor = _packable(order, t) if k in prepack else None
        if anchor is not None:
            shape, fn = gemm.packed_weight(anchor)
            b = _param_buffer(shape, t.dtype, f"in{k}")
            ctx.buf[id(t)] = b
            ctx.packed.add(id(anchor))
            params.append(b)
            if packs is not None:
                packs[k] = fn
            continue
        b = _param_buffer(_shape(t) or (1,), t.dtype, f"in{k}")
        ctx.buf[id(t)] = b
        params.append(b)
    out_bufs = []
    for k, t in enumerate(outputs):
        if id(t) in ctx.buf:  # an input returned as is: copy it
            src = t
            t = _copy_stage(src)
            order.append(t)
            materialize.add(id(t))
            outputs = list(outputs)
            outputs[k] = t
        b = _param_buffer(_shape(t) or (1,), t.dtype, f"out{k}")
        ctx.buf[id(t)] = b
        out_bufs.append(b)
    # GEMM anchors whose epilogue can run in place share the output's buffer
    gemm_into = {}
    for t in order:
        if _is_gemm(t) and gemm.use_generated_conv(t) and id(t) not in ctx.buf:
            from . import conv_direct  # writes a [N, O, OH, Wq] grid the epilogue reads

            ctx.buf[id(t)] = ctx.temp(conv_direct.grid_shape(t), t.dtype, t.name)
        elif _is_gemm(t):
            u = _epilogue_consumer(order, list(outputs), t, materialize)
            if u is not None and id(t) not in ctx.buf:
                ctx.buf[id(t)] = ctx.buf[id(u)]
                gemm_into[id(t)] = u
    for t in order:
        if id(t) in materialize and id(t) not in ctx.buf:
            ctx.buf[id(t)] = ctx.temp(_shape(t), t.dtype, t.name)
    bodies = _inline_all(order, materialize, ctx)
    stmts = []
    for t in order:
        if id(t) not in materialize or not isinstance(t.op, ComputeOp):
            continue
        buf = ctx.buf[id(t)]
        if _is_gemm(t):
            stmts.append(gemm.emit(ctx, t, buf, [ctx.buf[id(s)] for s in t.op.attrs["operands"]]))
        elif pool_schedule.supported(t):
            _, ident, combine = _reduce_parts(t, bodies[id(t)])
            x = ctx.buf[id(t.op.attrs["operands"][0])]
            stmts.append(pool_schedule.emit(ctx, t, buf, x, ident, combine))
        elif isinstance(t.op.body, E.Reduce):
            stmts.append(reduce_nest(ctx, t, buf, bodies[id(t)]))
        else:
            body = bodies[id(t)]
            stmts.append(injective_nest(ctx, t, buf, body))
    body = S.SeqStmt(stmts) if len(stmts) != 1 else stmts[0]
    for b in reversed(ctx.ws_views):
        body = S.DeclBuffer(b, body)
    for b in reversed(ctx.stack_temps):
        body = S.Allocate(b.data, b.dtype, [_prod(b.shape)], True, S.DeclBuffer(b, body))
    all_params = params + out_bufs
    if ctx.ws is not None:
        ws = decl_buffer((max(1, ctx.ws_bytes),), "uint8", "workspace", data=ctx.ws.data)
        all_params.append(ws)
    attrs = {"global_symbol": name, "tir.noalias": True}
    handles = [b.data for b in all_params]
    return PrimFunc(handles, body, buffer_map={b.data: b for b in all_params},
                    attrs=attrs), ctx.ws_bytes


def _param_buffer(shape, dtype: str, name: str):
    """A parameter buffer whose data pointer is the parameter itself."""
    return decl_buffer(shape, dtype, name, data=E.Var(name, "handle"))


def _copy_stage(src):
    from ... import te

    return te.compute(src.shape, lambda *i: src[i] if i else src[()], name=src.name + "_copy")
