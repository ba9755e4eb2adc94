"""Window pooling in raised TE stages: LegalizeOps' ``max_pool`` / ``avg_pool`` blocks tagged
as Relay's pool stages are, so the rule table's pool schedule computes them.

LegalizeOps writes a pool as one reduction per output element over the window, each tap read
at clamped indices and masked where it falls outside the input::

    pool_max[n, c, y, x] = max_{ry, rx} Select(0 <= y*sh + ry*dh - pt < H and (the same in W),
                                               X[n, c, clamp(y*sh + ry*dh - pt), clamp(...)],
                                               lowest)

and an average as such a sum (masked taps 0) followed by a stage dividing it by the count of
taps. ``pool_tag`` recognizes the reduction (max or sum over a 1-D or 2-D window on the
trailing axes) and gives the attrs ``pool.supported`` reads; ``fused_mean`` turns the division
stage into one mean stage (kind "avg") when its divisor is the pool's tap count at every output
position (with or without count_include_pad), so the schedule sums and divides once.

Over run-time sizes (Relay VM ``Any`` dims, Relax symbolic shapes; each size a Var) the same
forms are tagged for ``pool_symbolic``: a clamp and mask by the size Var is the input range, the
overhang is left to the schedule (bottom / right padding 0 unless count_include_pad counts it),
and a divisor (Relay's one-stage symbolic average, or LegalizeOps' division stage) is taken for
the tap count when it equals it at every output of many sizes (``_run_time_count``).
``bins_tag`` tags LegalizeOps' adaptive sum over run-time bins.
"""

from __future__ import annotations

import numpy as np

from ..te.tensor import ComputeOp, Tensor
from ..tir import expr as E
from ..tir import op as tir_op
from ..tir.expr import IterVar, Range
from ..tir.stmt_functor import post_order, substitute
from .common import const_int, same_dims
from .pool import POOL_TAG
from .raise_patterns import affine, conjuncts

NONE: tuple[str, dict] = ("", {})
_FLIP = {E.LT: E.GT, E.LE: E.GE, E.GT: E.LT, E.GE: E.LE}


def _constant(e) -> int | None:
    """``e`` as an int when it folds to a constant (``T.int64(12) - T.int64(1)``), else None."""
    aff = affine(e)
    return aff[1] if aff is not None and not aff[0] else None


def _is_bound(e, bound) -> bool:
    """Is ``e`` the int ``bound``, or, for a ``(size var, k)`` pair, ``size + k``?"""
    if isinstance(bound, int):
        return _constant(e) == bound
    aff = affine(E.Sub(e, bound[0]))
    return aff is not None and not aff[0] and aff[1] == bound[1]


def _unclamp(e, n):
    """``(inner, True)`` when ``e`` clamps ``inner`` to ``[0, n - 1]`` (``min(max(inner, 0),
    n - 1)`` or ``max(min(inner, n - 1), 0)``; ``n`` an int or a run-time size's Var), else
    ``(e, False)``."""
    top = n - 1 if isinstance(n, int) else (n, -1)
    for outer, inner_cls, out_bound, in_bound in ((E.Min, E.Max, top, 0),
                                                  (E.Max, E.Min, 0, top)):
        if isinstance(e, outer) and isinstance(e.a, inner_cls) and \
                _is_bound(e.b, out_bound) and _is_bound(e.a.b, in_bound):
            return e.a.a, True
    return e, False


def _window(e, out_var, red_var):
    """``(stride, dilation, offset)`` when ``e == stride*out + dilation*red + offset``."""
    aff = affine(e)
    if aff is None or set(aff[0]) != {id(out_var), id(red_var)}:
        return None
    terms, const = aff
    return terms[id(out_var)][1], terms[id(red_var)][1], const


# a window position's bound by a run-time size ``n`` (``W < n``) is recorded as ``RUN_TIME +
# k`` for ``n + k``: far above any constant bound, so min / max keep it apart from them
RUN_TIME = 1 << 40


def _window_bounds(cond, wins, sizes=()) -> list | None:
    """``[[lo, hi], ...]``: the range ``cond`` (a conjunction of comparisons, each of one
    window position ``stride*out + dilation*red + offset`` with a constant, or with its axis's
    run-time size var in ``sizes``: then ``RUN_TIME + k`` stands for ``size + k``) allows each
    window position of ``wins`` (``(out, red, stride, dilation, offset)``; None where
    unbounded), or None when ``cond`` is anything else."""
    out = [[None, None] for _ in wins]
    for c in conjuncts(cond):
        if type(c) not in _FLIP:
            return None
        aff = affine(E.Sub(c.a, c.b))
        if aff is None:
            return None
        terms, k = aff
        for q, (o, r, s, d, off) in enumerate(wins):
            if not {id(o), id(r)} <= set(terms):
                continue
            sign = terms[id(o)][1] // s if terms[id(o)][1] in (s, -s) else 0
            if sign == 0 or terms[id(r)][1] != sign * d:
                return None
            extra = set(terms) - {id(o), id(r)}
            n = sizes[q] if q < len(sizes) else None
            if extra:  # (only ``sign * (W - n)``: a bound by the axis's run-time size)
                if n is None or extra != {id(n)} or terms[id(n)][1] != -sign:
                    return None
                k -= sign * RUN_TIME
            # sign * (W - off) + k  op  0, W the window position
            op, bound = (type(c), off - k) if sign == 1 else (_FLIP[type(c)], k + off)
            lo, hi = out[q]
            if op is E.GE or op is E.GT:
                b = bound + (op is E.GT)
                out[q][0] = b if lo is None else max(lo, b)
            else:
                b = bound + (op is E.LE)
                out[q][1] = b if hi is None else min(hi, b)
            break
        else:
            return None
    return out


def _as_2d(vals, one):
    """A 1-D window attribute as the 2-D one with a unit H axis (``pool.py``'s terms)."""
    return (one, *vals) if len(vals) == 1 else tuple(vals)


def _is_value(e, v: float) -> bool:
    return isinstance(e, (E.FloatImm, E.IntImm)) and float(e.value) == v


def pool_tag(t: Tensor) -> tuple[str, dict]:
    """``(POOL_TAG, attrs)`` when raised stage ``t`` is a max or sum pool over a 1-D or 2-D
    window on its trailing axes (NCW / NCHW, any stride, dilation and padding), else
    ``("", {})``. The attrs are those of Relay's pool stages: ``operands``, ``kind`` ("max" or
    "sum"), ``pool_size``, ``strides``, ``dilation``, ``padding`` (top, left, bottom, right;
    bottom / right the windows' overhang past the input), ``count_include_pad``."""
    body = t.op.body
    if not isinstance(body, E.Reduce) or len(body.source) != 1 or \
            not (isinstance(body.condition, E.IntImm) and body.condition.value):
        return NONE
    comb = body.combiner
    kind = {E.Max: "max", E.Add: "sum"}.get(type(comb.result[0]))
    res = comb.result[0]
    if kind is None or {id(res.a), id(res.b)} != {id(comb.lhs[0]), id(comb.rhs[0])}:
        return NONE
    ident = body.init[0] if body.init else comb.identity_element[0]
    if (kind == "sum" and not _is_value(ident, 0.0)) or (kind == "max" and not (
            _is_value(ident, float("-inf")) or
            _is_value(ident, tir_op.min_value(t.dtype).value))):
        return NONE
    axes, raxes = [iv.var for iv in t.op.axis], body.axis
    nd = len(raxes)
    if nd not in (1, 2) or len(axes) != nd + 2:
        return NONE
    src = body.source[0]
    den = None
    if kind == "sum" and isinstance(src, E.Div):  # (each tap over its window's count)
        src, den = src.a, src.b
    cond, load, pad = (src.condition, src.true_value, src.false_value) if \
        isinstance(src, E.Select) else (None, src, None)
    if not isinstance(load, E.ProducerLoad) or len(load.indices) != len(axes) or \
            load.indices[0] is not axes[0] or load.indices[1] is not axes[1]:
        return NONE
    x = load.producer
    # a run-time size: its Var (the output's size an expression of it), else an int
    sizes = [const_int(d) if const_int(d) is not None else d for d in x.shape[2:]]
    outs = [const_int(d) for d in t.shape[2:]]
    if x.dtype != t.dtype or not same_dims(x.shape[:2], t.shape[:2]):
        return NONE
    symbolic = [not isinstance(n, int) for n in sizes]
    if any((o is None) != sym or (sym and not isinstance(n, E.Var))
           for n, o, sym in zip(sizes, outs, symbolic)):
        return NONE
    if den is not None and not any(symbolic):
        return NONE  # (a static one divides in a stage of its own: ``fused_mean``)
    wins, clamped, ks = [], [], []
    for q, iv in enumerate(raxes):
        inner, cl = _unclamp(load.indices[2 + q], sizes[q])
        win = _window(inner, axes[2 + q], iv.var)
        k = const_int(iv.dom.extent)
        if win is None or k is None or const_int(iv.dom.min) != 0 or min(win[:2]) < 1 or \
                win[2] > 0:
            return NONE
        wins.append((axes[2 + q], iv.var, *win))
        clamped.append(cl)
        ks.append(k)
    bounds = [[None, None]] * nd if cond is None else _window_bounds(
        cond, wins, [n if sym else None for n, sym in zip(sizes, symbolic)])
    if bounds is None:
        return NONE
    pads_after = []
    for (_, _, s, d, off), cl, (lo, hi), k, n, o in zip(wins, clamped, bounds, ks, sizes, outs):
        if o is None:  # a run-time size: clamped and masked to the input; its overhang
            if not cl or (lo, hi) != (0, RUN_TIME):  # varies with the size (counted as 0)
                return NONE
            pads_after.append(0)
            continue
        last = (o - 1) * s + (k - 1) * d + off  # the last window position any tap reads
        if cl and (lo, hi) != (0, n):
            return NONE  # a clamp must be exactly the masked input range
        if not cl and ((lo, hi) != (None, None) or off < 0 or last >= n):
            return NONE  # (an unmasked axis must read inside the input)
        pads_after.append(max(0, last + 1 - n))
    if any(clamped):
        want = tir_op.min_value(t.dtype).value if kind == "max" else 0.0
        if pad is None or not _is_value(pad, want):
            return NONE
    elif cond is not None:
        return NONE
    befores = [-w[4] for w in wins]
    attrs = {
        "operands": (x,), "kind": kind, "pool_size": _as_2d(ks, 1),
        "strides": _as_2d([w[2] for w in wins], 1), "dilation": _as_2d([w[3] for w in wins], 1),
        "padding": (*_as_2d(befores, 0), *_as_2d(pads_after, 0)), "count_include_pad": False}
    if den is not None:  # a mean over run-time sizes in one stage (Relay's symbolic average)
        found = _run_time_count(den, axes, attrs, x, t) if t.dtype.startswith("float") else None
        if found is None:
            return NONE
        attrs.update(kind="avg", count_include_pad=found[0],
                     padding=(*attrs["padding"][:2], *found[1]))
    return POOL_TAG, attrs


# ------------------------------------------------------------------------- run-time bins
def _start_plus(e, r):
    """``start`` when ``e`` is ``start + r`` (``r`` a reduction var not in ``start``)."""
    if isinstance(e, E.Add):
        for a, b in ((e.a, e.b), (e.b, e.a)):
            if b is r and not any(n is r for n in post_order(a)):
                return a
    return None


def bins_tag(t: Tensor) -> tuple[str, dict]:
    """``(POOL_TAG, attrs)`` when raised stage ``t`` sums, per output position of its trailing
    1, 2 or 3 axes, a bin of run-time bounds (LegalizeOps' adaptive average over run-time sizes)::

        sum_{r < R} Select(start(o) + r < end(o), X[n, c, min(start(o) + r, size - 1)], 0)

    per axis; else ``("", {})``. The attrs give ``run_time_bins``: per axis ``(start, end, R)``
    in terms of ``bin_axes`` (the stage's output axis vars), which ``pool_symbolic`` sums over
    ``[start, min(end, start + R))`` exactly as written, without the masked taps."""
    body = t.op.body
    if not isinstance(body, E.Reduce) or len(body.source) != 1 or \
            not (isinstance(body.condition, E.IntImm) and body.condition.value) or \
            not t.dtype.startswith("float"):
        return NONE
    comb = body.combiner
    res = comb.result[0]
    if not isinstance(res, E.Add) or {id(res.a), id(res.b)} != {id(comb.lhs[0]),
                                                               id(comb.rhs[0])}:
        return NONE
    ident = body.init[0] if body.init else comb.identity_element[0]
    src = body.source[0]
    if not _is_value(ident, 0.0) or not isinstance(src, E.Select) or \
            not _is_value(src.false_value, 0.0):
        return NONE
    axes, raxes = [iv.var for iv in t.op.axis], body.axis
    nd = len(raxes)
    load = src.true_value
    if nd not in (1, 2, 3) or len(axes) != nd + 2 or not isinstance(load, E.ProducerLoad) or \
            len(load.indices) != len(axes) or load.indices[0] is not axes[0] or \
            load.indices[1] is not axes[1]:
        return NONE
    x = load.producer
    if x.dtype != t.dtype or not same_dims(x.shape[:2], t.shape[:2]):
        return NONE
    conds = {}
    for c in conjuncts(src.condition):
        if not isinstance(c, E.LT):
            return NONE
        conds[str(c.a)] = c.b
    if len(conds) != nd:
        return NONE
    bins = []
    for q, iv in enumerate(raxes):
        n = x.shape[2 + q]
        idx = load.indices[2 + q]
        if not isinstance(n, E.Var) or not isinstance(idx, E.Min) or \
                not _is_bound(idx.b, (n, -1)) or const_int(iv.dom.min) != 0:
            return NONE
        start = _start_plus(idx.a, iv.var)
        end = conds.get(str(idx.a))
        if start is None or end is None or any(
                isinstance(v, E.Var) and any(v is r.var for r in raxes)
                for e in (start, end) for v in post_order(e)):
            return NONE
        bins.append((start, end, iv.dom.extent))
    return POOL_TAG, {"operands": (x,), "kind": "sum", "run_time_bins": tuple(bins),
                      "bin_axes": tuple(axes[2:])}


# ---------------------------------------------------------------------------------- means
_NP_BINARY = {E.Add: np.add, E.Sub: np.subtract, E.Mul: np.multiply, E.Min: np.minimum,
              E.Max: np.maximum, E.FloorDiv: np.floor_divide, E.FloorMod: np.mod}


def _evaluate(e, env: dict):
    """``e`` evaluated with numpy, its variables bound by ``env`` (``{id(var): array}``), or
    None when it holds anything but integer arithmetic, min / max and casts."""
    val: dict[int, object] = {}
    for n in post_order(e):
        if isinstance(n, (E.IntImm, E.FloatImm)):
            v = n.value
        elif isinstance(n, E.Var):
            if id(n) not in env:
                return None
            v = env[id(n)]
        elif type(n) in _NP_BINARY:
            if n.dtype.startswith("float") and isinstance(n, (E.FloorDiv, E.FloorMod)):
                return None
            v = _NP_BINARY[type(n)](val[id(n.a)], val[id(n.b)])
        elif isinstance(n, E.Div) and n.dtype.startswith("float"):
            v = np.true_divide(val[id(n.a)], val[id(n.b)])
        elif isinstance(n, E.Cast) and n.dtype.startswith(("int", "float")):
            v = np.asarray(val[id(n.value)], "float64" if n.dtype.startswith("float")
                           else "int64")
            if n.dtype.startswith("int") and n.value.dtype.startswith("float"):
                return None  # (float -> int truncation: not a count)
        else:
            return None
        val[id(n)] = v
    return val[id(e)]


def _counts(attrs, plane, include: bool, after) -> np.ndarray:
    """The taps each output position of pool ``attrs`` divides by (1 at least): ``plane`` is
    ((OH, OW), (H, W)), the output's and the input's; ``after`` the bottom / right padding a
    count_include_pad count reaches."""
    (oh, ow), (h, w) = plane
    out = None
    for o, n, k, s, d, p, pa, shape in zip((oh, ow), (h, w), attrs["pool_size"],
                                           attrs["strides"], attrs["dilation"],
                                           attrs["padding"][:2], after, ((-1, 1), (1, -1))):
        lo, hi = (-p, n + pa) if include else (0, n)
        pos = np.arange(o)[:, None] * s + np.arange(k)[None, :] * d - p
        cnt = np.maximum(((pos >= lo) & (pos < hi)).sum(axis=1), 1).reshape(shape)
        out = cnt if out is None else out * cnt
    return out


def _run_time_count(den, axes, attrs, x: Tensor, t: Tensor) -> tuple | None:
    """``(count_include_pad, (bottom, right) padding)`` when divisor ``den`` (of the output
    axes ``axes`` and the input's run-time sizes) is pool ``attrs``' tap count at every output
    position of every input size tried (each run-time size from 1 to past two windows and
    strides, and two larger ones), else None. A check at those sizes, not a proof: the count
    of a window is periodic in the size past them (LegalizeOps' and the topi pools' divisors
    are such counts; another expression agreeing on all of them is not expected)."""
    size_vars = list({id(d): d for d in x.shape[2:] if isinstance(d, E.Var)}.values())
    span = max(k * d + s + p for k, d, s, p in zip(attrs["pool_size"], attrs["dilation"],
                                                   attrs["strides"], attrs["padding"][:2]))
    tried = [*range(1, 2 * span + 2), 3 * span + 1, 5 * span + 2]
    (kh, kw), (dh, dw) = attrs["pool_size"], attrs["dilation"]
    candidates = [(False, (0, 0))] + [(True, (pb, pr)) for pb in range(kh * dh)
                                      for pr in range(kw * dw)]
    # each size through the tried ones, the others held at a middle one, and all of them alike
    # (every pair was 10x slower to check: 0.7 s for a 3x3 window)
    base = tried[len(tried) // 2]
    combos = {tuple(v if i == j else base for i in range(len(size_vars)))
              for j in range(len(size_vars)) for v in tried}
    combos |= {(v,) * len(size_vars) for v in tried}
    for values in sorted(combos):
        env = {id(v): int(n) for v, n in zip(size_vars, values)}
        plane = []
        for d in (t.shape, x.shape):
            dims = [_evaluate(e, env) for e in d[2:]]
            if any(v is None for v in dims):
                return None
            plane.append((int(dims[0]), int(dims[-1])) if len(dims) == 2 else (1, int(dims[0])))
        if min(plane[0]) <= 0:
            continue  # (no output at this size)
        env[id(axes[-1])] = np.arange(plane[0][1])[None, :]
        if len(axes) == 4:
            env[id(axes[2])] = np.arange(plane[0][0])[:, None]
        got = _evaluate(den, env)
        if got is None:
            return None
        got = np.broadcast_to(np.asarray(got, "float64"), plane[0])
        candidates = [(inc, after) for inc, after in candidates
                      if np.array_equal(got, _counts(attrs, plane, inc, after))]
        if not candidates:
            return None
    return candidates[0]


def fused_mean(u: Tensor) -> Tensor | None:
    """One mean stage (kind "avg") for raised stage ``u`` when ``u`` divides a sum pool stage
    (``pool_tag``'s kind "sum", float) at its own position by that pool's tap count at every
    output position, counting the padding or not (count_include_pad); else None."""
    body = u.op.body
    if not isinstance(u.op, ComputeOp) or isinstance(body, E.Reduce) or \
            not isinstance(body, E.Div) or not isinstance(body.a, E.ProducerLoad):
        return None
    s = body.a.producer
    axes = [iv.var for iv in u.op.axis]
    if not isinstance(s.op, ComputeOp) or s.op.tag != POOL_TAG or \
            s.op.attrs.get("kind") != "sum" or not s.dtype.startswith("float") or \
            s.dtype != u.dtype or len(body.a.indices) != len(axes) or \
            any(i is not v for i, v in zip(body.a.indices, axes)):
        return None
    a = s.op.attrs
    if "run_time_bins" in a:
        return None  # (an adaptive sum over run-time bins: divided in its own stage)
    x = a["operands"][0]
    plane = [(const_int(t.shape[-2]) if len(t.shape) == 4 else 1, const_int(t.shape[-1]))
             for t in (u, x)]
    if None in plane[0] + plane[1]:  # run-time sizes: the count checked at many sizes
        found = _run_time_count(body.b, axes, a, x, u)
        if found is None:
            return None
        include, after = found
    else:
        env = {id(axes[-1]): np.arange(plane[0][1])[None, :]}
        if len(axes) == 4:
            env[id(axes[2])] = np.arange(plane[0][0])[:, None]
        den = _evaluate(body.b, env)
        if den is None:
            return None
        den = np.broadcast_to(np.asarray(den, "float64"), plane[0])
        overhang = a["padding"][2:]
        candidates = [(False, overhang)] + [(True, (pb, pr)) for pb in range(overhang[0] + 1)
                                            for pr in range(overhang[1] + 1)]
        for include, after in candidates:
            if np.array_equal(den, _counts(a, plane, include, after)):
                break
        else:
            return None
    # the sum's taps, each over the count: read again from the pool's input at u's position
    vmap = {iv.var: v for iv, v in zip(s.op.axis, axes)}
    raxes = []
    for iv in s.op.body.axis:
        r = E.Var(iv.var.name, iv.var.dtype)
        vmap[iv.var] = r
        raxes.append(IterVar(Range.from_min_extent(iv.dom.min, iv.dom.extent), r,
                             IterVar.CommReduce))
    red = s.op.body
    src = E.Div(substitute(red.source[0], vmap), body.b)
    mean = E.Reduce(red.combiner, [src], raxes, None, 0, list(red.init))
    attrs = {**u.op.attrs, **a, "kind": "avg", "count_include_pad": include,
             "padding": (*a["padding"][:2], *after)}
    op = ComputeOp(f"avg_pool{len(axes) - 2}d", POOL_TAG, attrs, u.op.axis, mean)
    t = Tensor(op, 0, u.shape, u.dtype)
    op._outputs = [t]
    return t
