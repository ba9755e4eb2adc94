"""relax.backend's pattern registry and pattern builders: registration, precedence by prefix,
replacement, and what the matmul / bias-activation patterns match."""

from __future__ import annotations

import pytest

from minitvm import relax
from minitvm.relax.backend import patterns as backend_patterns
from minitvm.relax.dpl import is_op, wildcard


@pytest.fixture
def registered():
    names = []

    def register(*entries):
        relax.backend.register_patterns(entries)
        names.extend(e[0] for e in entries)

    yield register
    relax.backend.unregister_patterns(names)


def test_registry_order_and_replacement(registered):
    a, b = wildcard(), wildcard()
    registered(("mylib.add", is_op("relax.add")(a, b)),
               ("mylib.add_relu", is_op("relax.nn.relu")(is_op("relax.add")(a, b))))
    assert [p.name for p in relax.backend.get_patterns_with_prefix("mylib")] == \
        ["mylib.add_relu", "mylib.add"]
    assert relax.backend.get_pattern("mylib.add").name == "mylib.add"
    assert relax.backend.get_pattern("mylib.nothing") is None
    registered(("mylib.add", is_op("relax.add")(b, a)))  # replaced, now most recent
    assert [p.name for p in relax.backend.get_patterns_with_prefix("mylib")] == \
        ["mylib.add", "mylib.add_relu"]
    with pytest.raises(TypeError, match="FusionPattern or a tuple"):
        relax.backend.register_patterns(["mylib.bad"])


def _linear_relu_block():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((2, 4), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((3, 4), "float32"))
    b = relax.Var("b", relax.TensorStructInfo((3,), "float32"))
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            wt = bb.emit(relax.op.permute_dims(w))
            mm = bb.emit(relax.op.matmul(x, wt))
            add = bb.emit(relax.op.add(mm, b))
            out = bb.emit_output(relax.op.nn.relu(add))
        bb.emit_func_output(out)
    func = bb.get()["main"]
    bindings = func.body.blocks[0].bindings
    return {bd.var: bd.value for bd in bindings}, bindings[-1].value, (x, w, b)


@pytest.mark.parametrize("transposed, bias, act, matches", [
    (True, True, "relax.nn.relu", True),
    (True, True, None, False),  # the root is relu, not add
    (False, True, "relax.nn.relu", True),  # any right operand (here the permute_dims)
    (True, False, "relax.nn.relu", False),  # relu reads the add, not the matmul
])
def test_matmul_pattern(transposed, bias, act, matches):
    var2val, root, (x, w, b) = _linear_relu_block()
    pattern, annotations = backend_patterns.make_matmul_pattern(
        with_bias=bias, activation=act, transposed_rhs=transposed)
    found = pattern.extract_matched_expr(root, var2val)
    assert (found is not None) == matches
    if matches:
        assert found[annotations["lhs"]] is x and found[annotations["bias"]] is b
        rhs = found[annotations["rhs"]]
        assert (rhs is w) == transposed  # else the permute_dims' result



def test_pattern_arithmetic_builds_operator_calls():
    a, b = wildcard(), wildcard()
    for pat, op in ((a + b, "relax.add"), (a - b, "relax.subtract"), (a * b, "relax.multiply"),
                    (a / b, "relax.divide")):
        assert pat.op.expr.name == op and pat.args == [a, b]
    fused, ann = backend_patterns.make_fused_bias_activation_pattern(
        "relax.nn.conv2d", with_bias=True, activation="relax.nn.relu")
    assert fused.op.expr.name == "relax.nn.relu" and set(ann) == {"lhs", "rhs", "bias", "root"}
