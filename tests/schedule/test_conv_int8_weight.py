"""float32 convs over an int8 weight (a quantized model's integer weights, which the ONNX
importer passes as they are): ``conv_lanes`` keeps the prepacked weight int8 and widens each
tap's 16 weights as it loads them; ``conv_direct`` (the stems it keeps) widens the whole weight
into a float32 copy once a call; a weight that is not a constant takes the same copy. The
results equal the integer convolution exactly (float32 sums of integers below 2**24)."""

import numpy as np
import pytest
from conv_reference import conv_kernel, conv_ref, run_graph

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform import FoldScaleAxis, InferType
from minitvm.schedule import common, conv_direct, conv_lanes
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

pytestmark = pytest.mark.usefixtures("no_winograd")  # (conftest)


def _conv(x_shape, w, strides, pad, const_weight=True, scale=None):
    x = relay.var("x", shape=x_shape, dtype="float32")
    wv = relay.const(w) if const_weight else relay.var("w", shape=w.shape, dtype="int8")
    y = relay.nn.conv2d(x, wv, strides=strides, padding=(pad, pad), channels=w.shape[0],
                        kernel_size=w.shape[2:], out_dtype="float32")
    if scale is not None:  # (a per-channel scale FoldScaleAxis must leave outside the conv)
        y = relay.multiply(y, relay.const(scale.reshape(-1, 1, 1)))
    params = [x] if const_weight else [x, wv]
    return tvm.IRModule.from_expr(relay.Function(params, y))


def _build(mod):
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target="llvm")


def _names(lib) -> set[str]:
    return {s.buffer.name for s in walk_stmts(conv_kernel(lib).prim_func.body)
            if isinstance(s, S.DeclBuffer)}


def _param_dtypes(lib) -> list[str]:
    prim = conv_kernel(lib).prim_func
    return [prim.buffer_map[p].dtype for p in prim.params]


CASES = [  # (input shape, output channels, kernel, stride, pad): the schedule that takes it
    ((1, 64, 4, 4), 128, 3, 1, 1),    # conv_lanes (a late stage's small plane)
    ((1, 32, 8, 8), 48, 3, 2, 1),     # conv_lanes, stride 2, a channel tail of 16
    ((1, 3, 32, 32), 16, 7, 2, 3),    # conv_direct (a stem: three input channels)
    ((2, 8, 12, 12), 32, 5, 1, 2),    # a batch of two
]


@pytest.mark.parametrize("shape, o, k, s, p", CASES)
def test_int8_weight_conv_is_exact(shape, o, k, s, p):
    rng = np.random.default_rng(o + k)
    w = rng.integers(-128, 128, (o, shape[1], k, k)).astype("int8")
    x = rng.integers(0, 256, shape).astype("float32")
    lib = _build(_conv(shape, w, (s, s), p))
    want = conv_ref(x, w.astype("float64"), (s, s), (p, p, p, p))
    for threads in (1, 2):
        np.testing.assert_array_equal(run_graph(lib, {"x": x}, threads), want)
    dtypes = _param_dtypes(lib)
    if "cl_acc" in _names(lib):  # conv_lanes: the packed weight stays int8
        assert "int8" in dtypes
    else:  # conv_direct: widened into a float32 copy
        assert "w_float" in _names(lib)


def test_lanes_or_direct_as_for_a_float_weight():
    """The int8 weight changes no schedule choice: the stem stays on conv_direct, the small
    plane goes to conv_lanes."""
    rng = np.random.default_rng(0)
    for (shape, o, k, s, p), lanes in zip(CASES[:3], (True, True, False), strict=True):
        w = rng.integers(-128, 128, (o, shape[1], k, k)).astype("int8")
        assert ("cl_acc" in _names(_build(_conv(shape, w, (s, s), p)))) == lanes
        assert ("cl_acc" in _names(_build(_conv(shape, w.astype("float32"), (s, s), p)))) \
            == lanes


def test_weight_not_a_constant():
    """An int8 weight passed at run time is widened by the kernel too (no prepacking)."""
    rng = np.random.default_rng(1)
    w = rng.integers(-128, 128, (32, 16, 3, 3)).astype("int8")
    x = rng.integers(0, 256, (1, 16, 6, 6)).astype("float32")
    lib = _build(_conv((1, 16, 6, 6), w, (1, 1), 1, const_weight=False))
    np.testing.assert_array_equal(run_graph(lib, {"x": x, "w": w}),
                                  conv_ref(x, w, (1, 1), (1, 1, 1, 1)))
    assert "w_float" in _names(lib)


def test_schedules_take_int8_weights():
    """``common.int8_weight_conv`` says which stages these are; the float-only schedules'
    checks (``static_conv2d_dims``, which Winograd uses) still refuse them."""
    from minitvm import te

    x = te.placeholder((1, 16, 8, 8), "float32", "x")
    w = te.placeholder((32, 16, 3, 3), "int8", "w")
    info = {"strides": (1, 1), "dilation": (1, 1), "padding": (1, 1, 1, 1), "groups": 1,
            "operands": (x, w)}
    t = te.compute((1, 32, 8, 8), lambda b, o, y, z: x[b, o % 16, y, z], name="conv2d",
                   tag="conv2d_nchw", attrs=info)
    assert common.int8_weight_conv(t)
    assert common.static_conv2d_dims(t) is None
    assert common.static_grouped_conv2d_dims(t, int8_weight=True) is not None
    assert conv_direct.supported(t) and conv_lanes.geometry(t) is not None


def test_fold_scale_axis_leaves_an_int8_weight():
    """A per-channel scale after the conv cannot go into an int8 weight: it stays a multiply."""
    w = np.ones((16, 8, 3, 3), "int8")
    mod = InferType()(_conv((1, 8, 6, 6), w, (1, 1), 1, scale=np.full(16, 0.5, "float32")))
    with tvm.transform.PassContext(opt_level=3):
        out = FoldScaleAxis()(mod)
    body = out["main"].body
    assert body.op.name == "multiply" and body.args[0].op.name == "nn.conv2d"
    assert body.args[0].args[1].data.numpy().dtype == np.int8
