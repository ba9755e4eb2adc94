"""topi.reference.fp_errors.quietly: np.errstate(all="ignore") around one call, exactly."""

import numpy as np
import pytest

from minitvm.topi.reference.fp_errors import quietly


def _divide(a, b):
    assert set(np.geterr().values()) == {"ignore"}
    return np.divide(a, b)


def test_errors_are_ignored_inside_and_the_state_comes_back():
    with np.errstate(all="raise"):
        before = np.geterr()
        out = quietly(_divide, np.float32(1.0), np.float32(0.0))
        assert np.isinf(out)
        assert np.isnan(quietly(np.subtract, np.float32(np.inf), np.float32(np.inf)))
        assert np.geterr() == before
        with pytest.raises(FloatingPointError):
            np.divide(np.float32(1.0), np.float32(0.0))


def test_state_comes_back_after_an_exception():
    before = np.geterr()

    def fail():
        raise KeyError("x")

    with pytest.raises(KeyError):
        quietly(fail)
    assert np.geterr() == before


def test_an_errstate_inside_the_call_wins_and_ends_with_it():
    def strict():
        with np.errstate(divide="raise"):
            np.divide(np.float32(1.0), np.float32(0.0))

    with pytest.raises(FloatingPointError):
        quietly(strict)
    assert quietly(lambda: np.geterr()["divide"]) == "ignore"


def test_the_relay_references_use_it():
    from minitvm.topi import get_reference

    class Out:
        dtype = "float32"

    # divide by zero and log of a negative: numpy's values, no warning (pytest -W error)
    with np.errstate(all="raise"):
        got = get_reference("divide")(None, [np.float32([1.0]), np.float32([0.0])], Out())
        assert np.isinf(got).all()
        assert np.isnan(get_reference("log")(None, [np.float32([-1.0])], Out())).all()
