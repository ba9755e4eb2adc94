"""image.resize1d/resize3d, crop_and_resize, grid_sample, affine_grid, dilation2d: types, numerics
against direct definitions (and PyTorch where installed), text round trip and relay.build."""

import numpy as np
import pytest
from relay_op_check import _type, run

from minitvm import relay
from minitvm.topi import testing as tt

RNG = np.random.default_rng(2)


def test_resize1d_resize3d():
    x = RNG.standard_normal((2, 3, 5)).astype("float32")
    near = run(lambda a: relay.image.resize1d(a, 10, method="nearest_neighbor",
                                              coordinate_transformation_mode="asymmetric"), x)
    np.testing.assert_array_equal(near, x.repeat(2, axis=2))
    lin = run(lambda a: relay.image.resize1d(a, 9, coordinate_transformation_mode=
                                             "align_corners"), x)
    np.testing.assert_allclose(lin[..., ::2], x, rtol=1e-6)
    np.testing.assert_allclose(lin[..., 1::2], (x[..., :-1] + x[..., 1:]) / 2, rtol=1e-5)
    np.testing.assert_allclose(tt.resize1d_python(x, (9 / 5,), "NCW", "linear"), lin, rtol=1e-5)
    x3 = RNG.standard_normal((1, 2, 2, 3, 4)).astype("float32")
    t = _type(lambda a: relay.image.resize3d(a, (4, 6, 2)), x3.shape)
    assert tuple(t.shape) == (1, 2, 4, 6, 2)
    same = run(lambda a: relay.image.resize3d(a, (2, 3, 4), method="cubic"), x3)
    np.testing.assert_allclose(same, x3, rtol=1e-5, atol=1e-5)
    up = run(lambda a: relay.image.resize3d(a, (4, 6, 8), method="nearest_neighbor",
                                            coordinate_transformation_mode="asymmetric"), x3)
    np.testing.assert_array_equal(up, tt.upsampling3d_python(x3, (2, 2, 2)))
    ndhwc = x3.transpose(0, 2, 3, 4, 1).copy()
    got = run(lambda a: relay.image.resize3d(a, (3, 5, 2), layout="NDHWC"), ndhwc)
    want = run(lambda a: relay.image.resize3d(a, (3, 5, 2)), x3)
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 4, 1), rtol=1e-6)
    with pytest.raises(Exception, match="image.resize3d: size must be 3 positive values"):
        _type(lambda a: relay.image.resize3d(a, (2, 2)), x3.shape)
    with pytest.raises(Exception, match="image.resize1d: method must be"):
        _type(lambda a: relay.image.resize1d(a, 4, method="area"), x.shape)


@pytest.mark.numpy_fallback("image.crop_and_resize has no native compute")
def test_crop_and_resize():
    img = RNG.standard_normal((2, 3, 6, 8)).astype("float32")
    boxes = np.array([[0.0, 0.0, 1.0, 1.0], [0.2, 0.1, 0.7, 0.9], [-0.5, 0.0, 0.5, 1.2]],
                     "float32")
    idx = np.array([1, 0, 1], "int32")
    full = run(lambda a, b, c: relay.image.crop_and_resize(a, b, c, (6, 8)), img, boxes, idx)
    assert full.shape == (3, 3, 6, 8)
    np.testing.assert_allclose(full[0], img[1], rtol=1e-5, atol=1e-6)  # whole image, same size
    # the third box starts above the image: those rows take the extrapolation value
    out = run(lambda a, b, c: relay.image.crop_and_resize(a, b, c, (5, 4),
                                                          extrapolation_value=-7.0),
              img, boxes, idx)
    ys = -0.5 * 5 + np.arange(5) * 1.0 * 5 / 4
    assert np.all(out[2, :, ys < 0] == -7.0)
    np.testing.assert_allclose(out, tt.crop_and_resize_python(img, boxes, idx, (5, 4), "NCHW",
                                                              extrapolation_value=-7.0),
                               rtol=1e-6)
    near = run(lambda a, b, c: relay.image.crop_and_resize(
        a, b, c, (3, 3), layout="NHWC", method="nearest_neighbor"),
        img.transpose(0, 2, 3, 1).copy(), boxes[:2], idx[:2])
    assert near.shape == (2, 3, 3, 3)
    np.testing.assert_array_equal(near[0, 0, 0], img[1, :, 0, 0])
    with pytest.raises(Exception, match=r"image.crop_and_resize: boxes must have shape"):
        _type(lambda a, b, c: relay.image.crop_and_resize(a, b, c, (2, 2)), img.shape, (3, 5),
              (3,))


def _identity_grid(n, h, w):
    ys, xs = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
    return np.broadcast_to(np.stack([xs, ys]), (n, 2, h, w)).astype("float32").copy()


def test_affine_grid_and_grid_sample():
    theta = np.array([[[1, 0, 0], [0, 1, 0]], [[0.5, 0.2, 0.1], [-0.3, 0.8, 0.0]]], "float32")
    grid = run(lambda t: relay.image.affine_grid(t, (4, 5)), theta)
    assert grid.shape == (2, 2, 4, 5)
    np.testing.assert_allclose(grid[0], _identity_grid(1, 4, 5)[0], atol=1e-6)
    np.testing.assert_allclose(grid, tt.affine_grid_python(theta, (4, 5)), rtol=1e-6, atol=1e-6)
    x = RNG.standard_normal((2, 3, 4, 5)).astype("float32")
    ident = _identity_grid(2, 4, 5)
    for method in ("nearest", "bilinear", "bicubic"):
        out = run(lambda a, g, m=method: relay.image.grid_sample(a, g, method=m), x, ident)
        np.testing.assert_allclose(out, x, rtol=1e-5, atol=1e-5)
    g = RNG.uniform(-1.3, 1.3, (2, 2, 3, 6)).astype("float32")
    for pad in ("zeros", "border", "reflection"):
        out = run(lambda a, gg, pad=pad: relay.image.grid_sample(a, gg, padding_mode=pad,
                                                        align_corners=False), x, g)
        np.testing.assert_allclose(out, tt.grid_sample_python(x, g, "bilinear", "NCHW", pad,
                                                              False), rtol=1e-5, atol=1e-6)
    x3 = RNG.standard_normal((1, 2, 3, 4, 5)).astype("float32")
    g3 = RNG.uniform(-1, 1, (1, 3, 2, 2, 2)).astype("float32")
    out3 = run(lambda a, gg: relay.image.grid_sample(a, gg, layout="NCDHW"), x3, g3)
    assert out3.shape == (1, 2, 2, 2, 2)
    with pytest.raises(Exception, match="image.grid_sample: grid must have shape"):
        _type(lambda a, gg: relay.image.grid_sample(a, gg), x.shape, (2, 3, 3, 3))
    with pytest.raises(Exception, match=r"image.affine_grid: expects affine matrices"):
        _type(lambda t: relay.image.affine_grid(t, (2, 2)), (2, 3, 3))


def test_grid_sample_matches_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 5, 6)).astype("float32")
    g = RNG.uniform(-1.2, 1.2, (2, 2, 4, 3)).astype("float32")
    for method in ("nearest", "bilinear", "bicubic"):
        for pad in ("zeros", "border", "reflection"):
            for ac in (True, False):
                got = tt.grid_sample_python(x, g, method, "NCHW", pad, ac)
                want = torch.nn.functional.grid_sample(
                    torch.from_numpy(x), torch.from_numpy(g.transpose(0, 2, 3, 1).copy()),
                    mode=method, padding_mode=pad, align_corners=ac).numpy()
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4,
                                           err_msg=f"{method} {pad} {ac}")
    theta = RNG.standard_normal((2, 2, 3)).astype("float32")
    want = torch.nn.functional.affine_grid(torch.from_numpy(theta), (2, 1, 4, 5),
                                           align_corners=True).numpy().transpose(0, 3, 1, 2)
    np.testing.assert_allclose(tt.affine_grid_python(theta, (4, 5)), want, rtol=1e-5, atol=1e-5)


@pytest.mark.numpy_fallback("image.dilation2d has no native compute")
def test_dilation2d():
    x = RNG.standard_normal((1, 2, 5, 6)).astype("float32")
    w = RNG.standard_normal((2, 3, 2)).astype("float32")
    out = run(lambda a, b: relay.image.dilation2d(a, b, strides=(1, 2), padding=(1, 1, 1, 1),
                                                  dilations=(1, 2)), x, w)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh, ow = (7 - 3) // 1 + 1, (8 - 3) // 2 + 1
    assert out.shape == (1, 2, oh, ow)
    want = np.full(out.shape, -np.inf, "float32")
    for y in range(oh):
        for xx in range(ow):
            for i in range(3):
                for j in range(2):
                    want[0, :, y, xx] = np.maximum(want[0, :, y, xx],
                                                   xp[0, :, y + i, xx * 2 + j * 2] + w[:, i, j])
    np.testing.assert_allclose(out, want, rtol=1e-6)
    nhwc = run(lambda a, b: relay.image.dilation2d(
        a, b, strides=(1, 2), padding=(1, 1, 1, 1), dilations=(1, 2), data_layout="NHWC",
        kernel_layout="HWI"), x.transpose(0, 2, 3, 1).copy(), w.transpose(1, 2, 0).copy())
    np.testing.assert_allclose(nhwc, out.transpose(0, 2, 3, 1), rtol=1e-6)
    with pytest.raises(Exception, match="image.dilation2d: data channels 2 do not match"):
        _type(lambda a, b: relay.image.dilation2d(a, b), x.shape, (3, 2, 2))
