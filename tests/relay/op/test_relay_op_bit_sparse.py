"""nn.bitpack and nn.sparse_conv2d: types, numerics against direct definitions, text round trip
and relay.build."""

import numpy as np
import pytest
from relay_op_check import _type, run

from minitvm import relay
from minitvm.topi import testing as tt

RNG = np.random.default_rng(12)


@pytest.mark.numpy_fallback("nn.bitpack has no native compute")
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


@pytest.mark.parametrize("unipolar", [True, False])
@pytest.mark.numpy_fallback("nn.bitserial_dense has no native compute")
def test_bitserial_dense(unipolar):
    x = RNG.integers(0, 4, (3, 32)).astype("int8")
    w = RNG.integers(0, 2, (5, 32)).astype("int8")
    got = run(lambda a, b: relay.nn.bitserial_dense(a, b, units=5, data_bits=2,
                                                    unipolar=unipolar), x, w)
    # unipolar weights are +-1 (bit 0 counts -1); otherwise plain 0/1 products
    ww = 2 * w.astype(np.int64) - 1 if unipolar else w.astype(np.int64)
    np.testing.assert_array_equal(got, x.astype(np.int64) @ ww.T)
    assert got.dtype == np.int16
    with pytest.raises(Exception, match="nn.bitserial_dense: K=30 must be a multiple"):
        _type(lambda a, b: relay.nn.bitserial_dense(relay.cast(a, "int8"), relay.cast(b, "int8"),
                                                    units=5), (3, 30), (5, 30))


@pytest.mark.numpy_fallback("nn.bitserial_conv2d has no native compute")
def test_bitserial_conv2d():
    x = RNG.integers(0, 4, (1, 32, 5, 5)).astype("int8")
    w = RNG.integers(0, 2, (4, 32, 3, 3)).astype("int8")
    got = run(lambda a, b: relay.nn.bitserial_conv2d(a, b, padding=(1, 1), channels=4,
                                                     activation_bits=2, out_dtype="int32"), x, w)
    want = tt.conv2d_nchw_python(x.astype("float64"), 2 * w.astype("float64") - 1, 1, 1)
    np.testing.assert_array_equal(got, want.astype("int32"))
    nhwc = run(lambda a, b: relay.nn.bitserial_conv2d(
        a, b, padding=(1, 1), channels=4, activation_bits=2, out_dtype="int32",
        data_layout="NHWC", kernel_layout="HWIO"), x.transpose(0, 2, 3, 1).copy(),
        w.transpose(2, 3, 1, 0).copy())
    np.testing.assert_array_equal(nhwc, got.transpose(0, 2, 3, 1))
    with pytest.raises(Exception, match="nn.bitserial_conv2d: channels 16 must be a multiple"):
        _type(lambda a, b: relay.nn.bitserial_conv2d(relay.cast(a, "int8"),
                                                     relay.cast(b, "int8")),
              (1, 16, 5, 5), (4, 16, 3, 3))
