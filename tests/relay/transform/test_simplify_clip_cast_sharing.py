"""SimplifyExpr's clip-and-casts rule leaves a chain it cannot shorten as it is: rebuilt, a
``cast(clip(x), "uint8")`` read by two consumers (a quantized conv output feeding the next
conv and a dequantizing ``cast(., "float32")``) became two nodes, so fusion wrote the float
tensor and cast it to uint8 in a kernel of its own."""

import numpy as np
from pass_test_util import check_numerics, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.ir.op import Op
from minitvm.relay.analysis.properties import walk


def _casts_to(func, dtype: str) -> int:
    return sum(1 for e in walk(func) if isinstance(e, relay.Call) and e.op is Op.get("cast")
               and e.attrs.dtype == dtype)


def test_shared_narrowing_cast_stays_shared():
    x = relay.var("x", shape=(1, 4, 6, 6))
    q = relay.cast(relay.clip(relay.round(x), 0.0, 255.0), "uint8")
    deq = relay.multiply(relay.cast(q, "float32"), relay.const(0.5))
    w = relay.const(np.ones((4, 4, 1, 1), "uint8"))
    conv = relay.cast(relay.nn.conv2d(q, w, out_dtype="int32"), "float32")
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x], relay.add(deq, conv))))
    out = run_pass(relay.transform.SimplifyExpr(), mod)
    assert _casts_to(out["main"], "uint8") == 1
    check_numerics(mod, out, [np.random.default_rng(0).uniform(-5, 300, (1, 4, 6, 6))
                              .astype("float32")])


def test_removable_cast_is_still_removed():
    """``cast(cast(clip(i), "int32"), "int16")`` of an int8 clip into [0, 100]: both casts hold
    the range, the outer one is kept as the result's dtype."""
    x = relay.var("x", shape=(5,), dtype="int8")
    y = relay.cast(relay.cast(relay.clip(x, 0, 100), "int32"), "int16")
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], y)))
    out = run_pass(relay.transform.SimplifyExpr(), mod)
    assert _casts_to(out["main"], "int32") == 0 and _casts_to(out["main"], "int16") == 1
    check_numerics(mod, out, [np.array([-3, 0, 50, 100, 127], "int8")])
