"""More operator families for ``onnx_generator``: TopK (ties broken by index), CumSum,
Trilu, DepthToSpace / SpaceToDepth, Shape / Size, normalizations (Batch, Instance, Layer),
ConvTranspose, Einsum, GatherND, ScatterElements, OneHot and Range. Each takes the graph
builder (``onnx_generator._Builder``) and adds one node (or returns without one)."""

from __future__ import annotations

import numpy as np

__all__ = ["MORE_FAMILIES"]

_FLOATS = ("float32", "float16")


def _float_value(b, min_rank: int = 1, max_rank: int = 4, exact: bool = False):
    v = b.pick(lambda u: u.dtype == "float32" and min_rank <= len(u.shape) <= max_rank
               and 0 not in u.shape and (u.exact or not exact))
    if v is None:
        v = b.new_input("float32", b.shape(b.rng.randint(min_rank, max_rank)))
    return b.tamed(v)


def topk(b) -> None:
    a = b.pick(lambda u: u.exact and u.shape and 0 not in u.shape
               and u.dtype in ("float32", "int32", "int64"))
    a = a or b.new_input(b.rng.choice(["float32", "int32"]), b.shape())
    axis = b.rng.randrange(len(a.shape))
    k = b.rng.randint(1, a.shape[axis])
    largest, sort = b.rng.randint(0, 1), 1
    shape = tuple(k if i == axis else d for i, d in enumerate(a.shape))
    vals, _ = b.node("TopK", [a, b.ints([k])], a.dtype, shape, True, a.bound, 2,
                     axis=axis - len(a.shape) if b.rng.random() < 0.3 else axis,
                     largest=largest, sorted=sort)
    b.pool[-1].dtype, b.pool[-1].bound = "int64", float(a.shape[axis])
    b.features.add(f"TopK largest={largest}")


def cumsum(b) -> None:
    a = b.pick(lambda u: u.shape and u.dtype in ("float32", "int32", "int64"))
    a = b.tamed(a or b.new_input("float32", b.shape()))
    axis = b.rng.randrange(len(a.shape))
    ex, rev = b.rng.randint(0, 1), b.rng.randint(0, 1)
    ax = b.const(np.array(axis - len(a.shape) if b.rng.random() < 0.3 else axis,
                          b.rng.choice(["int32", "int64"])))
    b.node("CumSum", [a, ax], a.dtype, a.shape, a.exact and a.dtype != "float32",
           a.bound * max(a.shape[axis], 1), exclusive=ex, reverse=rev)
    b.features.add(f"CumSum exclusive={ex} reverse={rev}")


def trilu(b) -> None:
    a = b.pick(lambda u: len(u.shape) >= 2 and u.dtype != "bool")
    a = a or b.new_input("float32", b.shape(b.rng.randint(2, 4)))
    upper = b.rng.randint(0, 1)
    ins = [a]
    if b.rng.random() < 0.7:
        ins.append(b.const(np.array(b.rng.randint(-3, 3), "int64")))
    b.node("Trilu", ins, a.dtype, a.shape, a.exact, a.bound, upper=upper)
    b.features.add(f"Trilu upper={upper}")


def depth_space(b) -> None:
    a = b.pick(lambda u: len(u.shape) == 4 and u.dtype == "float32")
    a = a or b.new_input("float32", (1, 4, 2, 3))
    n, c, h, w = a.shape
    bs = 2
    if b.rng.random() < 0.5 and c % (bs * bs) == 0 and c > 0:
        mode = b.rng.choice(["DCR", "CRD"])
        b.node("DepthToSpace", [a], a.dtype, (n, c // 4, h * 2, w * 2), a.exact, a.bound,
               blocksize=bs, mode=mode)
        b.features.add(f"DepthToSpace {mode}")
    elif h % bs == 0 and w % bs == 0 and h and w:
        b.node("SpaceToDepth", [a], a.dtype, (n, c * 4, h // 2, w // 2), a.exact, a.bound,
               blocksize=bs)


def shape_size(b) -> None:
    a = b.pick() or b.new_input("float32", b.shape())
    if b.rng.random() < 0.3:
        b.node("Size", [a], "int64", (), True, float(max(1, int(np.prod(a.shape)))))
        return
    rank = len(a.shape)
    attrs = {}
    lo, hi = 0, rank
    if b.opset >= 15 and b.rng.random() < 0.5 and rank:
        lo, hi = sorted(b.rng.sample(range(-rank - 1, rank + 2), 2))
        attrs = {"start": lo, "end": hi}
    n = len(range(rank)[slice(lo, hi)])
    b.node("Shape", [a], "int64", (n,), True, float(max(a.shape, default=1)), **attrs)
    b.features.add("Shape start/end" if attrs else "Shape")


def norm(b) -> None:
    a = _float_value(b, 2, 4)
    kind = b.rng.choice(["BatchNormalization", "InstanceNormalization", "LayerNormalization"])
    c = a.shape[1]
    eps = b.rng.choice([1e-5, 1e-3])
    if kind == "LayerNormalization" and b.opset < 17:
        kind = "BatchNormalization"
    if kind == "BatchNormalization":
        vals = [b.const((b.np_rng.integers(-4, 5, c) / 4).astype("float32")) for _ in range(3)]
        var = b.const((b.np_rng.integers(1, 9, c) / 4).astype("float32"))
        b.node(kind, [a, *vals, var], "float32", a.shape, False, a.bound * 8 + 2, epsilon=eps)
    elif kind == "InstanceNormalization":
        if len(a.shape) < 3:
            return
        s, t = (b.const((b.np_rng.integers(-4, 5, c) / 4).astype("float32")) for _ in range(2))
        b.node(kind, [a, s, t], "float32", a.shape, False, 8.0, epsilon=eps)
    else:
        axis = b.rng.randrange(-len(a.shape), len(a.shape))
        norm_shape = a.shape[axis:]
        s = b.const((b.np_rng.integers(-4, 5, norm_shape) / 4).astype("float32"))
        ins = [a, s] + ([b.const((b.np_rng.integers(-4, 5, norm_shape) / 4)
                                 .astype("float32"))] if b.rng.random() < 0.5 else [])
        b.node(kind, ins, "float32", a.shape, False, 16.0, axis=axis, epsilon=eps)
    b.features.add(kind)


def conv_transpose(b) -> None:
    rng = b.rng
    a = b.pick(lambda u: u.dtype == "float32" and len(u.shape) in (3, 4) and 0 not in u.shape)
    a = b.tamed(a or b.new_input("float32", (1, rng.randint(1, 3), rng.randint(2, 4),
                                               rng.randint(2, 4))))
    n, c, *sp = a.shape
    sd = len(sp)
    group = rng.choice([g for g in (1, c) if c % g == 0])
    oc_per = rng.randint(1, 2)
    kernel = [rng.randint(1, 3) for _ in sp]
    strides = [rng.randint(1, 2) for _ in sp]
    pads = [rng.randint(0, k - 1) for k in kernel] * 2
    outp = [rng.randint(0, s - 1) for s in strides]
    out_sp = [(sp[i] - 1) * strides[i] + kernel[i] - pads[i] - pads[i + sd] + outp[i]
              for i in range(sd)]
    if min(out_sp) < 1 or n * oc_per * group * int(np.prod(out_sp)) > 256:
        return
    w = b.const((b.np_rng.integers(-4, 5, (c, oc_per, *kernel)) / 4).astype("float32"))
    b.node("ConvTranspose", [a, w], "float32", (n, oc_per * group, *out_sp), False,
           a.bound * c * int(np.prod(kernel)), kernel_shape=kernel, strides=strides,
           pads=pads, output_padding=outp, group=group)
    b.features.add(f"ConvTranspose{sd}d")


def einsum(b) -> None:
    a = _float_value(b, 2, 3)
    if len(a.shape) == 2:
        m, k = a.shape
        n = b.rng.randint(1, 4)
        eq, bshape, shape = b.rng.choice([("ij,jk->ik", (k, n), (m, n)),
                                          ("ij,kj->ik", (n, k), (m, n)),
                                          ("ij,ij->i", (m, k), (m,)),
                                          ("ij,j->i", (k,), (m,))])
    else:
        bt, m, k = a.shape
        n = b.rng.randint(1, 4)
        eq, bshape, shape = b.rng.choice([("bij,bjk->bik", (bt, k, n), (bt, m, n)),
                                          ("bij->bji", None, (bt, k, m)),
                                          ("bij->b", None, (bt,))])
    ins = [a] if bshape is None else [a, b.new_operand("float32", bshape)]
    b.node("Einsum", ins, "float32", shape, False, a.bound * 4 * max(a.shape) * 4,
           equation=eq)
    b.features.add(f"Einsum {eq}")


def gather_nd(b) -> None:
    a = b.pick(lambda u: len(u.shape) >= 1 and 0 not in u.shape)
    a = a or b.new_input("float32", b.shape())
    r = len(a.shape)
    depth = b.rng.randint(1, r)
    lead = b.rng.randint(1, 3)
    idx = np.stack([b.np_rng.integers(-a.shape[i], a.shape[i], lead) for i in range(depth)], 1)
    b.node("GatherND", [a, b.const(idx.astype("int64"))], a.dtype, (lead,) + a.shape[depth:],
           a.exact, a.bound)


def scatter_elements(b) -> None:
    a = b.pick(lambda u: len(u.shape) >= 1 and 0 not in u.shape and u.dtype != "bool")
    a = a or b.new_input("float32", b.shape())
    axis = b.rng.randrange(len(a.shape))
    d = a.shape[axis]
    ishape = list(a.shape)
    ishape[axis] = b.rng.randint(1, d)
    # distinct positions along the axis (a repeated one's winner is unspecified)
    idx = np.stack([b.np_rng.permutation(d)[:ishape[axis]]
                    for _ in range(int(np.prod(ishape)) // ishape[axis])], -1)
    idx = np.moveaxis(idx.reshape([ishape[axis]] + [e for i, e in enumerate(ishape)
                                                    if i != axis]), 0, axis)
    idx = np.where(b.np_rng.random(idx.shape) < 0.3, idx - d, idx).astype("int64")
    upd = b.new_operand(a.dtype, tuple(ishape))
    b.node("ScatterElements", [a, b.const(idx), upd], a.dtype, a.shape, a.exact and upd.exact,
           max(a.bound, upd.bound), axis=axis)


def one_hot(b) -> None:
    depth = b.rng.randint(2, 5)
    ishape = b.shape(b.rng.randint(1, 2))
    if int(np.prod(ishape)) * depth > 256:
        return
    values = b.np_rng.integers(-depth, depth, ishape).astype("int64")
    if b.rng.random() < 0.5:
        idx = b.const(values)
    else:
        idx = b.new_input("int64", ishape)
        b.feeds[idx.name] = values
    axis = b.rng.randint(-1, len(ishape))
    shape = list(ishape)
    shape.insert(axis if axis >= 0 else len(ishape) + 1 + axis, depth)
    vals = b.const(np.array([b.rng.choice([0, -1]), b.rng.choice([1, 3])], "float32"))
    b.node("OneHot", [idx, b.const(np.array(depth, "int64")), vals], "float32", tuple(shape),
           True, 3.0, axis=axis)


def range_op(b) -> None:
    dt = b.rng.choice(["float32", "int32", "int64"])
    start, delta = b.rng.randint(-5, 5), b.rng.choice([1, 2, -1, -3])
    limit = start + delta * b.rng.randint(0, 6) + (b.rng.choice([0, 1]) if dt != "float32"
                                                   else 0.5)
    n = max(0, int(np.ceil((limit - start) / delta)))
    vals = [b.const(np.array(v, dt)) for v in (start, limit, delta)]
    b.node("Range", vals, dt, (n,), True, float(max(abs(start), abs(limit))))


MORE_FAMILIES = {"topk": topk, "cumsum": cumsum, "trilu": trilu, "depth_space": depth_space,
                 "shape_size": shape_size, "norm": norm, "conv_transpose": conv_transpose,
                 "einsum": einsum, "gather_nd": gather_nd,
                 "scatter_elements": scatter_elements, "one_hot": one_hot, "range": range_op}
