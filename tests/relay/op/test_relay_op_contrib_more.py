"""nn.contrib_depthwise_conv2d_NCHWc, nn.contrib_dense_pack, nn.internal.sparse_dense_padded,
nn.sparse_add, nn.sparse_transpose: types, numerics against the plain ops / dense numpy, text
round trip and relay.build."""

import numpy as np
import pytest
from relay_op_check import _type, run, run_all

import minitvm as tvm
from minitvm import relay
from minitvm.topi import testing as tt

RNG = np.random.default_rng(8)


def test_depthwise_conv2d_nchwc():
    x = RNG.standard_normal((1, 8, 5, 6)).astype("float32")
    w = RNG.standard_normal((8, 1, 3, 3)).astype("float32")
    want = tt.depthwise_conv2d_python_nchw(x, w.reshape(8, 1, 3, 3), 1, 1)
    packed_x = x.reshape(1, 2, 4, 5, 6).transpose(0, 1, 3, 4, 2).copy()       # NCHW4c
    packed_w = w.reshape(2, 4, 1, 3, 3).transpose(0, 2, 3, 4, 1)[:, :, :, :, None, :].copy()
    got = run(lambda a, b: relay.nn.contrib_depthwise_conv2d_nchwc(
        a, b, padding=1, groups=8, channels=8, kernel_size=(3, 3), data_layout="NCHW4c",
        kernel_layout="OIHW1i4o"), packed_x, packed_w)
    np.testing.assert_allclose(got, want.reshape(1, 2, 4, 5, 6).transpose(0, 1, 3, 4, 2),
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(Exception, match="nn.contrib_depthwise_conv2d_NCHWc: input channels 8"):
        _type(lambda a, b: relay.nn.contrib_depthwise_conv2d_nchwc(
            a, b, groups=4, data_layout="NCHW4c", kernel_layout="OIHW1i4o"), packed_x.shape,
            packed_w.shape)


def test_dense_pack():
    x = RNG.standard_normal((3, 5)).astype("float32")
    w = RNG.standard_normal((8, 5)).astype("float32")
    packed = w.reshape(2, 4, 5).transpose(0, 2, 1).copy()  # NC4n: (N/4, K, 4)
    got = run(lambda a, b: relay.nn.contrib_dense_pack(a, b, "NC4n", units=8), x, packed)
    np.testing.assert_allclose(got, x @ w.T, rtol=1e-5, atol=1e-5)
    with pytest.raises(Exception, match="nn.contrib_dense_pack: data .* disagree"):
        _type(lambda a, b: relay.nn.contrib_dense_pack(a, b, "NC4n"), (3, 6), (2, 5, 4))


def _csr(dense):
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=dense.shape[0]))])
    return dense[rows, cols], cols.astype("int32"), indptr.astype("int32")


@pytest.mark.numpy_fallback("nn.sparse_transpose has no native compute")
def test_sparse_add_transpose_and_padded_dense():
    s = np.where(RNG.uniform(size=(4, 4)) < 0.4, RNG.standard_normal((4, 4)), 0).astype(
        "float32")
    values, indices, indptr = _csr(s)
    d = RNG.standard_normal((4, 4)).astype("float32")
    got = run(lambda a, v, i, p: relay.nn.sparse_add(a, (v, i, p)), d, values, indices, indptr)
    np.testing.assert_allclose(got, d + s, rtol=1e-6)
    tv, ti, tp = run_all(lambda v, i, p: relay.nn.sparse_transpose((v, i, p)).astuple(),
                         values, indices, indptr)
    for got_part, want_part in zip((tv, ti, tp), _csr(s.T)):
        np.testing.assert_array_equal(got_part, want_part)
    x = RNG.standard_normal((3, 4)).astype("float32")
    op = tvm.ir.Op.get("nn.internal.sparse_dense_padded")
    attrs = relay.nn.sparse_dense(relay.var("x"), (values, indices, indptr)).attrs
    got = run(lambda a, v, i, p: relay.Call(op, [a, v, i, p], attrs), x, values, indices, indptr)
    np.testing.assert_allclose(got, x @ s.T, rtol=1e-5, atol=1e-6)
    with pytest.raises(Exception, match="nn.sparse_add: indptr .* does not fit 3 rows"):
        _type(lambda a, v, i, p: relay.nn.sparse_add(a, (v, i, p)), (3, 4), (5,), (5,), (5,))
    with pytest.raises(Exception, match="nn.sparse_transpose: expects a CSR matrix"):
        _type(lambda v, i, p: relay.nn.sparse_transpose((v, i, p)).astuple(), (2, 2), (4,),
              (5,))
