"""ToMixedPrecision: float16 per TVM's ALWAYS/FOLLOW/NEVER lists, outputs close to float32."""

from __future__ import annotations

import numpy as np
import pytest
from pass_test_util import evaluate, infer, random_inputs, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.testing.temp_op_attr import TempOpAttr
from minitvm.relay.transform import ToMixedPrecision
from minitvm.relay.transform.to_mixed_precision import (
    MIXED_PRECISION_FOLLOW,
    register_mixed_precision_conversion,
)


def _convert(func, **kw):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(func))
    out = relay.transform.InferType()(run_pass(ToMixedPrecision(**kw), mod))
    return mod, out


def _close(mod, out, rtol=1e-2, atol=1e-2):
    args = random_inputs(mod)
    want, got = evaluate(mod, args), evaluate(out, args)
    np.testing.assert_allclose(np.asarray(got, "float32"), want, rtol=rtol, atol=atol)


def test_single_conv():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    mod, out = _convert(relay.Function([x, w], relay.nn.conv2d(x, w, padding=(1, 1))))
    expected = relay.Function([x, w], relay.nn.conv2d(
        relay.cast(x, "float16"), relay.cast(w, "float16"), padding=(1, 1),
        out_dtype="float16"))
    assert tvm.ir.structural_equal(out["main"], infer(expected))
    _close(mod, out)


def test_follow_and_never():
    x = relay.var("x", shape=(2, 4))
    w = relay.var("w", shape=(3, 4))
    y = relay.nn.relu(relay.add(relay.nn.dense(x, w), relay.const(1.0)))
    mod, out = _convert(relay.Function([x, w], relay.nn.softmax(y)))
    x16, w16 = relay.cast(x, "float16"), relay.cast(w, "float16")
    d = relay.nn.dense(x16, w16, out_dtype="float16")
    r = relay.nn.relu(relay.add(d, relay.const(1.0, "float16")))
    expected = relay.Function([x, w], relay.nn.softmax(relay.cast(r, "float32")))
    assert tvm.ir.structural_equal(out["main"], infer(expected))
    _close(mod, out)


def test_casts_are_shared_and_outputs_can_be_kept():
    x = relay.var("x", shape=(1, 2, 6, 6))
    w = relay.var("w", shape=(2, 2, 3, 3))
    a = relay.nn.conv2d(x, w, padding=(1, 1))
    b = relay.nn.conv2d(x, w, padding=(1, 1), strides=(1, 1), dilation=(1, 1), groups=1,
                        channels=2)
    mod, out = _convert(relay.Function([x, w], relay.add(a, b)))
    casts = []
    relay.analysis.post_order_visit(out["main"], lambda e: casts.append(e) if isinstance(
        e, relay.Call) and e.op.name == "cast" else None)
    assert len(casts) == 2  # x and w cast once each
    assert out["main"].checked_type.ret_type.dtype == "float16"
    with tvm.transform.PassContext(config={
            "relay.ToMixedPrecision.keep_orig_output_dtype": True}):
        kept = relay.transform.InferType()(ToMixedPrecision()(mod))
    assert kept["main"].checked_type.ret_type.dtype == "float32"
    _close(mod, kept)


def test_resnet_block_numerics():
    x = relay.var("x", shape=(1, 4, 8, 8))
    w1 = relay.var("w1", shape=(4, 4, 3, 3))
    w2 = relay.var("w2", shape=(4, 4, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(x, w1, padding=(1, 1)))
    y = relay.nn.conv2d(y, w2, padding=(1, 1))
    y = relay.nn.relu(relay.add(y, x))
    y = relay.mean(relay.nn.max_pool2d(y, pool_size=(2, 2), strides=(2, 2)), axis=[2, 3])
    mod, out = _convert(relay.Function([x, w1, w2], y))
    assert "float16" in out.astext()
    _close(mod, out, rtol=2e-2, atol=5e-2)


def test_missing_op_modes():
    x = relay.var("x", shape=(2, 3))
    f = relay.Function([x], relay.nn.relu(relay.cos(relay.nn.relu(x))))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    with pytest.raises(ValueError, match="operator cos has no mixed precision"):
        ToMixedPrecision(missing_op_mode=0)(mod)
    with pytest.warns(UserWarning, match="operator cos is not in any list"):
        ToMixedPrecision(missing_op_mode=1)(mod)
    out = relay.transform.InferType()(ToMixedPrecision(missing_op_mode=2)(mod))
    cos = out["main"].body.args[0]
    assert cos.checked_type.dtype == "float32"


def test_custom_registration_and_bad_arguments():
    x = relay.var("x", shape=(2, 3))
    f = relay.Function([x], relay.atan(x))
    with TempOpAttr("atan", "FTVMMixedPrecisionConversionType",
                    lambda call, t: [MIXED_PRECISION_FOLLOW, t, t]):
        mod, out = _convert(f)
    assert out["main"].checked_type.ret_type.dtype == "float16"
    assert register_mixed_precision_conversion("nn.relu") is not None  # decorator form
    with pytest.raises(ValueError, match="missing_op_mode must be 0, 1 or 2"):
        ToMixedPrecision(missing_op_mode=5)
    with pytest.raises(ValueError, match="must be a float type"):
        ToMixedPrecision("int8")


def test_deep_chain():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.nn.relu(e)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], e)))
    out = ToMixedPrecision()(mod)
    assert isinstance(out["main"], relay.Function)
