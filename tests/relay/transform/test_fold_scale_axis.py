"""FoldScaleAxis: per-channel scales folded into conv2d/dense weights, forward and backward."""

import numpy as np
from pass_test_util import check_numerics, count_nodes, run_pass

import minitvm as tvm
from minitvm import relay

RNG = np.random.default_rng(0)


def _c(*shape, positive=False):
    a = RNG.standard_normal(shape).astype("float32")
    return relay.const(np.abs(a) + 0.5 if positive else a)


def _run(f, p):
    """FoldScaleAxis is a Sequential of opt_level-3 passes: run it where they are enabled."""
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    with tvm.transform.PassContext(opt_level=3):
        out = run_pass(p, mod)
    return mod, out


def _multiplies(mod):
    names = []
    relay.analysis.post_order_visit(mod["main"], lambda e: names.append(e.op.name) if isinstance(
        e, relay.Call) and isinstance(e.op, tvm.ir.Op) else None)
    return names.count("multiply")


def test_backward_conv_bias_scale():
    x = relay.var("x", shape=(1, 4, 8, 8))
    w = relay.var("w", shape=(8, 4, 3, 3))
    y = relay.add(relay.nn.conv2d(x, w, padding=(1, 1)), _c(8, 1, 1))
    y = relay.multiply(y, _c(8, 1, 1))
    mod, out = _run(relay.Function([x, w], relay.nn.relu(y)), relay.transform.FoldScaleAxis())
    body = out["main"].body
    assert body.op.name == "nn.relu" and body.args[0].op.name == "add"
    # the scale now multiplies the weight (w is a parameter, so the product stays)
    conv = body.args[0].args[0]
    assert conv.op.name == "nn.conv2d" and conv.args[1].op.name == "multiply"
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_backward_folds_into_constant_weight_completely():
    x = relay.var("x", shape=(1, 4, 8, 8))
    y = relay.multiply(relay.nn.conv2d(x, _c(8, 4, 3, 3)), _c(8, 1, 1))
    mod, out = _run(relay.Function([x], y), relay.transform.FoldScaleAxis())
    assert _multiplies(out) == 0
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_forward_through_add_and_relu():
    x = relay.var("x", shape=(1, 4, 8, 8))
    y = relay.nn.relu(relay.add(relay.multiply(x, _c(4, 1, 1, positive=True)), _c(4, 1, 1)))
    z = relay.nn.conv2d(y, _c(8, 4, 3, 3))
    mod, out = _run(relay.Function([x], z), relay.transform.FoldScaleAxis())
    assert _multiplies(out) == 0
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_a_scale_with_a_zero_does_not_pass_an_add():
    """Carrying ``x * s`` through ``+ b`` divides ``b`` by ``s``: with a 0 in ``s`` (a
    batch_norm's zero gamma) ``(x + b / 0) * 0`` is NaN where ``x * 0 + b`` is ``b``. Such a
    scale stays a multiply (found by the ONNX fuzzer, seed 30793; TVM divides)."""
    x = relay.var("x", shape=(1, 2))
    s = relay.const(np.array([0.0, -0.75], "float32"))
    y = relay.add(relay.multiply(x, s), relay.const(np.array([-1.0, 0.5], "float32")))
    z = relay.nn.dense(y, _c(3, 2))
    mod, out = _run(relay.Function([x], z), relay.transform.FoldScaleAxis())
    assert _multiplies(out) == 1
    args = check_numerics(mod, out, rtol=1e-4, atol=1e-4)
    assert np.isfinite(relay.create_executor("debug", mod=out).evaluate()(*args).numpy()).all()


def test_negative_scale_does_not_pass_relu():
    x = relay.var("x", shape=(1, 4, 4, 4))
    s = relay.const(np.array([1, -1, 2, 3], "float32").reshape(4, 1, 1))
    y = relay.nn.conv2d(relay.nn.relu(relay.multiply(x, s)), _c(4, 4, 1, 1))
    mod, out = _run(relay.Function([x], y), relay.transform.ForwardFoldScaleAxis())
    tvm.ir.assert_structural_equal(out["main"], mod["main"])


def test_shared_value_is_not_rewritten():
    x = relay.var("x", shape=(1, 4, 4, 4))
    conv = relay.nn.conv2d(x, _c(4, 4, 1, 1))
    y = relay.Tuple([relay.multiply(conv, _c(4, 1, 1)), conv])
    mod, out = _run(relay.Function([x], y), relay.transform.BackwardFoldScaleAxis())
    tvm.ir.assert_structural_equal(out["main"], mod["main"])


def test_dense_backward():
    x = relay.var("x", shape=(2, 6))
    y = relay.multiply(relay.nn.dense(x, _c(5, 6)), _c(5))
    mod, out = _run(relay.Function([x], y), relay.transform.FoldScaleAxis())
    assert _multiplies(out) == 0
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_batch_norm_folds_after_simplify_inference():
    x = relay.var("x", shape=(1, 3, 8, 8))
    conv = relay.nn.conv2d(x, _c(4, 3, 3, 3))
    bn = relay.nn.batch_norm(conv, _c(4, positive=True), _c(4), _c(4), _c(4, positive=True))[0]
    f = relay.Function([x], relay.nn.relu(bn))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    seq = tvm.transform.Sequential([relay.transform.SimplifyInference(),
                                    relay.transform.FoldConstant(),
                                    relay.transform.FoldScaleAxis()])
    with tvm.transform.PassContext(opt_level=3):
        out = seq(mod)
    assert _multiplies(out) == 0
    assert count_nodes(out["main"], relay.Constant) == 2
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_deep_chain():
    x = relay.var("x", shape=(1, 2, 2, 2))
    e = x
    for _ in range(30_000):
        e = relay.multiply(relay.nn.conv2d(e, _c(2, 2, 1, 1)), _c(2, 1, 1))
    _, out = _run(relay.Function([x], e), relay.transform.BackwardFoldScaleAxis())
    assert out["main"].body.op.name == "nn.conv2d"


def test_forward_into_every_conv_reading_the_scaled_value():
    x = relay.var("x", shape=(1, 4, 6, 6))
    y = relay.nn.relu(relay.add(relay.multiply(x, _c(4, 1, 1, positive=True)), _c(4, 1, 1)))
    a = relay.nn.conv2d(y, _c(4, 4, 3, 3), padding=(1, 1))
    b = relay.nn.conv2d(y, _c(8, 4, 1, 1))
    mod, out = _run(relay.Function([x], relay.Tuple([a, b])), relay.transform.FoldScaleAxis())
    assert _multiplies(out) == 0
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)
    # one reader that cannot absorb the scale blocks the fold
    f = relay.Function([x], relay.Tuple([a, relay.exp(y)]))
    mod, out = _run(f, relay.transform.ForwardFoldScaleAxis())
    tvm.ir.assert_structural_equal(out["main"], mod["main"])


def test_forward_stops_at_global_pool_and_flatten_as_in_tvm():
    """TVM has no forward rule for global_avg_pool2d / batch_flatten: the scale stays."""
    x = relay.var("x", shape=(1, 4, 5, 5))
    y = relay.nn.relu(relay.add(relay.multiply(x, _c(4, 1, 1, positive=True)), _c(4, 1, 1)))
    z = relay.nn.dense(relay.nn.batch_flatten(relay.nn.global_avg_pool2d(y)), _c(3, 4))
    mod, out = _run(relay.Function([x], z), relay.transform.ForwardFoldScaleAxis())
    tvm.ir.assert_structural_equal(out["main"], mod["main"])


def test_forward_keeps_a_gate_computed_from_the_scaled_value():
    """A scale computed from the value it scales (hardswish, swish, a squeeze-and-excitation
    gate) stays a multiply on the activation (a deviation from TVM, which moves it onto the
    weight: the whole weight rewritten every call)."""
    x = relay.var("x", shape=(1, 64))
    hardswish = relay.multiply(x, relay.clip(relay.add(x, relay.const(3.0)), 0.0, 6.0)
                               / relay.const(6.0))
    f = relay.Function([x], relay.nn.dense(hardswish, _c(1000, 64)))
    mod, out = _run(f, relay.transform.ForwardFoldScaleAxis())
    tvm.ir.assert_structural_equal(out["main"], mod["main"])

    # a squeeze-and-excitation gate before a 1x1 conv
    x = relay.var("x", shape=(1, 8, 6, 6))
    gate = relay.sigmoid(relay.nn.conv2d(relay.nn.global_avg_pool2d(x), _c(8, 8, 1, 1)))
    y = relay.nn.conv2d(relay.multiply(x, gate), _c(4, 8, 1, 1))
    mod, out = _run(relay.Function([x], y), relay.transform.FoldScaleAxis())
    tvm.ir.assert_structural_equal(out["main"], mod["main"])
    check_numerics(mod, out, rtol=1e-5, atol=1e-5)


def test_a_scale_sharing_the_values_inputs_is_not_folded():
    """An LSTM cell's ``h = sigmoid(o) * tanh(c)``: both factors come from one split of the
    gates, so the scale changes every call; dense(h, W) keeps its constant weight (forward),
    and so does a conv whose output is scaled by a value computed from the conv's input
    (backward)."""
    x, c0 = relay.var("x", shape=(1, 16)), relay.var("c0", shape=(1, 4))
    gates = relay.split(relay.nn.dense(x, _c(16, 16)), 4, axis=1)
    c = relay.sigmoid(gates[1]) * c0 + relay.sigmoid(gates[0]) * relay.tanh(gates[2])
    h = relay.sigmoid(gates[3]) * relay.tanh(c)
    f = relay.Function([x, c0], relay.nn.dense(h, _c(8, 4)))
    mod, out = _run(f, relay.transform.FoldScaleAxis())
    tvm.ir.assert_structural_equal(out["main"], mod["main"])
    check_numerics(mod, out, rtol=1e-5, atol=1e-5)

    x = relay.var("x", shape=(1, 4, 6, 6))
    conv = relay.nn.conv2d(x, _c(8, 4, 3, 3), padding=(1, 1), channels=8, kernel_size=(3, 3))
    scale = relay.sigmoid(relay.reshape(relay.mean(x, axis=[1, 2, 3]), (1, 1, 1, 1)))
    y = relay.nn.relu(relay.multiply(conv, relay.broadcast_to(scale, (1, 8, 1, 1))))
    mod, out = _run(relay.Function([x], y), relay.transform.BackwardFoldScaleAxis())
    tvm.ir.assert_structural_equal(out["main"], mod["main"])


def test_forward_still_folds_a_parameter_scale_into_dense():
    """A scale that does not depend on the scaled value folds as in TVM."""
    x, s = relay.var("x", shape=(2, 16)), relay.var("s", shape=(1, 16))
    w = _c(8, 16)
    f = relay.Function([x, s], relay.nn.dense(relay.multiply(x, s), w))
    mod, out = _run(f, relay.transform.ForwardFoldScaleAxis())
    expected = relay.Function([x, s], relay.nn.dense(x, relay.multiply(
        w, relay.squeeze(s, axis=[0]))))
    tvm.ir.assert_structural_equal(out["main"], relay.transform.InferType()(
        tvm.IRModule.from_expr(expected))["main"])
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_gate_search_is_bounded_on_a_long_scale_chain():
    """The gate search stops after GATE_SEARCH expressions (no deep walk, no recursion)."""
    x = relay.var("x", shape=(1, 4))
    s = relay.var("s", shape=(1, 4))
    e = s
    for _ in range(100_000):
        e = relay.negative(e)
    f = relay.Function([x, s], relay.nn.dense(relay.multiply(x, e), _c(3, 4)))
    mod, out = _run(f, relay.transform.ForwardFoldScaleAxis())
    assert out["main"].body.op.name == "nn.dense"


# ------------------------------------------------- whole-number weights: exact integer products
def _requantized_conv():
    """(``round((conv(x, w) + b) * mult)`` over whole-number float32 ``x`` and ``w``: a uint8
    QLinearConv with a weight zero point as the ONNX importer runs it without VNNI, exact
    integer products in float32 (``onnx_conv_zp_cases``' first case), x, the exact result)."""
    from onnx_conv_zp_cases import ZP_CONV_CASES, _arrays, conv_ref

    case = ZP_CONV_CASES[0]
    rng, xq, wq, wz = _arrays(case, 0)
    ws = (rng.random(32) * 0.002 + 0.0005).astype("float32")
    b = rng.integers(-999, 999, 32).astype("int32")
    mult = (np.float32(0.02) * ws / np.float32(0.5)).astype("float32").reshape(32, 1, 1)
    x = relay.var("x", shape=xq.shape)
    w = (wq.astype("float32") - wz.astype("float32").reshape(-1, 1, 1, 1))
    y = relay.add(relay.nn.conv2d(x, relay.const(w), padding=(1, 1)),
                  relay.const(b.astype("float32").reshape(32, 1, 1)))
    f = relay.Function([x], relay.round(relay.multiply(y, relay.const(mult))))
    acc = conv_ref(xq, wq, 1, 1, case[1], wz.reshape(())) + b.reshape(32, 1, 1)
    return f, (xq.astype("float32") - case[1]), np.round(acc.astype("float32") * mult)


def test_whole_number_weights_keep_their_scale():
    """A scale is not folded into a constant float weight of whole numbers, in either direction
    (conv and dense): it would round the exact integer products; a fractional weight folds."""
    mod, out = _run(_requantized_conv()[0], relay.transform.FoldScaleAxis())
    assert _multiplies(out) == 1 and out["main"].body.args[0].op.name == "multiply"
    x = relay.var("x", shape=(2, 16))
    wd = relay.const(np.arange(-64, 64, dtype="float32").reshape(8, 16))
    f = relay.Function([x], relay.nn.dense(relay.multiply(x, _c(16, positive=True)), wd))
    _, out = _run(f, relay.transform.ForwardFoldScaleAxis())
    assert out["main"].body.args[0].op.name == "multiply"  # (still on the data)
    f = relay.Function([x], relay.multiply(relay.nn.dense(x, wd), _c(8)))
    _, out = _run(f, relay.transform.BackwardFoldScaleAxis())
    assert out["main"].body.op.name == "multiply"
    half = relay.const((np.arange(-64, 64, dtype="float32") + 0.5).reshape(8, 16))
    f = relay.Function([x], relay.multiply(relay.nn.dense(x, half), _c(8)))
    _, out = _run(f, relay.transform.BackwardFoldScaleAxis())
    assert out["main"].body.op.name == "nn.dense"  # (a fractional weight takes the scale)


def test_requantized_integer_conv_is_exact_at_opt_level_3():
    """The built conv equals the exact integer conv requantized in float32 (the per-channel
    multiplier folded into the weight moved output [0, 31, 2, 0] by a step)."""
    from minitvm.contrib import graph_executor

    f, xv, want = _requantized_conv()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(f), target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", xv)
    g.run()
    np.testing.assert_array_equal(g.get_output(0).numpy(), want)
