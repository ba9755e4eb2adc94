"""relax.dpl: pattern constructors and the matcher (through bindings, commutativity, memo,
attributes, dtype/shape, alternatives) and rewrite_call."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax.dpl import (
    has_dtype,
    is_call_tir,
    is_const,
    is_dfvar,
    is_gv,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    rewrite_call,
    wildcard,
)


def _conv_relu_module():
    x = relax.Var("x", relax.TensorStructInfo([1, 3, 8, 8], "float32"))
    w = relax.Var("w", relax.TensorStructInfo([4, 3, 3, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            c = bb.emit(R.nn.conv2d(x, w, padding=1))
            r = bb.emit(R.nn.relu(c))
            a = bb.emit(R.add(relax.const(np.ones((1, 4, 8, 8), "float32")), r))
            t = bb.emit(relax.Tuple([a, r]))
            i = bb.emit(relax.TupleGetItem(t, 1))
            gv = bb.emit_output(i)
        bb.emit_func_output(gv)
    func = bb.get()["main"]
    bindings = func.body.blocks[0].bindings
    return func, {b.var: b.value for b in bindings}, [b.var for b in bindings], x, w


def test_call_patterns_look_through_bindings():
    func, var2val, (c, r, a, t, i, gv), x, w = _conv_relu_module()
    conv = is_op("relax.nn.conv2d")(wildcard(), wildcard())
    relu = is_op("relax.nn.relu")(conv)
    assert relu.match(var2val[r], var2val)
    assert not relu.match(var2val[r])  # without bindings, the argument is just a variable
    m = relu.extract_matched_expr(var2val[r], var2val)
    assert m[conv] is var2val[c] and m[relu] is var2val[r]
    assert not relu.match(var2val[c], var2val)


def test_commutative_operands_and_constants():
    func, var2val, (c, r, a, t, i, gv), x, w = _conv_relu_module()
    pat = is_op("relax.add")(is_op("relax.nn.relu")(wildcard()), is_const())
    assert pat.match(var2val[a], var2val)  # written (const, relu): matched swapped
    assert not is_op("relax.add")(is_const(), is_const()).match(var2val[a], var2val)


def test_vars_tuples_and_items():
    func, var2val, (c, r, a, t, i, gv), x, w = _conv_relu_module()
    assert is_var("x").match(x) and not is_var("y").match(x) and is_var().match(w)
    assert is_dfvar().match(c) and not is_dfvar().match(x)
    tup = is_tuple([wildcard(), is_op("relax.nn.relu")(wildcard())])
    assert tup.match(var2val[t], var2val)
    assert is_tuple_get_item(tup, 1).match(var2val[i], var2val)
    assert not is_tuple_get_item(tup, 0).match(var2val[i], var2val)
    assert is_tuple_get_item(wildcard()).match(var2val[i])


def test_a_reused_pattern_must_match_one_expression():
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([4], "float32"))
    same = wildcard()
    pat = is_op("relax.multiply")(same, same)
    assert pat.match(R.multiply(x, x))
    assert not pat.match(R.multiply(x, y))


def test_attributes_dtype_shape_and_alternatives():
    func, var2val, (c, r, a, t, i, gv), x, w = _conv_relu_module()
    conv = is_op("relax.nn.conv2d")(wildcard(), wildcard())
    assert conv.has_attr({"padding": [1, 1, 1, 1]}).match(var2val[c])
    assert not conv.has_attr({"padding": [0, 0, 0, 0]}).match(var2val[c])
    assert conv.has_attr({"data_layout": "NCHW"}).match(var2val[c])
    assert conv.has_dtype("float32").match(var2val[c])
    assert not has_dtype("float16").match(var2val[c])
    assert conv.has_shape([1, 4, 8, 8]).match(var2val[c])
    assert not conv.has_shape([1, 4, 8, 9]).match(var2val[c])
    either = is_op("relax.nn.gelu")(wildcard()) | is_op("relax.nn.relu")(wildcard())
    assert either.match(var2val[r])
    assert (conv & conv.has_dtype("float32")).match(var2val[c])
    assert (~is_op("relax.nn.relu")(wildcard())).match(var2val[c])
    assert not (~is_op("relax.nn.relu")(wildcard())).match(var2val[r])


def test_call_tir_and_global_var_patterns():
    gv = tvm.ir.GlobalVar("add")
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    call = relax.op.base.call_tir(gv, relax.Tuple([x, x]), relax.TensorStructInfo([4], "float32"))
    assert is_call_tir("add").match(call)
    assert is_call_tir("add", [wildcard(), is_var("x")]).match(call)
    assert not is_call_tir("sub").match(call)
    assert is_gv("add").match(gv) and not is_gv("mul").match(gv)


def test_unknown_op_is_a_clear_error():
    with pytest.raises(ValueError, match="relax.no_such_op"):
        is_op("relax.no_such_op")


def test_rewrite_call_replaces_matches_and_reaches_a_fixed_point():
    func, var2val, *_ = _conv_relu_module()
    relu = is_op("relax.nn.relu")(wildcard())

    def to_gelu(expr, matches):
        return R.nn.gelu(expr.args[0])

    out = rewrite_call(relu, to_gelu, func)
    text = out.script()
    assert "R.nn.gelu(" in text and "R.nn.relu(" not in text
    assert "R.nn.relu(" in func.script()  # the input is unchanged
    same = rewrite_call(relu, lambda e, m: e, func)
    tvm.ir.assert_structural_equal(same, func)
