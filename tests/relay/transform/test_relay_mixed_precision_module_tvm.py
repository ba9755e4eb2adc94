"""relay.transform.mixed_precision (TVM v0.19's module of default ToMixedPrecision rules): the
names TVM code imports, v0.19's newer list entries taking effect in ToMixedPrecision
(Before/Expected + numerics), custom rules through ``register_func_to_op_list``, and errors."""

import warnings

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.op import Op
from minitvm.relay.transform import InferType, ToMixedPrecision
from minitvm.relay.transform import mixed_precision as mp


def _typed(expr):
    return InferType()(tvm.IRModule.from_expr(expr))


def _run(mod, args):
    return relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()


def _conv(data, weight, out_dtype):
    return relay.nn.conv2d(data, weight, padding=(1, 1), out_dtype=out_dtype)


def test_module_names_and_lists():
    assert (mp.MIXED_PRECISION_ALWAYS, mp.MIXED_PRECISION_FOLLOW,
            mp.MIXED_PRECISION_NEVER) == (0, 1, 2)
    assert "nn.conv2d" in mp.DEFAULT_ALWAYS_LIST and "clip" in mp.DEFAULT_FOLLOW_LIST
    assert "nn.layer_norm" in mp.DEFAULT_NEVER_LIST
    assert not set(mp.DEFAULT_ALWAYS_LIST) & set(mp.DEFAULT_FOLLOW_LIST)
    assert not set(mp.DEFAULT_FOLLOW_LIST) & set(mp.DEFAULT_NEVER_LIST)
    call = relay.nn.dense(relay.var("a", shape=(2, 3)), relay.var("b", shape=(4, 3)))
    assert mp.get_generic_out_dtypes(call, "float16") == ["float16", "float16"]
    assert mp.generic_always_op(call, "bfloat16") == [0, "bfloat16", "bfloat16"]
    assert mp.generic_follow_op(call, "float16")[0] == 1
    assert mp.generic_never_op(call, "float16")[0] == 2


@pytest.mark.parametrize("name", ["clip", "argmax", "image.resize2d", "variance",
                                  "nn.layer_norm", "nn.conv2d", "exp"])
def test_every_listed_defined_op_has_a_rule(name):
    rule = Op.get(name).get_attr("FTVMMixedPrecisionConversionType")
    call = relay.nn.relu(relay.var("x", shape=(2,)))
    expected = (0 if name in mp.DEFAULT_ALWAYS_LIST else
                1 if name in mp.DEFAULT_FOLLOW_LIST else 2)
    assert rule(call, "float16")[0] == expected


def test_clip_follows_the_conv_in_float16():
    """clip is a FOLLOW op in v0.19: after an ALWAYS conv it stays in float16, no cast back."""
    data = relay.var("data", shape=(1, 3, 8, 8))
    weight = relay.var("weight", shape=(4, 3, 3, 3))
    mod = _typed(relay.clip(_conv(data, weight, "float32"), -1.0, 1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing rule would warn
        out = ToMixedPrecision("float16")(mod)
    conv = _conv(relay.cast(data, "float16"), relay.cast(weight, "float16"), "float16")
    tvm.ir.assert_structural_equal(out, _typed(relay.clip(conv, -1.0, 1.0)))
    rng = np.random.default_rng(0)
    args = [rng.uniform(-1, 1, (1, 3, 8, 8)).astype("float32"),
            rng.uniform(-1, 1, (4, 3, 3, 3)).astype("float32")]
    np.testing.assert_allclose(_run(out, args).astype("float32"), _run(mod, args),
                               rtol=1e-2, atol=1e-2)


def test_layer_norm_is_never_run_in_float16():
    data = relay.var("data", shape=(2, 6))
    weight = relay.var("weight", shape=(6, 6))
    gamma = relay.const(np.ones(6, "float32"))
    beta = relay.const(np.zeros(6, "float32"))
    dense = relay.nn.dense(data, weight)
    mod = _typed(relay.nn.layer_norm(dense, gamma, beta))
    out = ToMixedPrecision("float16")(mod)
    dense16 = relay.nn.dense(relay.cast(data, "float16"), relay.cast(weight, "float16"),
                             out_dtype="float16")
    expected = relay.nn.layer_norm(relay.cast(dense16, "float32"), gamma, beta)
    tvm.ir.assert_structural_equal(out, _typed(expected))
    rng = np.random.default_rng(1)
    args = [rng.uniform(-1, 1, (2, 6)).astype("float32"),
            rng.uniform(-1, 1, (6, 6)).astype("float32")]
    np.testing.assert_allclose(_run(out, args), _run(mod, args), rtol=1e-2, atol=1e-2)


def test_register_func_to_op_list_overrides_with_a_higher_level():
    """A custom rule (at a higher level) turns relu into a NEVER op; put back afterwards."""
    op = Op.get("nn.relu")
    saved = op._attrs.get("FTVMMixedPrecisionConversionType")

    def never(call, mixed_type):
        return [mp.MIXED_PRECISION_NEVER, mixed_type, mixed_type]

    try:
        mp.register_mixed_precision_conversion("nn.relu", never, level=11)
        data = relay.var("data", shape=(2, 6))
        weight = relay.var("weight", shape=(6, 6))
        mod = _typed(relay.nn.relu(relay.nn.dense(data, weight)))
        out = ToMixedPrecision("float16")(mod)
        dense16 = relay.nn.dense(relay.cast(data, "float16"), relay.cast(weight, "float16"),
                                 out_dtype="float16")
        tvm.ir.assert_structural_equal(out, _typed(relay.nn.relu(relay.cast(dense16,
                                                                             "float32"))))
    finally:
        op.reset_attr("FTVMMixedPrecisionConversionType")
        op._attrs["FTVMMixedPrecisionConversionType"] = saved
    assert op.get_attr("FTVMMixedPrecisionConversionType") is saved[1]


def test_register_func_to_op_list_decorator_and_same_level_error():
    decorate = mp.register_func_to_op_list(["nn.relu"])
    with pytest.raises(ValueError, match="already registered at level 10"):
        decorate(lambda call, t: [mp.MIXED_PRECISION_FOLLOW, t, t])


def test_deep_chain_of_follow_ops():
    x = relay.var("x", shape=(2, 2))
    e = relay.nn.dense(x, relay.var("w", shape=(2, 2)))
    for _ in range(100_000):
        e = relay.clip(e, -1.0, 1.0)
    out = ToMixedPrecision("float16")(_typed(e))
    assert out["main"].body.checked_type.dtype == "float16"
