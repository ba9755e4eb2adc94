import numpy as np
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform.canonicalize_cast import dtype_bits


def test_pass_info():
    p = relay.transform.CanonicalizeCast()
    assert (p.info.name, p.info.opt_level, list(p.info.required)) == (
        "CanonicalizeCast", 3, ["InferType"])


def _build(dup: bool):
    # TVM's test_canonicalize_cast, with a reduction instead of conv2d to make the int8 tensor
    data = relay.var("data", shape=(1, 16, 7, 7), dtype="int8")
    bias1 = relay.var("bias1", shape=(16, 1, 1), dtype="int32")
    bias2 = relay.var("bias2", shape=(16, 1, 1), dtype="int32")
    x = relay.abs(data)
    x1 = relay.cast(x, dtype="int32")
    x2 = relay.cast(x, dtype="int32") if dup else x1
    y = relay.add(relay.add(x1, bias1), relay.add(x2, bias2))
    return relay.Function([data, bias1, bias2], y)


def test_shared_upcast_duplicated():
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(_build(False)))
    seq = tvm.transform.Sequential([relay.transform.CanonicalizeCast()])
    with tvm.transform.PassContext(opt_level=3):
        out = run_pass(seq, mod)
    tvm.ir.assert_structural_equal(out["main"], infer(_build(True)))
    rng = np.random.default_rng(0)
    args = [rng.integers(-5, 5, (1, 16, 7, 7)).astype("int8"),
            rng.integers(-5, 5, (16, 1, 1)).astype("int32"),
            rng.integers(-5, 5, (16, 1, 1)).astype("int32")]
    check_numerics(mod, out, args)


def test_downcast_and_single_use_untouched():
    x = relay.var("x", shape=(4,), dtype="float32")
    c = relay.cast(x, "float16")
    f = relay.Function([x], relay.add(c, c))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    out = relay.transform.CanonicalizeCast()(mod)
    tvm.ir.assert_structural_equal(out["main"], mod["main"])


def test_dtype_bits():
    assert [dtype_bits(d) for d in ("int8", "float32", "bool", "uint16")] == [8, 32, 1, 16]
