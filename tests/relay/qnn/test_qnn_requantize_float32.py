"""compute_dtype="float32" requantization (the call's attribute or ``requantize_config``'s,
which qnn.add follows too): canonicalized to float32 arithmetic, within one step of the float64
reference (equal away from rounding boundaries)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.analysis import post_order_visit

qnn = relay.qnn.op
RNG = np.random.default_rng(5)


def _float_dtypes(mod) -> set:
    mod = relay.qnn.transform.CanonicalizeOps()(relay.transform.InferType()(mod))
    found = set()
    post_order_visit(mod["main"], lambda e: found.add(e.checked_type.dtype)
                     if isinstance(e, relay.Call) else None)
    return {d for d in found if d.startswith("float")}


def _requantize_mod(compute="None"):
    x = relay.var("x", shape=(4000,), dtype="int32")
    y = qnn.requantize(x, relay.const(np.float32(0.0123)), relay.const(np.int32(3)),
                       relay.const(np.float32(0.05)), relay.const(np.int32(128)),
                       compute_dtype=compute, out_dtype="uint8")
    return tvm.IRModule.from_expr(relay.Function([x], y))


def _build_run(mod, x):
    with tvm.transform.PassContext(opt_level=3):
        return relay.create_executor("graph", mod=mod, target="llvm").evaluate()(x).numpy()


@pytest.mark.parametrize("how", ["attribute", "config"])
def test_requantize_in_float32(how):
    x = RNG.integers(-20000, 20000, size=4000).astype("int32")
    ref = _build_run(_requantize_mod(), x)
    if how == "attribute":
        mod = _requantize_mod("float32")
        assert _float_dtypes(mod) == {"float32"}
        got = _build_run(mod, x)
    else:
        with relay.qnn.op.requantize_config(compute_dtype="float32"):
            assert _float_dtypes(_requantize_mod()) == {"float32"}
            got = _build_run(_requantize_mod(), x)
    # the int64 default is TVM's fixed-point multiply: no float arithmetic at all
    assert _float_dtypes(_requantize_mod()) == set()
    diff = np.abs(got.astype(int) - ref.astype(int))
    assert diff.max() <= 1 and np.count_nonzero(diff) <= 4


def test_qnn_add_follows_the_config():
    a, b = (relay.var(n, shape=(64,), dtype="uint8") for n in "ab")
    c = relay.const
    y = qnn.add(a, b, c(np.float32(0.05)), c(np.int32(128)), c(np.float32(0.07)),
                c(np.int32(100)), c(np.float32(0.1)), c(np.int32(0)))
    mod = tvm.IRModule.from_expr(relay.Function([a, b], y))
    av, bv = (RNG.integers(0, 256, size=64).astype("uint8") for _ in range(2))
    with relay.qnn.op.requantize_config(compute_dtype="float32"):
        assert _float_dtypes(mod) == {"float32"}
        with tvm.transform.PassContext(opt_level=3):
            got = relay.create_executor("graph", mod=mod, target="llvm").evaluate()(av, bv)
    exact = np.clip(np.floor((av - 128.0) * 0.5 + 0.5) + np.floor((bv - 100.0) * 0.7 + 0.5),
                    0, 255)
    assert np.abs(got.numpy().astype(int) - exact).max() <= 1


def test_whole_build_cache_keys_on_the_requantize_config():
    """A build under requantize_config is not the cached build of the same module without it
    (relay.build's whole-build cache had keyed only on the PassContext)."""
    from minitvm.backend.options import LoweringOptions
    from minitvm.relay.backend.build_cache import build_key

    x = relay.var("x", shape=(2,), dtype="int32")
    one = relay.const(np.float32(1.0))
    y = qnn.requantize(x, one, relay.const(np.int32(0)), one, relay.const(np.int32(0)),
                       out_dtype="int32")
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    with tvm.transform.PassContext(opt_level=3):
        plain = build_key(mod, {}, "llvm", LoweringOptions())
        with relay.qnn.op.requantize_config(compute_dtype="float32"):
            f32 = build_key(mod, {}, "llvm", LoweringOptions())
        with relay.qnn.op.requantize_config(rounding="TONEAREST"):
            nearest = build_key(mod, {}, "llvm", LoweringOptions())
    assert plain is not None and len({plain, f32, nearest}) == 3
    # built after the plain build (cached), the float32 one still computes in float32: 2**25 + 1
    # has no float32 of its own
    v = np.array([2**25 + 1, 5], "int32")
    np.testing.assert_array_equal(_build_run(mod, v), v)
    with relay.qnn.op.requantize_config(compute_dtype="float32"):
        np.testing.assert_array_equal(_build_run(mod, v), [2**25, 5])
