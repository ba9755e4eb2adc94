"""Unannotated weights and per-channel parameters get their types from the call's other
arguments and attributes, as TVM's relations assign them (``relay.var("weight")`` in a conv2d
with channels and kernel_size)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay


def _typed(body):
    f = relay.Function(relay.analysis.free_vars(body), body)
    return relay.transform.InferType()(tvm.IRModule.from_expr(f))["main"]


def _param_types(f):
    return {p.name_hint: tuple(int(d) for d in p.checked_type.shape) for p in f.params}


def test_conv_and_dense_weights():
    x = relay.var("x", shape=(2, 4, 10, 10))
    w = relay.var("weight")
    f = _typed(relay.nn.conv2d(x, w, channels=6, kernel_size=(3, 3), padding=(1, 1)))
    assert _param_types(f)["weight"] == (6, 4, 3, 3)
    xh = relay.var("xh", shape=(1, 8, 8, 4))
    wh = relay.var("wh")
    f = _typed(relay.nn.conv2d(xh, wh, channels=4, kernel_size=(3, 3), groups=4,
                               data_layout="NHWC", kernel_layout="HWOI"))
    assert _param_types(f)["wh"] == (3, 3, 4, 1)
    xt = relay.var("xt", shape=(1, 4, 5, 5))
    wt = relay.var("wt")
    f = _typed(relay.nn.conv2d_transpose(xt, wt, channels=3, kernel_size=(2, 2)))
    assert _param_types(f)["wt"] == (4, 3, 2, 2)
    d = relay.var("d", shape=(3, 16))
    dw = relay.var("dw")
    f = _typed(relay.nn.dense(d, dw, units=5))
    assert _param_types(f)["dw"] == (5, 16)


def test_per_channel_parameters():
    x = relay.var("x", shape=(2, 3, 4, 4))
    b, g, be, m, v = (relay.var(n) for n in ("b", "g", "be", "m", "v"))
    y = relay.nn.batch_norm(relay.nn.bias_add(x, b), g, be, m, v)[0]
    types = _param_types(_typed(y))
    assert all(types[n] == (3,) for n in ("b", "g", "be", "m", "v"))
    lg, lb = relay.var("lg"), relay.var("lb")
    types = _param_types(_typed(relay.nn.layer_norm(x, lg, lb, axis=-1)))
    assert types["lg"] == types["lb"] == (4,)


def test_hinted_module_runs_and_missing_attrs_still_error():
    x = relay.var("x", shape=(1, 2, 5, 5))
    w = relay.var("w")
    f = _typed(relay.nn.conv2d(x, w, channels=3, kernel_size=(3, 3)))
    xs = np.random.default_rng(0).standard_normal((1, 2, 5, 5)).astype("float32")
    ws = np.random.default_rng(1).standard_normal((3, 2, 3, 3)).astype("float32")
    out = relay.create_executor("debug", mod=tvm.IRModule.from_expr(f)).evaluate()(xs, ws)
    assert out.numpy().shape == (1, 3, 3, 3)
    bare = relay.var("bare")
    with pytest.raises(Exception, match="cannot infer the type of %bare"):
        _typed(relay.nn.conv2d(x, bare))  # no channels/kernel_size: nothing to go on


def test_polymorphic_function_type_unifies_with_a_less_polymorphic_one():
    # TVM's unifier: the extra type parameters become fresh unknowns (a constructor used as a
    # value in a function annotated with the instantiated type)
    mod = relay.fromtext("""
#[version = "0.0.5"]
type List[A] {
    Cons(A, List[A]),
    Nil,
}
def @main[A]() -> fn(A, List[A]) -> List[A] {
    Cons
}
""")
    assert "List" in str(mod["main"].checked_type)


def test_seed004_old_style_layout_flow():
    # seed 004: ConvertLayout('NCHW') (a bare layout string), relay.build_config and the
    # three-value unpacking of relay.build's result
    x = relay.var("x", shape=(1, 8, 8, 3))
    w = relay.var("w", shape=(3, 3, 3, 4))
    y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1), data_layout="NHWC",
                                      kernel_layout="HWIO"))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], y))
    seq = relay.transform.Sequential([relay.transform.RemoveUnusedFunctions(),
                                      relay.transform.ConvertLayout("NCHW")])
    with relay.transform.PassContext(opt_level=3):
        out = seq(mod)
    assert 'dst_layout="NCHW"' in out.astext()
    with pytest.warns(DeprecationWarning, match="PassContext"), relay.build_config(opt_level=3):
        graph, lib, params = relay.build(out, "llvm", params={})
    assert isinstance(graph, str) and lib is not None


def test_non_generic_adt_named_bare_unifies_with_its_call():
    mod = relay.fromtext("""
#[version = "0.0.5"]
type nat {
  z,
  s(nat),
}
def @main(%x: nat) -> nat {
  s(%x)
}
""")
    # TVM's parser reads a bare ADT name as its call with no arguments, printed `nat[]`
    assert str(mod["main"].checked_type) == "fn (nat[]) -> nat[]"
