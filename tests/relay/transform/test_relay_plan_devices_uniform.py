"""PlanDevices' shortcut for a program nothing constrains (``_uniform_device``): every value on
the config's default device, rebuilt by ``_capture_uniform`` without the union-find phases.
Each case is planned with the shortcut and with it turned off: the same program, printed and
structurally, with the same devices on the function and its parameters."""

import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.type import TensorType
from minitvm.relay.transform import plan_devices as pd
from minitvm.target import Target, VirtualDevice, make_compilation_config

SHAPE = (2, 3)


def _configs():
    cpu = make_compilation_config(tvm.transform.PassContext(), Target("llvm"))
    gpu_default = make_compilation_config(
        tvm.transform.PassContext(config={"relay.fallback_device_type": 2}),
        [Target("llvm"), Target("cuda").with_host(Target("llvm"))])
    return {"cpu": cpu, "gpu_default": gpu_default}


def _programs():
    x = relay.var("x", shape=SHAPE)
    y = relay.var("y", shape=SHAPE)
    unused = relay.var("unused", shape=SHAPE)
    c = relay.const(np.ones(SHAPE, "float32"))
    t = relay.Tuple([relay.exp(x), relay.add(x, c)])
    chain = relay.nn.relu(relay.add(relay.TupleGetItem(t, 0), relay.TupleGetItem(t, 1)))
    return {
        "chain_with_tuple": relay.Function([x], relay.multiply(chain, relay.const(2.0))),
        "two_params_concat": relay.Function(
            [x, y], relay.concatenate([relay.add(x, y), relay.subtract(x, y)], axis=0)),
        "unused_param": relay.Function([x, unused], relay.tanh(x)),
        "body_is_param": relay.Function([x], x),
        "tuple_of_constants": relay.Function([x], relay.Tuple([c, relay.const(3.0)])),
        "shared_operand": relay.Function([x], relay.add(relay.exp(x), relay.exp(x))),
    }


def _plan(mod, config, shortcut: bool):
    if shortcut:
        return pd.plan_devices(mod, config)
    saved = pd._uniform_device
    pd._uniform_device = lambda *a: None
    try:
        return pd.plan_devices(mod, config)
    finally:
        pd._uniform_device = saved


def _funcs_and_orders(mod):
    funcs = [(gv, f) for gv, f in mod.functions.items() if isinstance(f, relay.Function)]
    return funcs, pd._post_orders(funcs)


@pytest.mark.parametrize("config_name", sorted(_configs()))
@pytest.mark.parametrize("name", sorted(_programs()))
def test_shortcut_equals_the_full_planning(name, config_name):
    config = _configs()[config_name]
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(_programs()[name]))
    before = mod.astext()
    funcs, orders = _funcs_and_orders(mod)
    assert pd._uniform_device(mod, funcs, orders, config) is not None  # the shortcut is taken
    fast, full = _plan(mod, config, True), _plan(mod, config, False)
    assert fast.astext() == full.astext()
    tvm.ir.assert_structural_equal(fast, full, map_free_vars=True)
    f, g = fast["main"], full["main"]
    assert f.virtual_device_ == g.virtual_device_
    assert [p.virtual_device_ for p in f.params] == [p.virtual_device_ for p in g.params]
    assert mod.astext() == before  # the input is not modified
    # planned once more, nothing changes
    assert pd.plan_devices(fast, config).astext() == fast.astext()


def test_planned_program_computes_the_same():
    config = _configs()["cpu"]
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(_programs()["chain_with_tuple"]))
    planned = pd.plan_devices(mod, config)
    x = np.random.default_rng(0).standard_normal(SHAPE).astype("float32")
    want = relay.create_executor("debug", mod=mod).evaluate()(x).numpy()
    got = relay.create_executor("debug", mod=planned).evaluate()(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_constrained_programs_take_the_full_path():
    config = _configs()["cpu"]
    x = relay.var("x", shape=SHAPE)
    annotated = relay.Function([x], relay.annotation.on_device(
        relay.exp(x), VirtualDevice(tvm.cpu()), constrain_result=True))
    placed = relay.Function([x], relay.exp(x))
    placed.virtual_device_ = VirtualDevice(tvm.cpu())
    g = relay.GlobalVar("g")
    calls_global = tvm.IRModule({g: relay.Function([x], relay.exp(x))})
    y = relay.var("y", shape=SHAPE)
    calls_global["main"] = relay.Function([y], g(y))
    cases = [tvm.IRModule.from_expr(annotated), tvm.IRModule.from_expr(placed), calls_global]
    for mod in cases:
        mod = relay.transform.InferType()(mod)
        funcs, orders = _funcs_and_orders(mod)
        assert pd._uniform_device(mod, funcs, orders, config) is None
    # an untyped program is refused by the full path's clear error, as before
    z = relay.var("z", shape=SHAPE)
    untyped = tvm.IRModule.from_expr(relay.Function([z], relay.exp(z)))
    with pytest.raises(ValueError, match="needs typed expressions"):
        pd.plan_devices(untyped, config)


def test_a_100k_chain_at_the_default_recursion_limit():
    assert sys.getrecursionlimit() <= 10_000
    ty = TensorType(SHAPE, "float32")
    x = relay.var("x", shape=SHAPE)
    x._checked_type = ty
    e = x
    relu = tvm.ir.Op.get("nn.relu")
    for _ in range(100_000):
        e = relay.Call(relu, [e])
        e._checked_type = ty
    fn = relay.Function([x], e)
    fn._checked_type = tvm.ir.FuncType([ty], ty)
    mod = tvm.IRModule.from_expr(fn)
    out = pd.plan_devices(mod, _configs()["cpu"])
    main = out["main"]
    assert main.params[0].virtual_device_.device_type_int == 1
    n, e = 0, main.body
    while isinstance(e, relay.Call):
        n, e = n + 1, e.args[0]
    assert n == 100_000 and e is main.params[0]
