"""The seeds' pipelines with the real Relay passes: text round trip, explain, timing, bisection."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay

pytestmark = pytest.mark.skipif(
    not all(hasattr(relay.transform, n) for n in ("FoldConstant", "EliminateCommonSubexpr",
                                                   "FuseOps")),
    reason="the Relay passes of the seeds are not available yet")


def example():
    shape = (1, 4, 6, 6)
    c = relay.const(np.random.default_rng(0).standard_normal(shape).astype("float32"))
    x = relay.var("x", relay.TensorType(shape, "float32"))
    y = relay.multiply(relay.add(c, c), relay.const(2, "float32"))
    y = relay.add(x, y)
    z = relay.add(y, c)
    z1 = relay.add(y, c)
    return relay.Function([x], relay.add(z, z1))


def seed_seq():
    return tvm.transform.Sequential([relay.transform.FoldConstant(),
                                     relay.transform.EliminateCommonSubexpr(),
                                     relay.transform.FuseOps(fuse_opt_level=2)])


def test_seed_sequential_text_round_trip():
    text = "FoldConstant,EliminateCommonSubexpr,FuseOps(fuse_opt_level=2)"
    assert str(seed_seq()) == text
    again = tvm.transform.parse_pipeline(text)
    assert str(again) == text
    mod = tvm.IRModule.from_expr(example())
    with tvm.transform.PassContext(opt_level=3):
        a, b = seed_seq()(mod), again(mod)
    tvm.ir.assert_structural_equal(a, b)


def test_explain_answers_seed002():
    ex = tvm.transform.explain(seed_seq())
    assert [(e.name, e.runs) for e in ex if e.name != "InferType"] == [
        ("FoldConstant", True), ("EliminateCommonSubexpr", False), ("FuseOps", True)]
    reasons = [e.reason for e in ex if e.name == "InferType"]
    assert reasons[0].startswith("after function pass FoldConstant")
    assert reasons[1].startswith("required by FuseOps")


def test_timing_and_bisection_on_seed_pipeline():
    mod = tvm.IRModule.from_expr(example())
    bis = tvm.instrument.NumericalBisect(rtol=1e-5, atol=1e-5)
    with tvm.transform.PassContext(opt_level=3, instruments=[
            tvm.instrument.PassTimingInstrument(), bis]):
        seed_seq()(mod)
        report = tvm.instrument.PassTimingInstrument.render()
    assert "\tFoldConstant:" in report and "\tFuseOps:" in report
    assert bis.first_bad is None, bis.report()
    assert "FuseOps" in bis.checked


def test_verify_each_on_seed_pipeline():
    mod = tvm.IRModule.from_expr(example())
    with tvm.transform.PassContext(opt_level=3, config={"transform.verify_each": True}):
        out = seed_seq()(mod)
    assert tvm.transform.check_property("fused", out) is None
