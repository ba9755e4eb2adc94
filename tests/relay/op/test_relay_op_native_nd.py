"""The N-d / detection ops with tensor-expression computes build to native code (no numpy
fallback kernel) and match the interpreter."""

import numpy as np
import pytest
from relay_op_check import _mod

import minitvm as tvm
from minitvm import relay

RNG = np.random.default_rng(7)


def _native(build, *arrays):
    mod = _mod(build, *arrays)
    want = relay.create_executor("debug", mod=mod).evaluate()(*arrays)
    want = [w.numpy() for w in want] if not hasattr(want, "numpy") else [want.numpy()]
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, "llvm")
    assert not lib.get_lib().fallback_functions, lib.get_lib().summary()
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for i, a in enumerate(arrays):
        m.set_input(f"x{i}", a)
    m.run()
    for k, w in enumerate(want):
        np.testing.assert_allclose(m.get_output(k).numpy(), w, rtol=1e-5, atol=1e-5)


def test_conv3d_native():
    x = RNG.standard_normal((1, 4, 5, 6, 5)).astype("float32")
    w = RNG.standard_normal((6, 2, 3, 2, 3)).astype("float32")
    _native(lambda a, b: relay.nn.relu(relay.nn.conv3d(a, b, strides=(1, 2, 1),
                                                       padding=(1, 0, 1), groups=2)), x, w)
    _native(lambda a, b: relay.nn.conv3d(a, b, dilation=(2, 1, 1)), x, w[:, :, :, :, :2][:3]
            .repeat(2, axis=1).copy())


@pytest.mark.parametrize("ceil_mode,include", [(False, False), (True, True), (True, False)])
def test_pool3d_native(ceil_mode, include):
    x = RNG.standard_normal((1, 2, 5, 6, 7)).astype("float32")
    _native(lambda a: relay.nn.max_pool3d(a, (2, 3, 2), (2, 2, 2), padding=(1, 1, 0),
                                          ceil_mode=ceil_mode), x)
    _native(lambda a: relay.nn.avg_pool3d(a, (2, 3, 2), (2, 2, 2), padding=(1, 1, 0),
                                          ceil_mode=ceil_mode, count_include_pad=include), x)


def test_adaptive_global_pools_native():
    x1 = RNG.standard_normal((2, 3, 7)).astype("float32")
    x3 = RNG.standard_normal((1, 2, 5, 4, 6)).astype("float32")
    for kind in ("max", "avg"):
        _native(lambda a, k=kind: getattr(relay.nn, f"adaptive_{k}_pool1d")(a, 3), x1)
        _native(lambda a, k=kind: getattr(relay.nn, f"adaptive_{k}_pool3d")(a, (2, 3, 4)), x3)
        _native(lambda a, k=kind: getattr(relay.nn, f"global_{k}_pool3d")(a), x3)
        _native(lambda a, k=kind: getattr(relay.nn, f"adaptive_{k}_pool1d")(
            a, 2, layout="NWC"), x1.transpose(0, 2, 1).copy())


def test_rearranging_ops_native():
    x = RNG.standard_normal((2, 8, 4, 6)).astype("float32")
    _native(lambda a: relay.vision.yolo_reorg(a, 2), x)
    _native(lambda a: relay.sliding_window(a, 1, (3, 2, 2), (2, 1, 2)), x)
    a, b = np.arange(3, dtype="float32"), np.arange(4, dtype="float32")
    _native(lambda p, q: relay.meshgrid([p, q], "xy").astuple(), a, b)
    buf = RNG.standard_normal((2, 5, 3)).astype("float32")
    d = RNG.standard_normal((2, 2, 3)).astype("float32")
    _native(lambda p, q: relay.nn.fifo_buffer(p, q, axis=1), d, buf)


def test_cross_entropy_native():
    p = RNG.dirichlet(np.ones(5), size=4).astype("float32")
    y = np.eye(5, dtype="float32")[[0, 3, 1, 1]]
    _native(relay.nn.cross_entropy, p, y)
    _native(relay.nn.cross_entropy_with_logits, np.log(p), y)
