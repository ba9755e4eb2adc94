"""nn.bitpack and nn.sparse_conv2d: types, numerics against direct definitions, text round trip
and relay.build."""

import numpy as np
import pytest
from relay_op_check import _type, run

from minitvm import relay
from minitvm.topi import testing as tt

RNG = np.random.default_rng(12)


def test_bitpack():
    x = RNG.integers(0, 4, (2, 16, 3)).astype("int32")
    out = run(lambda a: relay.nn.bitpack(a, bits=2, pack_axis=1, bit_axis=2,
                                         pack_type="uint8"), x)
    assert out.shape == (2, 2, 2, 3) and out.dtype == np.uint8
    for b in range(2):
        for word in range(2):
            bits = (x[:, word * 8:(word + 1) * 8, :] >> b) & 1  # element 0 -> the MSB
            want = (bits * (1 << np.arange(7, -1, -1))[None, :, None]).sum(axis=1)
            np.testing.assert_array_equal(out[:, word, b, :], want)
    with pytest.raises(Exception, match="nn.bitpack: axis 1 .* is not a multiple of the 32-bit"):
        _type(lambda a: relay.nn.bitpack(relay.cast(a, "int32")), (2, 16))


def _csr(dense):
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=dense.shape[0]))])
    return dense[rows, cols], cols.astype("int32"), indptr.astype("int32")


def test_sparse_conv2d():
    x = RNG.standard_normal((1, 4, 5, 3)).astype("float32")
    w1 = np.where(RNG.uniform(size=(6, 3)) < 0.5, RNG.standard_normal((6, 3)), 0).astype(
        "float32")
    got = run(lambda a, v, i, p: relay.nn.sparse_conv2d(a, (v, i, p)), x, *_csr(w1))
    np.testing.assert_allclose(got, x @ w1.T, rtol=1e-5, atol=1e-5)
    nchw = x.transpose(0, 3, 1, 2).copy()
    got = run(lambda a, v, i, p: relay.nn.sparse_conv2d(a, (v, i, p), layout="NCHW"), nchw,
              *_csr(w1))
    np.testing.assert_allclose(got, (x @ w1.T).transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-5)
    w3 = np.where(RNG.uniform(size=(6, 27)) < 0.3, RNG.standard_normal((6, 27)), 0).astype(
        "float32")
    got = run(lambda a, v, i, p: relay.nn.sparse_conv2d(a, (v, i, p), kernel_size=3), x,
              *_csr(w3))
    hwio = w3.reshape(6, 3, 3, 3).transpose(1, 2, 3, 0)  # columns ordered (kh, kw, c)
    np.testing.assert_allclose(got, tt.conv2d_nhwc_python(x, hwio, 1, 1), rtol=1e-4, atol=1e-4)
    with pytest.raises(Exception, match="nn.sparse_conv2d: supports 1x1 kernels"):
        _type(lambda a, v, i, p: relay.nn.sparse_conv2d(a, (v, i, p), "NCHW", 3), (1, 3, 4, 5),
              (4,), (4,), (7,))
