"""CanonicalizeCast builds TVM's program: TVM v0.19's own case, restated.

An up-cast of a conv2d result shared by several elementwise consumers is duplicated, one cast per
consumer, so each can later fuse with its consumer.
"""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform


def _program(data, weight, bias1, bias2, duplicated: bool):
    x = relay.nn.conv2d(data, weight, channels=4, kernel_size=(3, 3), padding=(1, 1),
                        out_dtype="int8")
    x1 = relay.cast(x, dtype="int32")
    x2 = relay.cast(x, dtype="int32") if duplicated else x1
    y = relay.add(relay.add(x1, bias1), relay.add(x2, bias2))
    return relay.Function([data, weight, bias1, bias2], y)


def test_canonicalize_cast():
    data = relay.var("data", shape=(1, 4, 5, 5), dtype="int8")
    weight = relay.var("weight")
    bias1 = relay.var("bias1", shape=(4, 1, 1), dtype="int32")
    bias2 = relay.var("bias2", shape=(4, 1, 1), dtype="int32")
    mod = tvm.IRModule.from_expr(_program(data, weight, bias1, bias2, duplicated=False))
    seq = tvm.transform.Sequential([transform.InferType(), transform.CanonicalizeCast(),
                                    transform.InferType()])
    with tvm.transform.PassContext(opt_level=3):
        out = seq(mod)
    mod["expected"] = _program(data, weight, bias1, bias2, duplicated=True)
    mod = transform.InferType()(mod)
    tvm.ir.assert_structural_equal(out["main"], mod["expected"])

    rng = np.random.default_rng(0)
    args = [rng.integers(-3, 3, (1, 4, 5, 5)).astype("int8"),
            rng.integers(-3, 3, (4, 4, 3, 3)).astype("int8"),
            rng.integers(-9, 9, (4, 1, 1)).astype("int32"),
            rng.integers(-9, 9, (4, 1, 1)).astype("int32")]
    before = relay.create_executor("debug", mod=mod).evaluate(mod.get_global_var("main"))
    after = relay.create_executor("debug", mod=out).evaluate(out.get_global_var("main"))
    np.testing.assert_array_equal(before(*args).numpy(), after(*args).numpy())
