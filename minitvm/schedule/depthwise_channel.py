"""One output channel of the depthwise schedule from its phased plane, and its epilogue.

``_channel`` loads the channel's filter taps into scalars and picks the plane's mode: row mode
(each output row from its own vectors, stored through the fused epilogue), narrow rows or a
transcendental epilogue (``_packed``: the conv packed densely, then the epilogue over it), or
the grid (``[OH, Wq]`` in whole vectors, then cropped). ``_flat_store`` / ``_flat_epilogue``
apply an epilogue over a plane in whole vectors, ``_store`` inlines the conv into one. The
switches stay in ``depthwise``, read from it at call time.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import post_order, transform_expr
from .common import at_own_position, epilogue_value
from .common import const_int as _const_int
from .common import imm as _i
from .depthwise_loops import _rows, _seq, _vec
from .depthwise_taps import _block, _row_blocks, _taps_sum, _tile_rows


def _flat_epilogue(ctx, g, out, b, oc, epi, dense=None, any_epi=False):
    """(``dw_dense`` buffer, statement): epilogue ``epi`` over output channel ``oc``'s plane as
    one run of ``OH * OW`` values read from ``dense`` (the conv's values packed densely; a new
    buffer when None), in whole vectors, the last one overlapping; None unless the epilogue
    (``any_epi``: any or none, else a transcendental one) can be applied so (``_flat_store``)."""
    from . import depthwise

    if not (any_epi or depthwise._transcendental(epi)):
        return None
    put = _flat_store(ctx, g, out, epi)
    if put is None:
        return None
    plane = g["oh"] * g["ow"]
    dense = decl_buffer((plane,), "float32", "dw_dense") if dense is None else dense
    return dense, _vec(ctx, plane, g["lanes"], lambda p: put(b, oc, p, dense[p]), True)


def _flat_store(ctx, g, out, epi):
    """``put(b, oc, p, value)``: the statement storing conv ``value`` of pixel ``p`` (counted
    across the rows of output channel ``oc``'s plane; a vector lane expression) through epilogue
    ``epi`` into ``out``; None unless the epilogue reads no operand per pixel but the conv,
    per-channel values and (``FLAT_OWN_POSITION``) operands of the output's shape at the pixel's
    own position."""
    from . import depthwise

    plane = g["oh"] * g["ow"]
    shape = [g["n"], g["o"], g["oh"], g["ow"]]
    own: dict = {}  # loads of an output-shaped operand at the pixel's own position
    if epi is not None:
        body, axes = epi
        spatial = {id(axes[2]), id(axes[3])}
        for n in post_order(body):
            if isinstance(n, E.BufferLoad) and n.buffer is not out and any(
                    isinstance(v, E.Var) and id(v) in spatial for i in n.indices
                    for v in post_order(i)):
                if [_const_int(d) for d in n.buffer.shape] != shape or not at_own_position(
                        n.indices, axes, shape):
                    return None
                own[id(n.buffer)] = n.buffer
        if own and not depthwise.FLAT_OWN_POSITION:
            return None
    flat = {k: ctx.flat_view(buf) for k, buf in own.items()}
    of = ctx.flat_view(out)

    def put(b, oc, p, value):
        pos = (b * g["o"] + oc) * plane + p
        if epi is None:
            return S.BufferStore(of, value, [pos])
        body, axes = epi
        if own:  # (ConvMixer's residual) read through its flat view at the pixel's position
            body = transform_expr(body, lambda e: E.BufferLoad(flat[id(e.buffer)], [pos]) if (
                isinstance(e, E.BufferLoad) and id(e.buffer) in flat
                and at_own_position(e.indices, axes, shape)) else None)
        # (the epilogue reads nothing per pixel but the conv and own: any position will do)
        return S.BufferStore(of, epilogue_value((body, axes), out, [b, oc, _i(0), _i(0)],
                                                value), [pos])

    return put


def _store(out, value, idx, epi) -> S.Stmt:
    """``out[idx] = epilogue(value)``, the conv's ``value`` inlined into the epilogue. An
    epilogue reading the conv twice (SiLU, ``y * sigmoid(y)``) gets the same expression object
    at both reads, which the code generator emits once. (Storing the conv and reading it back
    kept such convs off the row mode: EfficientNet's 144-channel 3x3 at 56x56 with SiLU took
    542 us, 307 us so, on a Zen 4 at one thread; with ReLU6 193 us.)"""
    return S.BufferStore(out, value if epi is None else epilogue_value(epi, out, idx, value),
                         idx)


def _packed(ctx, g, planes, taps, out, b, oc, epi, nw, any_epi, conv=None):
    """The conv into ``dw_conv`` (the plane packed densely, rows of ``nw``-lane vectors from
    ``_block``; ``nw`` None: the rows' own vectors), then the epilogue from it into ``out``:
    over the plane in whole vectors where ``_flat_epilogue`` (``any_epi``) takes it, else row
    by row. With ``conv`` (a plane the caller allocates): the two statements, not run one
    after the other here."""
    from . import depthwise

    lanes, ow, oh = g["lanes"], g["ow"], g["oh"]
    size = oh * ow + (nw - ow if nw else 0)
    own = conv is None
    conv = decl_buffer((size,), "float32", "dw_conv") if own else conv

    def block(oy, nrows):
        if nw is None and depthwise._tiled(g):
            return _tile_rows(ctx, g, planes[0], taps, oy, nrows, lambda i, j, vl, val:
                              S.BufferStore(conv, val, [E.Ramp((oy + i) * ow + j, 1, vl)]))

        def one(j):
            return _block(ctx, g, planes, taps, oy, nrows, j,
                          lambda i, val: S.BufferStore(conv, val, [(oy + i) * ow + j]))
        return _vec(ctx, nw, nw, one) if nw else _vec(ctx, ow, lanes, one, True)

    flat = _flat_epilogue(ctx, g, out, b, oc, epi, conv, any_epi)
    epilogue = flat[1] if flat is not None else _rows(
        ctx, 0, oh, lambda oy: _vec(ctx, ow, lanes, lambda j: _store(
            out, conv[oy * ow + j], [b, oc, oy, j], epi), depthwise._overlap(2)))
    if not own:
        return _row_blocks(ctx, g, block), epilogue
    return S.Allocate(conv.data, "float32", [size], True, S.DeclBuffer(
        conv, S.SeqStmt([_row_blocks(ctx, g, block), epilogue])))


def _channel(ctx, g, planes, w, out, b, oc, epi, before=None) -> S.Stmt:
    """Output channel ``oc`` of image ``b`` from the phased plane ``xph``. The filter taps are
    loaded once, before the loops, into scalars: the code needs no loop-invariant code motion
    from LLVM (``jit.MINIMAL_PIPELINE``, which such kernels get, has none). ``before(oy,
    nrows)``: a statement run before each row block (row mode only; ``_streams``)."""
    from . import depthwise

    lanes, wq, ow = g["lanes"], g["wq"], g["ow"]
    taps = [ctx.fresh("dw_tap", w.dtype) for _ in range(g["cg"] * len(g["taps"]))]
    nw = depthwise._narrow_lanes(g)
    if nw is not None:
        body = _packed(ctx, g, planes, taps, out, b, oc, epi, nw, True)
    elif depthwise._row_mode(g):
        if depthwise._split_epilogue(g, epi):
            body = _packed(ctx, g, planes, taps, out, b, oc, epi, None, False)
        else:
            body = _row_blocks(ctx, g, lambda oy, nrows: _seq([
                before(oy, nrows) if before else None, _tile_rows(
                    ctx, g, planes[0], taps, oy, nrows, lambda i, j, vl, val: _store(
                        out, val, [b, oc, oy + i, E.Ramp(j, 1, vl)], epi))
                if depthwise._tiled(g) else
                _vec(ctx, ow, lanes, lambda j: _block(
                    ctx, g, planes, taps, oy, nrows, j,
                    lambda i, val: _store(out, val, [b, oc, oy + i, j], epi)), True)]))
    else:
        grid = decl_buffer((g["grid"],), "float32", "dw_grid")
        fill = _vec(ctx, g["grid"], lanes, lambda p: S.BufferStore(
            grid, _taps_sum(g, planes, taps, p), [p]))
        flat = _flat_epilogue(ctx, g, out, b, oc, epi) if depthwise.FLAT_GRID_EPILOGUE else None
        if flat is None:
            crop = _rows(ctx, 0, g["oh"], lambda oy: _vec(ctx, ow, lanes, lambda j: _store(
                out, grid[oy * wq + j], [b, oc, oy, j], epi), depthwise._overlap(2)))
        else:  # the grid's rows packed densely, then the epilogue over the plane's vectors
            dense, epilogue = flat
            crop = S.SeqStmt([_rows(ctx, 0, g["oh"], lambda oy: _vec(ctx, ow, lanes, lambda j:
                                    S.BufferStore(dense, grid[oy * wq + j], [oy * ow + j]),
                                    depthwise._overlap(2))), epilogue])
            crop = S.Allocate(dense.data, "float32", [g["oh"] * ow], True,
                              S.DeclBuffer(dense, crop))
        body = S.Allocate(grid.data, "float32", [g["grid"]], True,
                          S.DeclBuffer(grid, S.SeqStmt([fill, crop])))
    return _with_taps(g, taps, w, oc, body)


def _with_taps(g, taps, w, oc, body) -> S.Stmt:
    """``body`` inside the let bindings of output channel ``oc``'s filter ``taps``."""
    per = len(g["taps"])
    for k in range(len(taps) - 1, -1, -1):
        ky, kx = g["taps"][k % per][:2]
        body = S.LetStmt(taps[k], w[oc, k // per, ky, kx], body)
    return body

