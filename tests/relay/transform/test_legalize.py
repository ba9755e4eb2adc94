import pytest
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.ir.op import Op
from minitvm.relay.transform.legalize import legalize


@pytest.fixture
def temp_hook():
    """Register a hook under a test-only attribute name; removed afterwards."""
    registered = []

    def reg(op_name, fn, attr="FTVMLegalizeTest"):
        Op.get(op_name).set_attr(attr, fn, 99)
        registered.append((op_name, attr))

    yield reg
    for op_name, attr in registered:
        Op.get(op_name).reset_attr(attr)


def test_pass_info():
    p = relay.transform.Legalize()
    assert (p.info.name, p.info.opt_level, list(p.info.required)) == (
        "Legalize", 1, ["InferType"])


def test_hook_replaces_call(temp_hook):
    seen = []

    def subtract_as_add(attrs, inputs, arg_types):
        seen.append(arg_types)
        return relay.add(inputs[0], relay.negative(inputs[1]))

    temp_hook("subtract", subtract_as_add)
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(3,))
    mod = relay.transform.InferType()(
        tvm.IRModule.from_expr(relay.Function([x, y], relay.exp(relay.subtract(x, y)))))
    out = run_pass(relay.transform.Legalize("FTVMLegalizeTest"), mod)
    expected = infer(relay.Function([x, y], relay.exp(relay.add(x, relay.negative(y)))))
    tvm.ir.assert_structural_equal(out["main"], expected)
    assert [str(t) for t in seen[0]] == ["Tensor[(2, 3), float32]", "Tensor[(3), float32]",
                                         "Tensor[(2, 3), float32]"]
    check_numerics(mod, out)


def test_hook_returning_none_keeps_call(temp_hook):
    temp_hook("exp", lambda attrs, inputs, types: None)
    x = relay.var("x", shape=(2,))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], relay.exp(x))))
    out = relay.transform.Legalize("FTVMLegalizeTest")(mod)
    tvm.ir.assert_structural_equal(out["main"], mod["main"])


def test_default_attr_name_uses_register_legalize():
    x = relay.var("x", shape=(2,))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], relay.exp(x))))
    op = Op.get("exp")
    old = op.get_attr("FTVMLegalize")
    op.set_attr("FTVMLegalize", lambda a, i, t: relay.exp(relay.copy(i[0])), 99)
    try:
        out = relay.transform.Legalize()(mod)
    finally:
        op.reset_attr("FTVMLegalize")
        if old is not None:
            op.set_attr("FTVMLegalize", old)
    assert out["main"].body.args[0].op.name == "copy"


def test_bad_hook_result(temp_hook):
    temp_hook("exp", lambda attrs, inputs, types: 3)
    x = relay.var("x", shape=(2,))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], relay.exp(x))))
    with pytest.raises(TypeError, match="hook of exp returned int"):
        relay.transform.Legalize("FTVMLegalizeTest")(mod)


def test_untyped_is_an_error(temp_hook):
    temp_hook("exp", lambda attrs, inputs, types: None)
    x = relay.var("x", shape=(2,))
    with pytest.raises(ValueError, match="InferType"):
        legalize(relay.Function([x], relay.exp(x)), "FTVMLegalizeTest")
