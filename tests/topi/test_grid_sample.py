"""Native computes of image.affine_grid and image.grid_sample (``topi.grid_sample``) match the
numpy references for every method, padding mode and corner convention, 2-D and 3-D; a 3-D
bicubic sample, which has no native compute, says so."""

import numpy as np
import pytest
from native_cases import native_and_reference

from minitvm import relay

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("target", [(5, 7), (1, 4)])
def test_affine_grid(target):
    theta = RNG.standard_normal((2, 2, 3)).astype("float32")
    got, want = native_and_reference(
        relay.image.affine_grid(relay.var("t", shape=(2, 2, 3)), target), {"t": theta})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("method", ["nearest", "bilinear", "bicubic"])
def test_grid_sample_2d(method, padding_mode, align_corners):
    x = RNG.standard_normal((2, 3, 6, 5)).astype("float32")
    grid = (RNG.random((2, 2, 4, 7)) * 2.6 - 1.3).astype("float32")  # some points outside
    expr = relay.image.grid_sample(relay.var("x", shape=x.shape), relay.var("g", shape=grid.shape),
                                   method=method, padding_mode=padding_mode,
                                   align_corners=align_corners)
    got, want = native_and_reference(expr, {"x": x, "g": grid})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_grid_sample_3d_and_affine_grid_chain():
    x = RNG.standard_normal((1, 2, 4, 5, 3)).astype("float32")
    grid = (RNG.random((1, 3, 2, 3, 4)) * 2.4 - 1.2).astype("float32")
    expr = relay.image.grid_sample(relay.var("x", shape=x.shape), relay.var("g", shape=grid.shape),
                                   layout="NCDHW", align_corners=False)
    got, want = native_and_reference(expr, {"x": x, "g": grid})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # a spatial transformer: affine_grid feeding grid_sample
    img = RNG.standard_normal((2, 3, 8, 8)).astype("float32")
    theta = np.array([[[0.9, 0.1, 0.05], [-0.1, 0.9, 0.0]]] * 2, "float32")
    t = relay.var("t", shape=theta.shape)
    expr = relay.image.grid_sample(relay.var("x", shape=img.shape),
                                   relay.image.affine_grid(t, (6, 6)))
    got, want = native_and_reference(expr, {"x": img, "t": theta})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_bicubic_grid_sample_in_3d_has_no_native_compute():
    # Relay's type relation refuses it first; the compute says so too for a caller of its own
    from minitvm import te
    from minitvm.ir.type import TensorType
    from minitvm.relay.op.image_nd import GridSampleAttrs
    from minitvm.topi import get_compute

    attrs = GridSampleAttrs(method="bicubic", layout="NCDHW", padding_mode="zeros",
                            align_corners=True)
    x = te.placeholder((1, 1, 4, 4, 4), name="x")
    g = te.placeholder((1, 3, 3, 3, 3), name="g")
    with pytest.raises(ValueError, match="bicubic in 2-D"):
        get_compute("image.grid_sample")(attrs, [x, g], TensorType((1, 1, 3, 3, 3), "float32"))
