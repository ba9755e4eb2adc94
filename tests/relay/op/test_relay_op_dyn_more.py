"""dyn.topk, dyn.squeeze, dyn.sparse_to_dense, dyn.nn.upsampling(3d), dyn.image.resize2d: types
with run-time sizes, the same numbers as the static ops, text round trip."""

import numpy as np
import pytest
from relay_op_check import _mod, run_all

from minitvm import relay
from minitvm.relay.op import dyn

RNG = np.random.default_rng(5)


def test_dyn_topk():
    x = RNG.standard_normal((3, 6)).astype("float32")
    k = np.array(2, "int32")
    mod = _mod(lambda a, kk: dyn.topk(a, kk, axis=1).astuple(), x, k)
    assert str(mod["main"].body.checked_type) == \
        "(Tensor[(3, ?), float32], Tensor[(3, ?), int32])"
    vals, idx = run_all(lambda a, kk: dyn.topk(a, kk, axis=1).astuple(), x, k, compiled=False)
    want_v, want_i = run_all(lambda a: relay.topk(a, 2, axis=1).astuple(), x)
    np.testing.assert_array_equal(vals, want_v)
    np.testing.assert_array_equal(idx, want_i)
    with pytest.raises(Exception, match="dyn.topk: k must be an integer"):
        _mod(lambda a, kk: dyn.topk(a, kk).astuple(), x, np.array(2.0, "float32"))


def test_dyn_squeeze_and_sparse_to_dense():
    x = RNG.standard_normal((1, 3, 1, 2)).astype("float32")
    axes = np.array([0, -2], "int64")
    mod = _mod(dyn.squeeze, x, axes)
    assert str(mod["main"].body.checked_type) == "Tensor[(?, ?), float32]"
    got = run_all(dyn.squeeze, x, axes, compiled=False)[0]
    np.testing.assert_array_equal(got, x[0, :, 0])
    idx = np.array([[0, 1], [2, 3]], "int32")
    vals = np.array([5.0, 7.0], "float32")
    shape = np.array([3, 4], "int32")
    got = run_all(lambda i, v, s: dyn.sparse_to_dense(i, s, v, relay.const(-1.0)), idx, vals,
                  shape, compiled=False)[0]
    want = np.full((3, 4), -1.0, "float32")
    want[0, 1], want[2, 3] = 5, 7
    np.testing.assert_array_equal(got, want)
    with pytest.raises(Exception, match="dyn.squeeze: axis must be a 1-D tensor"):
        _mod(dyn.squeeze, x, np.array([[0]], "int64"))
    with pytest.raises(Exception, match="dyn.sparse_to_dense: output_shape must be an integer tensor"):
        _mod(lambda i, v, s: dyn.sparse_to_dense(i, s, v, relay.const(-1.0)), idx, vals,
             shape.astype("float32"))


def test_dyn_upsampling_and_resize():
    x = RNG.standard_normal((1, 2, 3, 4)).astype("float32")
    sh, sw = np.array(2.0), np.array(1.5)
    got = run_all(lambda a, h, w: dyn.nn.upsampling(a, h, w, method="bilinear",
                                                    align_corners=True), x, sh, sw,
                  compiled=False)[0]
    want = run_all(lambda a: relay.nn.upsampling(a, 2.0, 1.5, method="bilinear",
                                                 align_corners=True), x)[0]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(Exception, match="dyn.nn.upsampling: scale must be a scalar"):
        _mod(lambda a, h, w: dyn.nn.upsampling(a, h, w), x, np.ones(2), sw)
    x3 = RNG.standard_normal((1, 2, 2, 3, 2)).astype("float32")
    s = np.array(2.0)
    got = run_all(lambda a, d, h, w: dyn.nn.upsampling3d(a, d, h, w), x3, s, s, s,
                  compiled=False)[0]
    want = run_all(lambda a: relay.nn.upsampling3d(a, 2, 2, 2), x3)[0]
    np.testing.assert_array_equal(got, want)
    size = np.array([5, 7], "int64")
    mod = _mod(lambda a, sz: dyn.image.resize2d(a, sz), x, size)
    assert str(mod["main"].body.checked_type) == "Tensor[(1, 2, ?, ?), float32]"
    got = run_all(lambda a, sz: dyn.image.resize2d(a, sz, method="cubic"), x, size,
                  compiled=False)[0]
    want = run_all(lambda a: relay.image.resize2d(a, (5, 7), method="cubic"), x)[0]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(Exception, match="dyn.image.resize2d: size must hold 2 values"):
        _mod(lambda a, sz: dyn.image.resize2d(a, sz), x, np.array([1, 2, 3], "int64"))
