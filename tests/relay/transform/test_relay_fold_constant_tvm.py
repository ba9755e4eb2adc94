"""FoldConstant builds TVM's programs: the cases of TVM v0.19's own test of the pass, restated.

Each case builds the program before, runs the pass, builds the program TVM expects and compares
them structurally; where the function has parameters the interpreter also runs both on random
inputs. Two deliberate differences from TVM (its folds there are wrong) are tested at the end.
"""

import numpy as np
from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform


def _on_cpu(e):
    return relay.annotation.on_device(e, tvm.cpu(), constrain_result=True)


def _opt(expr, p):
    """Type the expression in a module, run ``p``; the function back (or its body)."""
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(expr))
    out = p(mod)["main"]
    return out if isinstance(expr, relay.Function) else out.body


def _check(before, expected, p=None, numerics=True):
    got = _opt(before, p or transform.FoldConstant())
    want = _opt(expected, transform.InferType())
    tvm.ir.assert_structural_equal(got, want)
    if numerics and isinstance(before, relay.Function):
        check_numerics(before, got)
    return got


def test_concatenate_of_float64_constants():
    c = relay.const(tvm.nd.array(np.array([1.0, 2.0, 3.0])))
    before = relay.Function([], relay.concatenate([c, c], axis=0))
    expected = relay.Function([], relay.const(tvm.nd.array(np.array([1.0, 2.0, 3.0] * 2))))
    _check(before, expected)


def _const_chain(annotate_vars: bool):
    data = np.array([1, 2, 3], "float32")
    ty = relay.TensorType([1, 2, 3], "float32")

    def build(folded: bool):
        x = relay.var("x", ty)
        if annotate_vars:
            x.virtual_device_ = tvm.cpu()
        c = relay.const(data)
        if folded:
            y = relay.add(x, relay.const((data + data) * 2))
        else:
            y = relay.add(x, relay.multiply(relay.add(c, c), relay.const(2, "float32")))
        f = relay.Function([x], relay.add(y, c if not folded else relay.const(data)))
        if annotate_vars:
            f.virtual_device_ = tvm.cpu()
        return f

    return build(False), build(True)


def test_fold_const_under_any_target():
    before, expected = _const_chain(annotate_vars=False)
    with tvm.target.Target("cuda"):  # folding evaluates on the CPU whatever the target
        got = _opt(before, transform.FoldConstant())
    tvm.ir.assert_structural_equal(got, _opt(expected, transform.InferType()))
    check_numerics(before, got)


def test_fold_const_with_virtual_devices():
    before, expected = _const_chain(annotate_vars=True)
    _check(before, expected)


def _let_chain(annotate: bool, folded: bool):
    wrap = _on_cpu if annotate else (lambda e: e)
    data = np.array(1, "float32")
    x = relay.var("x", relay.TensorType([1], "float32"))
    if annotate:
        x.virtual_device_ = tvm.cpu()
    sb = relay.ScopeBuilder()
    if folded:
        # the constant lets are gone; the constant keeps its on_device where it is inlined
        t3 = sb.let("t3", wrap(relay.add(wrap(relay.const(data + data)), x)))
    else:
        t1 = sb.let("t1", wrap(relay.const(data)))
        t2 = sb.let("t2", wrap(relay.add(t1, t1)))
        t3 = sb.let("t3", wrap(relay.add(t2, x)))
    sb.ret(t3)
    f = relay.Function([x], sb.get())
    if annotate:
        f.virtual_device_ = tvm.cpu()
    return f


def test_fold_let():
    _check(_let_chain(False, False), _let_chain(False, True))


def test_fold_let_keeps_on_device_of_inlined_constants():
    _check(_let_chain(True, False), _let_chain(True, True))


def test_let_bound_to_a_tuple_of_constants_stays():
    # TVM inlines only simple constants; a literal tuple keeps its let
    v = relay.var("v")
    tup = relay.Tuple([relay.const(1.0), relay.const(2.0)])
    x = relay.var("x", shape=())
    f = relay.Function([x], relay.Let(v, tup, relay.add(relay.TupleGetItem(v, 0), x)))
    got = _opt(f, transform.FoldConstant())
    assert isinstance(got.body, relay.Let)
    tvm.ir.assert_structural_equal(got, _opt(f, transform.InferType()))
    check_numerics(f, got)


def test_fold_tuple_projection():
    data = np.array(1, "float32")
    ty = relay.TensorType([1], "float32")
    x = relay.var("x", ty)
    c = relay.const(data)
    pair = relay.Tuple([x, c])
    before = relay.Function([x], relay.add(relay.add(pair[1], c), pair[0]))
    x2 = relay.var("x", ty)
    expected = relay.Function([x2], relay.add(relay.const(data + data), x2))
    _check(before, expected)


def test_tuple_projection_through_on_device_keeps_the_annotation():
    x = relay.var("x", shape=(2,))
    before = relay.Function([x], relay.TupleGetItem(_on_cpu(relay.Tuple([x, x + x])), 1))
    x2 = relay.var("x", shape=(2,))
    expected = relay.Function([x2], _on_cpu(x2 + x2))
    _check(before, expected)


def test_fold_concat():
    data = np.array([[1, 2, 3]], "float32")
    before = relay.Function([], relay.concatenate((relay.const(data), relay.const(data)), axis=0))
    expected = relay.Function([], relay.const(np.concatenate((data, data), axis=0)))
    _check(before, expected)


def test_fold_if_on_constant_condition():
    data = np.array([[1, 2, 3]], "float32")
    for cond, result in ((True, data + data), (False, data - data)):
        x, y = relay.const(data), relay.const(data)
        before = relay.Function([], relay.If(relay.const(np.array(cond)), x + y, x - y))
        _check(before, relay.Function([], relay.const(result)))


def test_fold_if_through_on_device_condition():
    x = relay.var("x", shape=(2,))
    cond = _on_cpu(relay.const(np.array(False)))
    before = relay.Function([x], relay.If(cond, x, relay.negative(x)))
    x2 = relay.var("x", shape=(2,))
    _check(before, relay.Function([x2], relay.negative(x2)))


def test_fold_shape_of_and_ndarray_size():
    shape = (8, 9, 10)
    for dtype in ("int32", "float32"):
        for op, value in ((relay.shape_of, np.array(shape)), (relay.ndarray_size,
                                                             np.array(np.prod(shape)))):
            x = relay.var("x", shape=shape)
            y = relay.var("y", shape=shape)
            before = relay.Function([x, y], op(x + y, dtype))
            x2 = relay.var("x", shape=shape)
            y2 = relay.var("y", shape=shape)
            expected = relay.Function([x2, y2], relay.const(value.astype(dtype), dtype=dtype))
            _check(before, expected, numerics=False)
            # the folded value is the one the op computes
            check_numerics(before, expected, args=[np.zeros(shape, "float32")] * 2)


def test_batch_norm_removed_by_inference_pipeline():
    shape = (1, 3, 8, 8)
    data = relay.var("data", relay.TensorType(shape, "float32"))
    weight = relay.var("weight")
    names = ("bn_gamma", "bn_beta", "bn_mean", "bn_var")
    bn_vars = [relay.var(n) for n in names]
    conv = relay.nn.conv2d(data, weight, kernel_size=(3, 3), channels=4, padding=(1, 1))
    out = relay.nn.batch_norm(conv, *bn_vars)[0]
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([data, weight, *bn_vars], out)))
    # TVM's case binds all-zero parameters; the variance is one so the folded scale is finite
    params = {"weight": np.zeros((4, 3, 3, 3), "float32"), "bn_gamma": np.zeros(4, "float32"),
              "bn_beta": np.zeros(4, "float32"), "bn_mean": np.zeros(4, "float32"),
              "bn_var": np.ones(4, "float32")}
    mod["main"] = relay.build_module.bind_params_by_name(mod["main"], params)
    seq = tvm.transform.Sequential([transform.InferType(), transform.SimplifyInference(),
                                    transform.FoldConstant(), transform.FoldScaleAxis()])
    with tvm.transform.PassContext(opt_level=3):
        got = seq(mod)["main"]

    d = relay.var("data", relay.TensorType(shape, "float32"))
    conv = relay.nn.conv2d(d, relay.const(np.zeros((4, 3, 3, 3), "float32")), kernel_size=(3, 3),
                           channels=4, padding=(1, 1))
    body = relay.add(conv, relay.const(np.zeros((4, 1, 1), "float32")))
    expected = _opt(relay.Function([d], body), transform.InferType())
    tvm.ir.assert_structural_equal(got, expected)


def test_dropout_is_not_folded():
    # dropout is stateful (random when training): TVM leaves the program as it was
    add = relay.nn.dropout(relay.const(np.arange(10, dtype="float32"))) + relay.const(1.0)
    before = relay.Function([], add)
    with tvm.transform.PassContext(opt_level=3):
        _check(before, before)


def _qnn_program(folded_weight=None):
    a = relay.var("a", shape=[2, 3], dtype="float32")
    b = relay.var("b", shape=[2], dtype="float32")
    ones = relay.const(np.ones((2, 3), "uint8"), dtype="uint8")
    weight = folded_weight if folded_weight is not None else relay.qnn.op.add(
        ones, ones, lhs_scale=relay.const(2.0), lhs_zero_point=relay.const(0),
        rhs_scale=relay.const(2.0), rhs_zero_point=relay.const(0),
        output_scale=relay.const(1.0), output_zero_point=relay.const(0))
    dense = relay.qnn.op.dense(
        relay.qnn.op.quantize(a, relay.const(1.0), relay.const(0)), weight,
        input_zero_point=relay.const(0), kernel_zero_point=relay.const(0),
        input_scale=relay.const(2.0), kernel_scale=relay.const(2.0), units=None)
    bias = relay.qnn.op.add(
        dense, relay.qnn.op.quantize(b, relay.const(1.0), relay.const(0), out_dtype="int32"),
        lhs_scale=relay.const(2.0), lhs_zero_point=relay.const(0),
        rhs_scale=relay.const(2.0), rhs_zero_point=relay.const(0),
        output_scale=relay.const(1.0), output_zero_point=relay.const(0))
    return relay.Function([a, b], bias)


def test_qnn_calls_fold_only_with_fold_qnn():
    before = _qnn_program()
    _check(before, before)  # qnn ops are non-computational by default
    folded = relay.const(np.full((2, 3), 4, "uint8"), dtype="uint8")
    _check(before, _qnn_program(folded), transform.FoldConstant(fold_qnn=True))


def _quantize_case(folded: bool):
    x = relay.var("x", relay.TensorType([1, 2, 3], "int8"))
    if folded:
        c = relay.const(np.array([2, 4, 6], "int8"), dtype="int8")
    else:
        c = relay.qnn.op.quantize(relay.const(np.array([1.0, 2.0, 3.0], "float32")),
                                  output_scale=relay.const(0.5),
                                  output_zero_point=relay.const(0))
    return relay.Function([x], relay.subtract(x, c))


def test_fold_quantize():
    _check(_quantize_case(False), _quantize_case(False))
    _check(_quantize_case(False), _quantize_case(True), transform.FoldConstant(fold_qnn=True))


def _requantize_case(folded: bool):
    x = relay.var("x", relay.TensorType([3], "int8"))
    if folded:
        c = relay.const(np.array([1, 3, 5], "int8"), dtype="int8")
    else:
        c = relay.qnn.op.requantize(
            relay.const(np.array([1, 2, 3], "int8"), dtype="int8"),
            input_scale=relay.const(2.0, "float32"), input_zero_point=relay.const(1, "int32"),
            output_scale=relay.const(1.0, "float32"), output_zero_point=relay.const(1, "int32"))
    return relay.Function([x], relay.add(c, x))


def test_fold_requantize():
    _check(_requantize_case(False), _requantize_case(False))
    _check(_requantize_case(False), _requantize_case(True), transform.FoldConstant(fold_qnn=True))


def test_fold_qnn_conv2d_then_qnn_mul():
    ones = relay.const(np.ones((1, 1, 2, 2), "uint8"), dtype="uint8")
    conv = relay.qnn.op.conv2d(
        ones, ones, input_zero_point=relay.const(0, "int32"),
        kernel_zero_point=relay.const(0, "int32"), input_scale=relay.const(1.0, "float32"),
        kernel_scale=relay.const(1.0, "float32"), kernel_size=(2, 2), channels=1)
    one, zero = relay.const(1.0, "float32"), relay.const(0, "int32")
    mul = relay.qnn.op.mul(conv, relay.const(np.array([10], "int32"), dtype="int32"),
                           one, zero, one, zero, one, zero)
    before = relay.Function([], mul)
    _check(before, before)
    expected = relay.Function([], relay.const(np.array([[[[40]]]], "int32"), dtype="int32"))
    _check(before, expected, transform.FoldConstant(fold_qnn=True))


def test_module_executor_attribute_does_not_matter():
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.cast(relay.const(10, dtype="int8"), dtype="int32")))
    mod = mod.with_attr("executor", relay.backend.Executor("aot", {"link-params": True}))
    out = transform.FoldConstant()(mod)
    body = out["main"].body
    assert isinstance(body, relay.Constant) and body.data.dtype == "int32"
    assert int(body.data.numpy()) == 10


def test_calls_inside_primitive_functions_stay_but_projections_fold():
    x = relay.var("x", shape=(2,))
    c = relay.const(np.ones(2, "float32"))
    inner = relay.add(x, relay.add(c, c))
    prim = relay.Function([x], relay.TupleGetItem(relay.Tuple([inner, x]), 0))
    prim = prim.with_attr("Primitive", 1)
    y = relay.var("y", shape=(2,))
    before = relay.Function([y], relay.Call(prim, [y]))
    x2 = relay.var("x", shape=(2,))
    c2 = relay.const(np.ones(2, "float32"))
    prim2 = relay.Function([x2], relay.add(x2, relay.add(c2, c2))).with_attr("Primitive", 1)
    y2 = relay.var("y", shape=(2,))
    _check(before, relay.Function([y2], relay.Call(prim2, [y2])))


# -- where we differ from TVM on purpose ------------------------------------------------------

def test_shape_of_a_scalar_folds_to_the_empty_shape():
    # TVM folds this to a rank-0 int32 constant, which does not even have the op's type
    # Tensor[(0), int32]; we fold to the empty shape the op computes.
    x = relay.var("x", shape=())
    before = relay.Function([x], relay.shape_of(x))
    got = _opt(before, transform.FoldConstant())
    assert isinstance(got.body, relay.Constant) and got.body.data.shape == (0,)
    assert got.ret_type == relay.TensorType((0,), "int32")
    check_numerics(before, got)


def test_ndarray_size_of_a_scalar_folds_to_one():
    # TVM folds the size of a rank-0 tensor to 0; the op computes 1 (one element)
    x = relay.var("x", shape=())
    before = relay.Function([x], relay.ndarray_size(x))
    got = _opt(before, transform.FoldConstant())
    assert int(got.body.data.numpy()) == 1
    check_numerics(before, got)


def test_deep_let_chain_of_annotated_constants():
    # far past the default recursion limit (the 100,000-call chain is in test_fold_constant.py)
    x = relay.var("x", shape=())
    body, lets = x, []
    prev = relay.const(1.0)
    for i in range(20_000):
        v = relay.var(f"v{i}")
        lets.append((v, _on_cpu(relay.add(prev, relay.const(1.0)))))
        prev = v
    body = relay.add(prev, x)
    for v, value in reversed(lets):
        body = relay.Let(v, value, body)
    got = transform.FoldConstant()(tvm.IRModule.from_expr(relay.Function([x], body)))["main"]
    assert isinstance(got.body, relay.Call) and got.body.op.name == "add"
    folded = got.body.args[0]
    assert folded.op.name == "on_device"
    assert float(folded.args[0].data.numpy()) == 20_001.0
