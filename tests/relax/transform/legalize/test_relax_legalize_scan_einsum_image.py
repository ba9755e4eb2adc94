"""LegalizeOps of cumsum/cumprod, einsum, image.resize2d, nn.conv3d and the 1-D / 3-D pooling
ops, run on random inputs against numpy references (static and symbolic shapes)."""

import itertools

import numpy as np
import pytest
from legalize_util import check, rand, sym, tensor

from minitvm.relax import op as R
from minitvm.relax.op import image, nn


# ------------------------------------------------------------------ scans
@pytest.mark.parametrize("axis", [0, 1, -1, None])
@pytest.mark.parametrize("exclusive", [False, True])
def test_cumsum(axis, exclusive):
    x = rand((3, 4))
    ref = np.cumsum(x, axis)
    if exclusive:
        ref = ref - (x.reshape(-1) if axis is None else x)
    check(lambda a: R.cumsum(a, axis=axis, exclusive=exclusive), [tensor(x.shape)], [x], ref,
          rtol=1e-4, atol=1e-4)


def test_cumprod_and_dtype():
    x = rand((2, 5), lo=0.5, hi=1.5)
    check(lambda a: R.cumprod(a, axis=1), [tensor(x.shape)], [x], np.cumprod(x, 1), rtol=1e-4)
    xi = rand((6,), "int32", lo=-3, hi=3)
    check(lambda a: R.cumsum(a, dtype="int64"), [tensor(xi.shape, "int32")], [xi],
          np.cumsum(xi).astype("int64"))
    excl = np.concatenate([[1.0], np.cumprod(x[0])[:-1]]).astype("float32")
    check(lambda a: R.cumprod(a, axis=0, exclusive=True), [tensor((5,))], [x[0]], excl,
          rtol=1e-4)


def test_cumsum_symbolic():
    (n,) = sym("n")
    x = rand((5, 3))
    check(lambda a: R.cumsum(a, axis=0), [tensor([n, 3])], [x], np.cumsum(x, 0), rtol=1e-4,
          atol=1e-4)
    check(lambda a: R.cumsum(a), [tensor([n, 3])], [x], np.cumsum(x), rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ einsum
@pytest.mark.parametrize("subscripts,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("ij->ji", [(2, 3)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("...ij,...jk", [(2, 3, 4), (1, 4, 5)]),
    ("i,i->", [(6,), (6,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ijk->", [(2, 3, 2)]),
])
def test_einsum(subscripts, shapes):
    xs = [rand(s) for s in shapes]
    ref = np.einsum(subscripts, *xs).astype("float32")
    check(lambda *a: R.einsum(a, subscripts), [tensor(s) for s in shapes], xs, ref, rtol=1e-4,
          atol=1e-4)


def test_einsum_symbolic():
    (n,) = sym("n")
    a, b = rand((3, 4)), rand((4, 5))
    check(lambda x, y: R.einsum((x, y), "ij,jk->ki"), [tensor([n, 4]), tensor((4, 5))],
          [a, b], (a @ b).T, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ resize2d
def _src(o, n_in, n_out, mode, lo=0.0, hi=1.0):
    o = np.float32(o)
    scale = np.float32(n_in) / np.float32(n_out)
    if mode == "half_pixel":
        return (o + 0.5) * scale - 0.5
    if mode == "align_corners":
        return o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    if mode == "asymmetric":
        return o * scale
    if mode == "pytorch_half_pixel":
        return (o + 0.5) * scale - 0.5 if n_out > 1 else 0.0
    if mode == "tf_half_pixel_for_nn":
        return (o + 0.5) * scale
    assert mode == "tf_crop_and_resize"
    if n_out > 1:
        return lo * (n_in - 1) + o * (hi - lo) * (n_in - 1) / (n_out - 1)
    return 0.5 * (lo + hi) * (n_in - 1)


def _cubic(d, a):
    d = abs(d)
    if d <= 1:
        return ((a + 2) * d - (a + 3)) * d * d + 1
    return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a


def resize2d_ref(x, size, method, mode, rounding="round", alpha=-0.5, exclude=0, extrap=0.0,
                 roi=(0.0, 0.0, 0.0, 0.0)):
    """Resize of an NCHW array, one output pixel at a time (ONNX Resize's definition)."""
    n, c, h, w = x.shape
    oh, ow = size
    out = np.zeros((n, c, oh, ow), "float64")
    rnd = {"round": np.round, "floor": np.floor, "ceil": np.ceil,
           "round_prefer_floor": lambda v: np.ceil(v - 0.5),
           "round_prefer_ceil": lambda v: np.floor(v + 0.5)}[rounding]
    for y, xx in itertools.product(range(oh), range(ow)):
        cy = _src(y, h, oh, mode, roi[0], roi[2])
        cx = _src(xx, w, ow, mode, roi[1], roi[3])
        if method == "nearest_neighbor":
            iy = min(max(int(rnd(cy)), 0), h - 1)
            ix = min(max(int(rnd(cx)), 0), w - 1)
            v = x[:, :, iy, ix]
        else:
            y0, x0 = int(np.floor(cy)), int(np.floor(cx))
            ty, tx = cy - y0, cx - x0
            if method == "linear":
                taps = [(0, 1 - ty), (1, ty)], [(0, 1 - tx), (1, tx)]
            else:
                def weights(t, base, size):
                    ws = [(k, _cubic(t - k, alpha)) for k in (-1, 0, 1, 2)]
                    if exclude:
                        ws = [(k, wt if 0 <= base + k < size else 0.0) for k, wt in ws]
                        s = sum(wt for _, wt in ws)
                        ws = [(k, wt / s) for k, wt in ws]
                    return ws
                taps = weights(ty, y0, h), weights(tx, x0, w)
            v = 0.0
            for (dy, wy), (dx, wx) in itertools.product(*taps):
                iy = min(max(y0 + dy, 0), h - 1)
                ix = min(max(x0 + dx, 0), w - 1)
                v = v + x[:, :, iy, ix] * wy * wx
        if mode == "tf_crop_and_resize" and not (0 <= cy <= h - 1 and 0 <= cx <= w - 1):
            v = extrap
        out[:, :, y, xx] = v
    return out.astype(x.dtype)


@pytest.mark.parametrize("method", ["nearest_neighbor", "linear", "cubic"])
@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric",
                                  "pytorch_half_pixel"])
def test_resize2d(method, mode):
    x = rand((1, 2, 5, 4))
    for size in [(8, 7), (3, 2)]:
        ref = resize2d_ref(x, size, method, mode)
        check(lambda a, s=size: image.resize2d(a, s, method=method,
                                               coordinate_transformation_mode=mode),
              [tensor(x.shape)], [x], ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rounding", ["floor", "ceil", "round_prefer_floor",
                                      "round_prefer_ceil"])
def test_resize2d_nearest_rounding(rounding):
    x = rand((1, 1, 4, 6))
    ref = resize2d_ref(x, (7, 9), "nearest_neighbor", "tf_half_pixel_for_nn", rounding)
    check(lambda a: image.resize2d(a, (7, 9), method="nearest_neighbor",
                                   coordinate_transformation_mode="tf_half_pixel_for_nn",
                                   rounding_method=rounding),
          [tensor(x.shape)], [x], ref)


def test_resize2d_cubic_exclude_crop_nhwc_symbolic():
    x = rand((2, 3, 6, 5))
    ref = resize2d_ref(x, (4, 7), "cubic", "half_pixel", alpha=-0.75, exclude=1)
    check(lambda a: image.resize2d(a, (4, 7), method="cubic", cubic_alpha=-0.75,
                                   cubic_exclude=1), [tensor(x.shape)], [x], ref,
          rtol=1e-4, atol=1e-4)
    roi = (0.1, 0.2, 1.2, 0.9)
    ref = resize2d_ref(x, (5, 4), "linear", "tf_crop_and_resize", extrap=-7.0, roi=roi)
    check(lambda a: image.resize2d(a, (5, 4), roi=roi,
                                   coordinate_transformation_mode="tf_crop_and_resize",
                                   extrapolation_value=-7.0),
          [tensor(x.shape)], [x], ref, rtol=1e-4, atol=1e-4)
    nhwc = x.transpose(0, 2, 3, 1).copy()
    ref = resize2d_ref(x, (9, 3), "linear", "half_pixel").transpose(0, 2, 3, 1)
    n, h = sym("n", "h")
    check(lambda a: image.resize2d(a, (9, 3), layout="NHWC"), [tensor([n, h, 5, 3])], [nhwc],
          ref, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ conv3d and N-d pooling
def conv3d_ref(x, w, stride, pad, dil, groups):
    pb, pa = pad[:3], pad[3:]
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(pb, pa)))
    n, c = x.shape[:2]
    o, cg, *k = w.shape
    out_sp = [(xp.shape[2 + q] - (k[q] - 1) * dil[q] - 1) // stride[q] + 1 for q in range(3)]
    out = np.zeros((n, o, *out_sp), "float64")
    og = o // groups
    for oc in range(o):
        g = oc // og
        for kd, kh, kw in itertools.product(*(range(v) for v in k)):
            sl = [slice(kk * dil[q], kk * dil[q] + stride[q] * (out_sp[q] - 1) + 1, stride[q])
                  for q, kk in enumerate((kd, kh, kw))]
            patch = xp[:, g * cg:(g + 1) * cg, sl[0], sl[1], sl[2]]
            out[:, oc] += np.einsum("ncdhw,c->ndhw", patch, w[oc, :, kd, kh, kw])
    return out.astype("float32")


@pytest.mark.parametrize("stride,pad,dil,groups", [
    ((1, 1, 1), (0, 0, 0, 0, 0, 0), (1, 1, 1), 1),
    ((2, 1, 1), (1, 0, 1, 0, 1, 1), (1, 2, 1), 2),
])
def test_conv3d(stride, pad, dil, groups):
    x, w = rand((1, 4, 5, 6, 5)), rand((4, 4 // groups, 2, 3, 2))
    check(lambda a, b: nn.conv3d(a, b, stride, pad, dil, groups),
          [tensor(x.shape), tensor(w.shape)], [x, w], conv3d_ref(x, w, stride, pad, dil, groups),
          rtol=1e-4, atol=1e-4)


def test_conv3d_ndhwc_symbolic_batch():
    x, w = rand((2, 3, 4, 5, 4)), rand((2, 3, 3, 3, 3))
    ref = conv3d_ref(x, w, (1, 1, 1), (1,) * 6, (1, 1, 1), 1)
    (n,) = sym("n")
    check(lambda a, b: nn.conv3d(a, b, padding=1, data_layout="NDHWC"),
          [tensor([n, 4, 5, 4, 3]), tensor(w.shape)], [x.transpose(0, 2, 3, 4, 1).copy(), w],
          ref.transpose(0, 2, 3, 4, 1), rtol=1e-4, atol=1e-4)


def pool_ref(x, kind, k, s, d, pad, include_pad, ceil_mode=False):
    """N-d pooling of an NC<spatial> array by enumerating each window's taps."""
    nd = x.ndim - 2
    sizes = x.shape[2:]
    outs = []
    for q in range(nd):
        num = sizes[q] + pad[q] + pad[q + nd] - d[q] * (k[q] - 1) - 1
        outs.append((num + (s[q] - 1 if ceil_mode else 0)) // s[q] + 1)
    out = np.zeros(x.shape[:2] + tuple(outs), "float64")
    for o in itertools.product(*(range(v) for v in outs)):
        vals, count = [], 0
        for t in itertools.product(*(range(v) for v in k)):
            pos = [o[q] * s[q] + t[q] * d[q] - pad[q] for q in range(nd)]
            if all(0 <= pos[q] < sizes[q] for q in range(nd)):
                vals.append(x[(slice(None), slice(None), *pos)])
                count += 1
        if kind == "max":
            out[(slice(None), slice(None), *o)] = np.max(vals, axis=0)
        else:
            div = int(np.prod(k)) if include_pad else count
            out[(slice(None), slice(None), *o)] = np.sum(vals, axis=0) / div
    return out.astype(x.dtype)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("include_pad", [False, True])
def test_pool1d(kind, include_pad):
    x = rand((2, 3, 11))
    op = nn.max_pool1d if kind == "max" else nn.avg_pool1d
    ref = pool_ref(x, kind, (3,), (2,), (1,), (1, 1), include_pad)
    check(lambda a: op(a, 3, 2, 1, count_include_pad=include_pad), [tensor(x.shape)], [x], ref,
          rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool3d(kind):
    x = rand((1, 2, 5, 6, 7))
    op = nn.max_pool3d if kind == "max" else nn.avg_pool3d
    ref = pool_ref(x, kind, (2, 3, 2), (2, 1, 2), (1, 1, 2), (1, 0, 1, 0, 1, 1), False)
    check(lambda a: op(a, (2, 3, 2), (2, 1, 2), (1, 0, 1, 0, 1, 1), (1, 1, 2)),
          [tensor(x.shape)], [x], ref, rtol=1e-4, atol=1e-4)
    ref = pool_ref(x, kind, (2, 2, 2), (2, 2, 2), (1, 1, 1), (0,) * 6, False, ceil_mode=True)
    (n,) = sym("n")
    check(lambda a: op(a, 2, 2, ceil_mode=True), [tensor([n, 2, 5, 6, 7])], [x], ref,
          rtol=1e-4, atol=1e-4)


def adaptive_ref(x, outs):
    nd = x.ndim - 2
    sizes = x.shape[2:]
    out = np.zeros(x.shape[:2] + tuple(outs), x.dtype)
    for o in itertools.product(*(range(v) for v in outs)):
        sl = [slice(o[q] * sizes[q] // outs[q], -(-((o[q] + 1) * sizes[q]) // outs[q]))
              for q in range(nd)]
        out[(slice(None), slice(None), *o)] = x[(slice(None), slice(None), *sl)].mean(
            axis=tuple(range(2, 2 + nd)))
    return out


def test_adaptive_avg_pool1d_3d():
    x = rand((2, 3, 10))
    check(lambda a: nn.adaptive_avg_pool1d(a, 4), [tensor(x.shape)], [x], adaptive_ref(x, (4,)),
          rtol=1e-5, atol=1e-5)
    x3 = rand((1, 2, 5, 7, 4))
    check(lambda a: nn.adaptive_avg_pool3d(a, (2, 3, 4)), [tensor(x3.shape)], [x3],
          adaptive_ref(x3, (2, 3, 4)), rtol=1e-5, atol=1e-5)
    (n,) = sym("n")
    check(lambda a: nn.adaptive_avg_pool3d(a, 1), [tensor([n, 2, 5, 7, 4])], [x3],
          adaptive_ref(x3, (1, 1, 1)), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ shape <-> tensor
def test_shape_tensor_conversions_lower_to_vm_builtins():
    import minitvm as tvm
    from minitvm import relax

    (n,) = sym("n")
    x = relax.Var("x", tensor([n, 3]))
    t = relax.Var("t", tensor((2,), "int64"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, t]):
        s = bb.emit(R.shape_to_tensor(R.shape_of(x)))
        sh = bb.emit(R.tensor_to_shape(t))
        bb.emit_func_output(relax.Tuple([s, sh]))
    after = relax.transform.LegalizeOps()(bb.get())
    text = after.script()
    # (the builder binds the nested shape_of first, as TVM's normalizer does)
    assert 'lv: R.Shape([n, 3]) = R.shape_of(x)' in text
    assert 'R.call_pure_packed("vm.builtin.shape_to_tensor", lv, sinfo_args=' in text
    assert 'R.call_pure_packed("vm.builtin.tensor_to_shape", t, sinfo_args=(R.Shape(ndim=2),))' \
        in text
    to_tensor = tvm.get_global_func("vm.builtin.shape_to_tensor")
    to_shape = tvm.get_global_func("vm.builtin.tensor_to_shape")
    np.testing.assert_array_equal(to_tensor(tvm.runtime.ShapeTuple([5, 3])), [5, 3])
    assert [int(d) for d in to_shape(np.array([4, 7]))] == [4, 7]
    with pytest.raises(ValueError, match="expects a 1-D tensor"):
        to_shape(np.zeros((2, 2), "int64"))
