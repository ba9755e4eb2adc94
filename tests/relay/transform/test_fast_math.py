import numpy as np
from pass_test_util import check_numerics, run_pass

import minitvm as tvm
from minitvm import relay


def test_pass_info():
    p = relay.transform.FastMath()
    assert (p.info.name, p.info.opt_level, list(p.info.required)) == (
        "FastMath", 4, ["InferType"])


def _rewritten(build, shape=(64,)):
    x = relay.var("x", shape=shape)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], build(x))))
    return mod, run_pass(relay.transform.FastMath(), mod)


def test_ops_replaced():
    for build, fast in [(relay.exp, "fast_exp"), (relay.tanh, "fast_tanh"),
                        (relay.erf, "fast_erf"),
                        (lambda x: relay.nn.softmax(x, axis=0), "nn.fast_softmax")]:
        mod, out = _rewritten(build)
        body = out["main"].body
        assert body.op.name == fast
        assert body.attrs is mod["main"].body.attrs
        assert fast in out.astext()


def test_within_stated_bound():
    ranges = [(relay.exp, -88, 88), (relay.tanh, -10, 10), (relay.erf, -10, 10),
              (lambda x: relay.nn.softmax(x, axis=0), -10, 10)]
    for build, lo, hi in ranges:
        mod, out = _rewritten(build, (1000,))
        data = np.linspace(lo, hi, 1000).astype("float32")
        check_numerics(mod, out, [data], rtol=1e-5, atol=1e-5)


def test_other_ops_untouched():
    mod, out = _rewritten(lambda x: relay.log(relay.abs(x)))
    assert out["main"].body.op.name == "log"
    tvm.ir.assert_structural_equal(out["main"], mod["main"])


def test_in_pipeline_only_at_level_4():
    x = relay.var("x", shape=(4,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.exp(x)))
    seq = tvm.transform.Sequential([relay.transform.FastMath()])
    with tvm.transform.PassContext(opt_level=3):
        assert seq(mod)["main"].body.op.name == "exp"
    with tvm.transform.PassContext(opt_level=3, required_pass=["FastMath"]):
        assert seq(mod)["main"].body.op.name == "fast_exp"
