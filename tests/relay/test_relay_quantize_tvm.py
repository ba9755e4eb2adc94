"""relay.quantize: TVM's test_pass_auto_quantize.py cases restated (small shapes), and the
annotate -> calibrate -> realize passes checked one by one (Before/Expected programs)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay import testing
from minitvm.relay.quantize import QAnnotateKind

RNG = np.random.default_rng(0)


def _calls(mod, names):
    out = []
    relay.analysis.post_order_visit(mod["main"], lambda e: out.append(e) if isinstance(
        e, relay.Call) and getattr(e.op, "name", None) in names else None)
    return out


def quantize_and_build(out, skip_conv_layers=()):
    f = relay.Function(relay.analysis.free_vars(out), out)
    mod, params = testing.create_workload(f)
    with relay.quantize.qconfig(skip_conv_layers=list(skip_conv_layers)):
        qmod = relay.quantize.quantize(mod, params)
    relay.build(qmod, "llvm", params=params)
    return qmod


def test_mul_rewrite():
    data = relay.var("data", shape=(1, 4, 8, 8))
    multiplier = relay.sigmoid(relay.var("data", shape=(1, 4, 1, 1)))
    conv = relay.nn.conv2d(data, relay.var("weight"), kernel_size=(3, 3), padding=(1, 1),
                           channels=4)
    act = relay.nn.relu(data=conv)
    q = quantize_and_build(act * multiplier)
    mul = _calls(q, ["multiply"])
    assert any(m.args[0].checked_type.dtype == "int32" for m in mul)
    quantize_and_build(act * relay.nn.global_avg_pool2d(data=act))


def _two_convs():
    data = relay.var("data", shape=(1, 4, 8, 8))
    w = relay.const(RNG.random((4, 4, 3, 3)).astype("float32"))
    multiplier = relay.sigmoid(relay.var("data", shape=(1, 4, 1, 1)))
    act0 = relay.nn.relu(relay.nn.conv2d(data, w, kernel_size=(3, 3), padding=(1, 1),
                                         channels=4))
    act1 = relay.nn.relu(relay.nn.conv2d(act0, w, kernel_size=(3, 3), padding=(1, 1),
                                         channels=4))
    return act1 * multiplier


@pytest.mark.parametrize("skip", [(), (0,), (1,), (0, 1)])
def test_skip_conv(skip):
    q = quantize_and_build(_two_convs(), skip_conv_layers=skip)
    dtypes = [c.checked_type.dtype for c in _calls(q, ["nn.conv2d"])]
    assert dtypes == ["float32" if i in skip else "int32" for i in range(2)]


def test_stop_quantize():
    data = relay.var("data", shape=(1, 4, 8, 8))
    w0 = relay.const(RNG.random((4, 4, 3, 3)).astype("float32"))
    w1 = relay.const(RNG.random((4, 4, 1, 1)).astype("float32"))
    act0 = relay.nn.relu(relay.nn.conv2d(data, w0, kernel_size=(3, 3), padding=(1, 1),
                                         channels=4))
    pool = relay.nn.global_avg_pool2d(data=act0)
    act1 = relay.nn.relu(relay.nn.conv2d(pool, w1, kernel_size=(1, 1), channels=4))
    q = quantize_and_build(act1 * relay.sigmoid(relay.var("data", shape=(1, 4, 1, 1))))
    # the pooled (float) result ends quantization: the second conv stays float
    assert [c.checked_type.dtype for c in _calls(q, ["nn.conv2d"])] == ["int32", "float32"]


def test_batch_flatten_rewrite():
    data = relay.var("data", shape=(1, 4, 8, 8), dtype="float32")
    out = relay.nn.conv2d(data, relay.var("weight"), kernel_size=(3, 3), padding=(1, 1),
                          channels=4)
    qmod = quantize_and_build(relay.nn.batch_flatten(out))
    flat = _calls(qmod, ["nn.batch_flatten"])
    assert flat and all(c.checked_type.dtype == "int8" for c in flat)


def test_batch_matmul_rewrite():
    data = relay.var("data", shape=(1, 4, 8, 8))
    data2 = relay.sigmoid(relay.var("data", shape=(4, 8, 64)))
    out = relay.nn.conv2d(data, relay.var("weight"), kernel_size=(3, 3), padding=(1, 1),
                          channels=8)
    out = relay.reshape(relay.nn.batch_flatten(out), [1, 8, 64])
    qmod = quantize_and_build(relay.nn.batch_matmul(out, relay.reshape(data2, [1, 32, 64])))
    for c in _calls(qmod, ["nn.batch_matmul", "nn.conv2d", "nn.batch_flatten"]):
        want = "int8" if c.op.name == "nn.batch_flatten" else "int32"
        assert c.checked_type.dtype == want


def _dataset(mod, name, n=3):
    shape = [int(x) for x in mod["main"].params[0].type_annotation.shape]
    return [{name: RNG.uniform(size=shape).astype("float32")} for _ in range(n)]


@pytest.mark.parametrize("mode", ["kl_divergence", "percentile"])
@pytest.mark.parametrize("with_target", [True, False])
def test_calibrate_modes(mode, with_target):
    mod, params = testing.synthetic.get_workload(input_shape=(3, 8, 8))
    dataset = _dataset(mod, "data")
    with relay.quantize.qconfig(calibrate_mode=mode, skip_conv_layers=None):
        if with_target:
            with tvm.target.Target("llvm"):
                qmod = relay.quantize.quantize(mod, params, dataset)
        else:
            qmod = relay.quantize.quantize(mod, params, dataset)
    assert any(c.checked_type.dtype == "int32" for c in _calls(qmod, ["nn.conv2d"]))
    got = relay.create_executor("debug", mod=qmod).evaluate()(dataset[0]["data"]).numpy()
    assert got.shape == (1, 3 * 8 * 8) and np.isfinite(got).all()


def test_calibration_scales():
    from minitvm.relay.quantize.calibrate import kl_divergence_scale, percentile_scale

    sample = RNG.normal(size=200_000)
    sample[:10] = 40.0  # a few outliers: KL and percentile clip them, max would not
    kl = kl_divergence_scale(sample)
    assert 2.0 < kl < 20.0
    assert 3.0 < percentile_scale(sample) < 6.0
    assert kl_divergence_scale(np.zeros(10)) == 1.0


def test_left_shift_non_negative():
    data = relay.var("data", shape=(1, 4, 8, 8))
    weight = relay.const(np.full((4, 4, 3, 3), 256.0, "float32"))
    relu = relay.nn.relu(relay.nn.conv2d(data, weight, kernel_size=(3, 3), padding=(1, 1),
                                         channels=4))
    mod = tvm.IRModule.from_expr(relu)
    with tvm.transform.PassContext(opt_level=3):
        with relay.quantize.qconfig(calibrate_mode="global_scale", global_scale=8.0,
                                    skip_conv_layers=None):
            qmod = relay.quantize.quantize(mod)
    shifts = _calls(qmod, ["left_shift"])
    assert shifts and all(int(s.args[1].data.numpy()) >= 0 for s in shifts)


def test_dense_conv2d_rewrite():
    data = relay.var("data", relay.TensorType((1, 4, 8, 8)))
    inp = relay.var("inp", relay.TensorType((1, 4 * 8 * 8)))
    weight_t = relay.const(RNG.random((1, 4 * 8 * 8)).astype("float32"))
    bias = relay.const(RNG.random((1,)).astype("float32"))
    conv_w = relay.const(RNG.random((4, 4, 3, 3)).astype("float32"))
    linear = relay.nn.bias_add(relay.nn.dense(inp, weight_t), bias)
    conv = relay.nn.conv2d(data, conv_w, kernel_size=(3, 3), padding=(1, 1), channels=4)
    mod = tvm.IRModule.from_expr(relay.Tuple((linear, conv)))
    with tvm.transform.PassContext(opt_level=3):
        with relay.quantize.qconfig(calibrate_mode="global_scale", global_scale=8.0,
                                    skip_dense_layer=False):
            qmod = relay.quantize.quantize(mod)
    (dense,) = _calls(qmod, ["nn.dense"])
    assert [a.checked_type.dtype for a in dense.args] == ["int8", "int8"]
    assert dense.checked_type.dtype == "int32"
    (conv2d,) = _calls(qmod, ["nn.conv2d"])  # the first conv2d is skipped by default
    assert conv2d.checked_type.dtype == "float32"


def test_add_lhs_is_none_annotate():
    data_conv = relay.var("data_conv", shape=(1, 4, 8, 8))
    conv = relay.nn.conv2d(data_conv, relay.const(RNG.random((4, 4, 3, 3)).astype("float32")),
                           padding=(1, 1), kernel_size=(3, 3))
    data_add = relay.var("data_add", shape=(4, 1, 1))
    out = relay.nn.global_avg_pool2d(relay.add(data_add, conv))
    mod = tvm.IRModule.from_expr(out)
    calib = [{"data_conv": RNG.random((1, 4, 8, 8)), "data_add": RNG.random((4, 1, 1))}]
    with tvm.transform.PassContext(opt_level=3):
        with relay.quantize.qconfig(calibrate_mode="kl_divergence", skip_conv_layers=None):
            qmod = relay.quantize.quantize(mod, dataset=calib)
    values = {"data_conv": RNG.random((1, 4, 8, 8)).astype("float32"),
              "data_add": RNG.random((4, 1, 1)).astype("float32")}
    args = [values[p.name_hint] for p in mod["main"].params]
    ref = relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()
    got = relay.create_executor("debug", mod=qmod).evaluate()(*args).numpy()
    np.testing.assert_allclose(got, ref, rtol=0.1, atol=0.1)


# ------------------------------------------------------------------ the three passes
def _conv_mod():
    x = relay.var("x", shape=(1, 2, 4, 4))
    w = relay.const(np.full((2, 2, 1, 1), 0.75, "float32"))
    return tvm.IRModule.from_expr(relay.Function([x], relay.nn.conv2d(x, w, channels=2,
                                                                      kernel_size=(1, 1)))), x, w


def test_annotate_calibrate_realize_programs():
    mod, x, w = _conv_mod()
    sq = relay.quantize.simulated_quantize
    c = relay.const
    with relay.quantize.qconfig(skip_conv_layers=None, global_scale=4.0):
        annotated = relay.quantize.annotate()(relay.transform.InferType()(mod))
        calls = _calls(annotated, ["relay.op.annotation.simulated_quantize"])
        assert [k.attrs.kind for k in calls] == [QAnnotateKind.INPUT, QAnnotateKind.WEIGHT,
                                                 QAnnotateKind.INPUT]
        calibrated = tvm.transform.module_pass(relay.quantize.calibrate(), opt_level=1)(
            annotated)
        a = sq(x, c(4.0 / 128), c(-127.0), c(127.0), QAnnotateKind.INPUT)
        b = sq(w, c(1.0 / 128), c(-127.0), c(127.0), QAnnotateKind.WEIGHT)
        conv = relay.nn.conv2d(a, b, channels=2, kernel_size=(1, 1))
        expected = relay.Function([x], sq(conv, c(4.0 / 128), c(-127.0), c(127.0),
                                          QAnnotateKind.INPUT),
                                  relay.TensorType((1, 2, 4, 4), "float32"))
        tvm.ir.assert_structural_equal(calibrated["main"], expected)
        realized = relay.quantize.realize()(relay.transform.InferType()(calibrated))
    qx = relay.cast(relay.clip(relay.round(relay.divide(x, c(4.0 / 128))), -127.0, 127.0),
                    "int8")
    qw = c(np.full((2, 2, 1, 1), 96, "int8"))
    acc = relay.nn.conv2d(qx, qw, channels=2, kernel_size=(1, 1), out_dtype="int32")
    # (4/128)(1/128) -> 4/128: a right shift by 7 with rounding
    narrowed = relay.right_shift(relay.add(acc, c(64, "int32")), c(7, "int32"))
    out = relay.cast(relay.clip(narrowed, -127.0, 127.0), "int8")
    expected = relay.Function([x], relay.multiply(relay.cast(out, "float32"), c(4.0 / 128)))
    tvm.ir.assert_structural_equal(realized["main"], relay.transform.InferType()(
        tvm.IRModule.from_expr(expected))["main"])
    data = RNG.uniform(-1, 1, (1, 2, 4, 4)).astype("float32")
    sim = relay.create_executor("debug", mod=calibrated).evaluate()(data).numpy()
    got = relay.create_executor("debug", mod=realized).evaluate()(data).numpy()
    np.testing.assert_allclose(got, sim, atol=4.0 / 128 + 1e-6)


def test_do_simulation_keeps_float():
    mod, _, _ = _conv_mod()
    with relay.quantize.qconfig(skip_conv_layers=None, do_simulation=True):
        q = relay.quantize.quantize(mod)
    assert _calls(q, ["relay.op.annotation.simulated_quantize"])
    assert q["main"].body.checked_type.dtype == "float32"


def test_config_errors():
    mod, _, _ = _conv_mod()
    with relay.quantize.qconfig(weight_scale="median", skip_conv_layers=None):
        with pytest.raises(ValueError, match="unknown weight_scale"):
            relay.quantize.quantize(mod)
    with relay.quantize.qconfig(partition_conversions="enabled"):
        with pytest.raises(NotImplementedError, match="partition_conversions"):
            relay.quantize.quantize(mod)
    cfg = relay.quantize.qconfig()
    with pytest.raises(AttributeError, match="cannot be set"):
        cfg.global_scale = 2.0
