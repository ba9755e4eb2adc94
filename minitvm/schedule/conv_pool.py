"""A conv with its elementwise epilogue and the max pool that reads it, lowered as one loop
nest: ``conv_lanes``' tiles pool their own pixels (``conv_lanes_emit.emit``'s ``pool``), so
the conv's map is neither stored nor read back.

A fused function of a conv2d, the elementwise stages after it (bias, folded batch norm, relu)
and a ``k x k`` / ``k`` max pool (Relay's ``FuseConvPool`` builds them: the
conv blocks of VGG-style nets, LeNet, ProtoNet's Conv-4) otherwise writes the conv's map (4x
the pool's output) to a temporary and reads it back in a pass of its own. Here each conv
tile holds whole pooling windows, applies the epilogue to its accumulators and stores one
maximum a window.

``match`` says whether a lowering's stages are such a function and the conv runs on
``conv_lanes`` (its weight prepacked), by default a conv of few taps (``pools_in_tiles``,
which FuseConvPool also asks); ``emit`` writes the nest. A padded or ceil-mode window's
positions outside the conv's plane are clamped to a pixel of the same window
(``conv_lanes.window_pixel``: a max takes it twice, as the pool's padding, the lowest finite
float, never wins), so the pooled output is the two kernels' bit for bit (but for a padded
window whose conv values are all -inf: the two kernels' lowest finite float, here -inf). Overlapping windows (a stride below ``k``:
ResNet's 3x3 / 2) are pooled only with ``conv_lanes.POOL_OVERLAP``: each window computes its
``k*k`` pixels, its neighbours' shared ones again, which measured slower than the two kernels
(``POOL_OVERLAP``'s numbers). Anything else (another pool, a conv on another schedule:
ResNet's 7x7 / 2 stem is ``conv_direct``'s) is lowered stage by stage as before: the conv
into a temporary, then the pool.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..te.tensor import ComputeOp, PlaceholderOp
from ..tir import expr as E
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import post_order, substitute, transform_expr
from . import conv_direct, conv_lanes, conv_lanes_emit
from .common import const_int as _const_int
from .common import dims_of as _shape
from .injective_loops import _bind
from .knobs import select as _knobs
from .pool import POOL_TAG
from .reduction_loops import _reduce_parts
from .rule_registry import select_rule

__all__ = ["ConvPool", "match", "emit", "pools_in_tiles"]


@dataclass(frozen=True)
class ConvPool:
    """The stages of a pooled conv: the conv, the pool's input (the conv itself, or the last
    elementwise stage after it), the pool, the window ``k`` and ``at`` = (stride, top
    padding, left padding) of the windows."""

    conv: object
    src: object
    pool: object
    k: int
    at: tuple[int, int, int] = (0, 0, 0)


def _window(p) -> tuple[int, int, int, int] | None:
    """``(k, stride, top padding, left padding)`` of a float32 NCHW ``k x k`` max pool stage
    at a stride of at most ``k`` (overlapping windows from stride 1), without dilation, whose
    source is its input read at the window's position (where padded, through a Select whose
    other value never wins), else None."""
    if not isinstance(p.op, ComputeOp) or p.op.tag != POOL_TAG or p.dtype != "float32":
        return None
    a = p.op.attrs
    if a.get("kind") != "max" or "bins" in a or len(_shape(p)) != 4:
        return None
    (kh, kw), (sh, sw), (dh, dw) = a["pool_size"], a["strides"], a["dilation"]
    pad = [int(q) for q in a["padding"]]
    if not (kh == kw >= 2 and 1 <= sh == sw <= kh and dh == dw == 1) or \
            any(q < 0 or q >= kh for q in pad):
        return None
    body = p.op.body
    if not isinstance(body, E.Reduce) or len(body.source) != 1:
        return None
    src = body.source[0]
    if isinstance(src, E.Select):  # (a padded or overhanging window's outside positions)
        low = src.false_value
        if not isinstance(low, E.FloatImm) or float(low.value) > -3.0e38:
            return None  # (not a value that never wins)
        src = src.true_value
    if not isinstance(src, E.ProducerLoad) or src.producer is not a["operands"][0]:
        return None
    return int(kh), int(sh), pad[0], pad[1]


def takes_windows(k: int, at, pooled, plane) -> bool:
    """Are the ``k x k`` windows (``at`` = stride, top, left padding) of a pooled plane of
    ``pooled`` (rows, columns) over a conv plane ``plane`` (rows, columns) pooled in the
    tiles: at stride ``k`` (overlapping ones with ``conv_lanes.POOL_OVERLAP``), every window
    holding a pixel of the plane (the tiles clamp a window's outside positions to one)?"""
    s = at[0]
    if s != k and not conv_lanes.POOL_OVERLAP:
        return False
    return all(pad < k and (n_out - 1) * s - pad <= n_in - 1
               for n_out, n_in, pad in zip(pooled, plane, at[1:]))


def _at_own_position(load, stage) -> bool:
    """Does ``load`` read at ``stage``'s own axes (a unit axis may be read at 0)?"""
    axes = stage.op.axis
    if len(load.indices) != len(axes):
        return False
    return all(i is iv.var or (_const_int(iv.dom.extent) == 1 and _const_int(i) == 0)
               for i, iv in zip(load.indices, axes))


def _elementwise_chain(src, conv) -> set[int] | None:
    """The ids of the compute stages from ``src`` back to ``conv`` (both included) when each
    reads the conv, and every other compute stage it reads, at its own position, with the
    conv's shape (placeholders anywhere: a bias, a residual), else None."""
    shape = _shape(conv)

    def reads(s):
        if not isinstance(s.op, ComputeOp) or isinstance(s.op.body, E.Reduce) or \
                _shape(s) != shape:
            return None
        return [(load.producer, _at_own_position(load, s)) for load in _loads(s.op.body)
                if not isinstance(load.producer.op, PlaceholderOp)]

    return chain_back(src, conv, reads)


def chain_back(src, stop, reads) -> set[int] | None:
    """The ids of the stages from ``src`` back to ``stop`` (both included): ``reads(stage)``
    lists ``(producer, ok)`` for what a stage reads (None: the stage does not qualify); None
    when some stage does not qualify or some read is not ok. Iterative (a chain of any
    length)."""
    seen, stack = {id(stop)}, [src]
    while stack:
        s = stack.pop()
        if id(s) in seen:
            continue
        seen.add(id(s))
        got = reads(s)
        if got is None or not all(ok for _, ok in got):
            return None
        stack.extend(p for p, _ in got)
    return seen


def _loads(expr) -> list:
    return [e for e in post_order(expr) if isinstance(e, E.ProducerLoad)]


def pools_in_tiles(t, k: int, options) -> bool:
    """Would conv2d stage ``t``, its weight a build-time constant, pool ``k x k`` windows in
    its tiles: a groups-1 conv on ``conv_lanes`` (the GEMM rule's, ``conv_direct.packs_weight``)
    whose tiles hold a window (``conv_lanes.pool_windows``), of few taps
    (``conv_lanes.few_taps``) unless ``conv_lanes.POOL_ANY_CONV``? (Relay's FuseConvPool asks before
    it merges: a conv on another schedule would lower stage by stage, its epilogue then a pass
    of its own.)"""
    rule = select_rule(t, options)
    if rule is None or rule.kind != "gemm" or not conv_direct.packs_weight(t, options):
        return False
    g = conv_lanes.geometry(t)
    if g is None or g["groups"] != 1:
        return False
    g = conv_lanes.with_knobs(g, _knobs(options, t))
    if not (conv_lanes.POOL_ANY_CONV or conv_lanes.few_taps(g)):
        return False
    return conv_lanes.pool_windows(g, k) is not None


def match(ctx, order, materialize, outputs) -> ConvPool | None:
    """The pooled conv of a lowering whose only output is a ``k x k`` / ``k`` max pool of a
    ``conv_lanes`` conv (prepacked in ``ctx.packed``, groups 1) through elementwise stages
    only, whose pool windows fit a tile (``conv_lanes.pool_windows``), else None."""
    if len(outputs) != 1:
        return None
    p = outputs[0]
    window = _window(p)
    if window is None:
        return None
    k, at = window[0], window[1:]
    src = p.op.attrs["operands"][0]
    convs = [t for t in order if isinstance(t.op, ComputeOp) and id(t) in ctx.packed]
    if len(convs) != 1:
        return None
    t = convs[0]
    if not pools_in_tiles(t, k, ctx.options):
        return None
    chain = _elementwise_chain(src, t)
    if chain is None:
        return None
    # nothing else computed: the conv's operands (its input or a pad), the chain, the pool
    rest = [s for s in order if isinstance(s.op, ComputeOp) and id(s) in materialize and
            id(s) not in chain and s is not p and
            not any(s is o for o in t.op.attrs["operands"])]
    readers = [s for s in order if isinstance(s.op, ComputeOp) and id(s) not in chain and
               s is not p and any(id(x) in chain for x in s.op.input_tensors)]
    if rest or readers:
        return None
    if not takes_windows(k, at, _shape(p)[2:], _shape(t)[2:]):
        return None
    return ConvPool(t, src, p, k, at)


def prepare(ctx, cp: ConvPool, materialize) -> None:
    """Before the bodies are inlined: the conv gets a buffer that is never allocated (its
    loads in the chain's body become the epilogue's value) and the chain is inlined."""
    t = cp.conv
    ctx.buf[id(t)] = decl_buffer(_shape(t), t.dtype, f"{t.name}_tile")
    if cp.src is not t:
        materialize.discard(id(cp.src))


def emit(ctx, cp: ConvPool, bodies):
    """The pooled conv's loop nest, storing the pool's output."""
    t, src, p = cp.conv, cp.src, cp.pool
    conv_buf = ctx.buf[id(t)]
    epilogue = None
    if src is not t:
        value = E.Var("conv_value", t.dtype)
        template = transform_expr(bodies[id(src)], lambda e: value if isinstance(
            e, E.BufferLoad) and e.buffer is conv_buf else None)

        def epilogue(idx, val):
            return substitute(substitute(template, {value: val}), _bind(src.op.axis, idx))

    _, _, combine = _reduce_parts(p, bodies[id(p)])
    ph, pw = _shape(p)[2:]
    x = ctx.buf[id(t.op.attrs["operands"][0])]
    w = ctx.buf[id(t.op.attrs["operands"][1])]
    return conv_lanes_emit.emit(ctx, t, ctx.buf[id(p)], x, w, epilogue,
                                pool=(cp.k, ph, pw, combine, *cp.at))
