"""relay.nn ops: type relations and numpy references against independent naive computations."""

import numpy as np
import pytest

from minitvm import relay, tir
from minitvm.ir.op import Op, OpPattern
from minitvm.ir.type import TensorType, TupleType
from minitvm.relay.op.nn import attrs as nn_attrs
from minitvm.topi.reference.utils import np_from_primal, np_to_primal

RNG = np.random.default_rng(0)


def _rand(shape, dtype="float32"):
    if dtype.startswith("int"):
        return RNG.integers(-4, 5, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def infer(call, *arg_types):
    """The output type of ``call`` from its op's type relation."""
    return Op.get(call.op.name).get_attr("FTypeRelation")(list(arg_types), call.attrs)


def evaluate(call, *arrays):
    """Type-check ``call`` on the arrays' types, run its numpy reference, check the result type."""
    types = [TensorType(a.shape, str(a.dtype)) for a in arrays]
    out_type = infer(call, *types)
    out = Op.get(call.op.name).get_attr("FNumpy")(call.attrs, list(arrays), out_type)
    if isinstance(out_type, TensorType):
        assert out.shape == out_type.concrete_shape
        assert str(out.dtype) == out_type.dtype
    return out


def _vars(*shapes, dtype="float32"):
    return [relay.var(f"v{i}", shape=s, dtype=dtype) for i, s in enumerate(shapes)]


# --------------------------------------------------------------------------- conv2d
def naive_conv2d_nchw(x, w, strides, pad, dilation, groups):
    """Direct loop reference on tiny shapes (NCHW data, OIHW weight, pad = t, l, b, r)."""
    n, c, h, wd = x.shape
    o, i, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    oh = (h + pad[0] + pad[2] - (kh - 1) * dilation[0] - 1) // strides[0] + 1
    ow = (wd + pad[1] + pad[3] - (kw - 1) * dilation[1] - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for b in range(n):
        for oc in range(o):
            g = oc // og
            for y in range(oh):
                for x_ in range(ow):
                    acc = 0.0
                    for ic in range(i):
                        for ky in range(kh):
                            for kx in range(kw):
                                acc += xp[b, g * i + ic, y * strides[0] + ky * dilation[0],
                                          x_ * strides[1] + kx * dilation[1]] * w[oc, ic, ky, kx]
                    out[b, oc, y, x_] = acc
    return out


CONV_CASES = [
    # (N, C, H, W), (O, C/g, KH, KW), kwargs
    ((1, 3, 7, 7), (4, 3, 3, 3), {}),
    ((2, 4, 8, 6), (6, 2, 3, 2), {"groups": 2, "strides": (2, 1)}),
    ((1, 4, 9, 9), (4, 1, 3, 3), {"groups": 4, "padding": 1}),  # depthwise
    ((1, 2, 9, 8), (3, 2, 3, 3), {"dilation": (2, 1), "padding": (1, 2)}),
    ((1, 2, 7, 7), (2, 2, 2, 3), {"padding": (0, 1, 2, 3), "strides": 2}),  # asymmetric
    ((1, 3, 5, 5), (5, 3, 1, 1), {"strides": (2, 2)}),
    ((1, 3, 6, 6), (6, 1, 3, 3), {"groups": 3, "strides": 2}),  # depthwise, multiplier 2
]


@pytest.mark.parametrize("dshape,wshape,kw", CONV_CASES)
def test_conv2d_nchw_matches_naive(dshape, wshape, kw):
    x, w = _rand(dshape), _rand(wshape)
    call = relay.nn.conv2d(*_vars(dshape, wshape), **kw)
    out = evaluate(call, x, w)
    a = call.attrs
    ref = naive_conv2d_nchw(x, w, a.strides, a.padding, a.dilation, a.groups)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "data_layout,kernel_layout,out_layout,groups",
    [
        ("NHWC", "HWIO", "", 1),
        ("NHWC", "HWOI", "", 16),  # depthwise in NHWC
        ("NCHW16c", "OIHW", "", 1),
        ("NCHW4c", "OIHW4i8o", "NCHW8c", 1),
        ("NCHW", "OIHW", "NHWC", 2),
    ],
)
def test_conv2d_layouts(data_layout, kernel_layout, out_layout, groups):
    x, w = _rand((1, 16, 6, 5)), _rand((16, 16 // groups, 3, 3))
    xl = np_from_primal(x, "NCHW", data_layout)
    wl = np_from_primal(w, "OIHW", kernel_layout)
    call = relay.nn.conv2d(*_vars(xl.shape, wl.shape), padding=1, groups=groups,
                           data_layout=data_layout, kernel_layout=kernel_layout,
                           out_layout=out_layout)
    out = evaluate(call, xl, wl)
    ref = naive_conv2d_nchw(x, w, (1, 1), (1, 1, 1, 1), (1, 1), groups)
    np.testing.assert_allclose(np_to_primal(out, out_layout or data_layout, "NCHW"), ref,
                               rtol=1e-4, atol=1e-4)


def test_conv2d_seed_types_and_printing_fields():
    x = relay.var("x", relay.TensorType((1, 64, 56, 56), "float32"))
    weight = relay.var("weight", shape=(64, 64, 3, 3))
    conv = relay.nn.conv2d(x, weight)
    assert conv.attrs.non_default_items() == [("padding", (0, 0, 0, 0))]
    assert infer(conv, x.type_annotation, weight.type_annotation) == TensorType(
        (1, 64, 54, 54), "float32")
    # the seed's AlterOpLayout hook: rebuild the call from dict(attrs)
    new_attrs = dict(conv.attrs)
    new_attrs["data_layout"] = "NCHW16c"
    conv16 = relay.nn.conv2d(x, weight, **new_attrs)
    assert conv16.attrs.non_default_items() == [("padding", (0, 0, 0, 0)),
                                                ("data_layout", "NCHW16c")]
    assert infer(conv16, TensorType((1, 4, 56, 56, 16)), weight.type_annotation) == TensorType(
        (1, 4, 54, 54, 16), "float32")


def test_conv2d_wrapper_normalizes_arguments():
    x, w = _vars((1, 3, 8, 8), (4, 3, 3, 3))
    a = relay.nn.conv2d(x, w, strides=2, padding=(1, 2), dilation=1, kernel_size=3,
                        channels=4).attrs
    assert a.strides == (2, 2) and a.padding == (1, 2, 1, 2) and a.dilation == (1, 1)
    assert a.kernel_size == (3, 3) and a.channels == 4
    assert type(a).__name__ == "Conv2DAttrs" and a.type_key == "relay.attrs.Conv2DAttrs"
    assert [n for n, _ in a.list_field_info()] == [
        "strides", "padding", "dilation", "groups", "channels", "kernel_size", "data_layout",
        "kernel_layout", "out_layout", "out_dtype"]
    with pytest.raises(ValueError, match="padding can only be 2 or 4"):
        relay.nn.conv2d(x, w, padding=(1, 2, 3))


def test_conv2d_type_errors():
    x, w = _vars((1, 3, 8, 8), (4, 4, 3, 3))
    with pytest.raises(TypeError, match=r"input channels 3 \(data_layout NCHW\) do not match "
                                        r"weight in-channels 4 \* groups 1"):
        infer(relay.nn.conv2d(x, w), x.type_annotation, w.type_annotation)
    x2, w2 = _vars((1, 4, 8, 8), (5, 2, 3, 3))
    with pytest.raises(TypeError, match="out-channels 5 are not divisible by groups 2"):
        infer(relay.nn.conv2d(x2, w2, groups=2), x2.type_annotation, w2.type_annotation)
    x3, w3 = _vars((1, 4, 2, 2), (4, 4, 3, 3))
    with pytest.raises(TypeError, match="output height is 0"):
        infer(relay.nn.conv2d(x3, w3), x3.type_annotation, w3.type_annotation)
    with pytest.raises(TypeError, match="channels=8 does not match"):
        infer(relay.nn.conv2d(x2, w2, channels=8), x2.type_annotation,
              TensorType((4, 4, 3, 3)))
    with pytest.raises(TypeError, match="data has rank 3"):
        infer(relay.nn.conv2d(x, w), TensorType((3, 8, 8)), w.type_annotation)
    with pytest.raises(TypeError, match="not divisible by the factor 16"):
        infer(relay.nn.conv2d(x, w, out_layout="NCHW16c"), TensorType((1, 4, 8, 8)),
              w.type_annotation)


@pytest.mark.parametrize("make, msg", [
    (lambda x, w: relay.nn.conv2d(x, w, strides=(-1, 1)), r"nn.conv2d: strides must be positive"),
    (lambda x, w: relay.nn.conv2d(x, w, dilation=(1, 0)), r"nn.conv2d: dilation must be posit"),
    (lambda x, w: relay.nn.conv2d(x, w, padding=(-5, 1)), r"padding must be non-negative, got "
                                                          r"\[-5, 1, -5, 1\]"),
    (lambda x, w: relay.nn.conv2d_transpose(x, w, strides=(0, 1)), "strides must be positive"),
    (lambda x, w: relay.nn.max_pool2d(x, strides=(0, 1)),
     r"nn.max_pool2d: strides must be positive, got \[0, 1\]"),
    (lambda x, w: relay.nn.avg_pool2d(x, pool_size=(2, -2)), "pool_size must be positive"),
    (lambda x, w: relay.nn.max_pool2d(x, strides=(1, 1, 1)), "strides must have 2 values"),
])
def test_window_attrs_are_checked(make, msg):
    x, w = _vars((1, 4, 8, 8), (4, 4, 3, 3))
    with pytest.raises(ValueError, match=msg):  # was a ZeroDivisionError or a silent wrong shape
        call = make(x, w)
        infer(call, *[a.type_annotation for a in call.args])


def test_conv2d_symbolic_and_any_dims():
    n = tir.Var("n", "int32")
    x, w = _vars((1, 3, 8, 8), (4, 3, 3, 3))
    out = infer(relay.nn.conv2d(x, w, padding=1), TensorType((n, 3, relay.Any(), 8)),
                w.type_annotation)
    assert out.shape[0] is n and isinstance(out.shape[2], tir.Any) and out.shape[1:4:2] == (4, 8)


def test_conv2d_int8_out_dtype():
    x, w = _rand((1, 3, 5, 5), "int8"), _rand((2, 3, 3, 3), "int8")
    call = relay.nn.conv2d(*_vars(x.shape, w.shape, dtype="int8"), out_dtype="int32")
    out = evaluate(call, x, w)
    np.testing.assert_array_equal(out, naive_conv2d_nchw(x, w, (1, 1), (0,) * 4, (1, 1), 1))


def test_conv1d_and_nchwc_contrib():
    x, w = _rand((2, 3, 10)), _rand((4, 3, 3))
    out = evaluate(relay.nn.conv1d(*_vars(x.shape, w.shape), padding=1, strides=2), x, w)
    ref = naive_conv2d_nchw(x[:, :, None], w[:, :, None], (1, 2), (0, 1, 0, 1), (1, 1), 1)
    np.testing.assert_allclose(out, ref[:, :, 0], rtol=1e-4, atol=1e-4)
    x, w = _rand((1, 8, 5, 5)), _rand((8, 8, 3, 3))
    xl, wl = np_from_primal(x, "NCHW", "NCHW4c"), np_from_primal(w, "OIHW", "OIHW4i4o")
    call = relay.nn.contrib_conv2d_nchwc(*_vars(xl.shape, wl.shape), padding=1,
                                         data_layout="NCHW4c", kernel_layout="OIHW4i4o")
    assert call.op.name == "nn.contrib_conv2d_NCHWc"
    out = evaluate(call, xl, wl)
    ref = naive_conv2d_nchw(x, w, (1, 1), (1,) * 4, (1, 1), 1)
    np.testing.assert_allclose(np_to_primal(out, "NCHW4c", "NCHW"), ref, rtol=1e-4, atol=1e-4)


def naive_conv2d_transpose(x, w, strides, pad, dilation, output_padding, groups):
    """Scatter each input pixel times the kernel into the output (IOHW weight)."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    full_h = (h - 1) * strides[0] + (kh - 1) * dilation[0] + 1 + output_padding[0]
    full_w = (wd - 1) * strides[1] + (kw - 1) * dilation[1] + 1 + output_padding[1]
    full = np.zeros((n, og * groups, full_h, full_w))
    cg = c // groups
    for b in range(n):
        for ic in range(c):
            g = ic // cg
            for y in range(h):
                for x_ in range(wd):
                    for ky in range(kh):
                        for kx in range(kw):
                            full[b, g * og:(g + 1) * og, y * strides[0] + ky * dilation[0],
                                 x_ * strides[1] + kx * dilation[1]] += x[b, ic, y, x_] * w[
                                     ic, :, ky, kx]
    return full[:, :, pad[0]:full_h - pad[2], pad[1]:full_w - pad[3]]


@pytest.mark.parametrize("kw", [
    {}, {"strides": 2, "padding": 1, "output_padding": 1},
    {"strides": (2, 3), "dilation": 2, "padding": (1, 0, 0, 2), "groups": 2},
])
def test_conv2d_transpose_matches_naive(kw):
    groups = kw.get("groups", 1)
    x, w = _rand((1, 4, 4, 5)), _rand((4, 3, 3, 2))
    call = relay.nn.conv2d_transpose(*_vars(x.shape, w.shape), **kw)
    out = evaluate(call, x, w)
    a = call.attrs
    ref = naive_conv2d_transpose(x, w, a.strides, a.padding, a.dilation, a.output_padding, groups)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    assert call.attrs.kernel_layout == "IOHW"


# --------------------------------------------------------------------------- pooling
def naive_pool(x, k, s, pad, ceil_mode, kind, count_include_pad=False):
    n, c, h, w = x.shape
    def out_size(size, i):
        span = size + pad[i] + pad[i + 2] - k[i]
        return (span + s[i] - 1) // s[i] + 1 if ceil_mode else span // s[i] + 1
    oh, ow = out_size(h, 0), out_size(w, 1)
    out = np.zeros((n, c, oh, ow))
    for y in range(oh):
        for x_ in range(ow):
            y0, x0 = y * s[0] - pad[0], x_ * s[1] - pad[1]
            y1, x1 = y0 + k[0], x0 + k[1]
            win = x[:, :, max(y0, 0):min(y1, h), max(x0, 0):min(x1, w)]
            if kind == "max":
                out[:, :, y, x_] = win.max(axis=(2, 3))
            else:
                if count_include_pad:
                    cnt = (min(y1, h + pad[2]) - y0) * (min(x1, w + pad[3]) - x0)
                else:
                    cnt = win.shape[2] * win.shape[3]
                out[:, :, y, x_] = win.sum(axis=(2, 3)) / cnt
    return out


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("kw", [
    {"pool_size": 2, "strides": 2},
    {"pool_size": (3, 3), "strides": (2, 2), "padding": 1},
    {"pool_size": (3, 2), "strides": (2, 1), "padding": (0, 1, 1, 0), "ceil_mode": True},
    {"pool_size": 3, "strides": 2, "padding": 1, "count_include_pad": True},
])
def test_pool2d_matches_naive(kind, kw):
    if kind == "max":
        kw = {k: v for k, v in kw.items() if k != "count_include_pad"}
    x = _rand((2, 3, 7, 8))
    fn = relay.nn.max_pool2d if kind == "max" else relay.nn.avg_pool2d
    call = fn(*_vars(x.shape), **kw)
    out = evaluate(call, x)
    a = call.attrs
    ref = naive_pool(x, a.pool_size, a.strides, a.padding, a.ceil_mode, kind,
                     kw.get("count_include_pad", False))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    # the same pooling in NHWC
    xl = x.transpose(0, 2, 3, 1)
    out_nhwc = evaluate(fn(*_vars(xl.shape), layout="NHWC", **kw), xl)
    np.testing.assert_allclose(out_nhwc.transpose(0, 3, 1, 2), ref, rtol=1e-5, atol=1e-5)


def test_pool_printing_and_nchwc():
    x = _vars((1, 2, 6, 6, 16))[0]
    call = relay.nn.max_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1),
                               layout="NCHW16c")
    assert call.attrs.non_default_items() == [
        ("pool_size", (3, 3)), ("strides", (2, 2)), ("padding", (1, 1, 1, 1)),
        ("layout", "NCHW16c")]
    assert infer(call, x.type_annotation) == TensorType((1, 2, 3, 3, 16))
    with pytest.raises(ValueError, match="splits the pooled axis H"):
        infer(relay.nn.max_pool2d(x, layout="NCHW4h"), x.type_annotation)


@pytest.mark.parametrize("output_size", [None, 1, (2, 3), (3, 2)])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_adaptive_and_global_pool(output_size, kind):
    x = _rand((1, 2, 6, 7))
    fn = relay.nn.adaptive_max_pool2d if kind == "max" else relay.nn.adaptive_avg_pool2d
    out = evaluate(fn(*_vars(x.shape), output_size=output_size), x)
    oh, ow = {None: (6, 7), 1: (1, 1)}.get(output_size, output_size)
    reduce = np.max if kind == "max" else np.mean
    ref = np.empty((1, 2, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, h1 = i * 6 // oh, -(-(i + 1) * 6 // oh)
            w0, w1 = j * 7 // ow, -(-(j + 1) * 7 // ow)
            ref[:, :, i, j] = reduce(x[:, :, h0:h1, w0:w1], axis=(2, 3))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    gfn = relay.nn.global_max_pool2d if kind == "max" else relay.nn.global_avg_pool2d
    xl = x.transpose(0, 2, 3, 1)
    g = evaluate(gfn(*_vars(xl.shape), layout="NHWC"), xl)
    np.testing.assert_allclose(g[:, 0, 0, :], reduce(x, axis=(2, 3)), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- matrix products
def test_dense_matmul_batch_matmul():
    x, w = _rand((3, 5)), _rand((4, 5))
    call = relay.nn.dense(*_vars(x.shape, w.shape))
    assert call.attrs.non_default_items() == [("units", None)]
    np.testing.assert_allclose(evaluate(call, x, w), x @ w.T, rtol=1e-5)
    x3 = _rand((2, 3, 5))
    np.testing.assert_allclose(evaluate(relay.nn.dense(*_vars(x3.shape, w.shape)), x3, w),
                               x3 @ w.T, rtol=1e-5)
    assert relay.nn.matmul(*_vars(x.shape, w.shape), transpose_b=True).op.name == "nn.dense"
    a, b = _rand((5, 3)), _rand((5, 4))
    mm = relay.nn.matmul(*_vars(a.shape, b.shape), transpose_a=True)
    assert mm.op.name == "nn.matmul"
    np.testing.assert_allclose(evaluate(mm, a, b), a.T @ b, rtol=1e-5)
    ba, bb = _rand((1, 3, 5)), _rand((4, 6, 5))
    bm = relay.nn.batch_matmul(*_vars(ba.shape, bb.shape))
    assert bm.attrs.non_default_items() == [("transpose_b", True)]
    np.testing.assert_allclose(evaluate(bm, ba, bb), ba @ bb.transpose(0, 2, 1), rtol=1e-5)
    bm2 = relay.nn.batch_matmul(*_vars((4, 5, 3), (4, 5, 6)), transpose_a=True,
                                transpose_b=False)
    ta, tb = _rand((4, 5, 3)), _rand((4, 5, 6))
    np.testing.assert_allclose(evaluate(bm2, ta, tb), ta.transpose(0, 2, 1) @ tb, rtol=1e-5)


def test_matmul_type_errors():
    x, w = _vars((3, 5), (4, 6))
    with pytest.raises(TypeError, match=r"nn.dense: the reduction dim .* \(5\) does not match"):
        infer(relay.nn.dense(x, w), x.type_annotation, w.type_annotation)
    with pytest.raises(TypeError, match="units=7 does not match"):
        infer(relay.nn.dense(x, w, units=7), x.type_annotation, TensorType((4, 5)))
    a, b = _vars((2, 3, 5), (3, 4, 5))
    with pytest.raises(TypeError, match="batch dims 2 and 3 do not broadcast"):
        infer(relay.nn.batch_matmul(a, b), a.type_annotation, b.type_annotation)


@pytest.mark.parametrize("block", [None, (2, 3)])
@pytest.mark.parametrize("sparse_lhs", [False, True])
def test_sparse_dense_csr_and_bsr(block, sparse_lhs):
    dense = _rand((3, 6))
    rows = 4
    if block is None:
        mat = _rand((rows, 6)) * (RNG.random((rows, 6)) > 0.5)
        indptr = np.concatenate([[0], np.cumsum((mat != 0).sum(1))]).astype("int32")
        indices = np.nonzero(mat)[1].astype("int32")
        values = mat[mat != 0].astype("float32")
    else:
        br, bc = block
        nbr, nbc = rows // br, 6 // bc
        keep = np.array([[1, 0], [1, 1]], dtype=bool)
        blocks = _rand((nbr, nbc, br, bc)) * keep[:, :, None, None]
        mat = blocks.transpose(0, 2, 1, 3).reshape(rows, 6)
        indptr = np.concatenate([[0], np.cumsum(keep.sum(1))]).astype("int32")
        indices = np.nonzero(keep)[1].astype("int32")
        values = blocks[keep]
    sv = _vars(dense.shape, values.shape)
    ind, ptr = _vars(indices.shape, indptr.shape, dtype="int32")
    call = relay.nn.sparse_dense(sv[0], (sv[1], ind, ptr), sparse_lhs=sparse_lhs)
    out = evaluate(call, dense, values, indices, indptr)
    ref = mat @ dense.T if sparse_lhs else dense @ mat.T
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- norms, activations
def test_batch_norm_tuple_type_and_values():
    x = _rand((2, 3, 4, 4))
    gamma, beta, mean = _rand((3,)), _rand((3,)), _rand((3,))
    var = np.abs(_rand((3,))) + 0.5
    vs = _vars(x.shape, (3,), (3,), (3,), (3,))
    bn = relay.nn.batch_norm(*vs)
    assert isinstance(bn, relay.TupleWrapper) and len(bn) == 3
    assert bn[0].index == 0 and bn[0].tuple_value is bn.astuple()
    call = bn.astuple()
    assert infer(call, *[v.type_annotation for v in vs]) == TupleType(
        [TensorType(x.shape), TensorType((3,)), TensorType((3,))])
    out, m, v = Op.get("nn.batch_norm").get_attr("FNumpy")(
        call.attrs, [x, gamma, beta, mean, var], None)
    c = (slice(None), None, None)
    ref = (x - mean[c]) / np.sqrt(var[c] + 1e-5) * gamma[c] + beta[c]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(m, mean)
    with pytest.raises(TypeError, match=r"nn.batch_norm: beta must have shape \(3,\)"):
        infer(call, TensorType(x.shape), TensorType((3,)), TensorType((4,)), TensorType((3,)),
              TensorType((3,)))


@pytest.mark.parametrize("op,kw", [
    ("layer_norm", {}), ("layer_norm", {"axis": 1, "center": False}),
    ("instance_norm", {}), ("group_norm", {"num_groups": 2}),
])
def test_norms(op, kw):
    x = _rand((2, 4, 3, 5))
    axis = kw.get("axis", -1 if op == "layer_norm" else 1)
    c = x.shape[axis]
    gamma, beta = _rand((c,)), _rand((c,))
    call = getattr(relay.nn, op)(*_vars(x.shape, (c,), (c,)), **kw)
    out = evaluate(call, x, gamma, beta)
    shape = [1] * 4
    shape[axis] = c
    if op == "layer_norm":
        axes, xr = (axis,), x
    elif op == "instance_norm":
        axes, xr = (2, 3), x
    else:
        axes, xr = (2, 3, 4), x.reshape(2, 2, 2, 3, 5)
    mu = xr.mean(axis=axes, keepdims=True)
    sd = np.sqrt(xr.var(axis=axes, keepdims=True) + 1e-5)
    ref = ((xr - mu) / sd).reshape(x.shape) * gamma.reshape(shape)
    if kw.get("center", True):
        ref = ref + beta.reshape(shape)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_group_norm_channel_error():
    x, g, b = _vars((1, 6, 2, 2), (6,), (6,))
    with pytest.raises(TypeError, match="channels 6 are not divisible by num_groups 4"):
        infer(relay.nn.group_norm(x, g, b, num_groups=4), *[v.type_annotation for v in (x, g, b)])


def test_activations_softmax_bias_add():
    x = _rand((2, 3, 4))
    v = _vars(x.shape)[0]
    np.testing.assert_array_equal(evaluate(relay.nn.relu(v), x), np.maximum(x, 0))
    np.testing.assert_allclose(evaluate(relay.nn.leaky_relu(v, 0.2), x),
                               np.where(x > 0, x, 0.2 * x), rtol=1e-6)
    alpha = _rand((3,))
    pr = relay.nn.prelu(v, _vars((3,))[0])
    np.testing.assert_allclose(evaluate(pr, x, alpha),
                               np.where(x > 0, x, x * alpha[None, :, None]), rtol=1e-6)
    for axis in (-1, 1):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        sm = e / e.sum(axis=axis, keepdims=True)
        np.testing.assert_allclose(evaluate(relay.nn.softmax(v, axis), x), sm, rtol=1e-5)
        np.testing.assert_allclose(evaluate(relay.nn.log_softmax(v, axis), x), np.log(sm),
                                   rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="nn.softmax: axis 3 is out of range"):
        infer(relay.nn.softmax(v, 3), v.type_annotation)
    b = _rand((4,))
    ba = relay.nn.bias_add(v, _vars((4,))[0], axis=-1)
    np.testing.assert_allclose(evaluate(ba, x, b), x + b, rtol=1e-6)
    with pytest.raises(TypeError, match=r"nn.bias_add: expected a 1-D tensor of shape \(3,\)"):
        infer(relay.nn.bias_add(v, v), v.type_annotation, TensorType((4,)))


def test_dropout_returns_first_field():
    v = _vars((2, 3))[0]
    d = relay.nn.dropout(v, 0.3)
    assert isinstance(d, relay.TupleGetItem) and d.index == 0
    raw = d.tuple_value
    assert raw.op.name == "nn.dropout" and raw.attrs.rate == 0.3
    assert infer(raw, v.type_annotation) == TupleType([TensorType((2, 3))] * 2)
    x = _rand((2, 3))
    out, mask = Op.get("nn.dropout").get_attr("FNumpy")(raw.attrs, [x], None)
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(mask, np.ones_like(x))


# --------------------------------------------------------------------------- shape ops
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad(mode):
    x = _rand((2, 3, 4))
    call = relay.nn.pad(_vars(x.shape)[0], ((0, 0), (1, 2), (2, 1)), pad_value=1.5,
                        pad_mode=mode)
    assert call.attrs.pad_width == ((0, 0), (1, 2), (2, 1))
    value = call.args[1].data.numpy()
    out = evaluate(call, x, value)
    kw = {"constant_values": 1.5} if mode == "constant" else {}
    np.testing.assert_array_equal(out, np.pad(x, ((0, 0), (1, 2), (2, 1)), mode=mode, **kw))
    with pytest.raises(TypeError, match="pad_width has 3 entries but the data has rank 2"):
        infer(call, TensorType((2, 3)), TensorType(()))


def test_batch_flatten_and_upsampling():
    x = _rand((2, 3, 4, 5))
    v = _vars(x.shape)[0]
    np.testing.assert_array_equal(evaluate(relay.nn.batch_flatten(v), x), x.reshape(2, 60))
    n = tir.Var("n", "int32")
    assert infer(relay.nn.batch_flatten(v), TensorType((n, 3, 4, 5))).shape[0] is n
    up = relay.nn.upsampling(v, scale_h=2, scale_w=3)
    assert up.attrs.non_default_items() == [("scale_h", 2.0), ("scale_w", 3.0)]
    out = evaluate(up, x)
    np.testing.assert_array_equal(out, x.repeat(2, axis=2).repeat(3, axis=3))
    bil = evaluate(relay.nn.upsampling(v, 2, 2, method="bilinear", align_corners=True), x)
    assert bil.shape == (2, 3, 8, 10)
    np.testing.assert_allclose(bil[:, :, ::7, ::9], x[:, :, ::3, ::4], rtol=1e-5)


# --------------------------------------------------------------------------- registry
NN_OPS = [
    "nn.conv1d", "nn.conv2d", "nn.contrib_conv2d_NCHWc", "nn.conv2d_transpose", "nn.dense",
    "nn.matmul", "nn.batch_matmul", "nn.sparse_dense", "nn.bias_add", "nn.relu",
    "nn.leaky_relu", "nn.prelu", "nn.softmax", "nn.fast_softmax", "nn.log_softmax",
    "nn.dropout", "nn.batch_norm", "nn.layer_norm", "nn.group_norm", "nn.instance_norm",
    "nn.lrn", "nn.l2_normalize", "nn.max_pool1d", "nn.avg_pool1d", "nn.max_pool2d",
    "nn.avg_pool2d", "nn.global_max_pool2d", "nn.global_avg_pool2d", "nn.adaptive_max_pool2d",
    "nn.adaptive_avg_pool2d", "nn.pad", "nn.batch_flatten", "nn.upsampling",
]


def test_registry_every_nn_op_is_complete():
    registered = [n for n in Op.list_op_names() if n.startswith("nn.")]
    assert set(NN_OPS) <= set(registered)
    missing = [(n, k) for n in registered for k in ("FTypeRelation", "FNumpy", "TOpPattern")
               if not Op.get(n).has_attr(k)]
    assert missing == []


@pytest.mark.parametrize("name,pattern", [
    ("nn.conv2d", OpPattern.OUT_ELEMWISE_FUSABLE), ("nn.dense", OpPattern.OUT_ELEMWISE_FUSABLE),
    ("nn.max_pool2d", OpPattern.OUT_ELEMWISE_FUSABLE), ("nn.softmax",
                                                        OpPattern.OUT_ELEMWISE_FUSABLE),
    ("nn.batch_norm", OpPattern.OUT_ELEMWISE_FUSABLE), ("nn.bias_add", OpPattern.BROADCAST),
    ("nn.relu", OpPattern.ELEMWISE), ("nn.pad", OpPattern.INJECTIVE),
    ("nn.batch_flatten", OpPattern.INJECTIVE), ("nn.dropout", OpPattern.OPAQUE),
    ("nn.layer_norm", OpPattern.OPAQUE), ("nn.upsampling", OpPattern.INJECTIVE),
])
def test_op_patterns_follow_tvm(name, pattern):
    assert Op.get(name).get_attr("TOpPattern") == pattern


def test_attrs_classes_have_tvm_defaults():
    assert nn_attrs.MaxPool2DAttrs().list_field_info()[:4] == [
        ("pool_size", nn_attrs.REQUIRED), ("strides", (1, 1)), ("dilation", (1, 1)),
        ("padding", (0, 0))]
    assert nn_attrs.BatchNormAttrs().items() == [("axis", 1), ("epsilon", 1e-5),
                                                 ("center", True), ("scale", True)]
    assert nn_attrs.LayerNormAttrs().axis == -1 and nn_attrs.SoftmaxAttrs().axis == -1
    assert nn_attrs.Conv2DTransposeAttrs().kernel_layout == "IOHW"
    assert nn_attrs.LeakyReluAttrs().alpha == 0.25


def test_small_cnn_through_infer_type_and_interpreter():
    import minitvm as tvm

    x = relay.var("x", shape=(1, 3, 8, 8))
    w, b, d = relay.var("w", shape=(4, 3, 3, 3)), relay.var("b", shape=(4,)), relay.var(
        "d", shape=(10, 64))
    g, be, m, v = (relay.var(n, shape=(4,)) for n in ("g", "be", "m", "v"))
    y = relay.nn.bias_add(relay.nn.conv2d(x, w, padding=1), b)
    y = relay.nn.relu(relay.nn.batch_norm(y, g, be, m, v)[0])
    y = relay.nn.dropout(relay.nn.max_pool2d(y, pool_size=2, strides=2))
    y = relay.nn.softmax(relay.nn.dense(relay.nn.batch_flatten(y), d))
    f = relay.Function([x, w, b, g, be, m, v, d], y)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    assert mod["main"].body.checked_type == TensorType((1, 10))
    args = [_rand(p.type_annotation.concrete_shape) for p in f.params]
    args[6] = np.abs(args[6]) + 0.5
    out = relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()
    xa, wa, ba, ga, bea, ma, va, da = args
    c = (None, slice(None), None, None)
    r = naive_conv2d_nchw(xa, wa, (1, 1), (1,) * 4, (1, 1), 1) + ba[c]
    r = np.maximum((r - ma[c]) / np.sqrt(va[c] + 1e-5) * ga[c] + bea[c], 0)
    r = r.reshape(1, 4, 4, 2, 4, 2).max(axis=(3, 5)).reshape(1, 64) @ da.T
    e = np.exp(r - r.max())
    np.testing.assert_allclose(out, e / e.sum(), rtol=1e-4, atol=1e-6)


def test_convert_op_layout_hooks():
    x, w = _vars((1, 8, 6, 6), (8, 1, 3, 3))
    conv = relay.nn.conv2d(x, w, groups=8, padding=1)
    hook = Op.get("nn.conv2d").get_attr("FTVMConvertOpLayout")
    tinfos = [x.type_annotation, w.type_annotation]
    nhwc = hook(conv.attrs, [x, w], tinfos, ["NHWC", "default"])
    assert (nhwc.attrs.data_layout, nhwc.attrs.kernel_layout) == ("NHWC", "HWOI")
    assert nhwc.attrs.padding == (1, 1, 1, 1) and nhwc.attrs.groups == 8
    nchw4c = hook(conv.attrs, [x, w], tinfos, ["NCHW4c", "OIHW4i4o"])
    assert nchw4c.op.name == "nn.contrib_conv2d_NCHWc"
    assert nchw4c.attrs.kernel_layout == "OIHW4i4o"
    with pytest.raises(ValueError, match="Layout HWCN is not yet supported"):
        hook(conv.attrs, [x, w], tinfos, ["HWCN", "default"])
    pool = relay.nn.max_pool2d(x, pool_size=2)
    moved = Op.get("nn.max_pool2d").get_attr("FTVMConvertOpLayout")(pool.attrs, [x], tinfos[:1],
                                                                    ["NHWC"])
    assert (moved.attrs.layout, moved.attrs.out_layout, moved.attrs.pool_size) == (
        "NHWC", "NHWC", (2, 2))
