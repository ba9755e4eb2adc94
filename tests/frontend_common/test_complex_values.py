"""The dialect-free complex arithmetic of the PyTorch importers, run on numpy arrays (the
``Arith`` each dialect supplies builds IR instead; the importers' FFT tests cover those)."""

import numpy as np
import pytest

from minitvm.frontend_common import complex_values as cv

NP = cv.Arith(np.add, np.subtract, np.multiply, np.negative, np.sqrt, np.divide)
rng = np.random.default_rng(0)


def _pair(z: np.ndarray) -> cv.ComplexValue:
    return cv.ComplexValue(z.real.copy(), z.imag.copy())


def _value(v: cv.ComplexValue) -> np.ndarray:
    return v.re + 1j * (0 if v.im is None else v.im)


def _rand():
    return rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))


def test_product_sum_abs_match_numpy():
    a, b = _rand(), _rand()
    np.testing.assert_allclose(_value(cv.complex_product(_pair(a), _pair(b), NP)), a * b)
    np.testing.assert_allclose(_value(cv.complex_sum(_pair(a), _pair(b), 1, NP)), a + b)
    np.testing.assert_allclose(_value(cv.complex_sum(_pair(a), _pair(b), -1, NP)), a - b)
    np.testing.assert_allclose(cv.complex_abs(_pair(a), NP), np.abs(a))
    np.testing.assert_allclose(_value(cv.complex_quotient(_pair(a), _pair(b), NP)), a / b)


def test_real_operands_have_no_imaginary_part():
    a, r = _rand(), rng.standard_normal((3, 4))
    real = cv.ComplexValue(r, None)
    np.testing.assert_allclose(_value(cv.complex_product(real, _pair(a), NP)), r * a)
    np.testing.assert_allclose(_value(cv.complex_sum(real, _pair(a), -1, NP)), r - a)
    np.testing.assert_allclose(_value(cv.complex_sum(_pair(a), real, 1, NP)), a + r)
    np.testing.assert_allclose(_value(cv.complex_quotient(_pair(a), real, NP)), a / r)
    np.testing.assert_allclose(_value(cv.complex_quotient(real, _pair(a), NP)), r / a)


def test_operand_pair_converts_the_real_side():
    z = _pair(_rand())
    got = cv.operand_pair([2.0, z], lambda v, other: cv.ComplexValue(np.full((3, 4), v), None))
    assert got[1] is z and got[0].im is None and float(got[0].re[0, 0]) == 2.0


def test_refuse_complex_names_the_failure_and_respects_the_marker():
    z = cv.ComplexValue(np.zeros(2), np.zeros(2))

    def real_only(ctx, args):
        return args

    with pytest.raises(ValueError, match="relu of a complex"):
        cv.refuse_complex(real_only, [[1, z]], lambda: ValueError("relu of a complex tensor"))
    cv.refuse_complex(real_only, [np.zeros(2)], lambda: ValueError("unexpected"))
    cv.refuse_complex(cv.handles_complex(lambda ctx, args: args), [z], lambda: ValueError("x"))


def test_complex_aware_routes_and_per_part_applies_to_both_parts():
    conv = cv.complex_aware(lambda ctx, args: "real", cv.per_part(lambda ctx, args: args[0].T))
    assert conv(None, [np.zeros((2, 3))]) == "real"
    z = _pair(_rand())
    out = conv(None, [z])
    assert out.re.shape == (4, 3) and np.array_equal(out.im, z.im.T)


def test_exp_and_multilinear_match_numpy():
    a, b, c, d = _rand(), _rand(), rng.standard_normal((4, 5)), _rand()
    np.testing.assert_allclose(_value(cv.complex_exp(_pair(a), np.exp, np.cos, np.sin,
                                                     np.multiply)), np.exp(a))
    real = cv.ComplexValue(c, None)
    for operands, want in (([_pair(a), _pair(b.T)], a @ b.T),
                           ([_pair(a), real], a @ c),
                           ([_pair(a), _pair(b.T), _pair(d)], a @ b.T @ d)):
        got = cv.complex_multilinear(lambda parts: np.linalg.multi_dot(parts) if len(parts) > 2
                                     else parts[0] @ parts[1], operands, NP)
        np.testing.assert_allclose(_value(got), want, rtol=1e-12)


def test_complex_aware_sees_python_complex_and_lists():
    route = cv.complex_aware(lambda ctx, args: "real", lambda ctx, args: "complex")
    assert route(None, [np.ones(2), 2.0]) == "real"
    assert route(None, [np.ones(2), 1j]) == "complex"
    assert route(None, ["ij->i", [np.ones(2), _pair(_rand())]]) == "complex"
    seen = []
    got = cv.operand_pair([np.ones(2), 1j], lambda v, z: seen.append(z) or cv.ComplexValue(
        np.full(2, np.real(v)), np.full(2, np.imag(v))))
    assert all(z.im is None and z.re.shape == (2,) for z in seen)  # the tensor's dtype
    assert float(got[0].re[0]) == 1.0 and float(got[1].im[0]) == 1.0
