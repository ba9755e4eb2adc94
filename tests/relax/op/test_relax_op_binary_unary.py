"""Struct-info inference of Relax binary (broadcast) and unary elementwise ops."""

import pytest

from minitvm import relax, tir
from minitvm.ir import Op, OpPattern
from minitvm.relax import op as R
from minitvm.relax.analysis import struct_info_base_check

n = tir.Var("n", "int64")
m = tir.Var("m", "int64")


def tvar(name, shape=None, dtype="float32", ndim=-1):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype, ndim=ndim))


def assert_sinfo(actual, expected):
    assert type(actual) is type(expected), (actual, expected)
    if isinstance(expected, relax.TensorStructInfo):
        assert actual.dtype == expected.dtype
        assert actual.ndim == expected.ndim
        assert (actual.shape is None) == (expected.shape is None), (actual, expected)
    assert struct_info_base_check(expected, actual) and struct_info_base_check(actual, expected), \
        (str(actual), str(expected))


def T(shape=None, dtype="float32", ndim=-1):
    return relax.TensorStructInfo(shape, dtype, ndim=ndim)


inf = R.infer_struct_info


# --------------------------------------------------------------------------- binary
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "floor_divide",
                                  "power", "maximum", "minimum", "mod", "floor_mod"])
def test_binary_arith_registered_and_static(name):
    op = Op.get("relax." + name)
    assert op.get_attr("FPurity") is True
    assert op.get_attr("TOpPattern") == OpPattern.BROADCAST
    call = getattr(R, name)(tvar("x", [2, 3]), tvar("y", [3]))
    assert call.op is op and call.attrs is None and len(call.args) == 2
    assert_sinfo(inf(call), T([2, 3]))


@pytest.mark.parametrize("name", ["equal", "not_equal", "greater", "greater_equal", "less",
                                  "less_equal"])
def test_comparisons_give_bool(name):
    call = getattr(R, name)(tvar("x", [2, 1, 4]), tvar("y", [3, 1]))
    assert_sinfo(inf(call), T([2, 3, 4], "bool"))


def test_binary_broadcast_rules():
    assert_sinfo(inf(R.add(tvar("x", [1, 4]), tvar("y", [5, 1]))), T([5, 4]))
    assert_sinfo(inf(R.add(tvar("x", [4]), tvar("y", [2, 3, 4]))), T([2, 3, 4]))
    assert_sinfo(inf(R.add(tvar("x", []), tvar("y", [2, 3]))), T([2, 3]))


def test_binary_symbolic():
    assert_sinfo(inf(R.add(tvar("x", [n, 4]), tvar("y", [4]))), T([n, 4]))
    assert_sinfo(inf(R.add(tvar("x", [n, 1]), tvar("y", [1, m]))), T([n, m]))
    assert_sinfo(inf(R.add(tvar("x", [n, 4]), tvar("y", [n, 4]))), T([n, 4]))
    assert_sinfo(inf(R.multiply(tvar("x", [n * 2]), tvar("y", [n * 2]))), T([n * 2]))
    # n against m cannot be decided: unknown shape of known rank (TVM's fallback)
    assert_sinfo(inf(R.add(tvar("x", [n]), tvar("y", [m]))), T(ndim=1))
    assert_sinfo(inf(R.add(tvar("x", [n]), tvar("y", [4]))), T(ndim=1))


def test_binary_unknown_shapes_and_dtypes():
    assert_sinfo(inf(R.add(tvar("x", ndim=2), tvar("y", [3]))), T(ndim=2))
    assert_sinfo(inf(R.add(tvar("x", ndim=-1), tvar("y", [3]))), T(ndim=-1))
    assert_sinfo(inf(R.add(tvar("x", [3], dtype=None), tvar("y", [3]))), T([3], "void"))
    shape = relax.Var("s", relax.ShapeStructInfo(ndim=2))
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    y = relax.Var("y", relax.TensorStructInfo(shape, "float32"))
    out = inf(R.add(x, y))
    assert out.shape is shape and out.ndim == 2


def test_binary_prim_operands():
    a = relax.PrimValue(tir.IntImm("int64", 3))
    b = relax.PrimValue(n)
    out = inf(R.add(a, b))
    assert isinstance(out, relax.PrimStructInfo) and out.dtype == "int64"
    out = inf(R.add(tvar("x", [2, 3], "int64"), a))
    assert_sinfo(out, T([2, 3], "int64"))


def test_binary_errors():
    with pytest.raises(R.StructInfoError, match=r"relax.add.*not broadcastable.*\(2, 3\)"):
        inf(R.add(tvar("x", [2, 3]), tvar("y", [4])))
    with pytest.raises(ValueError, match="float32 and int32"):
        inf(R.add(tvar("x", [2]), tvar("y", [2], "int32")))
    with pytest.raises(TypeError, match="tensors or R.Prim"):
        inf(R.add(tvar("x", [2]), relax.Var("t", relax.TupleStructInfo([]))))
    with pytest.raises(R.StructInfoError, match="expects 2 arguments"):
        inf(relax.Call(Op.get("relax.add"), [tvar("x", [2])]))
    with pytest.raises(R.StructInfoError, match="no struct info"):
        inf(R.add(relax.Var("x"), tvar("y", [2])))


def test_expr_operators_build_binary_calls():
    x, y = tvar("x", [2, 3]), tvar("y", [2, 3])
    assert (x + y).op.name == "relax.add"
    assert (x - y).op.name == "relax.subtract"
    assert (x * y).op.name == "relax.multiply"
    assert (x / y).op.name == "relax.divide"
    c = x * 2.0
    assert isinstance(c.args[1], relax.Constant)
    assert_sinfo(inf(c), T([2, 3]))
    assert_sinfo(inf(R.add(x, 1.0)), T([2, 3]))


# --------------------------------------------------------------------------- unary
FLOAT_ONLY = ["exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "erf", "tan",
              "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"]
ANY_DTYPE = ["negative", "abs", "floor", "ceil", "round", "square", "sign", "trunc"]


@pytest.mark.parametrize("name", FLOAT_ONLY + ANY_DTYPE)
def test_unary_keeps_struct_info(name):
    op = Op.get("relax." + name)
    assert op.get_attr("TOpPattern") == OpPattern.ELEMWISE
    assert op.get_attr("FPurity") is True
    f = getattr(R, name)
    assert_sinfo(inf(f(tvar("x", [2, n]))), T([2, n]))
    assert_sinfo(inf(f(tvar("x", ndim=3))), T(ndim=3))
    assert_sinfo(inf(f(tvar("x", [4], "float16"))), T([4], "float16"))


@pytest.mark.parametrize("name", FLOAT_ONLY)
def test_unary_float_required(name):
    with pytest.raises(R.StructInfoError, match=f"relax.{name}.*float"):
        inf(getattr(R, name)(tvar("x", [2], "int32")))
    assert_sinfo(inf(getattr(R, name)(tvar("x", [2], None))), T([2], "void"))


@pytest.mark.parametrize("name", ANY_DTYPE)
def test_unary_int_ok(name):
    assert_sinfo(inf(getattr(R, name)(tvar("x", [2], "int32"))), T([2], "int32"))


@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite"])
def test_unary_predicates_give_bool(name):
    assert_sinfo(inf(getattr(R, name)(tvar("x", [n, 2]))), T([n, 2], "bool"))


def test_unary_shares_the_input_shape():
    x = tvar("x", [n, 3])
    assert inf(R.exp(x)) is x.struct_info


def test_unary_rejects_non_tensor():
    with pytest.raises(TypeError, match="relax.exp.*tensor"):
        inf(R.exp(relax.Var("s", relax.ShapeStructInfo([2]))))


def test_clip():
    call = R.clip(tvar("x", [2, n]), 0.0, 6.0)
    assert all(isinstance(a, relax.PrimValue) for a in call.args[1:])
    assert_sinfo(inf(call), T([2, n]))
    with pytest.raises(TypeError):
        inf(relax.Call(Op.get("relax.clip"), [tvar("x", [2]), relax.ShapeExpr([1]),
                                              relax.PrimValue(1)]))


def test_astype():
    call = R.astype(tvar("x", [2, n]), "float16")
    assert call.attrs.type_key == "relax.attrs.AstypeAttrs" and call.attrs.dtype == "float16"
    assert_sinfo(inf(call), T([2, n], "float16"))
    assert_sinfo(inf(tvar("y", ndim=2).astype("int8")), T(ndim=2, dtype="int8"))
