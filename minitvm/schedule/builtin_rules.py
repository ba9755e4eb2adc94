"""The built-in rules of the products and windows: GEMM anchors with their fused epilogue, the
convs (1x1, Winograd, depthwise, grouped on channel lanes, VNNI) and the pools, each a ``Rule``
in ``rule_registry.RULES``."""

from __future__ import annotations

from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.stmt_functor import post_order, substitute, transform_expr
from . import (
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
    pool_symbolic,
)
from .common import const_int as _const_int
from .common import dims_of as _shape
from .common import (
    emit_with_epilogue,
    epilogue_value,
    is_static,
)
from .injective_loops import _bind, injective_nest
from .reduction_loops import _reduce_parts
from .rule import Rule


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
    # (run-time sizes: the interior / border split made when it runs; static windows too large
    # for ``pool.emit_direct``: the same forms over constant sizes)
    if not _static_pool(t) or pool_symbolic.takes_static(t):
        emit = pool_symbolic.emit_run_time_bins if "run_time_bins" in t.op.attrs else \
            pool_symbolic.emit
        return emit_with_epilogue(ctx, t, buf, bodies, lambda out, epi: emit(
            ctx, t, out, x, combine, epi), tuple(_shape(t)))
    return emit_with_epilogue(ctx, t, buf, bodies,
                              lambda out, epi: pool.emit(ctx, t, out, x, ident, combine, epi),
                              tuple(_shape(t)))


def _static_pool(t) -> bool:
    return is_static(_shape(t)) and is_static(_shape(t.op.attrs["operands"][0]))


def _pool_supported(t, options=None) -> bool:
    """``pool.supported`` for a static pool stage; over run-time sizes, a float pool or an
    integer max (as ``pool.supported``) on NCHW / NCW (run-time bins: NCDHW too) that
    ``pool_symbolic`` takes."""
    if not isinstance(t.op, ComputeOp) or t.op.tag != pool.POOL_TAG:
        return False
    if _static_pool(t):
        return pool.supported(t, options)
    (x,) = t.op.attrs["operands"]
    ranks = (3, 4, 5) if "run_time_bins" in t.op.attrs else (3, 4)  # (bins: NCDHW too)
    if not (t.dtype == x.dtype and len(x.shape) in ranks and len(t.shape) == len(x.shape)):
        return False
    kind = t.op.attrs.get("kind")
    if not (t.dtype.startswith("float") or (t.dtype in pool.INT_MAX_DTYPES and kind == "max")):
        return False
    return pool_symbolic.supported(t)


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
