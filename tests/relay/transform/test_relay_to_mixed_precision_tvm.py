"""ToMixedPrecision builds TVM's programs: TVM v0.19's cases (test_to_mixed_precision.py)
restated in our own words — the casts on ALWAYS-op inputs, ``out_dtype`` set to the mixed type,
FOLLOW ops running in the mixed type after an ALWAYS op, NEVER ops left alone, one cast back
reused, let variables retyped — each compared structurally and run before/after."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.testing import lstm
from minitvm.relay.transform import InferType, ToMixedPrecision

_RNG = np.random.default_rng(7)


def _uniform(shape, lo=-1.0, hi=1.0):
    return _RNG.uniform(lo, hi, size=shape).astype("float32")


def _run(mod, params):
    out = relay.create_executor("debug", mod=mod).evaluate()(**params)
    if hasattr(out, "numpy"):
        return [out.numpy()]
    return [o.numpy() for o in out]


def _amp(mod, params, dtype="float16", rtol=1e-3, atol=0.0, keep_output=False):
    """ToMixedPrecision of ``mod``; its outputs must stay close to the float32 program's."""
    mod = InferType()(mod)
    ref = _run(mod, params)
    config = {"relay.ToMixedPrecision.keep_orig_output_dtype": True} if keep_output else {}
    with tvm.transform.PassContext(config=config):
        out = ToMixedPrecision(dtype)(mod)
    got = _run(out, params)
    for a, b in zip(ref, got, strict=True):
        np.testing.assert_allclose(a, b.astype("float32"), rtol=rtol, atol=atol)
        if keep_output:
            assert b.dtype == a.dtype
    return out


def _typed(expr):
    return InferType()(tvm.IRModule.from_expr(expr))


def _conv(data, weight, out_dtype):
    return relay.nn.conv2d(data, weight, strides=(1, 1), padding=(1, 1), out_dtype=out_dtype)


def _conv_inputs():
    data = relay.var("data", shape=(1, 3, 32, 32), dtype="float32")
    weight = relay.var("weight", shape=(5, 3, 3, 3), dtype="float32")
    params = {"data": _uniform((1, 3, 32, 32)), "weight": _uniform((5, 3, 3, 3))}
    return data, weight, params


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_single_conv_casts_inputs_and_sets_out_dtype(dtype):
    data, weight, params = _conv_inputs()
    mod = _typed(_conv(data, weight, "float32"))
    out = _amp(mod, params, dtype, rtol=1e-3, atol=0.01)
    expected = _typed(_conv(relay.cast(data, dtype), relay.cast(weight, dtype), dtype))
    assert not tvm.ir.structural_equal(out, mod)
    tvm.ir.assert_structural_equal(out, expected)


def test_single_conv_keeping_the_output_dtype_casts_the_result_back():
    data, weight, params = _conv_inputs()
    mod = _typed(_conv(data, weight, "float32"))
    out = _amp(mod, params, rtol=1e-3, atol=0.01, keep_output=True)
    conv = _conv(relay.cast(data, "float16"), relay.cast(weight, "float16"), "float16")
    tvm.ir.assert_structural_equal(out, _typed(relay.cast(conv, "float32")))


def test_conv_then_batch_norm_runs_in_the_mixed_type():
    data, weight, params = _conv_inputs()
    bn_vars = [relay.var(n, shape=[5]) for n in ("gamma", "beta", "moving_mean", "moving_var")]
    for v in bn_vars:
        params[v.name_hint] = _uniform((5,), 0.1, 1.0)  # a positive variance: finite outputs
    bn = relay.nn.batch_norm(_conv(data, weight, "float32"), *bn_vars)
    mod = _typed(bn[0])
    out = _amp(mod, params, rtol=0.01, atol=0.025)
    conv = _conv(relay.cast(data, "float16"), relay.cast(weight, "float16"), "float16")
    expected = relay.nn.batch_norm(conv, *[relay.cast(v, "float16") for v in bn_vars])[0]
    tvm.ir.assert_structural_equal(out, _typed(expected))


def test_never_ops_are_left_alone():
    a = relay.var("a", shape=[1, 2, 3])
    mod = _typed(relay.nn.softmax(a))
    tvm.ir.assert_structural_equal(ToMixedPrecision("float16")(mod), mod)
    arange = relay.arange(relay.const(1, "float32"), relay.const(128, "float32"))
    mod = tvm.IRModule.from_expr(arange)
    tvm.ir.assert_structural_equal(ToMixedPrecision("float16")(mod), InferType()(mod))
    b = relay.var("b", shape=[1, 3, 16, 16])
    for build in (relay.sum, relay.mean, relay.nn.global_avg_pool2d,
                  lambda e: relay.nn.adaptive_avg_pool2d(e, (1, 1))):
        mod = tvm.IRModule.from_expr(build(b))
        tvm.ir.assert_structural_equal(ToMixedPrecision("float16")(mod), InferType()(mod))


def test_follow_op_after_always_op_runs_in_the_mixed_type():
    data, weight, params = _conv_inputs()
    conv = _conv(data, weight, "float32")
    mod = _typed(conv + conv)
    out = _amp(mod, params, rtol=0.01, atol=0.01)
    conv16 = _conv(relay.cast(data, "float16"), relay.cast(weight, "float16"), "float16")
    tvm.ir.assert_structural_equal(out, _typed(conv16 + conv16))


def test_never_op_after_always_op_gets_one_cast_back():
    data, weight, params = _conv_inputs()
    mod = tvm.IRModule.from_expr(relay.nn.softmax(_conv(data, weight, "float32")))
    out = _amp(mod, params, rtol=1e-3, atol=0.01)
    conv16 = _conv(relay.cast(data, "float16"), relay.cast(weight, "float16"), "float16")
    tvm.ir.assert_structural_equal(out, _typed(relay.nn.softmax(relay.cast(conv16, "float32"))))


def test_follow_ops_after_a_never_op_stay_float32():
    a = relay.var("a", shape=[1, 2, 3])
    b = relay.nn.softmax(a)
    mod = _typed(b + b)
    out = _amp(mod, {"a": _uniform((1, 2, 3))}, rtol=0.0, atol=0.0)
    tvm.ir.assert_structural_equal(out, mod)


def test_let_variables_take_the_mixed_type():
    def program(dtype, cast):
        var1 = relay.var("var1", shape=[1, 20], dtype=dtype)
        var2 = relay.var("var2", shape=[1, 20], dtype=dtype)
        data = relay.var("data", shape=[1, 20])
        weight = relay.var("weight", shape=[20, 20])
        data_in = relay.cast(data, "float16") if cast else data
        weight_in = relay.cast(weight, "float16") if cast else weight
        kw = {"out_dtype": "float16"} if cast else {}
        let2 = relay.Let(var2, relay.nn.dense(var1 + var1, weight_in, units=20, **kw),
                         var2 + var2)
        return relay.Let(var1, relay.nn.dense(data_in, weight_in, units=20, **kw), let2)

    mod = tvm.IRModule.from_expr(program("float32", False))
    params = {"data": _uniform((1, 20)), "weight": _uniform((20, 20))}
    out = _amp(mod, params, rtol=0.15, atol=0.05)
    tvm.ir.assert_structural_equal(out, _typed(program("float16", True)))


def test_where_follows_its_dense_input():
    data = relay.var("data", shape=[1, 20])
    weight = relay.var("weight", shape=[20, 20])
    dense = relay.nn.dense(data, weight, units=20)
    mod = tvm.IRModule.from_expr(relay.where(data, dense, dense))
    out = _amp(mod, {"data": _uniform((1, 20)), "weight": _uniform((20, 20))},
               rtol=0.01, atol=0.01)
    data16, weight16 = relay.cast(data, "float16"), relay.cast(weight, "float16")
    dense16 = relay.nn.dense(data16, weight16, units=20, out_dtype="float16")
    tvm.ir.assert_structural_equal(out, _typed(relay.where(data16, dense16, dense16)))


def test_batch_matmul_accumulates_in_the_mixed_type():
    data = relay.var("data", shape=[1, 1, 20])
    weight = relay.var("weight", shape=[1, 20, 20])
    mod = tvm.IRModule.from_expr(relay.nn.batch_matmul(data, weight))
    out = _amp(mod, {"data": _uniform((1, 1, 20)), "weight": _uniform((1, 20, 20))},
               rtol=0.01, atol=0.01)
    expected = relay.nn.batch_matmul(relay.cast(data, "float16"), relay.cast(weight, "float16"),
                                     out_dtype="float16")
    tvm.ir.assert_structural_equal(out, _typed(expected))


def test_follow_op_with_integer_arguments_casts_only_the_float_one():
    data = relay.var("data", shape=[1, 10], dtype="float32")
    indices = relay.var("indices", shape=[1, 1], dtype="int32")
    mod = tvm.IRModule.from_expr(relay.take(data, indices, axis=0))
    params = {"data": _uniform((1, 10)), "indices": np.array([[0]], "int32")}
    out = _amp(mod, params, rtol=0.01, atol=0.01)
    expected = relay.take(relay.cast(data, "float16"), indices, axis=0)
    tvm.ir.assert_structural_equal(out, _typed(expected))


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_unrolled_lstm_stays_close(dtype):
    units, iterations = 4, 5
    mod, params = lstm.get_workload(iterations=iterations, num_hidden=units)
    params = {k: v.numpy() if hasattr(v, "numpy") else v for k, v in params.items()}
    for p in mod["main"].params:  # the step inputs (TVM names them data, data1, ...)
        if p.name_hint.startswith("data"):
            shape = [int(d) for d in p.type_annotation.shape]
            params[p.name_hint] = _uniform(shape, -10, 10)
    _amp(mod, params, dtype, rtol=0.01, atol=0.01)
