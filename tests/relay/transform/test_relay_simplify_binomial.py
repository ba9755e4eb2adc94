"""SimplifyExpr's SimplifyBinomial rewrite (TVM v0.19): ``a*x*x + b*x*y + c*y*y`` with constant
coefficients is factored into ``a * ((x + p*y) * (x + q*y))``; the other SimplifyExpr rewrites
then drop multiplications by one, as TVM's fixed-point loop does."""

from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform


def _vars(dtype="float32"):
    return relay.var("x", shape=(2, 3), dtype=dtype), relay.var("y", shape=(2, 3), dtype=dtype)


def _simplify(x, y, e):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, y], e)))
    return mod, transform.SimplifyExpr()(mod)


def _expected(x, y, e):
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, y], e)))["main"]


def _c(v, dtype="float32"):
    return relay.const(v, dtype)


def test_square_of_a_sum():
    x, y = _vars()
    forms = [x * x + _c(2.0) * (x * y) + y * y,
             (_c(2.0) * (x * y) + y * y) + x * x,
             (x * x + y * y) + x * (_c(2.0) * y)]
    for e in forms:
        mod, out = _simplify(x, y, e)
        s = relay.add(x, y)
        tvm.ir.assert_structural_equal(out["main"], _expected(x, y, relay.multiply(s, s)))
        check_numerics(mod, out, rtol=1e-5, atol=1e-5)


def test_distinct_roots_give_two_factors():
    # x*x + 3*x*y + 2*y*y = (x + 2y)(x + y)
    x, y = _vars()
    mod, out = _simplify(x, y, x * x + _c(3.0) * (x * y) + _c(2.0) * (y * y))
    expected = relay.multiply(relay.add(x, relay.multiply(y, _c(2.0))), relay.add(x, y))
    tvm.ir.assert_structural_equal(out["main"], _expected(x, y, expected))
    check_numerics(mod, out, rtol=1e-5, atol=1e-5)


def test_leading_coefficient_moves_to_the_unit_square():
    # 3*x*x + 4*x*y + y*y: TVM swaps x and y so the leading coefficient is 1: (y+3x)(y+x)
    x, y = _vars()
    mod, out = _simplify(x, y, _c(3.0) * (x * x) + x * (_c(4.0) * y) + y * y)
    expected = relay.multiply(relay.add(y, relay.multiply(x, _c(3.0))), relay.add(y, x))
    tvm.ir.assert_structural_equal(out["main"], _expected(x, y, expected))
    check_numerics(mod, out, rtol=1e-5, atol=1e-5)


def test_leading_coefficient_kept_as_a_factor():
    # 2*x*x + 4*x*y + 2*y*y = 2 * (x+y)(x+y)
    x, y = _vars()
    mod, out = _simplify(x, y, _c(2.0) * (x * x) + _c(4.0) * (x * y) + _c(2.0) * (y * y))
    s = relay.add(x, y)
    expected = relay.multiply(_c(2.0), relay.multiply(s, s))
    tvm.ir.assert_structural_equal(out["main"], _expected(x, y, expected))
    check_numerics(mod, out, rtol=1e-5, atol=1e-5)


def test_integer_coefficients():
    x, y = _vars("int32")
    mod, out = _simplify(x, y, x * x + _c(2, "int32") * (x * y) + y * y)
    s = relay.add(x, y)
    tvm.ir.assert_structural_equal(out["main"], _expected(x, y, relay.multiply(s, s)))
    check_numerics(mod, out)


def test_no_real_roots_is_left_alone():
    x, y = _vars()
    e = x * y + x * x + y * y  # discriminant 1 - 4 < 0
    mod, out = _simplify(x, y, e)
    tvm.ir.assert_structural_equal(out["main"], mod["main"])


def test_not_a_binomial_is_left_alone():
    x, y = _vars()
    z = relay.var("z", shape=(2, 3))
    e = x * x + _c(2.0) * (x * z) + y * y
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, y, z], e)))
    out = transform.SimplifyExpr()(mod)
    tvm.ir.assert_structural_equal(out["main"], mod["main"])
    assert len(out["main"].params) == 3


def test_outer_operands_in_either_order():
    """The square term may come first: add commutes in the matcher, and the cheap shape check
    before it (an add of two multiplies beside a multiply) accepts both orders."""
    x, y = _vars()
    e = relay.add(y * y, relay.add(x * x, _c(2.0) * (x * y)))
    mod, out = _simplify(x, y, e)
    s = relay.add(x, y)
    tvm.ir.assert_structural_equal(out["main"], _expected(x, y, relay.multiply(s, s)))
    check_numerics(mod, out, rtol=1e-5, atol=1e-5)
