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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
    byte_table,
    conv_direct,
    conv_lanes,
    conv_lanes_emit,
    conv_pointwise,
    conv_vnni,
    conv_winograd,
    depthwise,
    gemm,
    gemm_vnni,
    pool,
    resize,
    softmax_rows,
)
from .common import (
    PARALLEL_MIN_WORK,
    SMALL_REDUCE,
    LowerCtx,
    LoweringError,
    emit_with_epilogue,
    epilogue_value,
    fold_lanes,
    reads_only_at_own_position,
    redirect_loads,
    vector_blocks,
)
from .common import const_int as _const_int
from .common import dims_of as _shape
from .common import imm as _i
from .common import index_dtype as _index_dtype
from .common import is_static as _is_static
from .common import lanes as _lanes
from .common import outer_loops as _outer_loops
from .common import param_buffer as _param_buffer
from .common import prod_dims as _prod
from .common import same_dims as _same_dims
from .common import static_part as _static_part
from .common import vector_inner as _vector_inner
from .flat_index import flat_nest
from .index_chains import simplify_index_chains
from .lane_loads import contiguous_lane_loads, strided_copy_axis
from .options import LoweringOptions
from .pieces import split_pieces, split_planes
from .plane_nest import merged_plane_nest
from .raise_patterns import affine
from .transpose_pieces import transpose_pieces

# vector accumulators of a reduction along its contiguous axis (power of two; 1 for fewer than
# twice as many vectors). Zen 4, one thread, amax over (2, 3) of (1, 256, 28, 28), us: one 26.1,
# two 19.0, four 16.3, eight 147 (the 128-lane partial sums spill); (1, 64, 56, 56): 27.7 with
# two, 18.0 with four (ONNX Runtime 17-21 and 28)
REDUCE_ACCUMULATORS = 4


# ---------------------------------------------------------------------------------- rules
@dataclass(frozen=True)
class Rule:
    """A schedule for stages of one op tag.

    kind: "gemm" (a GEMM anchor: fused epilogue applied in place on its output) or any other
    name. ``supported(t, options)`` says whether it takes stage ``t``; ``emit(ctx, t,
    out_buffer, bodies)`` writes the loops. The stage's operands (``attrs["operands"]``, else
    its input tensors) are materialized in buffers (``ctx.buf[id(tensor)]``) before it runs.
    symbolic: the rule is also asked about stages with symbolic extents (else they skip it).
    epilogue: the stage's only materialized reader, when it is an elementwise output, shares its
    buffer and is computed by ``emit`` too (``ctx.epilogues[id(t)]`` names it).
    materialize: an injective stage the rule takes is computed by it on its own, not inlined
    into its readers.
    """

    name: str
    kind: str
    supported: Callable
    emit: Callable
    symbolic: bool = False
    epilogue: bool = False
    materialize: bool = False


def _emit_gemm(ctx, t, buf, bodies):
    operands = [ctx.buf[id(s)] for s in t.op.attrs["operands"]]
    u = getattr(ctx, "epilogues", {}).get(id(t))
    if u is not None and t.op.tag == "matmul":  # a generated matmul storing its epilogue
        return gemm.emit_fused(ctx, t, u, buf, operands, bodies[id(u)],
                               lambda body: injective_nest(ctx, u, buf, body))
    if u is not None:  # a generated conv computing its epilogue (_fuse_conv_epilogue)
        return _emit_conv_fused(ctx, t, u, buf, operands, bodies[id(u)])
    return gemm.emit(ctx, t, buf, operands)


def _gemm_then_epilogue(ctx, t, u, conv_buf, buf, operands, body) -> S.Stmt:
    """Conv ``t`` by the GEMM's im2col into ``conv_buf``, then elementwise stage ``u`` (its
    ``body`` reading ``conv_buf``) into ``buf`` in a pass of its own."""
    return S.SeqStmt([gemm.emit(ctx, t, conv_buf, operands), injective_nest(ctx, u, buf, body)])


def _emit_conv_fused(ctx, t, u, buf, operands, body) -> S.Stmt:
    """Conv ``t`` with elementwise stage ``u`` (whose ``body`` reads the conv from ``buf``, the
    buffer both share) applied by the micro-kernel. Should ``u`` read the conv away from its own
    output position, the conv is computed into a temporary that ``u`` then reads instead."""
    axes = [iv.var for iv in u.op.axis]
    ext = [_const_int(d) for d in u.shape]
    value = E.Var("conv_value", t.dtype)
    ok = [True]

    def at_axes(idx) -> bool:  # (a unit axis may be read at a constant 0)
        return len(idx) == len(axes) and all(
            i is v or (n == 1 and _const_int(i) == 0) for i, v, n in zip(idx, axes, ext))

    def fpost(e):
        if isinstance(e, E.BufferLoad) and e.buffer is buf:
            ok[0] = ok[0] and at_axes(e.indices)
            return value
        return None

    template = transform_expr(body, fpost)
    plane = [_const_int(d) for d in _shape(t)[-2:]]
    packed = id(t) in ctx.packed  # (a conv_lanes conv)
    own_pass = ok[0] and not conv_direct.fuses_plane_operands(t, ctx.options, packed) and any(
        isinstance(e, E.BufferLoad) and e.buffer is not buf and
        [_const_int(d) for d in e.buffer.shape[-2:]] == plane for e in post_order(body))
    if own_pass and buf.dtype == t.dtype:
        # an operand laid out like the output (a residual) the schedule reads better in a
        # pass of its own: the conv, then the epilogue in place (as for a GEMM)
        return _gemm_then_epilogue(ctx, t, u, buf, buf, operands, body)
    if own_pass or not ok[0]:  # (the conv's values in a temporary: another dtype, or place)
        tmp = ctx.temp(_shape(t), t.dtype, t.name)
        moved = transform_expr(body, lambda e: E.BufferLoad(tmp, e.indices) if isinstance(
            e, E.BufferLoad) and e.buffer is buf else None)
        return _gemm_then_epilogue(ctx, t, u, tmp, buf, operands, moved)

    def epilogue(idx, val):
        return substitute(substitute(template, {value: val}), _bind(u.op.axis, idx))

    return conv_direct.emit(ctx, t, buf, *operands, epilogue=epilogue)


def _emit_pool(ctx, t, buf, bodies):
    """A pool, its fused elementwise epilogue (a residual add: Xception's) applied in the
    direct form's stores; in the other forms, in a pass of its own. Measured on an Intel Xeon,
    one thread, ms, 3x3 / 2 max pool (pad 1) + add, a pass of its own -> in the stores:
    128x64x64 0.119 -> 0.103 (AVX2 code: 0.134 -> 0.100), 256x32x32 0.046 -> 0.036 (AVX2 code:
    0.064 -> 0.057)."""
    _, ident, combine = _reduce_parts(t, bodies[id(t)])
    x = ctx.buf[id(t.op.attrs["operands"][0])]
    return emit_with_epilogue(ctx, t, buf, bodies,
                              lambda out, epi: pool.emit(ctx, t, out, x, ident, combine, epi),
                              tuple(_shape(t)))


_GEMM = Rule("gemm", "gemm", gemm.use_gemm, _emit_gemm, symbolic=True)
_POINTWISE = Rule("conv 1x1", "pointwise", conv_pointwise.supported, conv_pointwise.emit,
                  symbolic=True, epilogue=True)
_WINOGRAD = Rule("conv 3x3 winograd", "winograd", conv_winograd.supported, conv_winograd.emit,
                  epilogue=True)
_DEPTHWISE = Rule("depthwise", "window", depthwise.supported, depthwise.emit, epilogue=True)


def _emit_grouped(ctx, t, buf, bodies):
    """A grouped conv on ``conv_lanes`` (its weight prepacked, or packed per call where the
    graph computes it), else on the depthwise schedule or the GEMM's."""
    packed = id(t) in ctx.packed
    if not packed and depthwise.supported(t):
        return depthwise.emit(ctx, t, buf, bodies)
    if not packed and conv_lanes.grouped_supported(t, ctx.options):
        pack, wp = conv_lanes_emit.pack_at_run_time(ctx, t, ctx.buf[id(t.op.attrs["operands"][1])])
        return S.SeqStmt([pack, _emit_grouped_lanes(ctx, t, buf, bodies, wp)])
    if not packed:  # the GEMM's im2col, then the epilogue in a pass of its own
        operands = [ctx.buf[id(s)] for s in t.op.attrs["operands"]]
        u = ctx.epilogues.get(id(t))
        return emit_with_epilogue(ctx, t, buf, bodies, lambda out, epi: gemm.emit(
            ctx, t, out, operands) if epi is None else _gemm_then_epilogue(
                ctx, t, u, out, out, operands, epi[0]), tuple(_shape(t)))
    return _emit_grouped_lanes(ctx, t, buf, bodies, ctx.buf[id(t.op.attrs["operands"][1])])


def _emit_grouped_lanes(ctx, t, buf, bodies, wp):
    """Grouped conv ``t`` on ``conv_lanes`` from packed weight ``wp``, its epilogue fused."""
    x = ctx.buf[id(t.op.attrs["operands"][0])]

    def emit(out, epi):
        if epi is None:
            return conv_lanes_emit.emit(ctx, t, out, x, wp)
        return conv_lanes_emit.emit(ctx, t, out, x, wp, epilogue=lambda idx, val: epilogue_value(
            epi, out, idx, val))

    return emit_with_epilogue(ctx, t, buf, bodies, emit, tuple(_shape(t)))


def _grouped_supported(t, options=None) -> bool:
    """``conv_lanes.grouped_supported``, but groups padded to whole 16-channel tiles that
    depthwise's schedule also takes (few taps, few outputs a group) stay there."""
    if not conv_lanes.grouped_supported(t, options):
        return False
    g = conv_lanes.geometry(t)
    return g["real_og"] == g["og"] or not depthwise.supported(t)


_GROUPED = Rule("grouped conv, channel lanes", "grouped", _grouped_supported, _emit_grouped,
                epilogue=True)
_VNNI = Rule("conv uint8 x int8 / int16 x int16|int8, vpdpbusd / vpdpwssd", "vnni",
             conv_vnni.supported, conv_vnni.emit, epilogue=True)
_VNNI_GEMM = Rule("dense / batch_matmul uint8 x int8 (int16 x int16|int8), vpdpbusd / vpdpwssd",
                  "vnni", gemm_vnni.supported, gemm_vnni.emit, epilogue=True)
# Rules whose stores apply their fused epilogue, so that it may store another dtype: int32 VNNI
# sums, and depthwise convs, every mode of which stores through the epilogue (a quantized
# model's float32 depthwise conv of uint8 data requantized to uint8 wrote its float32 conv to a
# temporary the epilogue then read. Zen 4, one thread, kernel alone with the uint8 requantizing
# epilogue (us, temporary -> fused): 192 at 56x56 stride 2 94.5 -> 90.3, 288 at 28x28 79.1 ->
# 72.8, 96 at 112x112 stride 2 171 -> 157, 32 at 56x56 32.9 -> 27.6)
_EPILOGUE_STORES = (_VNNI, _VNNI_GEMM, _DEPTHWISE)
RULES: dict[str, list[Rule]] = {
    # (integer products of uint8 rows and an int8 weight on VNNI)
    "dense": [_VNNI_GEMM, _GEMM], "matmul": [_VNNI_GEMM, _GEMM],
    "batch_matmul": [_VNNI_GEMM, _GEMM],
    # (grouped convs: on channel lanes, or with few taps per output channel depthwise's, before
    # the GEMM's im2col; integer convs of uint8 data and int8 weights on VNNI first)
    "conv2d_nchw": [_VNNI, _WINOGRAD, _POINTWISE, _GROUPED, _DEPTHWISE, _GEMM],
    pool.POOL_TAG: [Rule("pool2d rows", "window", pool.supported, _emit_pool, epilogue=True)],
    resize.RESIZE_TAG: [Rule("resize rows", "resize", resize.supported, resize.emit,
                             epilogue=True, materialize=True)],
}


# tags of the stages whose loops a rule registered by ``register_rule`` writes (scatters in one
# pass, top-k, unique, NMS, RoI pooling, scans): their te body may only stand in for those loops,
# so a lowering that does not apply these rules (a PrimFunc over symbolic sizes) must refuse them
RULE_EMITTED_TAGS: set[str] = set()


def register_rule(tag: str, rule: Rule) -> None:
    """Try ``rule`` first for stages tagged ``tag``. Kernels already in the kernel cache keep
    their schedule (``minitvm.backend.clear_cache()`` forgets them)."""
    RULES.setdefault(tag, []).insert(0, rule)
    RULE_EMITTED_TAGS.add(tag)


def select_rule(t, options: LoweringOptions) -> Rule | None:
    """The first rule of ``t``'s tag that supports it, or None (reduction / injective)."""
    if not isinstance(t.op, ComputeOp):
        return None
    rules = RULES.get(t.op.tag, ())
    if rules and not _static_stage(t):
        rules = [r for r in rules if r.symbolic]
    for rule in rules:
        if rule.supported(t, options):
            return rule
    return None


def _static_stage(t) -> bool:
    """Are ``t``'s shape, its operands' shapes and its reduction extents all constants?"""
    tensors = [t, *t.op.attrs.get("operands", t.op.input_tensors)]
    if not all(_is_static(x.shape) for x in tensors):
        return False
    return all(_const_int(r.dom.extent) is not None for r in t.op.reduce_axis)

# ---------------------------------------------------------------------------------- inlining
def _is_gemm(t, options: LoweringOptions) -> bool:
    rule = select_rule(t, options)
    return rule is not None and rule.kind == "gemm"


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


def _scalar_idx(buf) -> list:
    """Indices of the one element of a scalar tensor's buffer: none for a rank-0 buffer, [0]
    for the 1-element buffers ``lower_te`` gives scalars."""
    return [] if len(buf.shape) == 0 else [_i(0)]


def _bind(axis, idx) -> dict:
    """``axis var -> index`` (cast to the var's type when the loop index has another)."""
    out = {}
    for iv, ix in zip(axis, idx):
        v = iv.var if hasattr(iv, "var") else iv
        if isinstance(ix, int):
            ix = E.IntImm(v.dtype, ix)
        elif ix.dtype != v.dtype:
            ix = E.IntImm(v.dtype, ix.value) if isinstance(ix, E.IntImm) else E.Cast(v.dtype, ix)
        out[v] = ix
    return out


def _sub_axes(body, axis, idx):
    return substitute(body, _bind(axis, idx))


def injective_nest(ctx, t, buf, body):
    """The loop nest storing the inlined ``body`` of tensor ``t`` into ``buf``; with a static
    shape, its lane-by-lane gathers of consecutive elements become contiguous vector loads."""
    if _is_static(_shape(t)) and byte_table.applies():
        table = byte_table.match(t, buf, body)
        if table is not None:  # an 8-bit function of one byte: a table and byte shuffles
            return byte_table.emit(ctx, t, buf, table)
    if _is_static(_shape(t)):  # (reshapes over transposes: division chains folded)
        body = simplify_index_chains(t, body)
    nest = _injective_loops(ctx, t, buf, body)
    return contiguous_lane_loads(ctx, nest) if _is_static(_shape(t)) else nest


def _injective_loops(ctx, t, buf, body):
    shape = _shape(t)
    if not shape:
        return S.BufferStore(buf, body, _scalar_idx(buf))
    if not _is_static(shape):  # a reshape under a symbolic dim: rows of flat vectors
        flat = flat_nest(ctx, t, buf, body)
        if flat is not None:
            return flat
    lanes = _lanes(t.dtype)
    p = transposed_axis(t, body)
    if p is None and _is_static(shape):  # (a transpose behind reshapes: indices that divide)
        p = strided_copy_axis(t, body, shape)
    if p is not None:
        return transpose_pieces(ctx, t, buf, body, p, TRANSPOSE_TILE, lanes) or \
            transpose_nest(ctx, t, buf, body, p)

    if _is_static(shape):  # (a short last axis: whole planes of vectors)
        merged = merged_plane_nest(ctx, t, buf, body, lanes)
        if merged is not None:
            return merged
    split = _split_inner(t, body, lanes)
    if split is None and _is_static(shape):  # (a concatenate along an outer axis)
        planes = split_planes(ctx, t, buf, body, lanes, _prod(shape) >= PARALLEL_MIN_WORK)
        if planes is not None:
            return planes
    if split is None:  # (a divisor that is no whole number of vectors: a tail each row)
        split = _split_inner(t, body, lanes, whole_vectors=False)

    def store(outer):
        def at(j):
            idx = outer + [j]
            return S.BufferStore(buf, _sub_axes(body, t.op.axis, idx), idx)

        if split is None:  # (a concatenate along the last axis: piece by piece)
            by_piece = split_pieces(ctx, t, buf, body, outer, lanes)
            if by_piece is not None:
                return by_piece
            n = _const_int(shape[-1])
            if n is not None and n > lanes:  # (a row of 30: 16 + 8 + 4 lanes, not 14 scalars)
                return _split_row(ctx, n, lanes, at)
            return _vector_inner(ctx, shape[-1], lanes, at)
        c, jo_var, ji_var, split_body = split
        jo = ctx.fresh("jo")

        def at_split(ji):  # the last axis at jo * c + ji: its // c is jo and its % c is ji
            idx = outer + [jo * c + ji]
            vals = _bind(t.op.axis, idx)
            vals.update(_bind([jo_var, ji_var], [jo, ji]))
            return S.BufferStore(buf, substitute(split_body, vals), idx)

        return S.For(jo, 0, shape[-1] // c, S.ForKind.SERIAL,
                     _split_row(ctx, c, lanes, at_split))

    if _is_static(shape):
        return _outer_loops(ctx, list(shape[:-1]), _prod(shape) >= PARALLEL_MIN_WORK, store)
    return _outer_loops(ctx, list(shape[:-1]), True, store, _static_part(shape[-1:]))


def _split_row(ctx, c: int, lanes: int, body_fn):
    """One row of ``c`` values of an innermost axis: whole vectors, then a half vector where at
    least half a vector is left, then a quarter vector (of at least 4 lanes) where a quarter is
    left, then scalars (a row of 24 floats: 16 + 8 lanes, not 16 lanes and 8 scalar stores; of
    30: 16 + 8 + 4 lanes and 2 scalars)."""
    whole = c // lanes * lanes
    parts = [_vector_inner(ctx, whole, lanes, body_fn)] if whole else []
    done = whole
    for width in (lanes // 2, lanes // 4):
        if width >= 4 and c - done >= width:
            vi = ctx.fresh("vh")
            parts.append(S.For(vi, 0, width, S.ForKind.VECTORIZED, body_fn(vi + done)))
            done += width
    if done == whole:
        return _vector_inner(ctx, c, lanes, body_fn)
    if c - done:
        t = ctx.fresh("t")
        parts.append(S.For(t, done, c - done, S.ForKind.SERIAL, body_fn(t)))
    return S.SeqStmt(parts)


def _split_inner(t, body, lanes: int, whole_vectors: bool = True):
    """``(c, jo, ji, body')`` when ``body`` divides stage ``t``'s innermost axis ``j`` by one
    constant ``c`` (``j // c``, ``j % c``: a reshape that merges axes, as ``[.., 12, 64]``
    read as ``[.., 768]``) that is a whole number of vectors dividing the axis (or, without
    ``whole_vectors``, at least one vector); ``body'`` reads ``jo`` for ``j // c``, ``ji`` for
    ``j % c`` and ``jo * c + ji`` for ``j``. Else None.

    Looped as ``jo`` outer and ``ji`` vectorized, the loads are contiguous vectors; with ``j``
    vectorized, every lane's ``j // c`` and ``j % c`` were computed and the load gathered
    (BERT's merge of the heads at seq 128: 90 us, the split of the heads, its mirror: 37 us;
    ST-GCN's einsum operand ``[2, 3, 32, 64, 18] -> [.., 3 * 18]`` with ``c`` 18, a vector and a
    two-element tail a row: 170 -> 48 us).
    """
    n = _const_int(_shape(t)[-1])
    last = t.op.axis[-1].var
    divisors = set()
    for e in post_order(body):
        if isinstance(e, (E.FloorDiv, E.FloorMod)):
            a = e.a.value if isinstance(e.a, E.Cast) else e.a
            if a is last:
                divisors.add(_const_int(e.b))
    if n is None or len(divisors) != 1:
        return None
    c = divisors.pop()
    if c is None or c < lanes or (whole_vectors and c % lanes) or n % c or c == n:
        return None
    jo, ji = E.Var("jo", last.dtype), E.Var("ji", last.dtype)

    def fpost(e):
        if isinstance(e, (E.FloorDiv, E.FloorMod)) and _const_int(e.b) == c:
            a = e.a.value if isinstance(e.a, E.Cast) else e.a
            if a is last:
                v = jo if isinstance(e, E.FloorDiv) else ji
                return v if e.dtype == v.dtype else E.Cast(e.dtype, v)
        return None

    return c, jo, ji, transform_expr(body, fpost)


TRANSPOSE_TILE = 16  # rows of the output read per tile by a transposing stage


def transposed_axis(t, body) -> int | None:
    """The output axis ``p`` whose index is the innermost (unit-stride) index of a load that the
    innermost output axis reads across rows (a transpose), or None.

    Such a stage, written row by row, reads one element per cache line of its input; tiling
    ``p`` keeps those lines in cache while the tile's rows are written.
    """
    axis = [iv.var for iv in t.op.axis]
    if len(axis) < 2:
        return None
    last = axis[-1]
    for ld in post_order(body):
        if not isinstance(ld, E.BufferLoad) or len(ld.indices) < 2:
            continue
        inner = affine(ld.indices[-1])
        if inner is None or id(last) in inner[0]:
            continue
        if not any(id(last) in (affine(i) or ({id(last): 0}, 0))[0] for i in ld.indices[:-1]):
            continue
        for k, v in enumerate(axis[:-1]):
            if id(v) in inner[0] and inner[0][id(v)][1] == 1 and \
                    _const_int(_shape(t)[k]) != 1:
                return k
    return None


def transpose_nest(ctx, t, buf, body, p: int) -> S.Stmt:
    """Injective loops tiled over output axis ``p``: per tile of ``TRANSPOSE_TILE`` values of
    ``p`` and per vector chunk of the innermost axis, the tile's rows are written while the
    input lines they gather from stay in cache."""
    shape = list(_shape(t))
    n = len(shape)
    lanes = _lanes(t.dtype)
    static = _is_static(shape)
    dt = "int32" if static else _index_dtype(shape)
    tile = TRANSPOSE_TILE
    dp, dl = shape[p], shape[-1]
    others = [k for k in range(n - 1) if k != p]

    def c(v):
        return E.IntImm(dt, v) if isinstance(v, int) else v

    ntiles = -(-dp // tile) if isinstance(dp, int) else E.FloorDiv(dp + c(tile - 1), c(tile))

    def per_tile(idx):
        tp = idx[-1] if idx[-1].dtype == dt else E.Cast(dt, idx[-1])
        lo = tp * c(tile)
        if not isinstance(dp, int):
            return tile_rows(idx, lo, E.Min(c(tile), c(dp) - lo))
        whole, rem = divmod(dp, tile)  # static: whole tiles and the last one, each of a
        if not rem:                    # constant extent
            return tile_rows(idx, lo, c(tile))
        if not whole:
            return tile_rows(idx, lo, c(rem))
        return S.IfThenElse(E.LT(tp, c(whole)), tile_rows(idx, lo, c(tile)),
                            tile_rows(idx, lo, c(rem)))

    def tile_rows(idx, lo, ext):
        def store(pv, j):
            full = [None] * n
            for k, v in zip(others, idx[:-1]):
                full[k] = v
            full[p], full[-1] = pv, j
            return S.BufferStore(buf, _sub_axes(body, t.op.axis, full), full)

        nvec = dl // lanes if isinstance(dl, int) else E.FloorDiv(dl, c(lanes))
        parts = []
        if not isinstance(nvec, int) or nvec:
            vo, pv, vi = ctx.fresh("vo", dt), ctx.fresh("p", dt), ctx.fresh("vi", dt)
            if isinstance(ext, E.IntImm):  # a constant extent: p at lo + [0, ext), static bounds
                at, p_lo = lo + pv, c(0)   # (``contiguous_lane_loads`` evaluates them)
            else:
                at, p_lo = pv, lo
            vec = S.For(vi, c(0), c(lanes), S.ForKind.VECTORIZED,
                        store(at, vo * c(lanes) + vi))
            parts.append(S.For(vo, c(0), c(nvec), S.ForKind.SERIAL,
                               S.For(pv, p_lo, ext, S.ForKind.SERIAL, vec)))
        done = nvec * lanes if isinstance(nvec, int) else nvec * c(lanes)
        if not isinstance(dl, int) or dl - done:
            tl, pv2 = ctx.fresh("t", dt), ctx.fresh("p", dt)
            rest = dl - done if isinstance(dl, int) else dl - done
            parts.append(S.For(tl, c(done), c(rest), S.ForKind.SERIAL,
                               S.For(pv2, lo, ext, S.ForKind.SERIAL, store(pv2, tl))))
        return S.SeqStmt(parts) if len(parts) != 1 else parts[0]

    dims = [shape[k] for k in others] + [ntiles]
    if static:
        return _outer_loops(ctx, dims, _prod(shape) >= PARALLEL_MIN_WORK, per_tile)
    return _outer_loops(ctx, dims, True, per_tile, tile * _static_part([dl]))


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


def _flat_trailing_reduction(ctx, src, raxes, rmin, rext):
    """``(source, axes, mins, extents)`` of the same reduction over one axis, or None: when
    every load in ``src`` that reads at the reduction axes is of a buffer whose trailing
    dimensions are the reduction axes, whole and in order (the other loads not reading at
    them), the reduction runs over those dimensions flattened (contiguous in memory), so it
    gets vector partial sums (a global average pool's 7x7 plane: 49 floats, not seven rows of
    7), at most one short scalar tail (28x28: 49 vectors, where rows of 28 left 12 of each 28
    floats to the scalar tail) and, rows of whole vectors too, the independent accumulators
    of ``REDUCE_ACCUMULATORS`` (32x32: 64 vectors in four chains, not rows of two in one). One
    thread, Zen 4, EfficientNet's global pools: 240 channels at 28x28 71 -> 17 us, 144 at 56x56
    76 -> 33 us (ONNX Runtime's 38-49 and 81-101 us). The source may be an expression of such
    loads: a variance's ``(x - mean)^2`` over a group norm's group (rows of 8 had left a
    1024-add scalar chain per group of 16x8x8). Sapphire Rapids, one thread, group norm with 8
    groups, the variance kernel, us, AVX-512 (AVX2 code, ``-mcpu=haswell``, on the same host):
    1x128x8x8 10.6 -> 1.3 (8.9 -> 1.0), 1x32x64x64 9.8 -> 4.5 (10.3 -> 6.4), 1x32x32x32
    2.8 -> 1.7 (3.0 -> 2.0), 1x64x16x16 1.8 -> 1.2 (1.8 -> 1.4)."""
    k = len(raxes)
    if k < 2 or not all(isinstance(v, int) for v in (*rmin, *rext)) or any(rmin):
        return None
    rvars = {id(iv.var) for iv in raxes}

    def reads_raxes(e) -> bool:
        return any(isinstance(n, E.Var) and id(n) in rvars for n in post_order(e))

    loads = [n for n in post_order(src) if isinstance(n, E.BufferLoad) and
             any(reads_raxes(i) for i in n.indices)]
    if not loads:
        return None
    for ld in loads:
        if len(ld.indices) < k:
            return None
        dims = [_const_int(d) for d in ld.buffer.shape]
        if any(d is None for d in dims) or dims[-k:] != rext or \
                any(i is not iv.var for i, iv in zip(ld.indices[-k:], raxes)) or \
                any(reads_raxes(i) for i in ld.indices[:-k]):
            return None
    total = _prod(rext)
    r = te.reduce_axis((0, total), name="rf")

    def flatten(n):
        dims = [_const_int(d) for d in n.buffer.shape]
        base = _i(0)
        for i, d in zip(n.indices[:-k], dims[:-k]):
            base = base * d + i
        return E.BufferLoad(ctx.flat_view(n.buffer), [base * total + r.var])

    # the axes read elsewhere too (an index as a value, another load's index): not flattened
    if reads_raxes(transform_expr(src, lambda n: None,
                                  {id(ld): E.FloatImm(ld.dtype, 0.0) for ld in loads})):
        return None
    # keyed on the original loads (their rebuilt parents then take the flat ones)
    memo = {id(ld): flatten(ld) for ld in loads}
    return transform_expr(src, lambda n: None, memo), [r], [0], [total]


def _contiguous_last_axis(src, raxes) -> bool:
    """Whether a one-axis reduction reads a contiguous run per output: every load of ``src``
    that reads the axis has it, bare, as its last index and nowhere else, and the axis is read
    nowhere outside loads (a layer norm's sum over 64 channels, NHWC). Such a run needs no
    flattening to take vector partial sums along it."""
    if len(raxes) != 1:
        return False
    rvar = raxes[0].var

    def reads_axis(e) -> bool:
        return any(n is rvar for n in post_order(e))

    loads = [n for n in post_order(src) if isinstance(n, E.BufferLoad) and
             any(reads_axis(i) for i in n.indices)]
    if not loads or any(ld.indices[-1] is not rvar or any(reads_axis(i) for i in
                                                             ld.indices[:-1]) for ld in loads):
        return False
    return not reads_axis(transform_expr(src, lambda n: None,
                                         {id(ld): E.FloatImm(ld.dtype, 0.0) for ld in loads}))


def _trailing_units(shape) -> int:
    """How many of ``shape``'s last dimensions are 1 (not all of them: one is left)."""
    units = 0
    while units < len(shape) - 1 and _const_int(shape[len(shape) - 1 - units]) == 1:
        units += 1
    return units


# A reduction over a flat run of two vectors or more (``_flat_trailing_reduction``: a 7x7
# global pool's 49 contiguous floats) takes vector partial sums along the run even when it is
# short enough (``SMALL_REDUCE``) for the window unrolled across the outputs: that window reads
# each tap as 16 lanes at the run's stride, a scalar load and insert per lane. Only while the
# run's scalar tail is no longer than its count of whole vectors: each tail float is a scalar
# step per output (a max's NaN-tested one about 7 cycles), and a max over 6x6 (two vectors and
# 4) ran 1.77x slower flat. Measured on a Zen 4 (one thread, A/B in one process): ResNet-50's
# 2048-channel 7x7 pool LLVM 0.155 -> 0.013 CPU s, 16.4 -> 7.8 us; MobileNet's 1024-channel
# one 0.157 -> 0.010 s, 8.8 -> 4.1 us; mean over 2048 x 4x8 11.1 -> 5.4 us, 8x8 22.2 -> 6.8;
# max over 1024 x 7x7 8.9 -> 6.1, 4x8 6.2 -> 4.5. A one-axis reduction along the last
# (contiguous) axis is such a run as it is (``_contiguous_last_axis``): ConvNeXt's NHWC layer
# norm over 64 channels at 56x56, LLVM 7.5 -> 0.13 CPU s, 187 -> 75 us.
FLAT_VECTORS = True


def reduce_nest(ctx, t, buf, body):
    """The loop nest of a reduction stage (see the module docstring for the strategies).

    Output and reduction extents may be symbolic: the loops then run over int64 indices, the
    vectorized partial sums get a run-time tail, and the outer loop goes parallel at run time
    when it has enough work.
    """
    src, ident, combine = _reduce_parts(t, body)
    shape = _shape(t)
    raxes = list(body.axis)
    rext = [_const_int(r.dom.extent) if _const_int(r.dom.extent) is not None else r.dom.extent
            for r in raxes]
    rmin = [_const_int(r.dom.min) if _const_int(r.dom.min) is not None else r.dom.min
            for r in raxes]
    flat = _flat_trailing_reduction(ctx, src, raxes, rmin, rext)
    if flat is not None:  # (a global pool over 7x7: one reduction over 49 contiguous floats)
        src, raxes, rmin, rext = flat
    contiguous = flat is not None or _contiguous_last_axis(src, raxes)
    static = _is_static(shape) and _is_static(rext)
    rtotal = _prod(rext) if _is_static(rext) else None
    lanes = _lanes(t.dtype)
    if static:
        parallel = _prod(shape) * rtotal >= PARALLEL_MIN_WORK
    else:
        parallel = True
    if not shape:
        shape = (1,)
        out_axes = []
    else:
        out_axes = list(t.op.axis)
    rdt = _index_dtype([*rext, *rmin]) if not _is_static([*rext, *rmin]) else "int32"

    def c(v, dt=rdt):
        return E.IntImm(dt, v) if isinstance(v, int) else v

    def src_at(idx, rvals):
        e = _sub_axes(src, out_axes, idx)
        return _sub_axes(e, raxes, rvals)

    def store_idx(idx):
        return idx if out_axes else _scalar_idx(buf)

    # trailing unit output axes (a reduction keeping its dims: argmax's max over classes,
    # [n, anchors, 1]) leave the vectors to the innermost axis before them
    units = _trailing_units(shape)
    vshape = shape[:len(shape) - units] if out_axes else shape
    if rtotal is not None and rtotal <= SMALL_REDUCE and out_axes and vshape and \
            (_const_int(vshape[-1]) is None or vshape[-1] >= 8) and _is_static(rmin) and \
            not (FLAT_VECTORS and contiguous and rtotal >= 2 * lanes
                 and rtotal % lanes <= rtotal // lanes):
        # unrolled window, vectorized across the innermost (non-unit) output axis
        points = [[]]
        for mn, ext in zip(rmin, rext):
            points = [p + [_i(mn + k)] for p in points for k in range(ext)]

        def store(outer):
            def at(j):
                idx = outer + [j] + [_i(0)] * units
                stmts = [S.BufferStore(buf, ident, idx)]
                for p in points:
                    stmts.append(S.BufferStore(buf, combine(E.BufferLoad(buf, idx),
                                                            src_at(idx, p)), idx))
                return S.SeqStmt(stmts)

            return _vector_inner(ctx, vshape[-1], lanes, at)

        return _outer_loops(ctx, list(vshape[:-1]), parallel, store,
                            rtotal * _static_part(vshape[-1:]))

    def per_output(idx):
        sidx = store_idx(idx)
        cur = E.BufferLoad(buf, sidx)
        last = rext[-1]
        rvars = [ctx.fresh("r", rdt) for _ in raxes]

        def loops(inner_body, upto):
            s = inner_body
            for k in range(upto - 1, -1, -1):
                s = S.For(rvars[k], c(rmin[k]), c(rext[k]), S.ForKind.SERIAL, s)
            return s

        init = S.BufferStore(buf, ident, sidx)
        # a short innermost axis still gets vector partial sums when outer reduction axes
        # repeat it (a global mean over 16x16: 16 vector adds instead of a 256-add chain)
        if _const_int(last) is not None and (last < lanes or (last < 2 * lanes
                                                                and len(raxes) == 1)):
            upd = S.BufferStore(buf, combine(cur, src_at(idx, rvars)), sidx)
            return S.SeqStmt([init, loops(upd, len(raxes))])
        nvec = last // lanes if isinstance(last, int) else E.FloorDiv(last, c(lanes))
        # independent accumulators: one chain's latency (a float max with its NaN test, about
        # 7 cycles on Zen 4; an add, 3) would otherwise bound the loop, not the loads
        nacc = REDUCE_ACCUMULATORS if not isinstance(nvec, int) or \
            nvec >= 2 * REDUCE_ACCUMULATORS else 1
        width = nacc * lanes
        acc = decl_buffer((width,), t.dtype, "acc")
        vi = ctx.fresh("vi")
        acc_init = S.For(vi, 0, width, S.ForKind.VECTORIZED, S.BufferStore(acc, ident, [vi]))

        def update(j, lane):
            rv = [*rvars[:-1], c(rmin[-1]) + j]
            return S.BufferStore(acc, combine(E.BufferLoad(acc, [lane]), src_at(idx, rv)),
                                 [lane])

        passes = vector_blocks(ctx, nvec, lanes, nacc, update, rdt)
        vec_loop = loops(S.SeqStmt(passes) if len(passes) > 1 else passes[0], len(raxes) - 1)
        hsum = S.BufferStore(buf, combine(cur, E.BufferLoad(acc, [c(0)])), sidx)
        parts = [acc_init, vec_loop, *fold_lanes(ctx, acc, width, combine, rdt), init, hsum]
        tail = last - nvec * lanes if isinstance(last, int) else last - nvec * c(lanes)
        if not isinstance(tail, int) or tail:
            tv = ctx.fresh("tr", rdt)
            rt = [*rvars[:-1], tv]
            upd = S.BufferStore(buf, combine(cur, src_at(idx, rt)), sidx)
            start = rmin[-1] + nvec * lanes if isinstance(nvec, int) and \
                isinstance(rmin[-1], int) else c(rmin[-1]) + c(nvec) * c(lanes)
            parts.append(loops(S.For(tv, c(start), c(tail), S.ForKind.SERIAL, upd),
                               len(raxes) - 1))
        body_s = S.SeqStmt(parts)
        return S.Allocate(acc.data, t.dtype, [width], True, S.DeclBuffer(acc, body_s))

    work = _static_part(rext) if rtotal is None else rtotal
    return _outer_loops(ctx, list(shape if out_axes else ()), parallel, per_output, work)


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


def _packable(order, t, options: LoweringOptions):
    """The generated dense anchor that is ``t``'s only reader as its weight, or None."""
    readers = [u for u in order if isinstance(u.op, ComputeOp)
               and any(x is t for x in u.op.input_tensors)]
    if len(readers) != 1 or not _is_gemm(readers[0], options) or \
            not gemm.use_generated_dense(readers[0], options):
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
        anchor = _packable_matmul(order, t, ctx.options)
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


def _packable_matmul(order, t, options: LoweringOptions):
    """The generated matmul that is ``t``'s only reader, as its B, or None."""
    readers = [u for u in order if isinstance(u.op, ComputeOp)
               and any(x is t for x in u.op.input_tensors)]
    if len(readers) != 1 or not _is_gemm(readers[0], options) or \
            not gemm.use_generated_matmul(readers[0], options):
        return None
    a, b = readers[0].op.attrs["operands"]
    return readers[0] if b is t and a is not t else None


def _lower_stages(ctx, order, materialize, outputs) -> S.Stmt:
    """The loop nests of every materialized stage, inside their temporaries' allocations."""
    options = ctx.options
    # GEMM anchors whose epilogue can run in place share the output's buffer
    fused, ctx.epilogues = {}, {}  # epilogue <-> anchor whose rule computes it (Rule.epilogue)
    in_place = []  # (anchor, consumer): the anchor writes the consumer's buffer, which then
    # runs in place over it (checked below: only if it reads the anchor at its own position)
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
