"""relay.analysis.op_names (the operators an expression calls) and the pattern passes that ask it
first: a function without their operators comes back as the same object, and their full
rewrite of it gives a structurally equal function (so the shortcut changes nothing)."""

import sys

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.relay.analysis.op_names import calls_any, calls_op_with_attr, op_names
from minitvm.relay.transform.canonicalize_cast import canonicalize_cast
from minitvm.relay.transform.canonicalize_ops import canonicalize_ops
from minitvm.relay.transform.flatten_atrous_conv import flatten_atrous_conv
from minitvm.relay.transform.fold_scale_axis import (
    backward_fold_scale_axis,
    forward_fold_scale_axis,
)
from minitvm.relay.transform.fuse_attention import fuse_attention
from minitvm.relay.transform.fuse_conv_pool import fuse_conv_pool
from minitvm.relay.transform.legalize import legalize
from minitvm.relay.transform.simplify_inference import simplify_inference
from minitvm.relay.transform.split_conv_pool import split_conv_pool


def test_nested_functions_branches_and_lets_are_walked():
    x = relay.var("x", shape=(2, 3))
    p = relay.var("p", shape=(2, 3))
    fused = relay.Function([p], relay.exp(p)).with_attr("Primitive", 1)
    c = relay.var("c", shape=(), dtype="bool")
    v = relay.var("v")
    body = relay.Let(v, relay.Call(fused, [x]),
                     relay.If(c, relay.nn.relu(v), relay.Tuple([relay.negative(v)])[0]))
    func = relay.Function([x, c], body)
    assert op_names(func) == {"exp", "nn.relu", "negative"}
    assert calls_any(func, ("sigmoid", "exp")) and not calls_any(func, ("sigmoid",))
    assert not calls_op_with_attr(func, "FTVMQnnLegalize")


def test_a_100k_chain_at_the_default_recursion_limit():
    limit = sys.getrecursionlimit()
    x = relay.var("x", shape=(2,))
    y = x
    for i in range(100_000):
        y = relay.add(y, y) if i % 2 else relay.nn.relu(y)
    assert op_names(relay.Function([x], y)) == {"add", "nn.relu"}
    assert sys.getrecursionlimit() == limit


def _typed(func):
    return relay.transform.InferType()(tvm.IRModule.from_expr(func))["main"]


def test_passes_without_their_operators_return_the_function_and_agree_with_the_rewrite():
    x = relay.var("x", shape=(1, 4, 8, 8))
    w = relay.const(np.ones((4, 4, 3, 3), "float32"))
    s = relay.const(np.full((4, 1, 1), 2.0, "float32"))
    y = relay.nn.relu(relay.add(relay.nn.conv2d(x, w, padding=(1, 1)), relay.const(1.0)))
    func = _typed(relay.Function([x], relay.sum(y, axis=[1])))
    # scales without a conv or dense to fold them into
    scaled = _typed(relay.Function([x], relay.multiply(relay.nn.relu(relay.multiply(x, s)), s)))
    for make, rewrite in [
        (relay.transform.BackwardFoldScaleAxis, lambda f: backward_fold_scale_axis(f)[0]),
        (relay.transform.ForwardFoldScaleAxis, lambda f: forward_fold_scale_axis(f)[0]),
    ]:
        with tvm.transform.PassContext(opt_level=3):
            assert make()(tvm.IRModule.from_expr(scaled))["main"] is scaled, make
        tvm.ir.assert_structural_equal(rewrite(scaled), scaled)
    mod = tvm.IRModule.from_expr(func)
    with tvm.transform.PassContext(opt_level=3):
        for make, rewrite in [
            (relay.transform.SimplifyInference, simplify_inference),
            (relay.transform.CanonicalizeOps, canonicalize_ops),
            (relay.transform.CanonicalizeCast, canonicalize_cast),
            (relay.transform.FlattenAtrousConv, lambda f: flatten_atrous_conv(f)[0]),
            (relay.transform.FuseAttention, lambda f: fuse_attention(f)[0]),
            (relay.transform.SplitConvPool, lambda f: split_conv_pool(f)[0]),
            (relay.transform.FuseConvPool, lambda f: fuse_conv_pool(f)[0]),
            (relay.transform.Legalize, legalize),
            (relay.qnn.transform.Legalize, lambda f: legalize(f, "FTVMQnnLegalize")),
            (relay.qnn.transform.CanonicalizeOps, lambda f: legalize(f, "FTVMQnnCanonicalize")),
        ]:
            out = make()(mod)["main"]
            assert out is func, make
            tvm.ir.assert_structural_equal(rewrite(func), func)


def test_passes_with_their_operators_still_rewrite():
    x = relay.var("x", shape=(1, 4, 8, 8))
    b = relay.const(np.ones(4, "float32"))
    m = relay.const(np.zeros(4, "float32"))
    bn = relay.nn.batch_norm(relay.nn.bias_add(x, b), b, m, m, b)[0]
    func = _typed(relay.Function([x], relay.cast(relay.cast(bn, "float16"), "float32")))
    mod = tvm.IRModule.from_expr(func)
    names = op_names(relay.transform.SimplifyInference()(mod)["main"])
    assert "nn.batch_norm" not in names and "nn.bias_add" in names
    with tvm.transform.PassContext(opt_level=3):
        assert "nn.bias_add" not in op_names(relay.transform.CanonicalizeOps()(mod)["main"])


def test_alter_op_layout_skips_only_elementwise_and_broadcast_functions():
    """Elementwise / broadcast ops pass on layouts nothing defines: AlterOpLayout returns the
    function itself, as its rewriter does; a conv (an alter hook) or a pool (a layout) is
    rewritten as before."""
    from minitvm.relay.transform.alter_op_layout import _nothing_to_alter, alter_op_layout

    x = relay.var("x", shape=(1, 4, 8, 8))
    c = relay.const(np.ones((4, 1, 1), "float32"))
    y = relay.multiply(relay.nn.relu(relay.add(x, relay.const(1.0))), c)
    y = relay.cast(relay.cast(y, "float16"), "float32")
    y = relay.where(relay.greater(y, relay.const(0.0)), relay.exp(y), relay.negative(y))
    func = _typed(relay.Function([x], y))
    assert _nothing_to_alter(func)
    with tvm.transform.PassContext(opt_level=3):
        assert relay.transform.AlterOpLayout()(tvm.IRModule.from_expr(func))["main"] is func
    tvm.ir.assert_structural_equal(alter_op_layout(func)[0], func)
    w = relay.const(np.ones((4, 4, 3, 3), "float32"))
    assert not _nothing_to_alter(_typed(relay.Function([x], relay.nn.conv2d(x, w))))
    assert not _nothing_to_alter(_typed(relay.Function([x], relay.nn.max_pool2d(x))))


def test_remembered_expressions_are_not_kept_alive():
    """The memo holds weak references: a program is freed after the passes that asked about it
    (a 100,000-node build would otherwise stay in memory), and a new expression reusing its id
    is walked afresh."""
    import gc
    import weakref

    x = relay.var("x", shape=(2,))
    f = relay.Function([x], relay.nn.relu(x))
    assert op_names(f) == {"nn.relu"}
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None
    g = relay.Function([x], relay.exp(x))
    assert op_names(g) == {"exp"}
