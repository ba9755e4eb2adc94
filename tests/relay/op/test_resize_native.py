"""image.resize1d/2d/3d, nn.upsampling and nn.upsampling3d build to native code (their
``FTECompute`` in ``topi.image_resize``; no numpy fallback kernel) and match the numpy
reference through the interpreter: every method, coordinate mode and rounding, NCHW and NHWC,
odd sizes and scale factors that are not integers; an elementwise op after them fuses into
their kernel; bad attributes fail clearly."""

import itertools

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay, te
from minitvm.topi import image_resize

RNG = np.random.default_rng(11)
MODES = ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
         "tf_half_pixel_for_nn", "tf_crop_and_resize"]
ROUNDINGS = ["", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil"]


def _build(build, *arrays):
    vs = [relay.var(f"x{i}", shape=a.shape, dtype=str(a.dtype)) for i, a in enumerate(arrays)]
    mod = tvm.IRModule.from_expr(relay.Function(vs, build(*vs)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, "llvm")
    return mod, lib


def _native(build, *arrays, tol=1e-5):
    """The built module has no fallback kernel and gives the interpreter's values."""
    mod, lib = _build(build, *arrays)
    assert not lib.get_lib().fallback_functions, lib.get_lib().summary()
    want = relay.create_executor("debug", mod=mod).evaluate()(*arrays).numpy()
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for i, a in enumerate(arrays):
        m.set_input(f"x{i}", a)
    m.run()
    got = m.get_output(0).numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    return got


def _data(shape, dtype="float32"):
    return (RNG.standard_normal(shape) * 4).astype(dtype)


@pytest.mark.parametrize("method,mode", itertools.product(
    ["nearest_neighbor", "linear", "cubic"], MODES))
@pytest.mark.parametrize("layout,shape,size", [
    ("NCHW", (1, 2, 5, 7), (11, 3)),      # up along H, down along W (7 -> 3)
    ("NHWC", (1, 6, 4, 3), (13, 8)),      # 6 -> 13: a scale that is not an integer
    ("NCHW", (2, 3, 14, 10), (20, 20)),   # 14 -> 20 (0.7: float32 rounds o * 0.7 at 10)
    ("NCHW", (1, 2, 9, 20), (18, 40)),    # an exact 2x (the schedule's pair form)
])
def test_resize2d_matches_reference(method, mode, layout, shape, size):
    roi = (0.1, 0.2, 0.9, 0.7) if mode == "tf_crop_and_resize" else None
    _native(lambda a: relay.image.resize2d(a, size, roi, layout, method, mode), _data(shape),
            tol=1e-4)


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric",
                                  "tf_half_pixel_for_nn"])
def test_resize2d_nearest_rounding(rounding, mode):
    # 10 -> 25 and 4 -> 10 put coordinates exactly on .5 (ties round half to even)
    x = _data((1, 2, 4, 10))
    _native(lambda a: relay.image.resize2d(a, (10, 25), None, "NCHW", "nearest_neighbor",
                                           mode, rounding), x, tol=0)


def test_resize2d_crop_extrapolates():
    # a box reaching past the image: those samples take the extrapolation value
    x = _data((1, 2, 6, 5))
    out = _native(lambda a: relay.image.resize2d(
        a, (5, 4), (-0.2, 0.1, 1.3, 0.9), "NCHW", "linear", "tf_crop_and_resize",
        extrapolation_value=-7.0), x)
    assert (out[:, :, 0] == -7.0).all() and (out[:, :, -1] == -7.0).all()


def test_resize2d_cubic_exclude_and_alpha():
    x = _data((1, 3, 6, 5))
    _native(lambda a: relay.image.resize2d(a, (4, 9), None, "NCHW", "cubic", "half_pixel",
                                           cubic_alpha=-0.75, cubic_exclude=1), x, tol=1e-4)


def test_resize2d_float64_and_integers():
    _native(lambda a: relay.image.resize2d(a, (7, 9)), _data((1, 2, 5, 4), "float64"))
    xi = RNG.integers(0, 200, (1, 2, 5, 4)).astype("uint8")
    _native(lambda a: relay.image.resize2d(a, (10, 8), None, "NCHW", "nearest_neighbor",
                                           "asymmetric"), xi, tol=0)
    _native(lambda a: relay.image.resize2d(a, (7, 9), None, "NHWC", "nearest_neighbor",
                                           "half_pixel"), xi.transpose(0, 2, 3, 1).copy(),
            tol=0)


@pytest.mark.parametrize("method", ["nearest_neighbor", "bilinear"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("layout,shape,scales", [
    ("NCHW", (1, 3, 5, 7), (2, 2)),
    ("NCHW", (2, 2, 16, 16), (2, 2)),
    ("NHWC", (1, 5, 6, 4), (1.5, 2.5)),
    ("NCHW", (1, 2, 7, 9), (0.5, 1.7)),
    ("NCHW", (1, 2, 4, 6), (3, 3)),
])
def test_upsampling_matches_reference(method, align, layout, shape, scales):
    _native(lambda a: relay.nn.upsampling(a, scales[0], scales[1], layout, method, align),
            _data(shape))


@pytest.mark.parametrize("align", [False, True])
def test_upsampling_bicubic_is_a_cubic_resize(align):
    # the numpy reference has no bicubic upsampling: compare with resize2d's cubic
    x = _data((1, 2, 5, 6))
    mode = "align_corners" if align else "asymmetric"
    _, lib = _build(lambda a: relay.nn.upsampling(a, 2, 1.5, method="bicubic",
                                                  align_corners=align), x)
    assert not lib.get_lib().fallback_functions
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x0", x)
    m.run()
    want = _native(lambda a: relay.image.resize2d(a, (10, 9), None, "NCHW", "cubic", mode), x)
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method", ["nearest_neighbor", "trilinear"])
@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
def test_upsampling3d_matches_reference(method, mode, layout):
    x = _data((1, 2, 3, 4, 5) if layout == "NCDHW" else (1, 3, 4, 5, 2))
    _native(lambda a: relay.nn.upsampling3d(a, 2, 1.5, 2, layout, method, mode), x)


def test_resize1d_and_resize3d_native():
    _native(lambda a: relay.image.resize1d(a, 11, method="cubic"), _data((2, 3, 7)), tol=1e-4)
    _native(lambda a: relay.image.resize1d(a, 4, layout="NWC", method="nearest_neighbor",
                                           coordinate_transformation_mode="asymmetric"),
            _data((2, 7, 3)))
    _native(lambda a: relay.image.resize3d(a, (4, 3, 8), method="linear"),
            _data((1, 2, 3, 5, 4)), tol=1e-4)


def _steps(lib):
    g = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    return [name for name, *_ in g._plan["steps"]]


@pytest.mark.parametrize("op", ["upsampling", "resize2d"])
def test_elementwise_after_resize_fuses(op):
    x, z = _data((1, 4, 8, 8)), _data((1, 4, 16, 16))

    def build(a, b):
        r = relay.nn.upsampling(a, 2, 2) if op == "upsampling" else \
            relay.image.resize2d(a, (16, 16))
        return relay.nn.relu(relay.add(r, b))

    _, lib = _build(build, x, z)
    steps = _steps(lib)
    assert len(steps) == 1 and "add" in steps[0] and "relu" in steps[0], steps
    _native(build, x, z)


def test_resize_after_conv_add_is_its_own_kernel():
    # TVM's FuseOps: an injective producer of a conv group's add does not join that group
    # (its path ends in an out-elementwise-fusable group); both kernels are native
    x, y = _data((1, 4, 8, 8)), _data((1, 3, 16, 16))
    w = relay.const(_data((4, 3, 1, 1)))

    def build(a, b):
        return relay.add(relay.nn.conv2d(b, w, kernel_size=(1, 1)), relay.nn.upsampling(a, 2, 2))

    _, lib = _build(build, x, y)
    steps = _steps(lib)
    assert len(steps) == 2 and any("upsampling" in s for s in steps), steps
    _native(build, x, y, tol=1e-4)


def test_bad_attributes_fail_clearly():
    x = te.placeholder((1, 2, 4, 4), name="x")
    with pytest.raises(ValueError, match="unsupported method 'area'"):
        image_resize.resize(x, (2, 3), (8, 8), method="area")
    with pytest.raises(ValueError, match="unsupported coordinate_transformation_mode 'edge'"):
        image_resize.resize(x, (2, 3), (8, 8), coordinate_transformation_mode="edge")
    with pytest.raises(ValueError, match="unsupported rounding_method 'up'"):
        image_resize.resize(x, (2, 3), (8, 8), "nearest_neighbor", rounding_method="up")
    v = relay.var("v", shape=(1, 2, 4, 4))
    with pytest.raises(Exception, match="unknown method 'area'"):
        relay.transform.InferType()(tvm.IRModule.from_expr(
            relay.Function([v], relay.nn.upsampling(v, 2, 2, method="area"))))
