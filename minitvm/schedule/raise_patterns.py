"""Operator patterns in raised TE stages: which stage is a GEMM or a conv2d, so the rule table
(keyed by op tag) gives it the packed GEMM or the implicit-GEMM convolution.

``op_tag(t)`` returns ``(tag, attrs)`` in the form the TOPI computes attach them (``matmul`` /
``batch_matmul`` with ``transpose_*`` and ``operands``; ``conv2d_nchw`` with strides, dilation,
padding, groups and the unpadded input as operand), or ``("", {})``. Window pools are
``raise_pool``'s.
"""

from __future__ import annotations

from ..te.tensor import ComputeOp, Tensor
from ..tir import expr as E
from .common import const_int, same_dims

MAX_INDEX_DEPTH = 64  # index expressions deeper than this are not analyzed (never affine here)


def op_tag(t: Tensor) -> tuple[str, dict]:
    """The tag and attrs the rule table would need for raised stage ``t`` (or ``("", {})``)."""
    tag = gemm_tag(t)
    if tag[0]:
        return tag
    return conv_tag(t)


def _is_zero(e) -> bool:
    return isinstance(e, (E.IntImm, E.FloatImm)) and e.value == 0


def _sum_of_products(t: Tensor, int8_widened: bool = False):
    """``(a_load, b_load)`` when ``t`` is ``sum(a * b)`` from zero (either operand order);
    ``int8_widened``: an operand may also be an 8-bit load widened to ``t``'s dtype (a conv over
    an int8 weight, ``common.int8_weight_conv``; an integer conv: ``_widened_int8``), given as
    the load."""
    body = t.op.body
    if not isinstance(body, E.Reduce) or len(body.source) != 1:
        return None
    comb = body.combiner
    if not isinstance(comb.result[0], E.Add) or not _is_zero(comb.identity_element[0]) or \
            (body.init and not _is_zero(body.init[0])) or not S_true(body.condition):
        return None
    src = body.source[0]
    if not isinstance(src, E.Mul):
        return None
    a, b = (_widened_int8(v, t.dtype) if int8_widened else v for v in (src.a, src.b))
    if not isinstance(a, E.ProducerLoad) or not isinstance(b, E.ProducerLoad):
        return None
    return a, b


def _widened_int8(v, dtype: str):
    """The 8-bit load under a widening cast to ``t``'s dtype: a uint8 / int8 one cast to
    float32 (an int8 weight; a depthwise conv's 8-bit data, ``conv_tag`` checks which) or to
    int32 (an integer conv's operands, as ``topi.nn``'s conv2d writes them:
    ``schedule/conv_vnni``); else ``v``."""
    if isinstance(v, E.Cast) and v.dtype == dtype and isinstance(v.value, E.ProducerLoad) and \
            dtype in ("float32", "int32") and v.value.dtype in ("uint8", "int8"):
        return v.value
    return v


def _float_of_8bit_ok(t: Tensor, xt: Tensor, wt: Tensor, groups: int) -> bool:
    """May float32 conv stage ``t`` read data ``xt`` and weight ``wt`` as they are? Either
    may be float32; an 8-bit weight only int8; 8-bit data only in a depthwise conv (one input
    channel a group: ``schedule/depthwise.widened_data`` widens it as it copies each plane,
    as Relay's importers ask for with ``onnx_quant.depthwise_data``)."""
    if t.dtype != "float32":
        return True
    if wt.dtype not in ("float32", "int8"):
        return False
    if xt.dtype == "float32":
        return True
    return xt.dtype in ("uint8", "int8") and groups >= 2 and const_int(wt.shape[1]) == 1 and \
        same_dims(xt.shape[1:2], [groups])


def S_true(cond) -> bool:
    return cond is None or (isinstance(cond, E.IntImm) and cond.value != 0)


def _same_vars(idx, want) -> bool:
    return len(idx) == len(want) and all(
        (w is None and const_int(i) == 0) or (w is not None and i is w) for i, w in
        zip(idx, want))


def _lead_ok(idx, dims, out, out_dims) -> bool:
    """Do the indices ``idx`` of an operand's leading (batch) axes, of extents ``dims``, read
    the output's batch axes ``out`` (extents ``out_dims``, right-aligned, numpy broadcasting)?
    Each axis is read at the output's axis variable where the extents agree, or at 0 where the
    operand's extent is 1: a unit axis may be written either way (the output's axis there has
    extent 1, or the operand's is broadcast)."""
    lead = len(out) - len(dims)
    if lead < 0 or len(idx) != len(dims):
        return False
    for i, d, v, e in zip(idx, dims, out[lead:], out_dims[lead:]):
        unit = const_int(d) == 1
        if not ((unit and const_int(i) == 0) or (i is v and (same_dims([d], [e]) or
                                                               (unit and const_int(e) == 1)))):
            return False
    return True


def gemm_tag(t: Tensor) -> tuple[str, dict]:
    """(tag, attrs) of a raised stage that is a GEMM (``matmul`` / ``batch_matmul``), else
    ("", {}). Recognized: ``sum_k A[.., i, k] * B[k, j]`` (B transposed or not) with A's
    leading axes the output's, and ``sum_k A[b.., i, k] * B[b.., k, j]`` with the batch axes
    the output's (rank 3: a unit batch on either side broadcast). A unit batch axis may be
    read at 0 or at the output's (unit) axis variable (``_lead_ok``).
    """
    loads = _sum_of_products(t)
    if loads is None and t.dtype == "int32":  # 8-bit loads widened: ``schedule/gemm_vnni``'s
        loads = _sum_of_products(t, int8_widened=True)
        if loads is not None and not all(isinstance(ld, E.ProducerLoad) and
                                         ld.dtype in ("uint8", "int8") for ld in loads):
            loads = None
    if loads is None or len(t.op.body.axis) != 1:
        return "", {}
    body = t.op.body
    k = body.axis[0].var
    out = [iv.var for iv in t.op.axis]
    od = list(t.shape)
    for a, b in (loads, loads[::-1]):
        if not (isinstance(a, E.ProducerLoad) and isinstance(b, E.ProducerLoad)):
            continue
        ta, tb = a.producer, b.producer
        ra, rb = len(ta.shape), len(tb.shape)
        if len(out) < 2 or ra != len(out) or rb not in (2, ra) or \
                not _same_vars(a.indices[-2:], [out[-2], k]):
            continue
        if not _lead_ok(a.indices[:-2], ta.shape[:-2], out[:-2], od[:-2]):
            continue
        same_a = same_dims(ta.shape[:-2], od[:-2])
        if rb == 2 and same_a:  # A's leading axes flattened into the rows
            tag = "matmul"
        elif rb == 2 or not _lead_ok(b.indices[:-2], tb.shape[:-2], out[:-2], od[:-2]):
            continue
        elif (len(out) == 3 and (same_a or same_dims(tb.shape[:1], od[:1]))) or \
                (same_a and same_dims(tb.shape[:-2], od[:-2])):
            # rank 3: at most one side broadcast; rank > 3: the batch axes flatten, so none
            tag = "batch_matmul"
        else:
            continue
        for trans, want in ((False, [k, out[-1]]), (True, [out[-1], k])):
            if _same_vars(b.indices[-2:], want):
                return tag, {"transpose_a": False, "transpose_b": trans, "operands": (ta, tb)}
    return "", {}


# ---------------------------------------------------------------------------------- conv2d
def affine(e) -> tuple[dict, int] | None:
    """``e`` as ``sum(coef * var) + const`` (``{id(var): (var, coef)}``, const), or None."""
    stack = [(e, 1, 0)]
    terms: dict[int, list] = {}
    const = 0
    while stack:
        x, scale, depth = stack.pop()
        if depth > MAX_INDEX_DEPTH:
            return None
        if isinstance(x, E.IntImm):
            const += scale * x.value
        elif isinstance(x, E.Var):
            entry = terms.setdefault(id(x), [x, 0])
            entry[1] += scale
        elif isinstance(x, E.Cast) and x.dtype.startswith("int") and \
                x.value.dtype.startswith("int"):
            stack.append((x.value, scale, depth + 1))
        elif isinstance(x, E.Add):
            stack.extend(((x.a, scale, depth + 1), (x.b, scale, depth + 1)))
        elif isinstance(x, E.Sub):
            stack.extend(((x.a, scale, depth + 1), (x.b, -scale, depth + 1)))
        elif isinstance(x, E.Mul) and const_int(x.b) is not None:
            stack.append((x.a, scale * const_int(x.b), depth + 1))
        elif isinstance(x, E.Mul) and const_int(x.a) is not None:
            stack.append((x.b, scale * const_int(x.a), depth + 1))
        else:
            return None
    return {k: (v, c) for k, (v, c) in terms.items() if c != 0}, const


def _coef(terms: dict, var) -> int:
    return terms[id(var)][1] if id(var) in terms else 0


def _window_index(e, out_var, red_var):
    """``(stride, dilation, offset)`` when ``e == stride*out + dilation*red + offset``."""
    aff = affine(e)
    if aff is None:
        return None
    terms, const = aff
    if set(terms) != {id(out_var), id(red_var)}:
        return None
    return _coef(terms, out_var), _coef(terms, red_var), const


def conjuncts(cond) -> list:
    out, stack = [], [cond]
    while stack:
        c = stack.pop()
        if isinstance(c, E.And):
            stack.extend((c.a, c.b))
        else:
            out.append(c)
    return out


def _bounds(cond, axis_vars) -> dict | None:
    """``{id(var): [lo, hi]}`` (``lo <= var < hi``; None where unbounded) from a conjunction
    of comparisons between one axis variable and constants, or None for anything else."""
    out = {id(v): [None, None] for v in axis_vars}
    for c in conjuncts(cond):
        if not isinstance(c, (E.LT, E.LE, E.GT, E.GE)):
            return None
        aff = affine(E.Sub(c.a, c.b))  # c.a - c.b  (op)  0
        if aff is None or len(aff[0]) != 1:
            return None
        (v, coef), = aff[0].values()
        if id(v) not in out or coef not in (1, -1):
            return None
        k = aff[1]
        # normalize to  coef*v + k  op 0  ->  bound on v
        op = type(c)
        if coef == -1:  # -v + k op 0  <=>  v - k  flipped op 0
            k = -k
            op = {E.LT: E.GT, E.LE: E.GE, E.GT: E.LT, E.GE: E.LE}[op]
        # v + k op 0
        if op is E.GE:
            lo = -k
            out[id(v)][0] = lo if out[id(v)][0] is None else max(out[id(v)][0], lo)
        elif op is E.GT:
            lo = -k + 1
            out[id(v)][0] = lo if out[id(v)][0] is None else max(out[id(v)][0], lo)
        elif op is E.LT:
            hi = -k
            out[id(v)][1] = hi if out[id(v)][1] is None else min(out[id(v)][1], hi)
        else:
            hi = -k + 1
            out[id(v)][1] = hi if out[id(v)][1] is None else min(out[id(v)][1], hi)
    return out


def _call_name(e) -> str:
    op = getattr(e, "op", None)
    return str(getattr(op, "name", op))


def pad_of(p: Tensor):
    """``(x, pt, pl, pb, pr)`` when stage ``p`` zero-pads the two last axes of a 4-d ``x``."""
    if not isinstance(p.op, ComputeOp) or p.op.reduce_axis or len(p.shape) != 4:
        return None
    body = p.op.body
    if isinstance(body, E.Select):
        cond, val, other = body.condition, body.true_value, body.false_value
    elif isinstance(body, E.Call) and _call_name(body) == "tir.if_then_else":
        cond, val, other = body.args
    else:
        return None
    if not _is_zero(other) or not isinstance(val, E.ProducerLoad):
        return None
    x = val.producer
    if len(x.shape) != 4 or any(const_int(d) is None for d in (*x.shape[2:], *p.shape[2:])):
        return None
    a = [iv.var for iv in p.op.axis]
    if val.indices[0] is not a[0] or val.indices[1] is not a[1] or \
            not same_dims(x.shape[:2], p.shape[:2]):
        return None
    pads = []
    for d in (2, 3):
        aff = affine(val.indices[d])
        if aff is None or set(aff[0]) != {id(a[d])} or _coef(aff[0], a[d]) != 1:
            return None
        pads.append(-aff[1])
    pt, pl = pads
    h, w = const_int(x.shape[2]), const_int(x.shape[3])
    ph, pw = const_int(p.shape[2]), const_int(p.shape[3])
    pb, pr = ph - h - pt, pw - w - pl
    if min(pt, pl, pb, pr) < 0:
        return None
    bounds = _bounds(cond, a)
    if bounds is None or bounds[id(a[0])] != [None, None] or bounds[id(a[1])] != [None, None]:
        return None
    for v, lo, n, ext in ((a[2], pt, h, ph), (a[3], pl, w, pw)):
        blo, bhi = bounds[id(v)]
        # where the condition holds inside [0, ext) must be exactly the input's [lo, lo + n)
        eff_lo = 0 if blo is None else max(blo, 0)
        eff_hi = ext if bhi is None else min(bhi, ext)
        if eff_lo != lo or eff_hi != lo + n:
            return None
    return x, pt, pl, pb, pr


def _group_channel(e, o, rc) -> tuple[int, int] | None:
    """``(og, cg)`` when input channel index ``e`` is ``o // og * cg + rc`` (a grouped conv:
    ``og`` output and ``cg`` input channels a group; ``og == 1`` may drop the division)."""
    terms, const, stack = {}, 0, [(e, 1, 0)]
    while stack:  # (``affine`` with ``o // og`` as one more variable)
        x, scale, depth = stack.pop()
        if depth > MAX_INDEX_DEPTH:
            return None
        if isinstance(x, E.FloorDiv) and x.a is o and (const_int(x.b) or 0) >= 1:
            key = ("div", const_int(x.b))
        elif x is o:
            key = ("div", 1)
        elif x is rc:
            key = ("rc", 0)
        elif isinstance(x, E.IntImm):
            const += scale * x.value
            continue
        elif isinstance(x, E.Cast) and x.dtype.startswith("int") and \
                x.value.dtype.startswith("int"):
            stack.append((x.value, scale, depth + 1))
            continue
        elif isinstance(x, E.Add):
            stack.extend(((x.a, scale, depth + 1), (x.b, scale, depth + 1)))
            continue
        elif isinstance(x, E.Mul) and const_int(x.b) is not None:
            stack.append((x.a, scale * const_int(x.b), depth + 1))
            continue
        elif isinstance(x, E.Mul) and const_int(x.a) is not None:
            stack.append((x.b, scale * const_int(x.a), depth + 1))
            continue
        else:
            return None
        terms[key] = terms.get(key, 0) + scale
    terms = {k: c for k, c in terms.items() if c}
    divs = [k for k in terms if k[0] == "div"]
    if const or terms.get(("rc", 0)) != 1 or len(divs) != 1 or len(terms) != 2 or \
            terms[divs[0]] < 1:
        return None
    return divs[0][1], terms[divs[0]]


def _groups(chan, o, rc, t, xt, wt) -> int | None:
    """The groups of conv stage ``t`` reading input channel ``chan`` of ``xt`` (weight ``wt``:
    ``[O, C/G, KH, KW]``), or None when ``chan`` is no channel of a (grouped) conv."""
    if chan is rc:
        return 1 if same_dims(wt.shape[1:2], xt.shape[1:2]) else None
    found = _group_channel(chan, o, rc)
    dims = [const_int(d) for d in (t.shape[1], wt.shape[1], xt.shape[1])]
    if found is None or None in dims:
        return None
    (og, cg), (out_ch, w_cg, in_ch) = found, dims
    if cg != w_cg or out_ch % og or in_ch != out_ch // og * cg:
        return None
    return out_ch // og


def conv_tag(t: Tensor) -> tuple[str, dict]:
    """``("conv2d_nchw", attrs)`` for ``sum_{c,ky,kx} X[n, g(o) + c, y*sh + ky*dh, x*sw +
    kx*dw] * W[o, c, ky, kx]`` (X a zero-pad stage of the input, or the input itself; ``g(o)``
    is 0 for one group, ``o // (O/G) * (C/G)`` for G: grouped and depthwise convs as
    LegalizeOps writes them), else ("", {})."""
    loads = _sum_of_products(t, int8_widened=True)
    if loads is None or len(t.shape) != 4 or len(t.op.body.axis) != 3:
        return "", {}
    n, o, y, x = (iv.var for iv in t.op.axis)
    red = {id(r.var): r for r in t.op.body.axis}
    for d, w in (loads, loads[::-1]):
        wt, xt = w.producer, d.producer
        if len(wt.shape) != 4 or len(xt.shape) != 4 or w.indices[0] is not o:
            continue
        rc, ry, rx = w.indices[1:]
        if not all(isinstance(v, E.Var) and id(v) in red for v in (rc, ry, rx)) or \
                len({id(rc), id(ry), id(rx)}) != 3:
            continue
        groups = _groups(d.indices[1], o, rc, t, xt, wt) if d.indices[0] is n else None
        if groups is None or not _float_of_8bit_ok(t, xt, wt, groups):
            continue
        wy, wx = _window_index(d.indices[2], y, ry), _window_index(d.indices[3], x, rx)
        if wy is None or wx is None or wy[2] != 0 or wx[2] != 0 or min(*wy[:2], *wx[:2]) < 1:
            continue
        if not same_dims([red[id(rc)].dom.extent, red[id(ry)].dom.extent,
                          red[id(rx)].dom.extent], wt.shape[1:]):
            continue
        pad = pad_of(xt)
        src, pads = (xt, (0, 0, 0, 0)) if pad is None else (pad[0], pad[1:])
        return "conv2d_nchw", {"strides": (wy[0], wx[0]), "dilation": (wy[1], wx[1]),
                               "padding": tuple(pads), "groups": groups, "operands": (src, wt)}
    return "", {}
