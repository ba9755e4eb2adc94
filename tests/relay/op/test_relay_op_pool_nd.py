"""nn.max_pool3d/avg_pool3d, adaptive and global 1-D/3-D pools, nn.upsampling3d: types, numerics
against tvm.topi.testing's poolnd_python / adaptive_pool, text round trip and relay.build."""

import numpy as np
import pytest
from relay_op_check import _type, run

import minitvm as tvm
from minitvm import relay
from minitvm.topi import testing as tt

RNG = np.random.default_rng(1)


@pytest.mark.numpy_fallback("nn.max_pool3d: 3-D pooling is lowered natively for NCDHW only")
def test_pool3d_types_and_numerics():
    x = RNG.standard_normal((1, 2, 5, 6, 7)).astype("float32")
    t = _type(lambda a: relay.nn.max_pool3d(a, (2, 2, 2), (2, 2, 2)), x.shape)
    assert tuple(t.shape) == (1, 2, 2, 3, 3)
    got = run(lambda a: relay.nn.max_pool3d(a, (3, 2, 3), (2, 1, 2), padding=(1, 0, 1)), x)
    want = tt.poolnd_python(x, (3, 2, 3), (2, 1, 2), (1, 1, 1), (1, 0, 1), (1, 0, 1), "max")
    np.testing.assert_allclose(got, want, rtol=1e-6)
    for include in (False, True):
        got = run(lambda a, inc=include: relay.nn.avg_pool3d(
            a, (2, 3, 2), (2, 2, 2), padding=(1, 1, 0), ceil_mode=True, count_include_pad=inc),
            x)
        want = tt.poolnd_python(x, (2, 3, 2), (2, 2, 2), (1, 1, 1), (1, 1, 0), (1, 1, 0), "avg",
                                count_include_pad=include, ceil_mode=True)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    nd = x.transpose(0, 2, 3, 4, 1).copy()
    got = run(lambda a: relay.nn.max_pool3d(a, 2, 2, layout="NDHWC"), nd)
    want = tt.poolnd_python(x, (2, 2, 2), (2, 2, 2), (1, 1, 1), (0,) * 3, (0,) * 3, "max")
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 4, 1), rtol=1e-6)
    with pytest.raises(Exception, match="nn.max_pool3d: the computed output D"):
        _type(lambda a: relay.nn.max_pool3d(a, (9, 1, 1)), x.shape)
    with pytest.raises(Exception, match="nn.avg_pool3d: input has rank 4"):
        _type(lambda a: relay.nn.avg_pool3d(a, 2), (1, 2, 3, 4))


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_adaptive_and_global_pools(kind):
    x1 = RNG.standard_normal((2, 3, 7)).astype("float32")
    x3 = RNG.standard_normal((1, 2, 5, 4, 6)).astype("float32")
    ad1 = getattr(relay.nn, f"adaptive_{kind}_pool1d")
    ad3 = getattr(relay.nn, f"adaptive_{kind}_pool3d")
    got = run(lambda a: ad1(a, 3), x1)
    np.testing.assert_allclose(got, tt.adaptive_pool(x1, (3,), kind, "NCW"), rtol=1e-6)
    got = run(lambda a: ad3(a, (2, 3, 4)), x3)
    np.testing.assert_allclose(got, tt.adaptive_pool(x3, (2, 3, 4), kind, "NCDHW"), rtol=1e-5)
    nwc = x1.transpose(0, 2, 1).copy()
    got = run(lambda a: ad1(a, 2, layout="NWC"), nwc)
    np.testing.assert_allclose(got, tt.adaptive_pool(nwc, (2,), kind, "NWC"), rtol=1e-6)
    red = np.max if kind == "max" else np.mean
    g1 = getattr(relay.nn, f"global_{kind}_pool1d")
    g3 = getattr(relay.nn, f"global_{kind}_pool3d")
    # TVM builds the adaptive op with output_size [1] for the global pools
    assert g1(relay.var("x")).op.name == f"nn.adaptive_{kind}_pool1d"
    np.testing.assert_allclose(run(g1, x1), red(x1, axis=2, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(run(g3, x3), red(x3, axis=(2, 3, 4), keepdims=True), rtol=1e-5)
    # the nn.global_* ops themselves (as a program naming them is parsed)
    op = tvm.ir.Op.get(f"nn.global_{kind}_pool3d")
    attrs = type(g3(relay.var("x")).attrs)()
    np.testing.assert_allclose(run(lambda a: relay.Call(op, [a], attrs), x3),
                               red(x3, axis=(2, 3, 4), keepdims=True), rtol=1e-5)
    with pytest.raises(Exception, match=f"nn.adaptive_{kind}_pool3d: output_size must have"):
        _type(lambda a: ad3(a, (2, 2)), x3.shape)


def test_upsampling3d():
    x = RNG.standard_normal((1, 2, 2, 3, 2)).astype("float32")
    t = _type(lambda a: relay.nn.upsampling3d(a, 2, 1.5, 3), x.shape)
    assert tuple(t.shape) == (1, 2, 4, 4, 6)  # round(3 * 1.5) = 4 (round half to even)
    got = run(lambda a: relay.nn.upsampling3d(a, 2, 2, 2, coordinate_transformation_mode=
                                              "asymmetric"), x)
    np.testing.assert_array_equal(got, x.repeat(2, 2).repeat(2, 3).repeat(2, 4))
    np.testing.assert_array_equal(got, tt.upsampling3d_python(x, (2, 2, 2)))
    lin = run(lambda a: relay.nn.upsampling3d(a, 2, 2, 2, method="trilinear",
                                              coordinate_transformation_mode="align_corners"), x)
    np.testing.assert_allclose(lin[:, :, ::3, ::5, ::3], x[:, :, :, ::2, :], rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(lin, tt.trilinear_resize3d_python(x, (4, 6, 4), "NCDHW",
                                                                 "align_corners"),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(Exception, match="nn.upsampling3d: method must be"):
        _type(lambda a: relay.nn.upsampling3d(a, 2, 2, 2, method="bicubic"), x.shape)
