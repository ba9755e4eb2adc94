import numpy as np
import pytest
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform.simplify_expr import simplify_expr


def _check(before, expected, args=None, post_alter=False):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(before))
    p = relay.transform.SimplifyExprPostAlterOp() if post_alter else relay.transform.SimplifyExpr()
    out = run_pass(p, mod)
    tvm.ir.assert_structural_equal(out["main"], infer(expected))
    check_numerics(mod, out, args)
    return out


def test_pass_infos():
    for p, name in [(relay.transform.SimplifyExpr(), "SimplifyExpr"),
                    (relay.transform.SimplifyExprPostAlterOp(), "SimplifyExprPostAlterOp")]:
        assert (p.info.name, p.info.opt_level, list(p.info.required)) == (name, 0, ["InferType"])


def test_consecutive_reshapes():
    x = relay.var("x", shape=(1, 16, 16, 16))
    y = relay.reshape(relay.reshape(relay.reshape(x, (1, 16, 256)), (16, 256)), (4096,))
    _check(relay.Function([x], relay.exp(y)),
           relay.Function([x], relay.exp(relay.reshape(x, (4096,)))))


def test_reshape_to_same_shape_kept_as_in_tvm():
    x = relay.var("x", shape=(2, 3))
    f = relay.Function([x], relay.exp(relay.reshape(x, (2, 3))))
    _check(f, relay.Function([x], relay.exp(relay.reshape(x, (2, 3)))))


def test_post_alter_op_only_identity_and_reshape():
    x = relay.var("x", shape=(2, 3))
    y = relay.transpose(relay.transpose(relay.reshape(relay.reshape(x, (6,)), (2, 3)), (1, 0)),
                        (1, 0))
    expected = relay.transpose(relay.transpose(relay.reshape(x, (2, 3)), (1, 0)), (1, 0))
    _check(relay.Function([x], y), relay.Function([x], expected), post_alter=True)


@pytest.mark.parametrize("axes1,axes2,expected_axes", [
    ((1, 0, 2), (1, 0, 2), None), ((0, 2, 1), (2, 0, 1), (1, 0, 2)), (None, None, None)])
def test_transpose_of_transpose(axes1, axes2, expected_axes):
    x = relay.var("x", shape=(2, 3, 4))
    y = relay.transpose(relay.transpose(x, axes1), axes2)
    exp = x if expected_axes is None else relay.transpose(x, expected_axes)
    _check(relay.Function([x], relay.negative(y)), relay.Function([x], relay.negative(exp)))


def test_casts():
    x = relay.var("x", shape=(4,), dtype="int8")
    same = relay.cast(relay.cast(x, "int8"), "int8")
    _check(relay.Function([x], relay.abs(same)), relay.Function([x], relay.abs(x)),
           [np.arange(-2, 2, dtype="int8")])
    widen = relay.cast(relay.cast(x, "int32"), "float32")
    _check(relay.Function([x], widen), relay.Function([x], relay.cast(x, "float32")),
           [np.arange(-2, 2, dtype="int8")])
    y = relay.var("y", shape=(4,), dtype="float32")
    narrow = relay.cast(relay.cast(y, "int8"), "float32")  # information lost: kept
    _check(relay.Function([y], narrow), relay.Function([y], narrow))


@pytest.mark.parametrize("build", [
    lambda x: x + relay.const(0.0), lambda x: relay.const(0.0) + x, lambda x: x - relay.zeros(
        (2, 3), "float32"), lambda x: x * relay.const(1.0), lambda x: relay.ones((2, 3),
                                                                                "float32") * x,
    lambda x: x / relay.const(1.0), lambda x: x * relay.ones_like(x)])
def test_identities(build):
    x = relay.var("x", shape=(2, 3))
    _check(relay.Function([x], relay.exp(build(x))), relay.Function([x], relay.exp(x)))


def test_non_scalar_constant_identity_is_kept_as_in_tvm():
    x = relay.var("x", shape=(2, 3))
    y = x / relay.const(np.ones((2, 3), "float32"))
    _check(relay.Function([x], y), relay.Function([x], y))


def test_identity_that_broadcasts_is_kept():
    x = relay.var("x", shape=(3,))
    y = x + relay.zeros((2, 3), "float32")
    _check(relay.Function([x], y), relay.Function([x], y))


def test_concretize_like_ops():
    x = relay.var("x", shape=(2, 3))
    z = relay.var("z", shape=(6,))
    y = relay.Tuple([relay.zeros_like(x), relay.full_like(x, relay.const(2.0)),
                     relay.reshape_like(z, x), relay.cast_like(z, relay.cast(x, "float16")),
                     relay.broadcast_to_like(relay.const(1.0), x)])
    expected = relay.Tuple([relay.zeros((2, 3), "float32"),
                            relay.full(relay.const(2.0), (2, 3), "float32"),
                            relay.reshape(z, (2, 3)), relay.cast(z, "float16"),
                            relay.broadcast_to(relay.const(1.0), (2, 3))])
    _check(relay.Function([x, z], y), relay.Function([x, z], expected))


def test_rsqrt():
    x = relay.var("x", shape=(3,))
    y = relay.var("y", shape=(3,))
    _check(relay.Function([x, y], y / relay.sqrt(x)),
           relay.Function([x, y], y * relay.rsqrt(x)),
           [np.array([1.0, 4.0, 9.0], "float32"), np.ones(3, "float32")])


def test_full_elementwise():
    x = relay.var("x", shape=(2, 3))
    y = relay.add(x, relay.full(relay.const(2.0), (2, 3), "float32"))
    _check(relay.Function([x], y), relay.Function([x], relay.add(x, relay.const(2.0))))


def test_constant_reassociation():
    x = relay.var("x", shape=(3,))
    c = relay.const
    y = (x * c(2.0)) * c(3.0)
    _check(relay.Function([x], y), relay.Function([x], x * c(6.0)))
    y = (x + c(2.0)) * c(3.0)
    # TVM folds c1 * c2 right away
    _check(relay.Function([x], y), relay.Function([x], x * c(3.0) + c(6.0)))


def test_constant_reassociation_matches_either_operand_order():
    """TVM's SimplifyAdjacentMultiplyOrAdd / SwitchAddMultiply patterns match add and multiply
    commutatively: a constant on the left of either op is folded too (fuzz59: checked against
    TVM's simplify_expr.cc); a chain of constants alone is left to FoldConstant."""
    x = relay.var("x", shape=(3,))
    c = relay.const
    _check(relay.Function([x], c(3.0) * (c(2.0) * x)), relay.Function([x], x * c(6.0)))
    _check(relay.Function([x], c(3.0) + (x + c(2.0))), relay.Function([x], x + c(5.0)))
    _check(relay.Function([x], (c(2.0) + x) + c(3.0)), relay.Function([x], x + c(5.0)))
    _check(relay.Function([x], c(3.0) * (c(2.0) + x)),
           relay.Function([x], x * c(3.0) + c(6.0)))
    i = relay.var("i", shape=(3,), dtype="int32")
    _check(relay.Function([i], relay.const(4, "int32") + (relay.const(-1, "int32") + i)),
           relay.Function([i], i + relay.const(3, "int32")),
           [np.array([-5, 0, 7], "int32")])
    only = (c(2.0) + c(1.0)) * c(3.0)
    _check(relay.Function([x], x + only), relay.Function([x], x + only))


def test_single_concatenate_kept_as_in_tvm():
    x = relay.var("x", shape=(2, 3))
    _check(relay.Function([x], relay.exp(relay.concatenate([x], axis=0))),
           relay.Function([x], relay.exp(relay.concatenate([x], axis=0))))


def test_deep_chain():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.negative(relay.reshape(relay.reshape(e, (1, 2)), (2,)))
    f = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], e)))["main"]
    out = simplify_expr(f)
    n, body = 0, out.body
    while isinstance(body, relay.Call):
        assert body.op.name == "negative"
        assert body.args[0].op.name == "reshape"  # reshape(reshape(e)) became one reshape
        n, body = n + 1, body.args[0].args[0]
    assert n == 100_000


def test_add_of_itself_becomes_multiply_by_two():
    x = relay.var("x", shape=(3,))
    _check(relay.Function([x], relay.exp(x + x)),
           relay.Function([x], relay.exp(x * relay.const(2.0))))


def test_noop_transpose_and_layout_transform_pairs():
    x = relay.var("x", shape=(1, 2, 3, 4))
    _check(relay.Function([x], relay.exp(relay.transpose(x, (0, 1, 2, 3)))),
           relay.Function([x], relay.exp(x)))
    there = relay.layout_transform(x, "NCHW", "NHWC")
    _check(relay.Function([x], relay.exp(relay.layout_transform(there, "NHWC", "NCHW"))),
           relay.Function([x], relay.exp(x)))
    # a layout_transform then a transpose: one transpose (TVM's rule)
    y = relay.transpose(there, (0, 3, 1, 2))
    _check(relay.Function([x], relay.exp(relay.transpose(y, (0, 2, 3, 1)))),
           relay.Function([x], relay.exp(relay.transpose(x, (0, 2, 3, 1)))))


def test_arg_reductions_skip_dequantize():
    from minitvm.relay import qnn

    q = relay.var("q", shape=(2, 5), dtype="int8")
    dq = qnn.op.dequantize(q, relay.const(0.5), relay.const(3))
    _check(relay.Function([q], relay.argmax(dq, axis=[1])),
           relay.Function([q], relay.argmax(q, axis=[1])),
           [np.array([[1, 5, -3, 2, 2], [0, 0, 9, -9, 1]], "int8")])


def test_clip_and_casts():
    x = relay.var("x", shape=(4,), dtype="int32")
    clip = relay.clip(x, 0.0, 255.0)
    y = relay.cast(relay.cast(clip, "uint8"), "int32")  # both casts hold [0, 255]
    _check(relay.Function([x], y), relay.Function([x], relay.clip(x, 0.0, 255.0)),
           [np.array([-5, 0, 100, 300], "int32")])
    z = relay.cast(relay.clip(x, -1000.0, 1000.0), "int8")  # int8 does not hold the range
    _check(relay.Function([x], z), relay.Function([x], z), [np.array([-5, 0, 100, 3], "int32")])
    u = relay.var("u", shape=(4,), dtype="uint8")
    _check(relay.Function([u], relay.clip(u, 0.0, 255.0)), relay.Function([u], u),
           [np.array([0, 1, 200, 255], "uint8")])
    _check(relay.Function([u], relay.clip(u, 1.0, 255.0)),
           relay.Function([u], relay.clip(u, 1.0, 255.0)), [np.array([0, 1, 2, 3], "uint8")])


def test_full_elementwise_any_broadcast_op():
    x = relay.var("x", shape=(2, 3))
    y = relay.maximum(x, relay.full_like(x, relay.const(0.5)))
    _check(relay.Function([x], y), relay.Function([x], relay.maximum(x, relay.const(0.5))))
    z = relay.subtract(relay.zeros_like(x), x)
    _check(relay.Function([x], z), relay.Function([x], relay.subtract(relay.const(0.0), x)))


def test_full_operand_of_bias_add_stays_a_tensor():
    """``bias_add(x, zeros_like(b))``: a namespaced broadcast op's operand is not replaced by
    the scalar fill (a 0-D bias does not type check); a static one is concretized to zeros."""
    x = relay.var("x", shape=(relay.Any(), relay.Any()))
    b = relay.var("b", shape=(relay.Any(),))
    f = relay.Function([x, b], relay.nn.bias_add(x, relay.zeros_like(b)))
    out = run_pass(relay.transform.SimplifyExpr(), tvm.IRModule.from_expr(f))
    tvm.ir.assert_structural_equal(out["main"], infer(f))
    x2, b2 = relay.var("x", shape=(2, 3)), relay.var("b", shape=(3,))
    _check(relay.Function([x2, b2], relay.nn.bias_add(x2, relay.zeros_like(b2))),
           relay.Function([x2, b2], relay.nn.bias_add(x2, relay.zeros((3,), "float32"))))
