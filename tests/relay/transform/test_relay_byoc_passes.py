"""BYOC passes: MergeComposite, AnnotateTarget (seed 004), MergeCompilerRegions,
PartitionGraph, RewriteAnnotatedOps; Before/Expected IR and interpreter numerics."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform
from minitvm.relay.dataflow_pattern import is_op, wildcard
from minitvm.relay.op.annotation import compiler_begin as cb
from minitvm.relay.op.annotation import compiler_end as ce
from minitvm.relay.testing.temp_op_attr import TempOpAttr


def _run(mod, *args):
    return relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()


def _rand(*shape):
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype("float32")


def _ext_attrs(func, compiler, name):
    return func.with_attr("Primitive", tvm.tir.IntImm("int32", 1)).with_attr(
        "Inline", tvm.tir.IntImm("int32", 1)).with_attr("Compiler", compiler).with_attr(
        "global_symbol", name)


def _always(expr):
    return True


def test_annotate_target_seed004_two_targets():
    """Seed 004: conv2d registered for "dnnl" and "xyzlib"; the first listed target wins."""
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.relu(relay.nn.conv2d(x, w))))
    with TempOpAttr("nn.conv2d", "target.dnnl", _always), \
            TempOpAttr("nn.conv2d", "target.xyzlib", _always), \
            TempOpAttr("nn.relu", "target.xyzlib", _always), \
            TempOpAttr("nn.relu", "target.dnnl", lambda expr: False):
        # relu's own dnnl predicate (registered when relay.op.contrib.dnnl is imported by
        # another test) is switched off here, so the result does not depend on test order
        out = transform.InferType()(transform.AnnotateTarget(["dnnl", "xyzlib"])(mod))
        swapped = transform.AnnotateTarget(["xyzlib", "dnnl"])(mod)

    conv = relay.nn.conv2d(cb(x, "dnnl"), cb(w, "dnnl"))
    relu = relay.nn.relu(cb(ce(conv, "dnnl"), "xyzlib"))
    expected = tvm.IRModule.from_expr(relay.Function([x, w], ce(relu, "xyzlib")))
    tvm.ir.assert_structural_equal(out, transform.InferType()(expected))
    assert "compiler=\"xyzlib\"" in swapped.astext() and "dnnl" not in swapped.astext()


def test_annotate_target_old_style_predicate_and_default():
    x = relay.var("x", shape=(4,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.abs(relay.nn.relu(x))))
    with TempOpAttr("nn.relu", "target.foo", lambda attrs, args: True):
        out = transform.AnnotateTarget("foo")(mod)
    relu = relay.nn.relu(cb(x, "foo"))
    ab = relay.abs(cb(ce(relu, "foo"), "default"))
    expected = relay.Function([x], ce(ab, "default"))
    tvm.ir.assert_structural_equal(out["main"], transform.InferType()(
        tvm.IRModule.from_expr(expected))["main"])
    np.testing.assert_allclose(_run(out, _rand(4)), _run(mod, _rand(4)))


def test_annotate_target_tuples_and_composites():
    x = relay.var("x", shape=(4,))
    comp_x = relay.var("cx")
    comp = relay.Function([comp_x], relay.nn.relu(comp_x)).with_attr("Composite", "foo.relu")
    t = relay.Tuple([relay.Call(comp, [x]), x])
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.TupleGetItem(t, 0)))
    out = transform.AnnotateTarget(["foo"])(mod)
    text = out.astext()
    assert text.count('compiler="foo"') == 2  # the composite call went to foo: begin + end
    assert 'compiler_begin(%x, compiler="foo")' in text
    assert "Composite=\"foo.relu\"" in text
    out2 = transform.AnnotateTarget(["foo"], include_non_call_ops=False)(mod)
    # TVM's call-ops-only mode: the tuple and projection stay outside any region (no default)
    assert 'compiler="default"' not in out2.astext()
    assert isinstance(out2["main"].body.tuple_value, relay.Tuple)
    np.testing.assert_allclose(_run(out, _rand(4)), np.maximum(_rand(4), 0))
    with pytest.raises(ValueError, match="no targets"):
        transform.AnnotateTarget([])


def _annotated_diamond():
    """conv -> relu -> add, with abs(conv) on the default target between."""
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    conv = relay.nn.conv2d(cb(x, "t"), cb(w, "t"), padding=(1, 1))
    relu = relay.nn.relu(cb(ce(conv, "t"), "t"))
    ab = relay.abs(cb(ce(conv, "t"), "default"))
    add = relay.add(cb(ce(relu, "t"), "t"), cb(ce(ab, "default"), "t"))
    return x, w, conv, tvm.IRModule.from_expr(relay.Function([x, w], ce(add, "t")))


def test_merge_compiler_regions_before_expected():
    x, w, _, before = _annotated_diamond()
    after = transform.InferType()(transform.MergeCompilerRegions()(transform.InferType()(before)))
    conv = relay.nn.conv2d(cb(x, "t"), cb(w, "t"), padding=(1, 1))
    relu = relay.nn.relu(conv)  # merged: no end/begin between conv and relu
    ab = relay.abs(cb(ce(conv, "t"), "default"))
    # add cannot join conv/relu's region: abs (default) sits on a path between them
    add = relay.add(cb(ce(relu, "t"), "t"), cb(ce(ab, "default"), "t"))
    expected = tvm.IRModule.from_expr(relay.Function([x, w], ce(add, "t")))
    tvm.ir.assert_structural_equal(after, transform.InferType()(expected))
    args = (_rand(1, 3, 8, 8), _rand(4, 3, 3, 3))
    np.testing.assert_allclose(_run(after, *args), _run(before, *args), rtol=1e-5)


def test_partition_graph_before_expected_and_numerics():
    x, w, _, before = _annotated_diamond()
    merged = transform.MergeCompilerRegions()(transform.InferType()(before))
    out = transform.PartitionGraph()(merged)

    i0 = relay.var("t_0_i0", shape=(1, 3, 8, 8))
    i1 = relay.var("t_0_i1", shape=(4, 3, 3, 3))
    conv = relay.nn.conv2d(i0, i1, padding=(1, 1))
    f0 = _ext_attrs(relay.Function([i0, i1], relay.Tuple([relay.nn.relu(conv), conv])), "t",
                    "tvmgen_default_t_main_0")
    j0 = relay.var("t_1_i0", shape=(1, 4, 8, 8))
    j1 = relay.var("t_1_i1", shape=(1, 4, 8, 8))
    # TVM numbers regions by their first compiler_begin: x, w open 0 and 1, the add's is 2
    f1 = _ext_attrs(relay.Function([j0, j1], relay.add(j0, j1)), "t", "tvmgen_default_t_main_2")
    expected = tvm.IRModule()
    g0, g1 = relay.GlobalVar("tvmgen_default_t_main_0"), relay.GlobalVar("tvmgen_default_t_main_2")
    expected[g0] = f0
    expected[g1] = f1
    call = relay.Call(g0, [x, w])
    main = relay.Call(g1, [relay.TupleGetItem(call, 0), relay.abs(relay.TupleGetItem(call, 1))])
    expected["main"] = relay.Function([x, w], main)
    tvm.ir.assert_structural_equal(out, transform.InferType()(expected))
    assert out[g0.name_hint].get_attr("Compiler") == "t"
    args = (_rand(1, 3, 8, 8), _rand(4, 3, 3, 3))
    np.testing.assert_allclose(_run(out, *args), _run(before, *args), rtol=1e-5)
    kept = transform.PartitionGraph(bind_constants=False)(merged)  # no constants: same
    tvm.ir.assert_structural_equal(kept, out)


def test_partition_graph_binds_constants_and_keeps_input():
    x = relay.var("x", shape=(4,))
    c = relay.const(np.arange(4, dtype="float32"))
    body = ce(relay.add(cb(x, "t"), cb(c, "t")), "t")
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    out = transform.PartitionGraph()(mod)
    ext = out["tvmgen_default_t_main_0"]
    assert len(ext.params) == 1 and isinstance(ext.body.args[1], relay.Constant)
    assert mod["main"].body is body  # the input module is unchanged
    np.testing.assert_allclose(_run(out, _rand(4)), _rand(4) + np.arange(4))


def test_merge_composite_before_expected_and_numerics():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    b = relay.var("b", shape=(4,))
    r = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w), b))
    mod = tvm.IRModule.from_expr(relay.Function([x, w, b], relay.abs(r)))
    pat = is_op("nn.relu")(is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), wildcard()),
                                                 wildcard()))
    out = transform.InferType()(transform.MergeComposite([("t.conv_bias_relu", pat)])(mod))
    a0, a1, a2 = [relay.var(f"FunctionVar_0_{i}") for i in range(3)]
    fn = relay.Function([a0, a1, a2], relay.nn.relu(relay.nn.bias_add(
        relay.nn.conv2d(a0, a1), a2))).with_attr(
        "PartitionedFromPattern", "nn.conv2d_nn.bias_add_nn.relu_").with_attr(
        "Composite", "t.conv_bias_relu")
    expected = tvm.IRModule.from_expr(relay.Function([x, w, b], relay.abs(
        relay.Call(fn, [x, w, b]))))
    tvm.ir.assert_structural_equal(out, transform.InferType()(expected))
    args = (_rand(1, 3, 8, 8), _rand(4, 3, 3, 3), _rand(4))
    np.testing.assert_allclose(_run(out, *args), _run(mod, *args), rtol=1e-5)
    # a check that refuses every match leaves the module as it was
    same = transform.InferType()(transform.MergeComposite([("t.x", pat, lambda e: False)])(mod))
    tvm.ir.assert_structural_equal(same, transform.InferType()(mod))
    with pytest.raises(ValueError, match="not a DFPattern"):
        transform.MergeComposite([("t.bad", "nn.relu")])
    with pytest.raises(ValueError, match="entry 0 must be"):
        transform.MergeComposite([("t.bad",)])


def test_full_flow_composite_annotate_partition():
    """MergeComposite -> AnnotateTarget -> MergeCompilerRegions -> PartitionGraph."""
    x = relay.var("x", shape=(2, 8))
    w = relay.var("w", shape=(6, 8))
    d = relay.nn.relu(relay.nn.dense(x, w))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.exp(relay.tanh(d))))
    pat = is_op("nn.relu")(is_op("nn.dense")(wildcard(), wildcard()))
    with TempOpAttr("tanh", "target.t", _always):
        seq = [transform.MergeComposite([("t.dense_relu", pat)]),
               transform.AnnotateTarget(["t"]), transform.MergeCompilerRegions(),
               transform.PartitionGraph()]
        out = mod
        for p in seq:
            out = p(out)
    ext = out["tvmgen_default_t_main_0"]
    assert ext.body.op.name == "tanh" and ext.body.args[0].op.get_attr("Composite") == \
        "t.dense_relu"
    assert out["main"].body.op.name == "exp"
    args = (_rand(2, 8), _rand(6, 8))
    np.testing.assert_allclose(_run(out, *args), _run(mod, *args), rtol=1e-5)


def test_rewrite_annotated_ops():
    x = relay.var("x", shape=(4,))
    y = relay.add(relay.annotation.on_device(relay.nn.relu(x), tvm.cpu()), x)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    out = transform.InferType()(transform.RewriteAnnotatedOps(tvm.cpu().device_type)(mod))
    expected = tvm.IRModule.from_expr(relay.Function([x], relay.add(relay.nn.relu(x), x)))
    tvm.ir.assert_structural_equal(out, transform.InferType()(expected))
    np.testing.assert_allclose(_run(out, _rand(4)), _run(mod, _rand(4)))
    with pytest.raises(ValueError, match="device type 2 is not available"):
        transform.RewriteAnnotatedOps(2)(mod)


def test_pattern_table_registry():
    from minitvm.relay.op.contrib import get_pattern_table, register_pattern_table

    assert get_pattern_table("no-such-compiler") is None
    table = get_pattern_table("dnnl")
    assert table and all(name.startswith("dnnl.") for name, *_ in table)
    register_pattern_table("t_test", lambda: [("t_test.relu", is_op("nn.relu")(wildcard()))])
    assert get_pattern_table("t_test")[0][0] == "t_test.relu"
    with pytest.raises(TypeError, match="returning the table"):
        register_pattern_table("t_bad", 3)


def test_deep_chain_annotate_merge_partition():
    n = 100_000
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(n):
        e = relay.nn.relu(e)
    mod = tvm.IRModule.from_expr(relay.Function([x], e))
    with TempOpAttr("nn.relu", "target.t", _always):
        mod = transform.AnnotateTarget(["t"])(mod)
    mod = transform.MergeCompilerRegions()(mod)
    out = transform.PartitionGraph()(mod)
    assert out["main"].body.op.name_hint == "tvmgen_default_t_main_0"


def test_seed004_register_form():
    """``reg.register("nn.conv2d", "target.<name>", fn)`` as seed 004 writes it."""
    import minitvm.relay.op as reg
    from minitvm.ir.op import Op

    def batch_norm_func(attrs, args):
        return True

    conv = Op.get("nn.conv2d")
    try:
        reg.register("nn.conv2d", "target.seedlib", batch_norm_func)
        assert conv.get_attr("target.seedlib") is batch_norm_func
        x = relay.var("x", shape=(1, 3, 8, 8))
        w = relay.var("w", shape=(4, 3, 3, 3))
        mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.conv2d(x, w)))
        out = transform.AnnotateTarget(["seedlib"])(mod)
        assert out.astext().count('compiler="seedlib"') == 3
    finally:
        conv.reset_attr("target.seedlib")
