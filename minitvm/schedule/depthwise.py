"""Depthwise conv2d (NCHW, one input channel per group) as generated code.

Per (image, input channel) task — the tasks split over the thread pool when the work is large —
the channel's plane is copied once into a zero-padded, stride-phased temporary
``xph[py, px, i, j] = x_padded[i*sh + py, j*sw + px]`` (``Hq x Wq`` per phase). On it every
filter tap ``(ky, kx)`` of output pixel ``(oy, ox)`` reads ``xph`` at ``base(tap) + oy*Wq + ox``:
a constant offset from the pixel's position in a ``[OH, Wq]`` grid, whatever the stride. So:

- row mode (``OW`` a whole number of vectors, or any width from 8 when the epilogue reads the
  conv once): per output row, each vector of pixels is the sum of the taps' contiguous vector
  loads times the (broadcast) tap weights, stored straight into the output with the fused
  epilogue applied (bias, clip / ReLU6, ...); a row that is no whole number of vectors ends
  with one overlapping the one before (rows of 14: two 8-lane vectors), which recomputes a few
  pixels but needs no temporary. (Through the grid below, MobileNetV2's 144-channel 56x56 and
  96-channel 112x112 stride-2 layers took 11% and 9% longer on a Zen 4, kernel alone);
- grid mode (the other widths, e.g. 7): the flattened ``[OH, Wq]`` grid is computed in whole
  vectors (its ``Wq - OW`` extra columns are ignored) into a small temporary, then each output
  row is read from it through the epilogue.

No bounds check is left in the inner loops (the padding is in the copy) and the multiply-adds
read no strided vector (the stride is in the phases). The generic schedule of the same stage,
a small-window reduction with clamped, bounds-checked gathers, is 10-30x slower (MobileNetV2).

The epilogue is fused when the lowering driver names it (``ctx.epilogues[id(stage)]``: the one
elementwise output stage reading this conv, which then shares its output buffer). Should it read
the conv away from its own position, the conv goes to a temporary the epilogue then reads.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import post_order, substitute
from .common import const_int as _const_int
from .common import (
    emit_with_epilogue,
    epilogue_value,
    static_grouped_conv2d_dims,
    vector_isa,
)
from .common import imm as _i
from .common import outer_loops as _outer_loops

# tasks (image x channel planes) go to the thread pool from this many multiply-adds in all
PARALLEL_MIN_MACS = 1 << 19
VECTOR = {"avx512": 16, "avx2": 8}  # float32 lanes of one machine vector
MAX_UNROLL = 16  # vector chunks of a row unrolled (the kernels get no LLVM loop unroller)
# see ``_vec``: bit 1 the phased copy, bit 2 the output rows (any width from 8 computed row by
# row, the last vector overlapping, instead of through the grid and its crop; 7x7 planes keep
# the grid, whose crop then overlaps). Measured on AVX2 first; both ISAs (the Zen 4
# measurement at ``common.vector_isa``)
OVERLAP_TAILS = {"avx512": 3, "avx2": 3}
# A grouped conv with several input channels per group (ResNeXt, RegNet) runs here too when
# each output channel has at most this many taps (input channels of its group x filter taps):
# each is loaded into a scalar once per channel, and the vector of output pixels is their sum
# over the group's phased planes. ResNeXt-50's 32 groups of 4 channels, 3x3, took 4.8 ms
# through the generic schedule at 128 channels, 56x56 (Zen 4, one thread); see
# tests/schedule/test_depthwise_schedule.py for the grouped cases.
MAX_GROUP_TAPS = 160


def supported(t, options=None) -> bool:
    """Is ``t`` a static float32 grouped conv2d with at most ``MAX_GROUP_TAPS`` filter taps per
    output channel (depthwise: one input channel per group; ResNeXt's 4 of a 3x3 are 36)?"""
    dims = static_grouped_conv2d_dims(t)
    if dims is None:
        return False
    groups, _, cg, _, _, _, kh, kw, _, _ = dims
    return groups >= 2 and cg * kh * kw <= MAX_GROUP_TAPS


def geometry(t) -> dict:
    """Sizes of depthwise stage ``t``: input, output, filter, phases and the temporaries."""
    a = t.op.attrs
    x, w = a["operands"]
    n, c, h, wd = (_const_int(d) for d in x.shape)
    o, cg, kh, kw = (_const_int(d) for d in w.shape)
    oh, ow = _const_int(t.shape[2]), _const_int(t.shape[3])
    sh, sw = a["strides"]
    dh, dw = a["dilation"]
    pt, pl = a["padding"][0], a["padding"][1]
    hq = oh + ((kh - 1) * dh) // sh
    wq = ow + ((kw - 1) * dw) // sw
    plane = hq * wq
    lanes = VECTOR[vector_isa()]
    taps = []  # (ky, kx, offset of the tap's window in xph)
    for ky in range(kh):
        for kx in range(kw):
            ry, rx = ky * dh, kx * dw
            phase = (ry % sh) * sw + rx % sw
            taps.append((ky, kx, phase * plane + (ry // sh) * wq + rx // sw))
    rows_mode = ow % lanes == 0
    grid = -(-(oh * wq) // lanes) * lanes  # the grid mode's vectors, rounded up
    reach = max(off for _, _, off in taps) + (grid if not rows_mode else (oh - 1) * wq + ow)
    groups = c // cg
    # per group: ``cg`` input channels, ``m`` output channels (depthwise: 1 and the multiplier)
    return dict(n=n, c=c, o=o, groups=groups, cg=cg, m=o // groups, h=h, w=wd, oh=oh, ow=ow,
                kh=kh, kw=kw, sh=sh, sw=sw,
                pt=pt, pl=pl, hq=hq, wq=wq, plane=plane, lanes=lanes, taps=taps,
                rows_mode=rows_mode, grid=grid, xph_len=max(sh * sw * plane, reach))


def emit(ctx, t, out, bodies) -> S.Stmt:
    """Statements computing depthwise stage ``t`` (and its fused epilogue) into ``out``."""
    return emit_with_epilogue(ctx, t, out, bodies, lambda buf, epi: _emit(ctx, t, buf, epi),
                              tuple(_const_int(d) for d in t.shape))


def _emit(ctx, t, out, epi) -> S.Stmt:
    """The conv (and the epilogue ``epi``: its body and axis vars, or None) into ``out``."""
    x, w = (ctx.buf[id(s)] for s in t.op.attrs["operands"])
    g = geometry(t)
    cg, size = g["cg"], g["xph_len"]
    macs = g["n"] * g["o"] * cg * g["oh"] * g["ow"] * g["kh"] * g["kw"]

    def task(idx):
        b, gi = idx
        xph = decl_buffer((cg * size,), "float32", "dw_xph")
        # the group's phased planes, one view each (one plane: the buffer itself)
        planes = [xph] if cg == 1 else [
            decl_buffer((size,), "float32", f"dw_xph{ci}", data=xph.data, elem_offset=ci * size)
            for ci in range(cg)]
        parts = [_fill(ctx, g, plane, x, b, gi * cg + ci) for ci, plane in enumerate(planes)]
        for mi in range(g["m"]):
            oc = gi * g["m"] + mi if g["m"] > 1 else gi
            parts.append(_channel(ctx, g, planes, w, out, b, oc, epi))
        body = S.SeqStmt(parts)
        for plane in planes[::-1] if cg > 1 else []:
            body = S.DeclBuffer(plane, body)
        return S.Allocate(xph.data, "float32", [cg * size], True, S.DeclBuffer(xph, body))

    return _outer_loops(ctx, [g["n"], g["groups"]], macs >= PARALLEL_MIN_MACS, task)


def _overlap(bit: int) -> bool:
    """Are the tails of this kind (``OVERLAP_TAILS`` bit) overlapping vectors on this host?"""
    return bool(OVERLAP_TAILS[vector_isa()] & bit)


def _zeros(ctx, buf, start, count: int, lanes: int) -> S.Stmt | None:
    """``buf[start : start + count] = 0`` in vectors plus a scalar tail (None when empty)."""
    if count <= 0:
        return None
    return _vec(ctx, count, lanes, lambda j: S.BufferStore(
        buf, E.FloatImm("float32", 0.0), [start + j]), _overlap(1))


def _vec(ctx, extent: int, lanes: int, body_fn, overlap: bool = False) -> S.Stmt:
    """``for j in [0, extent)``: vectors of ``lanes`` then a scalar tail. With ``overlap``
    (a body that may run twice at a position: it reads nothing it writes) the tail is instead
    one more vector ending at ``extent``, over the last positions of the vectors before it;
    an extent under ``lanes`` takes the widest power-of-two vector it holds: rows of 14 become
    two overlapping 8-lane vectors, rows of 5-7 (7x7 planes and their phases) two 4-lane ones."""
    if overlap and extent % lanes and extent > 4 and lanes > 4:
        vl = min(lanes, 1 << (extent.bit_length() - 1))  # 14 -> 8, 7 -> 4, 56 -> 16
        vi = ctx.fresh("dl")
        tail = S.For(vi, 0, vl, S.ForKind.VECTORIZED, body_fn(vi + (extent - vl)))
        return S.SeqStmt([_vec(ctx, extent // vl * vl, vl, body_fn), tail])
    parts = []
    nvec = extent // lanes
    if nvec:
        vo, vi = ctx.fresh("dv"), ctx.fresh("dl")
        inner = S.For(vi, 0, lanes, S.ForKind.VECTORIZED, body_fn(vo * lanes + vi))
        kind = S.ForKind.UNROLLED if nvec <= MAX_UNROLL else S.ForKind.SERIAL
        parts.append(S.For(vo, 0, nvec, kind, inner) if nvec > 1 else
                     substitute(inner, {vo: _i(0)}))
    done = nvec * lanes
    if extent - done >= 4 and lanes > 4:  # a half (or quarter) vector before the scalar tail
        vi = ctx.fresh("dl")
        parts.append(S.For(vi, 0, 4, S.ForKind.VECTORIZED, body_fn(vi + done)))
        done += 4
    if extent - done:
        tv = ctx.fresh("dt")
        parts.append(S.For(tv, done, extent - done, S.ForKind.SERIAL, body_fn(tv)))
    return S.SeqStmt(parts) if len(parts) != 1 else parts[0]


def _rows(ctx, lo: int, hi: int, body_fn) -> S.Stmt | None:
    """``for i in [lo, hi): body_fn(i)`` (None when empty)."""
    if hi <= lo:
        return None
    i = ctx.fresh("dr")
    return S.For(i, lo, hi - lo, S.ForKind.SERIAL, body_fn(i))


def _seq(parts) -> S.Stmt | None:
    parts = [p for p in parts if p is not None]
    return None if not parts else parts[0] if len(parts) == 1 else S.SeqStmt(parts)


def _fill(ctx, g, xph, x, b, ic) -> S.Stmt:
    """The zero-padded phased copy of plane ``x[b, ic]``, row phase by row phase. Which rows and
    columns of each phase read inside the input is known here, so the copy has no per-element
    test."""
    sh, hq = g["sh"], g["hq"]
    parts = []
    for py in range(sh):
        i0 = min(hq, max(0, -(-(g["pt"] - py) // sh)))  # rows [i0, i1) read an input row
        i1 = min(hq, max(i0, (g["h"] - 1 + g["pt"] - py) // sh + 1))
        for a, z, inside in ((0, i0, False), (i0, i1, True), (i1, hq, False)):
            parts.append(_rows(ctx, a, z, lambda i, py=py, inside=inside: _row(
                ctx, g, xph, x, b, ic, py, i, inside)))
    done = sh * g["sw"] * g["plane"]
    parts.append(_zeros(ctx, xph, done, g["xph_len"] - done, g["lanes"]))
    return _seq(parts)


def _row(ctx, g, xph, x, b, ic, py, i, inside: bool) -> S.Stmt:
    """Row ``i`` of row phase ``py``, in each column phase: zeros (a padding row), else the
    input row's columns ``j*sw + px`` between zero padding columns (with a stride in width,
    vector loads at that stride: the code generator makes them whole loads and shuffles)."""
    sh, sw, wq, lanes, pl = g["sh"], g["sw"], g["wq"], g["lanes"], g["pl"]
    parts = []
    iy = i * sh + (py - g["pt"])
    for px in range(sw):
        base = (py * sw + px) * g["plane"] + i * wq
        if not inside:
            parts.append(_zeros(ctx, xph, base, wq, lanes))
            continue
        j0 = min(wq, max(0, -(-(pl - px) // sw)))  # columns [j0, j1) read an input column
        j1 = min(wq, max(j0, (g["w"] - 1 + pl - px) // sw + 1))
        parts += [_zeros(ctx, xph, base, j0, lanes), _zeros(ctx, xph, base + j1, wq - j1, lanes)]
        if j1 > j0:
            parts.append(_vec(ctx, j1 - j0, lanes, lambda j, base=base, px=px, j0=j0: S.BufferStore(
                xph, x[b, ic, iy, (j + j0) * sw + (px - pl)], [base + j0 + j]), _overlap(1)))
    return _seq(parts)


def _taps_sum(g, planes, taps, pos):
    """The conv's value at grid position ``pos`` (a vector lane expression) from the filter
    ``taps`` (one scalar per input channel of the group and ``g["taps"]`` entry, channel
    major) over the group's phased ``planes``.

    One multiply-add chain per filter row of each plane, the rows then summed pairwise: a single
    chain of ``kh * kw`` dependent FMAs per vector fills the FP scheduler and runs 2-3x slower."""
    rows: dict[tuple, object] = {}
    per = len(g["taps"])
    for k, tap in enumerate(taps):
        ci, (ky, _, off) = divmod(k, per)[0], g["taps"][k % per]
        term = tap * planes[ci][pos + off]
        key = (ci, ky)
        rows[key] = term if key not in rows else rows[key] + term
    sums = list(rows.values())
    while len(sums) > 1:
        sums = [sums[k] + sums[k + 1] if k + 1 < len(sums) else sums[k]
                for k in range(0, len(sums), 2)]
    return sums[0]


# A transcendental epilogue (SiLU's sigmoid, GELU's erf) on a filter of more than
# SPLIT_MIN_TAPS taps and rows of at most SPLIT_MAX_WIDTH pixels runs in a pass of its own over
# the channel's conv values (``dw_conv``, in L1), after the taps' pass. Fused into one row's
# iteration, the taps and the function's polynomial share the vector registers (the taps spill)
# and a row of one or two vectors is a single dependency chain about 150 instructions long, so
# the CPU overlaps little more than two rows. Zen 4, one thread, EfficientNet's 5x5 convs with
# SiLU (us, fused -> split): 672 at 14x14 260 -> 202, 480 at 14x14 189 -> 145, 240 at 28x28
# 303 -> 253, 240 at 56x56 stride 2 366 -> 331; 3x3 at 28x28 77 -> 83 and wide rows (56, 112)
# 5-15% slower, so those stay fused.
SPLIT_MIN_TAPS, SPLIT_MAX_WIDTH = 9, 32
_TRANSCENDENTAL = ("exp", "sigmoid", "tanh", "erf", "log")


def _transcendental(epi) -> bool:
    return epi is not None and any(
        isinstance(n, E.Call) and n.op_name.split(".")[-1] in _TRANSCENDENTAL
        for n in post_order(epi[0]))


def _split_epilogue(g, epi) -> bool:
    """Does epilogue ``epi`` run in a pass of its own (``SPLIT_MIN_TAPS``)?"""
    return g["cg"] * len(g["taps"]) > SPLIT_MIN_TAPS and g["ow"] <= SPLIT_MAX_WIDTH and \
        _transcendental(epi)


# Grid mode (rows under 8 pixels: 7x7 planes) with a transcendental epilogue packs the grid's
# rows densely and runs the epilogue over the plane in whole vectors (``_flat_epilogue``): a
# 7x7 plane is 4 16-lane vectors, where row by row it is 14 4-lane ones. Zen 4, one thread,
# with SiLU (us, rows -> plane): 1152 at 7x7 5x5 206 -> 156, 3x3 125 -> 97, 672 at 14x14
# stride 2 153 -> 116; with ReLU6 (two instructions a vector) the extra pass costs more than
# it saves: 960 at 7x7 46 -> 57.
FLAT_GRID_EPILOGUE = True


def _flat_epilogue(ctx, g, out, b, oc, epi):
    """(``dw_dense`` buffer, statement): epilogue ``epi`` over output channel ``oc``'s plane as
    one run of ``OH * OW`` values read from ``dw_dense`` (the conv's values packed densely), in
    whole vectors, the last one overlapping; None unless the epilogue is transcendental and
    reads no operand per pixel (only the conv and per-channel values)."""
    if not _transcendental(epi):
        return None
    body, axes = epi
    spatial = {id(axes[2]), id(axes[3])}
    for n in post_order(body):
        if isinstance(n, E.BufferLoad) and n.buffer is not out and any(
                isinstance(v, E.Var) and id(v) in spatial for i in n.indices
                for v in post_order(i)):
            return None
    plane = g["oh"] * g["ow"]
    dense = decl_buffer((plane,), "float32", "dw_dense")
    of = ctx.flat_view(out)
    at = [b, oc, _i(0), _i(0)]  # (the epilogue reads nothing per pixel but the conv)

    def put(p):
        return S.BufferStore(of, epilogue_value(epi, out, at, dense[p]),
                             [(b * g["o"] + oc) * plane + p])

    return dense, _vec(ctx, plane, g["lanes"], put, True)


def _store(out, value, idx, epi) -> S.Stmt:
    """``out[idx] = epilogue(value)``, the conv's ``value`` inlined into the epilogue. An
    epilogue reading the conv twice (SiLU, ``y * sigmoid(y)``) gets the same expression object
    at both reads, which the code generator emits once. (Storing the conv and reading it back
    kept such convs off the row mode: EfficientNet's 144-channel 3x3 at 56x56 with SiLU took
    542 us, 307 us so, on a Zen 4 at one thread; with ReLU6 193 us.)"""
    return S.BufferStore(out, value if epi is None else epilogue_value(epi, out, idx, value),
                         idx)


def _channel(ctx, g, planes, w, out, b, oc, epi) -> S.Stmt:
    """Output channel ``oc`` of image ``b`` from the phased plane ``xph``. The filter taps are
    loaded once, before the loops, into scalars: the code needs no loop-invariant code motion
    from LLVM (``jit.MINIMAL_PIPELINE``, which such kernels get, has none)."""
    lanes, wq, ow = g["lanes"], g["wq"], g["ow"]
    taps = [ctx.fresh("dw_tap", w.dtype) for _ in range(g["cg"] * len(g["taps"]))]
    if g["rows_mode"] or (ow >= 8 and _overlap(2)):
        if _split_epilogue(g, epi):
            conv = decl_buffer((g["oh"] * ow,), "float32", "dw_conv")
            sums = _rows(ctx, 0, g["oh"], lambda oy: _vec(ctx, ow, lanes, lambda j: S.BufferStore(
                conv, _taps_sum(g, planes, taps, oy * wq + j), [oy * ow + j]), True))
            epilogue = _rows(ctx, 0, g["oh"], lambda oy: _vec(ctx, ow, lanes, lambda j: _store(
                out, conv[oy * ow + j], [b, oc, oy, j], epi), True))
            body = S.Allocate(conv.data, "float32", [g["oh"] * ow], True,
                              S.DeclBuffer(conv, S.SeqStmt([sums, epilogue])))
        else:
            def row(oy):
                return _vec(ctx, ow, lanes, lambda j: _store(
                    out, _taps_sum(g, planes, taps, oy * wq + j), [b, oc, oy, j], epi), True)

            body = _rows(ctx, 0, g["oh"], row)
    else:
        grid = decl_buffer((g["grid"],), "float32", "dw_grid")
        fill = _vec(ctx, g["grid"], lanes, lambda p: S.BufferStore(
            grid, _taps_sum(g, planes, taps, p), [p]))
        flat = _flat_epilogue(ctx, g, out, b, oc, epi) if FLAT_GRID_EPILOGUE else None
        if flat is None:
            crop = _rows(ctx, 0, g["oh"], lambda oy: _vec(ctx, ow, lanes, lambda j: _store(
                out, grid[oy * wq + j], [b, oc, oy, j], epi), _overlap(2)))
        else:  # the grid's rows packed densely, then the epilogue over the plane's vectors
            dense, epilogue = flat
            crop = S.SeqStmt([_rows(ctx, 0, g["oh"], lambda oy: _vec(ctx, ow, lanes, lambda j:
                                    S.BufferStore(dense, grid[oy * wq + j], [oy * ow + j]),
                                    _overlap(2))), epilogue])
            crop = S.Allocate(dense.data, "float32", [g["oh"] * ow], True,
                              S.DeclBuffer(dense, crop))
        body = S.Allocate(grid.data, "float32", [g["grid"]], True,
                          S.DeclBuffer(grid, S.SeqStmt([fill, crop])))
    per = len(g["taps"])
    for k in range(len(taps) - 1, -1, -1):
        ky, kx, _ = g["taps"][k % per]
        body = S.LetStmt(taps[k], w[oc, k // per, ky, kx], body)
    return body
