"""Small TVM behaviours TVM code relies on: ``uint1`` is ``bool``, an ADT's GlobalTypeVar is
callable (``nat()``), and executors take ``relay.const`` arguments."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir import TypeCall


def test_uint1_is_bool():
    c = relay.var("c", shape=(), dtype="uint1")
    assert c.type_annotation.dtype == "bool"
    x = relay.var("x", shape=(2,))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([c, x],
                                                                         relay.If(c, x, -x))))
    assert str(mod["main"].checked_type) == "fn (bool, Tensor[(2), float32]) -> Tensor[(2), float32]"
    assert relay.TensorType((2,), "uint1x4").dtype == "boolx4"


def test_global_type_var_is_callable():
    from minitvm.relay.prelude import Prelude

    p = Prelude()
    nat = p.mod.get_global_type_var("nat")
    t = nat()
    assert isinstance(t, TypeCall) and t.func is nat and list(t.args) == []
    lst = p.mod.get_global_type_var("List")
    elem = relay.TensorType((), "float32")
    assert tvm.ir.structural_equal(lst(elem), TypeCall(lst, [elem]))


@pytest.mark.parametrize("kind", ["debug", "graph", "vm"])
def test_executors_take_constant_arguments(kind):
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], x * relay.const(2.0)))
    f = relay.create_executor(kind, mod=mod).evaluate()
    a = np.array([1.0, -3.0], "float32")
    np.testing.assert_allclose(f(relay.const(a)).numpy(), 2 * a)
    np.testing.assert_allclose(f(x=relay.const(a)).numpy(), 2 * a)
