"""MergeCompilerRegions against TVM v0.19's documented cases
(test_pass_merge_compiler_regions.py), restated in our words: annotated Before -> merged
Expected (TVM's program, structurally), plus interpreter numerics."""

from __future__ import annotations

import numpy as np
import pytest
from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform
from minitvm.relay.op.annotation import compiler_begin as cb
from minitvm.relay.op.annotation import compiler_end as ce
from minitvm.relay.testing.temp_op_attr import TempOpAttr


def _typed(func):
    return transform.InferType()(tvm.IRModule.from_expr(func))


def test_diamond_with_an_unsupported_side():
    """abs -> (relu | tanh) -> add: relu joins abs's region, tanh stays apart, so the add's
    region cannot absorb both (it would depend on itself through tanh)."""
    data = relay.var("data", shape=(10, 10))
    o1 = relay.abs(cb(data, "test"))
    o2 = relay.nn.relu(cb(ce(o1, "test"), "test"))
    x = relay.tanh(cb(ce(o1, "test"), "default"))
    o3 = relay.add(cb(ce(o2, "test"), "test"), cb(ce(x, "default"), "test"))
    before = _typed(relay.Function([data], ce(o3, "test")))
    got = transform.MergeCompilerRegions()(before)

    e1 = relay.abs(cb(data, "test"))
    e2 = relay.nn.relu(e1)
    ex = relay.tanh(cb(ce(e1, "test"), "default"))
    e3 = relay.add(cb(ce(e2, "test"), "test"), cb(ce(ex, "default"), "test"))
    tvm.ir.assert_structural_equal(transform.InferType()(got),
                                   _typed(relay.Function([data], ce(e3, "test"))))
    check_numerics(before, got)


def test_rfc_example_graph():
    """The graph of TVM's partitioning RFC: adds on "test", subtracts on "default"."""
    ins = [relay.var(f"in_{i}", shape=(10, 10)) for i in range(1, 11)]
    i1, i2, i3, i4, i5, i6, i7, i8, i9, i10 = ins

    def t(e):
        return cb(e, "test")

    def d(e):
        return cb(e, "default")

    n0 = relay.add(t(i1), t(i2))
    n1 = relay.add(t(i3), t(i4))
    n2 = relay.add(t(ce(n0, "test")), t(ce(n1, "test")))
    n3 = relay.subtract(d(i5), d(i6))
    n4 = relay.subtract(d(i7), d(ce(n3, "default")))
    n5 = relay.add(t(ce(n2, "test")), t(ce(n4, "default")))
    n6 = relay.subtract(d(i8), d(ce(n5, "test")))
    n7 = relay.add(t(i9), t(ce(n5, "test")))
    n8 = relay.add(t(ce(n6, "default")), t(ce(n7, "test")))
    n9 = relay.add(t(i10), t(ce(n8, "test")))
    before = _typed(relay.Function(ins, ce(n9, "test")))
    got = transform.InferType()(transform.MergeCompilerRegions()(before))

    m0 = relay.add(t(i1), t(i2))
    m1 = relay.add(t(i3), t(i4))
    m2 = relay.add(m0, m1)
    m3 = relay.subtract(d(i5), d(i6))
    m4 = relay.subtract(d(i7), m3)
    m5 = relay.add(m2, t(ce(m4, "default")))
    m6 = relay.subtract(d(i8), d(ce(m5, "test")))
    m7 = relay.add(t(i9), m5)
    m8 = relay.add(t(ce(m6, "default")), t(ce(m7, "test")))
    m9 = relay.add(t(i10), m8)
    tvm.ir.assert_structural_equal(got, _typed(relay.Function(ins, ce(m9, "test"))))
    check_numerics(before, got)


@pytest.mark.parametrize("non_call", [True, False])
def test_if_else_regions_then_partition(non_call):
    """TVM checks that annotate -> merge -> partition completes. A region reached only through
    the If (outside every region) is never merged with, so partitioning finds no cycle."""
    target = "t2merge_if"
    data = relay.var("data", shape=(1, 8))
    add0 = relay.add(data, data)
    sub0 = relay.subtract(add0, data)
    ife = relay.If(relay.equal(relay.sum(add0), relay.sum(sub0)), relay.sigmoid(add0),
                   relay.sigmoid(sub0))
    mod = tvm.IRModule.from_expr(relay.Function([data], relay.add(add0, relay.erf(ife))))
    with TempOpAttr("sigmoid", "target." + target, lambda e: True), \
            TempOpAttr("erf", "target." + target, lambda e: True), \
            TempOpAttr("add", "target." + target, lambda e: True):
        annotated = transform.AnnotateTarget(target, non_call)(mod)
    merged = transform.MergeCompilerRegions()(annotated)
    assert f'compiler="{target}"' in merged.astext()
    x = np.random.default_rng(0).standard_normal((1, 8)).astype("float32")
    check_numerics(mod, merged, [x])
    parted = transform.PartitionGraph()(merged)
    assert any(gv.name_hint.startswith("tvmgen_default_" + target) for gv in parted.functions)
    check_numerics(mod, parted, [x])


def test_partition_refuses_regions_that_form_a_cycle():
    """Hand-annotated regions where one region needs its own output through an If outside
    every region: a clear error, never a hang."""
    target = "t2cycle"
    data = relay.var("data", shape=(2,))
    a = cb(data, target)
    add0 = relay.add(a, a)
    out0 = ce(add0, target)
    ife = relay.If(relay.equal(relay.sum(out0), relay.const(0.0)), out0, relay.negative(out0))
    both = relay.add(add0, cb(ife, target))  # the If feeds back into the first region
    mod = _typed(relay.Function([data], ce(both, target)))
    with pytest.raises(ValueError, match="cycle"):
        transform.PartitionGraph()(mod)
