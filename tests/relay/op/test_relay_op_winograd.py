"""Winograd / GEMM weight-transform convolutions: TVM's F(2, 3) kernel transform, the
transform-then-convolve programs equal to the plain convolutions, types, text round trip and
relay.build."""

import numpy as np
import pytest
from relay_op_check import _type, run

from minitvm import relay
from minitvm.topi import testing as tt
from minitvm.topi.reference.winograd import winograd_g

RNG = np.random.default_rng(11)


def test_winograd_g_matches_tvm_f23():
    np.testing.assert_array_equal(winograd_g(2, 3), [[1, 0, 0], [0.5, -0.5, 0.5],
                                                     [0.5, 0.5, 0.5], [0, 0, 1]])
    g = winograd_g(4, 3)
    assert g.shape == (6, 3)
    np.testing.assert_allclose(g[1], [-1 / 3, 1 / 3, -1 / 3])


@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.numpy_fallback("nn.contrib_conv2d_winograd_weight_transform has no native compute")
def test_conv2d_winograd(tile):
    x = RNG.standard_normal((1, 3, 7, 8)).astype("float32")
    w = RNG.standard_normal((4, 3, 3, 3)).astype("float32")
    u = run(lambda k: relay.nn.contrib_conv2d_winograd_weight_transform(k, tile), w)
    assert u.shape == (tile + 2, tile + 2, 4, 3)
    g = winograd_g(tile, 3)
    np.testing.assert_allclose(u[:, :, 1, 2], g @ w[1, 2] @ g.T, rtol=1e-5, atol=1e-5)
    got = run(lambda a, k: relay.nn.contrib_conv2d_winograd_without_weight_transform(
        a, relay.nn.contrib_conv2d_winograd_weight_transform(k, tile), tile, padding=1,
        channels=4, kernel_size=(3, 3)), x, w)
    np.testing.assert_allclose(got, tt.conv2d_nchw_python(x, w, 1, 1), rtol=1e-4, atol=1e-4)
    with pytest.raises(Exception, match="contrib_conv2d_winograd_without_weight_transform: the "
                                        "transformed weight"):
        _type(lambda a, k: relay.nn.contrib_conv2d_winograd_without_weight_transform(
            a, k, tile, channels=4, kernel_size=(3, 3)), x.shape, (5, 5, 4, 3))


@pytest.mark.numpy_fallback("nn.contrib_conv3d_winograd_weight_transform has no native compute")
def test_conv3d_winograd():
    x = RNG.standard_normal((1, 2, 5, 6, 6)).astype("float32")
    for kd in (3, 1):
        w = RNG.standard_normal((3, 2, kd, 3, 3)).astype("float32")
        u = run(lambda k: relay.nn.contrib_conv3d_winograd_weight_transform(k, 2), w)
        assert u.shape == ((4 if kd == 3 else 1), 4, 4, 3, 2)
        got = run(lambda a, k, kd=kd: relay.nn.contrib_conv3d_winograd_without_weight_transform(
            a, relay.nn.contrib_conv3d_winograd_weight_transform(k, 2), 2, padding=(0, 1, 1),
            channels=3, kernel_size=(kd, 3, 3)), x, w)
        np.testing.assert_allclose(got, tt.conv3d_ncdhw_python(x, w, 1, (0, 1, 1)), rtol=1e-4,
                                   atol=1e-4)


@pytest.mark.numpy_fallback("nn.contrib_conv2d_gemm_weight_transform has no native compute")
def test_conv2d_gemm():
    x = RNG.standard_normal((1, 5, 6, 3)).astype("float32")
    w = RNG.standard_normal((3, 3, 3, 5)).astype("float32")  # HWIO
    blocks = run(lambda k: relay.nn.contrib_conv2d_gemm_weight_transform(k, 4, 4), w)
    assert blocks.shape == (2, 7, 4, 4)  # N = 5 -> 8, K = 27 -> 28
    np.testing.assert_array_equal(blocks[0, 0, :, 1], w.reshape(27, 5)[1, :4])
    got = run(lambda a, k: relay.nn.contrib_conv2d_gemm_without_weight_transform(
        a, relay.nn.contrib_conv2d_gemm_weight_transform(k, 4, 4), padding=1, channels=5,
        kernel_size=(3, 3)), x, w)
    np.testing.assert_allclose(got, tt.conv2d_nhwc_python(x, w, 1, 1), rtol=1e-4, atol=1e-4)
    with pytest.raises(Exception, match="contrib_conv2d_gemm_weight_transform: expects HWIO"):
        _type(lambda k: relay.nn.contrib_conv2d_gemm_weight_transform(k, 4, 4), (3, 3, 5))
