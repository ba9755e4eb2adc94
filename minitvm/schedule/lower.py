"""Lowering of one fused function's TE graph to one PrimFunc with fast loop nests.

Injective stages are inlined into their consumers (no intermediate tensor for an elementwise
chain); what remains is materialized: outputs, reductions and GEMM anchors. Each materialized
stage becomes one loop nest: outer loops fused and run in parallel when the work is large, the
innermost loop split into 16-lane vector chunks plus a scalar tail. Reductions vectorize either
across output elements (small windows: pooling, depthwise conv) or with vector partial sums along
the reduction (softmax, layer norm, GEMV). Dense, matmul, batch_matmul and conv2d (by im2col)
call a GEMM (``gemm.py``) and apply their fused epilogue in place on the GEMM output.

Which schedule a materialized stage gets is a table, ``RULES``: op tag -> candidate rules in
priority order, each ``(supported(t, options), emit)``; stages no rule takes are scheduled as a
reduction or as an injective loop nest. ``register_rule`` adds one.

This module plans and drives the lowering (which stages are materialized, inlining, one nest per
stage, the fused conv epilogues); the rules are ``rule``, ``rule_registry`` and ``builtin_rules``,
the loop nests ``injective_loops`` and ``reduction_loops``.
"""

from __future__ import annotations

from .. import te
from ..te.create_prim_func import topo_order
from ..te.tensor import ComputeOp, PlaceholderOp
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.function import PrimFunc
from ..tir.stmt_functor import post_order, substitute, transform_expr
from . import (
    attention,
    conv_direct,
    conv_lanes,
    conv_pointwise,
    conv_pool,
    conv_vnni,
    conv_winograd,
    gemm,
    gemm_vnni,
    softmax_rows,
)

# the names this module held before it was split stay importable from it
from .builtin_rules import (  # noqa: F401
    _DEPTHWISE,
    _EPILOGUE_STORES,
    _GEMM,
    _GROUPED,
    _POINTWISE,
    _VNNI,
    _VNNI_GEMM,
    _WINOGRAD,
    _emit_conv_fused,
    _emit_gemm,
    _emit_grouped,
    _emit_grouped_lanes,
    _emit_pool,
    _gemm_then_epilogue,
    _grouped_supported,
)
from .common import (
    LowerCtx,
    LoweringError,
    reads_only_at_own_position,
    redirect_loads,
)
from .common import const_int as _const_int
from .common import dims_of as _shape
from .common import is_static as _is_static
from .common import param_buffer as _param_buffer
from .common import prod_dims as _prod
from .common import same_dims as _same_dims
from .injective_loops import (  # noqa: F401
    TRANSPOSE_TILE,
    _bind,
    _injective_loops,
    _scalar_idx,
    _split_inner,
    _split_row,
    _sub_axes,
    injective_nest,
    transpose_nest,
    transposed_axis,
)
from .options import LoweringOptions
from .reduction_loops import (  # noqa: F401
    FLAT_VECTORS,
    REDUCE_ACCUMULATORS,
    _contiguous_last_axis,
    _flat_trailing_reduction,
    _reduce_parts,
    _trailing_units,
    reduce_nest,
)
from .rule import (  # noqa: F401
    Rule,
)
from .rule_registry import (  # noqa: F401
    RULES,
    _is_gemm,
    _static_stage,
    register_rule,
    rule_emitted_tags,
    select_rule,
)


# ---------------------------------------------------------------------------------- inlining
def plan(outputs, inputs, options: LoweringOptions):
    """Topological order and which tensors are materialized (not inlined)."""
    order = topo_order(list(outputs))
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
        rule = select_rule(t, options)
        if rule is not None and rule.materialize:
            materialize.add(id(t))
        if rule is not None:  # its operands are read from buffers
            for src in t.op.attrs.get("operands", t.op.input_tensors):
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
                return E.BufferLoad(b, e.indices if e.indices else _scalar_idx(b))
            body = bodies[id(p)]
            return substitute(body, _bind(p.op.axis, e.indices))

        bodies[id(t)] = transform_expr(t.op.body, fpost)
    return bodies


# ---------------------------------------------------------------------------------- driver
def _loads_only_at(expr, buf, axis) -> bool:
    """True when every load of ``buf`` in ``expr`` is at exactly the axis variables."""
    want = [iv.var for iv in axis]
    for n in post_order(expr):
        if isinstance(n, E.BufferLoad) and n.buffer is buf:
            if len(n.indices) != len(want) or any(a is not b for a, b in zip(n.indices, want)):
                return False
    return True


def _epilogue_consumer(order, outputs, anchor, materialize, same_dtype: bool = True):
    """The output that ``anchor``'s GEMM may write directly (its only materialized consumer);
    ``same_dtype`` False: also one of another dtype (an anchor that can only write it through
    its epilogue: ``emit_with_epilogue`` gives it a temporary of its own otherwise)."""
    users = [t for t in order if isinstance(t.op, ComputeOp) and id(t) in materialize
             and t is not anchor and _depends_on(t, anchor, materialize)]
    if len(users) != 1 or users[0] not in outputs:
        return None
    u = users[0]
    if not _same_dims(_shape(u), _shape(anchor)) or same_dtype and u.dtype != anchor.dtype or \
            isinstance(u.op.body, E.Reduce):
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


def _packable(order, t, options: LoweringOptions, matmul: bool = False):
    """The generated dense anchor (``matmul``: the generated matmul) that is ``t``'s only
    reader, as its second operand (the weight / B), or None."""
    generated = gemm.use_generated_matmul if matmul else gemm.use_generated_dense
    readers = [u for u in order if isinstance(u.op, ComputeOp)
               and any(x is t for x in u.op.input_tensors)]
    if len(readers) != 1 or not _is_gemm(readers[0], options) or \
            not generated(readers[0], options):
        return None
    a, w = readers[0].op.attrs["operands"]
    return readers[0] if w is t and a is not t else None


def _packable_conv(order, t, options: LoweringOptions):
    """The conv whose schedule packs its weight (or the VNNI integer product, ``gemm_vnni``)
    that is ``t``'s only reader, as its weight, or None."""
    readers = [u for u in order if isinstance(u.op, ComputeOp)
               and any(x is t for x in u.op.input_tensors)]
    if len(readers) != 1 or not (
            select_rule(readers[0], options) in
            (_VNNI, _VNNI_GEMM, _POINTWISE, _WINOGRAD, _GROUPED) or
            conv_direct.packs_weight(readers[0], options)):
        return None
    x, w = readers[0].op.attrs["operands"]
    return readers[0] if w is t and x is not t else None


def lower_te(inputs, outputs, name: str = "main", prepack=frozenset(),
             packs: dict | None = None, options: LoweringOptions | None = None
             ) -> tuple[PrimFunc, int]:
    """Lower a TE graph to a PrimFunc ``f(*inputs, *outputs[, workspace])``.

    Returns the function and its workspace size in bytes (0 when it needs none). Inputs at
    positions ``prepack`` are constants: a dense weight among them is taken prepacked (the
    numpy transform is recorded in ``packs``). ``options`` choose the implementations.
    """
    ctx = LowerCtx(options)
    options = ctx.options
    order, materialize = plan(outputs, inputs, options)
    fused_attention = attention.match(inputs, outputs)
    if fused_attention is not None:  # (its operands are read as given: none prepacked)
        prepack = frozenset()
    params = []
    for k, t in enumerate(inputs):
        anchor = _packable(order, t, options) if k in prepack else None
        conv = _packable_conv(order, t, options) if k in prepack and anchor is None else None
        if anchor is not None or conv is not None:
            shape, fn = gemm.packed_weight(anchor, options) if conv is None else \
                _conv_packed_weight(conv, options)
            b = _param_buffer(shape, t.dtype, f"in{k}")
            ctx.buf[id(t)] = b
            ctx.packed.add(id(anchor if conv is None else conv))
            params.append(b)
            if packs is not None:
                packs[k] = fn
            continue
        b = _param_buffer(_shape(t) or (1,), t.dtype, f"in{k}")
        ctx.buf[id(t)] = b
        params.append(b)
    out_bufs = []
    outputs = list(outputs)
    for k, t in enumerate(outputs):
        if id(t) in ctx.buf:  # an input returned as is: copy it
            src = t
            t = _copy_stage(src)
            order.append(t)
            materialize.add(id(t))
            outputs[k] = t
        b = _param_buffer(_shape(t) or (1,), t.dtype, f"out{k}")
        ctx.buf[id(t)] = b
        out_bufs.append(b)
    found = softmax_rows.match_relay(inputs, outputs) if softmax_rows.applies() and \
        fused_attention is None else None
    if fused_attention is not None:  # FuseAttention's chain: one pass per block of rows
        a = fused_attention
        body = attention.emit(ctx, a, *(ctx.buf[id(t)] for t in (a.q, a.k, a.v)), out_bufs[0],
                              ctx.buf)
        for b in reversed(ctx.ws_views):
            body = S.DeclBuffer(b, body)
    elif found is not None:  # a last-axis softmax: one pass per row, exp once per element
        body = softmax_rows.emit(ctx, found, params[0], out_bufs[0])
        for b in reversed(ctx.ws_views):
            body = S.DeclBuffer(b, body)
    else:
        body = _lower_stages(ctx, order, materialize, outputs)
    all_params = params + out_bufs
    if ctx.ws is not None:
        ws = decl_buffer((max(1, ctx.ws_bytes),), "uint8", "workspace", data=ctx.ws.data)
        all_params.append(ws)
    attrs = {"global_symbol": name, "tir.noalias": True}
    handles = [b.data for b in all_params]
    return PrimFunc(handles, body, buffer_map={b.data: b for b in all_params},
                    attrs=attrs), ctx.ws_bytes


def lower_to_buffers(inputs, outputs, buffers: dict, options: LoweringOptions | None = None,
                     prepack=frozenset(), packs: dict | None = None) -> S.Stmt:
    """The statements computing TE ``outputs`` from ``inputs`` in existing buffers.

    ``buffers`` maps ``id(tensor)`` to the buffer of every input and output tensor; other
    materialized stages get temporaries allocated inside the returned statement (stack or
    heap), so it needs no workspace parameter. Extents may be symbolic. Inputs at positions
    ``prepack`` are build-time constants: one that is the B of a single generated matmul is
    read in the GEMM's packed layout from a new buffer; ``packs[k]`` gets (that buffer, the
    numpy transform of the constant).
    """
    ctx = LowerCtx(options, own_temps=True)
    order, materialize = plan(outputs, inputs, ctx.options)
    for t in [*inputs, *outputs]:
        if id(t) not in buffers:
            raise LoweringError(f"lower_to_buffers: no buffer for tensor {t.name!r}")
        ctx.buf[id(t)] = buffers[id(t)]
    for k, t in enumerate(inputs):
        if k not in prepack or packs is None:
            continue
        anchor = _packable(order, t, ctx.options, matmul=True)
        conv = _packable_conv(order, t, ctx.options) if anchor is None and \
            _is_static(_shape(t)) else None
        if anchor is None and (conv is None or not _is_static(_shape(conv))):
            continue
        shape, fn = gemm.packed_matmul_weight(anchor, ctx.options) if conv is None else \
            _conv_packed_weight(conv, ctx.options)
        b = _param_buffer(shape, t.dtype, f"{buffers[id(t)].name}_packed")
        ctx.buf[id(t)] = b
        ctx.packed.add(id(anchor if conv is None else conv))
        packs[k] = (b, fn)
    return _lower_stages(ctx, order, materialize, list(outputs))


def _conv_packed_weight(conv, options: LoweringOptions):
    """(packed shape, numpy transform) of the constant weight of ``conv`` for the schedule
    its rule chooses (``_packable_conv`` said it takes one)."""
    rule = select_rule(conv, options)
    return conv_vnni.packed_weight(conv) if rule is _VNNI else \
        gemm_vnni.packed_weight(conv) if rule is _VNNI_GEMM else \
        conv_pointwise.packed_weight(conv, options) if rule is _POINTWISE else \
        conv_winograd.packed_weight(conv, options) if rule is _WINOGRAD else \
        conv_lanes.packed_weight(conv) if rule is _GROUPED else \
        conv_direct.packed_weight(conv)


def _lower_stages(ctx, order, materialize, outputs) -> S.Stmt:
    """The loop nests of every materialized stage, inside their temporaries' allocations."""
    options = ctx.options
    # GEMM anchors whose epilogue can run in place share the output's buffer
    fused, ctx.epilogues = {}, {}  # epilogue <-> anchor whose rule computes it (Rule.epilogue)
    in_place = []  # (anchor, consumer): the anchor writes the consumer's buffer, which then
    # runs in place over it (checked below: only if it reads the anchor at its own position)
    pooled = conv_pool.match(ctx, order, materialize, outputs)
    if pooled is not None:  # a conv_lanes conv pooling in its tiles: its map never stored
        conv_pool.prepare(ctx, pooled, materialize)
    for t in order:
        if _fuse_conv_epilogue(ctx, order, materialize, outputs, t, fused):
            continue  # a generated conv whose micro-kernel applies its epilogue
        if _is_gemm(t, options) and gemm.use_generated_conv(t, options) and id(t) not in \
                ctx.buf and conv_direct.grid_shape(t)[3] != _const_int(t.shape[3]):
            # the implicit GEMM writes a [N, O, OH, Wq] grid the epilogue reads (in row mode
            # it writes [N, O, OH, OW]: an epilogue then runs in place, like a GEMM's)
            ctx.buf[id(t)] = ctx.temp(conv_direct.grid_shape(t), t.dtype, t.name)
        elif _is_gemm(t, options):
            u = _epilogue_consumer(order, outputs, t, materialize)
            if u is not None and id(t) not in ctx.buf and \
                    _same_dims(_shape(ctx.buf[id(u)]), _shape(t)):
                ctx.buf[id(t)] = ctx.buf[id(u)]
                if gemm.fuses_epilogue(t, options):  # the matmul's store applies it
                    fused[id(u)], ctx.epilogues[id(t)] = t, u
                else:
                    in_place.append((t, u))
        elif id(t) not in ctx.buf and getattr(select_rule(t, options), "epilogue", False):
            # (an int32 VNNI conv requantized to uint8 stores its epilogue's values: no int32
            # pass over memory, the requantization vectorized in its store)
            u = _epilogue_consumer(order, outputs, t, materialize,
                                   same_dtype=select_rule(t, options) not in _EPILOGUE_STORES)
            # (one producer an epilogue: two resizes summed both fused into the add dropped one)
            if u is not None and id(u) not in fused and \
                    _same_dims(_shape(ctx.buf[id(u)]), _shape(t)):
                ctx.buf[id(t)] = ctx.buf[id(u)]
                fused[id(u)], ctx.epilogues[id(t)] = t, u
    for t in order:
        if id(t) in materialize and id(t) not in ctx.buf:
            ctx.buf[id(t)] = ctx.temp(_shape(t), t.dtype, t.name)
    bodies = _inline_all(order, materialize, ctx)
    for t, u in in_place:  # a consumer reading elsewhere (a transpose, a flip) would overwrite
        shared = ctx.buf[id(t)]  # values it has yet to read: the anchor gets its own buffer
        if not reads_only_at_own_position(bodies[id(u)], shared, u):
            ctx.buf[id(t)] = ctx.temp(_shape(t), t.dtype, t.name)
            bodies[id(u)] = redirect_loads(bodies[id(u)], shared, ctx.buf[id(t)])
    stmts = []
    for t in order:
        if pooled is not None and t is pooled.pool:
            stmts.append(conv_pool.emit(ctx, pooled, bodies))
            continue
        if pooled is not None and t is pooled.conv:
            continue  # (emitted in the pool's place)
        if id(t) not in materialize or not isinstance(t.op, ComputeOp) or id(t) in ctx.epilogues:
            continue  # (an anchor computing its epilogue is emitted in the epilogue's place)
        t = fused.get(id(t), t)
        buf = ctx.buf[id(t)]
        rule = select_rule(t, options)
        if rule is not None:
            stmts.append(rule.emit(ctx, t, buf, bodies))
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
    return body


# a generated float32 conv's epilogue of another dtype (a requantization to uint8, as
# quantized TFLite and ONNX models follow each conv of int8 weights) is applied in its store
# too, where it ran as a pass of its own over a float32 output. Zen 4, one thread, the
# quantized TFLite MobileNetV2-like model's stem (3 -> 32 3x3 / 2 at 112x112, uint8 out), A/B
# in one process: 82.5 -> 71 us (a float32 relu epilogue: 63)
CONV_EPILOGUE_OTHER_DTYPE = True


def _fuse_conv_epilogue(ctx, order, materialize, outputs, t, fused: dict) -> bool:
    """Let generated conv ``t``'s micro-kernel apply its only consumer, an elementwise output
    of its shape (bias, residual add, relu; of another dtype: ``CONV_EPILOGUE_OTHER_DTYPE``):
    the conv shares that output's buffer and is emitted in the consumer's place (``fused``,
    ``ctx.epilogues``, as ``Rule.epilogue``)."""
    options = ctx.options
    if id(t) in ctx.buf or not _is_gemm(t, options) or \
            not gemm.use_generated_conv(t, options) or not conv_direct.fuses_epilogue(t, options):
        return False
    u = _epilogue_consumer(order, outputs, t, materialize,
                           same_dtype=not CONV_EPILOGUE_OTHER_DTYPE)
    if u is None or not _same_dims(_shape(ctx.buf[id(u)]), _shape(t)):
        return False
    ctx.buf[id(t)] = ctx.buf[id(u)]
    fused[id(u)], ctx.epilogues[id(t)] = t, u
    return True


def _copy_stage(src):
    return te.compute(src.shape, lambda *i: src[i] if i else src[()], name=src.name + "_copy")
