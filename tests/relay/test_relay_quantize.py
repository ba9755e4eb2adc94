"""relay.quantize: qconfig as TVM has it, and post-training int8 quantization of conv2d/dense
that stays close to the float model and compiles to integer kernels."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay


def _net():
    x = relay.var("data", shape=(1, 3, 16, 16))
    w1 = relay.var("w1", shape=(8, 3, 3, 3))
    w2 = relay.var("w2", shape=(8, 8, 3, 3))
    wd = relay.var("wd", shape=(4, 8 * 16 * 16))
    y = relay.nn.relu(relay.nn.conv2d(x, w1, padding=(1, 1), channels=8, kernel_size=(3, 3)))
    y = relay.nn.relu(relay.nn.conv2d(y, w2, padding=(1, 1), channels=8, kernel_size=(3, 3)))
    y = relay.nn.dense(relay.nn.batch_flatten(y), wd, units=4)
    rng = np.random.default_rng(0)
    params = {"w1": rng.uniform(-0.5, 0.5, (8, 3, 3, 3)).astype("float32"),
              "w2": rng.uniform(-0.2, 0.2, (8, 8, 3, 3)).astype("float32"),
              "wd": rng.uniform(-0.02, 0.02, (4, 8 * 16 * 16)).astype("float32")}
    return tvm.IRModule.from_expr(relay.Function([x, w1, w2, wd], y)), params


def test_qconfig_fields_and_context():
    cfg = relay.quantize.current_qconfig()
    assert (cfg.nbit_input, cfg.global_scale, cfg.skip_conv_layers) == (8, 8.0, [0])
    with relay.quantize.qconfig(global_scale=4.0, skip_conv_layers=[]) as q:
        assert relay.quantize.current_qconfig() is q and q.global_scale == 4.0
    assert relay.quantize.current_qconfig().global_scale == 8.0
    with pytest.warns(UserWarning, match="unknown option"):  # TVM ignores unknown options
        relay.quantize.qconfig(bits=4)
    with relay.quantize.qconfig(calibrate_mode="kl_divergence"):
        with pytest.raises(ValueError, match="needs a calibration dataset"):
            relay.quantize.quantize(*_net())


@pytest.mark.parametrize("skip", [[0], []])
def test_quantized_model_is_close_and_compiles(skip):
    mod, params = _net()
    with relay.quantize.qconfig(global_scale=4.0, skip_conv_layers=skip,
                                skip_dense_layer=False):
        qmod = relay.quantize.quantize(mod, params)
    # TVM's realized form: int8 x int8 -> int32 conv2d/dense, float ones where skipped
    seen = []
    relay.analysis.post_order_visit(qmod["main"], lambda e: seen.append(
        (e.op.name, e.args[0].checked_type.dtype, e.checked_type.dtype)) if isinstance(
        e, relay.Call) and e.op.name in ("nn.conv2d", "nn.dense") else None)
    assert sorted(seen) == sorted([("nn.conv2d", "float32", "float32")] * len(skip)
                                  + [("nn.conv2d", "int8", "int32")] * (2 - len(skip))
                                  + [("nn.dense", "int8", "int32")])
    x = np.random.default_rng(1).uniform(0, 1, (1, 3, 16, 16)).astype("float32")
    ref = relay.create_executor("debug", mod=mod).evaluate()(x, *params.values()).numpy()
    got = relay.create_executor("debug", mod=qmod).evaluate()(x).numpy()
    assert np.abs(got - ref).max() <= 0.1 * np.abs(ref).max() + 1e-3
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(qmod, "llvm")
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("data", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), got, rtol=1e-5, atol=1e-5)
