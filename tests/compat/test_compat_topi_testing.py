"""tvm.topi.testing's references (TVM's names and signatures) agree with Relay's ops run by
the interpreter."""

import numpy as np
import pytest

import minitvm as tvm
import minitvm.topi.testing as tt
from minitvm import relay

RNG = np.random.default_rng(0)


def _run(build, *arrays):
    vs = [relay.var(f"p{i}", shape=a.shape, dtype=str(a.dtype)) for i, a in enumerate(arrays)]
    mod = tvm.IRModule.from_expr(relay.Function(vs, build(*vs)))
    out = relay.create_executor("debug", mod=mod).evaluate()(*arrays)
    return out.numpy() if hasattr(out, "numpy") else out


def _r(*shape):
    return RNG.standard_normal(shape).astype("float32")


@pytest.mark.parametrize("stride,padding,groups", [(1, 1, 1), (2, (1, 0), 1), (1, "SAME", 2),
                                                  (2, "VALID", 1), (1, (0, 1, 2, 1), 1)])
def test_conv2d_nchw_and_nhwc(stride, padding, groups):
    x, w = _r(1, 4, 9, 8), _r(6, 4 // groups, 3, 3)
    pad = tt.get_pad_tuple(padding, (3, 3))
    want = _run(lambda a, b: relay.nn.conv2d(a, b, strides=(stride, stride), padding=pad,
                                             groups=groups), x, w)
    np.testing.assert_allclose(tt.conv2d_nchw_python(x, w, stride, padding, groups), want,
                               rtol=1e-4, atol=1e-4)
    if groups == 1:
        got = tt.conv2d_nhwc_python(x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), stride,
                                    padding)
        np.testing.assert_allclose(got.transpose(0, 3, 1, 2), want, rtol=1e-4, atol=1e-4)


def test_depthwise_conv1d_transpose_dilate():
    x, f = _r(1, 3, 7, 7), _r(3, 2, 3, 3)
    want = _run(lambda a, b: relay.nn.conv2d(a, b, padding=(1, 1), groups=3, channels=6),
                x, f.reshape(6, 1, 3, 3))
    np.testing.assert_allclose(tt.depthwise_conv2d_python_nchw(x, f, 1, "SAME"), want,
                               rtol=1e-4, atol=1e-4)
    x1, w1 = _r(2, 3, 11), _r(4, 3, 3)
    want1 = _run(lambda a, b: relay.nn.conv1d(a, b, strides=(2,), padding=(1, 1),
                                              dilation=(2,)), x1, w1)
    np.testing.assert_allclose(tt.conv1d_ncw_python(x1, w1, 2, 1, 2), want1, rtol=1e-4,
                               atol=1e-4)
    xt, wt = _r(1, 4, 5, 5), _r(4, 3, 3, 3)
    want_t = _run(lambda a, b: relay.nn.conv2d_transpose(
        a, b, strides=(2, 2), padding=(1, 1), output_padding=(1, 1), channels=3), xt, wt)
    got_t = tt.conv2d_transpose_nchw_python(xt, wt, 2, 1, (1, 1))
    np.testing.assert_allclose(got_t, want_t, rtol=1e-4, atol=1e-4)
    d = tt.dilate_python(np.arange(4.0).reshape(2, 2), (2, 3))
    assert d.shape == (3, 4) and d[2, 3] == 3.0 and d[1, 1] == 0.0
    with pytest.raises(ValueError, match="strides"):
        tt.dilate_python(np.ones((2, 2)), (2,))


def test_norms_and_softmax():
    x = _r(2, 6, 4, 3)
    g, b = _r(6), _r(6)
    np.testing.assert_allclose(tt.softmax_python(x, 1), _run(lambda a: relay.nn.softmax(a, 1), x),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tt.log_softmax_python(x, 1),
                               _run(lambda a: relay.nn.log_softmax(a, 1), x), rtol=1e-5,
                               atol=1e-5)
    g3, b3 = _r(3), _r(3)
    np.testing.assert_allclose(tt.layer_norm_python(x, g3, b3, -1),
                               _run(lambda a, c, d: relay.nn.layer_norm(a, c, d), x, g3, b3),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        tt.group_norm_python(x, g, b, 3, 1, (2, 3)),
        _run(lambda a, c, d: relay.nn.group_norm(a, c, d, num_groups=3), x, g, b),
        rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        tt.instance_norm_python(x, g, b, (2, 3)),
        _run(lambda a, c, d: relay.nn.instance_norm(a, c, d), x, g, b), rtol=1e-4, atol=1e-4)
    mean, var = _r(6), np.abs(_r(6)) + 0.5
    out, _, _ = tt.batch_norm(x, g, b, mean, var, 1, 1e-5, True, True, False, 0.1)
    want = _run(lambda *a: relay.nn.batch_norm(*a)[0], x, g, b, mean, var)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tt.l2_normalize_python(x, 1e-6, (1,)),
                               _run(lambda a: relay.nn.l2_normalize(a, 1e-6, [1]), x),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tt.lrn_python(x, 3, 1, 2.0, 1e-4, 0.75),
                               _run(lambda a: relay.nn.lrn(a, 3, 1, 2.0, 1e-4, 0.75), x),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize("ceil_mode,include_pad", [(False, True), (True, False)])
def test_pooling(pool_type, ceil_mode, include_pad):
    x = _r(1, 2, 7, 6)
    fn = relay.nn.max_pool2d if pool_type == "max" else relay.nn.avg_pool2d
    kw = {} if pool_type == "max" else {"count_include_pad": include_pad}
    want = _run(lambda a: fn(a, (3, 2), (2, 2), padding=(1, 0, 1, 1), ceil_mode=ceil_mode,
                             **kw), x)
    got = tt.poolnd_python(x, (3, 2), (2, 2), (1, 1), (1, 0), (1, 1), pool_type,
                           count_include_pad=include_pad and pool_type == "avg",
                           ceil_mode=ceil_mode)  # TVM's max reference pads 0 otherwise
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    want_a = _run(lambda a: relay.nn.adaptive_avg_pool2d(a, (3, 4)) if pool_type == "avg"
                  else relay.nn.adaptive_max_pool2d(a, (3, 4)), x)
    np.testing.assert_allclose(tt.adaptive_pool(x, (3, 4), pool_type, "NCHW"), want_a,
                               rtol=1e-5, atol=1e-6)


def test_indexing_and_matmul():
    x, y = _r(2, 3, 4), _r(2, 5, 4)
    np.testing.assert_allclose(tt.batch_matmul(x, y), _run(relay.nn.batch_matmul, x, y),
                               rtol=1e-5, atol=1e-5)
    data = _r(3, 4, 2)
    idx = np.array([[0, 2], [1, 3]], dtype="int32")
    np.testing.assert_allclose(tt.gather_nd_python(data, idx),
                               _run(lambda a, i: relay.gather_nd(a, i), data, idx))
    gi = RNG.integers(0, 4, size=(3, 2, 2)).astype("int32")
    np.testing.assert_allclose(tt.gather_python(data, 1, gi),
                               _run(lambda a, i: relay.gather(a, 1, i), data, gi))
    ind = np.array([[0, 2], [1, 0]], dtype="int32")
    for axis in (-1, 0, 1):
        want = _run(lambda i, a=axis: relay.one_hot(i, relay.const(1.0), relay.const(0.0), 3,
                                                     a, "float32"), ind)
        np.testing.assert_allclose(tt.one_hot(ind, 1.0, 0.0, 3, axis, "float32"), want)
    s = tt.strided_slice_python(data, [0, 1], [3, 4], [2, 2])
    np.testing.assert_allclose(s, _run(lambda a: relay.strided_slice(a, [0, 1], [3, 4], [2, 2]),
                                       data))
    assert tt.strided_slice_python(data, [1], [-1], None, slice_mode="size").shape == (2, 4, 2)
    img = _r(1, 8, 4, 6)
    # space_to_depth inverts depth_to_space in DCR mode; CRD keeps channel blocks together
    np.testing.assert_array_equal(
        tt.depth_to_space_python(tt.space_to_depth_python(img, 2), 2, "DCR"), img)
    small = np.arange(8.0).reshape(1, 8, 1, 1)
    assert tt.depth_to_space_python(small, 2, "CRD")[0, 0].tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert tt.depth_to_space_python(small, 2, "DCR")[0, 0].tolist() == [[0.0, 2.0], [4.0, 6.0]]
    np.testing.assert_allclose(tt.upsampling_python(img, (2, 3)),
                               _run(lambda a: relay.nn.upsampling(a, 2, 3), img))
    seq = _r(4, 3, 2)
    lens = np.array([1, 4, 2], dtype="int32")
    np.testing.assert_allclose(
        tt.sequence_mask(seq, lens, -1.0, 0),
        _run(lambda a, v: relay.sequence_mask(a, v, -1.0, 0), seq, lens))
