"""TVM's rules for three small things user code leans on: ``relay.const`` narrowing 64-bit
numpy data, max pooling padded with the dtype's lowest finite value (topi's pad value), and the
``relay.testing.init`` initializers' ``(desc, arr)`` protocol used by ``create_workload``."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.testing import init


@pytest.mark.parametrize("value,dtype", [
    (np.arange(4), "int32"), (np.arange(4, dtype="int64"), "int32"),
    (np.ones(3), "float32"), (np.int64(3), "int32"), (np.float64(1.5), "float32"),
    (np.arange(3, dtype="int8"), "int8"), (np.ones(2, "float16"), "float16"),
    (np.arange(3, dtype="uint64"), "uint64"), ([1, 2], "int32"), ([1.0, 2.0], "float32"),
    (3, "int32"), (2.5, "float32"), (True, "bool")])
def test_const_default_dtype_is_tvms(value, dtype):
    assert relay.const(value).data.dtype == dtype


def test_const_explicit_dtype_and_ndarray_kept():
    assert relay.const(np.arange(3), "int64").data.dtype == "int64"
    assert relay.const(np.ones(2), "float64").data.dtype == "float64"
    nd = tvm.nd.array(np.arange(3, dtype="int64"))
    assert relay.const(nd).data.dtype == "int64"  # an NDArray keeps its dtype, as in TVM
    np.testing.assert_array_equal(relay.const(np.array([2**40, 5])).data.numpy(),
                                  np.array([2**40, 5]).astype("int32"))


def _pool(dtype, run):
    x = relay.var("x", shape=(1, 1, 2, 2), dtype=dtype)
    # pool 2 with stride 3 and padding 2: the first window lies wholly in the padding
    y = relay.nn.max_pool2d(x, pool_size=(2, 2), strides=(3, 3), padding=(2, 2))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    data = np.arange(4, dtype=dtype).reshape(1, 1, 2, 2) + 1
    return run(mod, data)


def _interp(mod, data):
    return relay.create_executor("debug", mod=mod).evaluate()(data).numpy()


def _compiled(mod, data):
    return relay.create_executor("graph", mod=mod, target="llvm").evaluate()(data).numpy()


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "int32"])
@pytest.mark.parametrize("run", [_interp, _compiled], ids=["interpreter", "compiled"])
def test_max_pool_window_in_padding_gives_lowest(dtype, run):
    out = _pool(dtype, run)
    lowest = np.finfo(dtype).min if dtype.startswith("float") else np.iinfo(dtype).min
    assert out.dtype == np.dtype(dtype)
    assert out[0, 0, 0, 0] == lowest and np.isfinite(out.astype("float64")).all()
    assert out.max() == 4


def test_initializer_protocol_fills_in_place():
    arr = np.zeros((4, 3, 2, 2), "float32")
    np.random.seed(7)
    init.Xavier()("conv_weight", arr)
    bound = np.sqrt(3.0 / ((3 * 4 + 4 * 4) / 2.0))
    assert np.abs(arr).max() <= bound and np.abs(arr).max() > 0
    np.random.seed(7)
    np.testing.assert_array_equal(arr, np.random.uniform(-bound, bound, (4, 3, 2, 2))
                                  .astype("float32"))
    for name, fill in (("bn_gamma", 1.0), ("bn_beta", 0.0), ("bn_moving_mean", 0.0),
                       ("bn_moving_var", 1.0), ("fc_bias", 0.0)):
        a = np.full((3,), 5.0, "float32")
        init.Xavier()(name, a)
        np.testing.assert_array_equal(a, np.full((3,), fill))
    with pytest.raises(ValueError, match="'mystery'"):
        init.Xavier()("mystery", np.zeros(2))
    with pytest.raises(ValueError, match="vector"):
        init.Xavier()("fc_weight", np.zeros(4))
    with pytest.raises(ValueError, match="factor_type"):
        init.Xavier(factor_type="sideways")


def test_xavier_factor_types_and_depthwise():
    for ftype, factor in (("in", 3 * 4), ("out", 2 * 4), ("avg", (3 * 4 + 2 * 4) / 2)):
        a = np.zeros((2, 3, 2, 2), "float32")
        np.random.seed(0)
        init.Xavier(factor_type=ftype, magnitude=2)("x_weight", a)
        assert np.abs(a).max() <= np.sqrt(2 / factor)
    a = np.zeros((8, 1, 3, 3), "float32")
    np.random.seed(0)
    init.Xavier()("dw_depthwise_weight", a)
    np.random.seed(0)
    np.testing.assert_array_equal(a, np.random.uniform(-np.sqrt(3 / 9), np.sqrt(3 / 9),
                                                       (8, 1, 3, 3)).astype("float32"))


def test_create_workload_seeds_numpy_and_uses_the_initializer():
    data = relay.var("data", shape=(1, 4))
    w = relay.var("fc_weight", shape=(3, 4))
    b = relay.var("fc_bias", shape=(3,))
    net = relay.Function([data, w, b], relay.nn.bias_add(relay.nn.dense(data, w), b))
    _, p1 = relay.testing.create_workload(net, seed=3)
    np.random.seed(3)
    expect = np.random.uniform(-np.sqrt(3 / 3.5), np.sqrt(3 / 3.5), (3, 4)).astype("float32")
    np.testing.assert_array_equal(p1["fc_weight"].numpy(), expect)
    np.testing.assert_array_equal(p1["fc_bias"].numpy(), np.zeros(3))
    assert "data" not in p1

    class Halves(init.Initializer):
        def _init_weight(self, name, arr):
            arr[:] = 0.5

    _, p2 = relay.testing.create_workload(net, initializer=Halves())
    np.testing.assert_array_equal(p2["fc_weight"].numpy(), np.full((3, 4), 0.5))
    _, p3 = relay.testing.create_workload(net, initializer=init.Constant())
    np.testing.assert_allclose(p3["fc_weight"].numpy().sum(), 1.0, rtol=1e-6)
