"""nn.conv3d, nn.conv1d_transpose, nn.conv3d_transpose, nn.conv2d_backward_weight,
nn.deformable_conv2d, nn.correlation: type inference, numerics against loop definitions and
tvm.topi.testing, text round trip and relay.build."""

import numpy as np
import pytest
from relay_op_check import _type, run

import minitvm as tvm
from minitvm import relay
from minitvm.topi import testing as tt

RNG = np.random.default_rng(0)


def _naive_conv3d(x, w, stride, pad):
    n, c, *sz = x.shape
    o, ci, *k = w.shape
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pad, pad)] * 3)
    outs = [(s + 2 * pad - kk) // stride + 1 for s, kk in zip(sz, k)]
    out = np.zeros((n, o, *outs))
    for idx in np.ndindex(*outs):
        sl = tuple(slice(i * stride, i * stride + kk) for i, kk in zip(idx, k))
        out[(slice(None), slice(None)) + idx] = np.einsum("ncdhw,ocdhw->no",
                                                          xp[(slice(None), slice(None)) + sl], w)
    return out


def _naive_conv_transpose(x, w, stride, pad, opad):
    """Scatter-add definition: each input pixel adds weight * value into the output window."""
    n, c, *sz = x.shape
    _, o, *k = w.shape
    full = [(s - 1) * stride + kk + opad for s, kk in zip(sz, k)]
    out = np.zeros((n, o, *full))
    for idx in np.ndindex(*sz):
        sl = tuple(slice(i * stride, i * stride + kk) for i, kk in zip(idx, k))
        v = x[(slice(None), slice(None)) + idx]
        out[(slice(None), slice(None)) + sl] += np.tensordot(v, w, axes=([1], [0]))
    crop = tuple(slice(pad, f - pad + 0) for f in full)
    return out[(slice(None), slice(None)) + tuple(slice(pad, f - pad) for f in full)] \
        if crop else out


def test_conv3d_types_and_errors():
    t = _type(lambda x, w: relay.nn.conv3d(x, w, strides=2, padding=1), (1, 3, 8, 8, 8),
              (4, 3, 3, 3, 3))
    assert tuple(t.shape) == (1, 4, 4, 4, 4)
    t = _type(lambda x, w: relay.nn.conv3d(x, w, data_layout="NDHWC", kernel_layout="DHWIO"),
              (1, 5, 6, 7, 3), (3, 3, 3, 3, 8))
    assert tuple(t.shape) == (1, 3, 4, 5, 8)
    with pytest.raises(Exception, match="nn.conv3d: input channels 3"):
        _type(lambda x, w: relay.nn.conv3d(x, w), (1, 3, 4, 4, 4), (4, 2, 3, 3, 3))
    with pytest.raises(Exception, match="nn.conv3d.*output depth"):
        _type(lambda x, w: relay.nn.conv3d(x, w), (1, 3, 2, 4, 4), (4, 3, 3, 3, 3))


@pytest.mark.numpy_fallback("nn.conv3d: conv3d is lowered natively for NCDHW/OIDHW only")
def test_conv3d_numerics():
    x = RNG.standard_normal((1, 4, 5, 4, 6)).astype("float32")
    w = RNG.standard_normal((6, 2, 3, 2, 3)).astype("float32")
    got = run(lambda a, b: relay.nn.conv3d(a, b, padding=(1, 0, 1), groups=2), x, w)
    want = np.concatenate([tt.conv3d_ncdhw_python(x[:, :2], w[:3], 1, (1, 0, 1)),
                           tt.conv3d_ncdhw_python(x[:, 2:], w[3:], 1, (1, 0, 1))], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    w1 = RNG.standard_normal((3, 4, 2, 2, 2)).astype("float32")
    got = run(lambda a, b: relay.nn.conv3d(a, b, strides=2, padding=1), x, w1)
    np.testing.assert_allclose(got, _naive_conv3d(x, w1, 2, 1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tt.conv3d_ncdhw_python(x, w1, 2, 1), got, rtol=1e-5, atol=1e-5)
    # NDHWC data with DHWIO weights agrees with the NCDHW computation
    nd = x.transpose(0, 2, 3, 4, 1).copy()
    wd = w1.transpose(2, 3, 4, 1, 0).copy()
    got2 = run(lambda a, b: relay.nn.conv3d(a, b, strides=2, padding=1, data_layout="NDHWC",
                                            kernel_layout="DHWIO"), nd, wd)
    np.testing.assert_allclose(got2, got.transpose(0, 2, 3, 4, 1), rtol=1e-4, atol=1e-4)


def test_conv_transpose_1d_3d():
    x = RNG.standard_normal((2, 3, 5)).astype("float32")
    w = RNG.standard_normal((3, 4, 3)).astype("float32")
    t = _type(lambda a, b: relay.nn.conv1d_transpose(a, b, strides=2, padding=1,
                                                     output_padding=1), x.shape, w.shape)
    assert tuple(t.shape) == (2, 4, 10)
    got = run(lambda a, b: relay.nn.conv1d_transpose(a, b, strides=2, padding=1,
                                                     output_padding=1), x, w)
    np.testing.assert_allclose(got, _naive_conv_transpose(x, w, 2, 1, 1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(tt.conv1d_transpose_ncw_python(x, w, 2, 1, 1), got, rtol=1e-5,
                               atol=1e-5)
    x3 = RNG.standard_normal((1, 2, 3, 2, 3)).astype("float32")
    w3 = RNG.standard_normal((2, 3, 2, 3, 2)).astype("float32")
    got = run(lambda a, b: relay.nn.conv3d_transpose(a, b, strides=2, padding=1), x3, w3)
    assert got.shape == (1, 3, 4, 3, 4)
    np.testing.assert_allclose(got, _naive_conv_transpose(x3, w3, 2, 1, 0), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(tt.conv3d_transpose_ncdhw_python(x3, w3, 2, 1, 0), got,
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(Exception, match="nn.conv1d_transpose: input channels 3"):
        _type(lambda a, b: relay.nn.conv1d_transpose(a, b), (1, 3, 5), (2, 4, 3))
    with pytest.raises(Exception, match="nn.conv3d_transpose: output_padding"):
        _type(lambda a, b: relay.nn.conv3d_transpose(a, b, output_padding=1), x3.shape,
              w3.shape)


@pytest.mark.numpy_fallback("nn.conv2d_backward_weight has no native compute")
def test_conv2d_backward_weight():
    x = RNG.standard_normal((2, 4, 7, 6)).astype("float32")
    dy = RNG.standard_normal((2, 6, 4, 3)).astype("float32")
    build = lambda g, d: relay.nn.conv2d_backward_weight(  # noqa: E731
        g, d, strides=2, padding=1, groups=2, channels=6, kernel_size=(3, 3))
    assert tuple(_type(build, dy.shape, x.shape).shape) == (6, 2, 3, 3)
    got = run(build, dy, x)
    # d/dw of sum(conv2d(x, w) * dy) by finite structure: conv2d is linear in w, so the
    # gradient's entry k equals sum(conv2d(x, e_k) * dy)
    want = np.zeros_like(got)
    for k in np.ndindex(*want.shape):
        e = np.zeros(want.shape, "float32")
        e[k] = 1
        y = np.concatenate([tt.conv2d_nchw_python(x[:, :2], e[:3], 2, 1),
                            tt.conv2d_nchw_python(x[:, 2:], e[3:], 2, 1)], axis=1)
        want[k] = (y * dy).sum()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    with pytest.raises(Exception, match="nn.conv2d_backward_weight: grad height"):
        _type(build, (2, 6, 5, 3), x.shape)


@pytest.mark.numpy_fallback("nn.deformable_conv2d has no native compute")
def test_deformable_conv2d():
    x = RNG.standard_normal((1, 4, 6, 6)).astype("float32")
    w = RNG.standard_normal((3, 4, 3, 3)).astype("float32")
    off0 = np.zeros((1, 18, 6, 6), "float32")
    build = lambda a, o, b: relay.nn.deformable_conv2d(a, o, b, padding=1, channels=3,  # noqa
                                                       kernel_size=(3, 3))
    # zero offsets: an ordinary convolution
    got = run(build, x, off0, w)
    np.testing.assert_allclose(got, tt.conv2d_nchw_python(x, w, 1, 1), rtol=1e-4, atol=1e-4)
    # an integer offset of (0, +1) on every tap reads one column to the right: away from
    # the left border that is a convolution of the input shifted one column left
    off1 = np.zeros_like(off0)
    off1[:, 1::2] = 1.0
    got = run(build, x, off1, w)
    shifted = np.concatenate([x[..., 1:], np.zeros_like(x[..., :1])], axis=-1)
    np.testing.assert_allclose(got[..., 1:], tt.conv2d_nchw_python(shifted, w, 1, 1)[..., 1:],
                               rtol=1e-4, atol=1e-4)
    offr = RNG.uniform(-1, 1, off0.shape).astype("float32")
    got = run(build, x, offr, w)
    np.testing.assert_allclose(got, tt.deformable_conv2d_nchw_python(x, offr, w, 1, 1, 1, 1, 1),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(Exception, match="nn.deformable_conv2d: offset"):
        _type(build, x.shape, (1, 8, 6, 6), w.shape)


@pytest.mark.numpy_fallback("nn.correlation has no native compute")
def test_correlation():
    a = RNG.standard_normal((1, 3, 6, 7)).astype("float32")
    b = RNG.standard_normal((1, 3, 6, 7)).astype("float32")
    build = lambda p, q: relay.nn.correlation(p, q, kernel_size=1, max_displacement=2,  # noqa
                                              stride1=1, stride2=1, padding=2,
                                              is_multiply=True)
    got = run(build, a, b)
    assert got.shape == (1, 25, 6, 7)
    pa = np.pad(a, ((0, 0), (0, 0), (2, 2), (2, 2)))
    pb = np.pad(b, ((0, 0), (0, 0), (2, 2), (2, 2)))
    for q, (dy, dx) in enumerate((i, j) for i in range(-2, 3) for j in range(-2, 3)):
        want = (pa[:, :, 2:8, 2:9] * pb[:, :, 2 + dy:8 + dy, 2 + dx:9 + dx]).sum(1) / 3
        np.testing.assert_allclose(got[:, q], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tt.correlation_nchw_python(a, b, 1, 2, 1, 1, 2, True), got,
                               rtol=1e-6)
    sub = run(lambda p, q: relay.nn.correlation(p, q, 3, 2, 2, 2, 2, False), a, b)
    assert sub.shape == (1, 9, 2, 3)  # border 3: ceil((10 - 6) / 2), ceil((11 - 6) / 2)
    with pytest.raises(Exception, match="nn.correlation: kernel_size must be odd"):
        _type(lambda p, q: relay.nn.correlation(p, q, 2, 2, 1, 1, 0, True), a.shape, a.shape)


def test_unannotated_weights_are_typed_from_attrs():
    r = relay
    x = r.var("x", shape=(1, 4, 5, 6, 7))
    y = r.nn.conv3d(x, r.var("w"), channels=8, kernel_size=(3, 3, 3), groups=2)
    mod = r.transform.InferType()(tvm.IRModule.from_expr(r.Function(r.analysis.free_vars(y),
                                                                     y)))
    assert [str(p.checked_type) for p in mod["main"].params] == [
        "Tensor[(1, 4, 5, 6, 7), float32]", "Tensor[(8, 2, 3, 3, 3), float32]"]
    z = r.nn.conv3d_transpose(x, r.var("w"), channels=6, kernel_size=(2, 2, 2))
    mod = r.transform.InferType()(tvm.IRModule.from_expr(r.Function(r.analysis.free_vars(z),
                                                                     z)))
    assert str(mod["main"].params[1].checked_type) == "Tensor[(4, 6, 2, 2, 2), float32]"
