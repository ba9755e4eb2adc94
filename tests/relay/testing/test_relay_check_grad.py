"""relay.testing.check_grad: accepts correct gradients, names the parameter of a wrong one."""

import numpy as np
import pytest

from minitvm import relay
from minitvm.relay.testing import check_grad


def test_check_grad_on_small_functions():
    x = relay.var("x", shape=(2, 3), dtype="float64")
    w = relay.var("w", shape=(4, 3), dtype="float64")
    check_grad(relay.Function([x, w], relay.nn.relu(relay.nn.dense(x, w))), mean=0.5)
    y = relay.var("y", shape=(3,), dtype="float64")
    check_grad(relay.Function([y], relay.exp(y) * y), mode="first_order")


def test_check_grad_reports_a_wrong_gradient():
    from minitvm.ir import Op
    from minitvm.relay.testing.temp_op_attr import TempOpAttr

    def wrong_grad(orig, grad):
        return [grad * relay.const(3.0, "float64")]

    y = relay.var("y", shape=(3,), dtype="float64")
    assert Op.get("negative").get_attr("FPrimalGradient") is not None
    with TempOpAttr("negative", "FPrimalGradient", wrong_grad):
        with pytest.raises(AssertionError, match="parameter %y"):
            check_grad(relay.Function([y], relay.negative(y)),
                       inputs=[np.array([1.0, 2.0, 3.0])])
