import numpy as np
import pytest
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform.simplify_inference import simplify_inference


def _simple_bn(x, gamma, beta, mean, var, axis, eps, shape, dtype="float32"):
    scale = relay.multiply(relay.const(1, dtype) / relay.sqrt(var + relay.const(eps, dtype)),
                           gamma)
    shift = relay.add(relay.multiply(relay.negative(mean), scale), beta)
    num_newaxis = len(shape) - (axis + 1)
    if num_newaxis:
        scale = relay.expand_dims(scale, axis=1, num_newaxis=num_newaxis)
        shift = relay.expand_dims(shift, axis=1, num_newaxis=num_newaxis)
    return x * scale + shift


def test_pass_info():
    p = relay.transform.SimplifyInference()
    assert (p.info.name, p.info.opt_level, list(p.info.required)) == (
        "SimplifyInference", 0, ["InferType"])


@pytest.mark.parametrize("dim,axis,nstep", [(2, 1, 1), (4, 1, 1), (4, 0, 3)])
def test_batch_norm_and_dropout(dim, axis, nstep):
    # TVM's test_simplify_batchnorm
    dtype, eps = "float32", 0.01
    x = relay.var("x", relay.TensorType((10,) * dim, dtype))
    beta, gamma, mean, var = (relay.var(n, relay.TensorType((10,), dtype))
                              for n in ("beta", "gamma", "moving_mean", "moving_var"))
    y1, y2 = x, x
    for _ in range(nstep):
        y1, _, _ = relay.nn.batch_norm(y1 + relay.const(1, dtype), gamma, beta, mean, var,
                                       epsilon=eps, axis=axis)
        y1 = relay.nn.dropout(y1)
        y2 = _simple_bn(y2 + relay.const(1, dtype), gamma, beta, mean, var, axis, eps,
                        (10,) * dim)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(y1))
    out = run_pass(relay.transform.SimplifyInference(), mod)
    tvm.ir.assert_structural_equal(out["main"].body, y2, map_free_vars=True)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.checked_type.concrete_shape).astype(dtype)
            for p in mod["main"].params]
    for i, p in enumerate(mod["main"].params):
        if p.name_hint == "moving_var":
            args[i] = np.abs(args[i]) + 0.5
    check_numerics(mod, out, args, rtol=1e-4, atol=1e-5)


def _check_norm(build, shape, pshape, rtol=1e-4):
    x = relay.var("x", shape=shape)
    g = relay.var("g", shape=pshape)
    b = relay.var("b", shape=pshape)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, g, b],
                                                                           build(x, g, b))))
    out = relay.transform.SimplifyInference()(mod)
    names = set()
    relay.analysis.post_order_visit(
        out["main"], lambda e: names.add(e.op.name) if isinstance(e, relay.Call) else None)
    assert not any(n.startswith("nn.") for n in names), names
    check_numerics(mod, out, rtol=rtol, atol=1e-5)
    return names


def test_layer_norm():
    names = _check_norm(lambda x, g, b: relay.nn.layer_norm(x, g, b, axis=-1), (2, 3, 4), (4,))
    assert {"mean", "variance", "sqrt", "divide"} <= names


def test_instance_norm():
    _check_norm(lambda x, g, b: relay.nn.instance_norm(x, g, b, axis=1), (2, 3, 4, 5), (3,))


def test_group_norm():
    names = _check_norm(lambda x, g, b: relay.nn.group_norm(x, g, b, num_groups=2, axis=1),
                        (2, 4, 3, 3), (4,))
    assert "reshape" in names


def test_l2_normalize():
    x = relay.var("x", shape=(2, 5))
    f = relay.Function([x], relay.nn.l2_normalize(x, eps=1e-3, axis=[1]))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    out = relay.transform.SimplifyInference()(mod)
    x2 = relay.var("x", shape=(2, 5))
    total = relay.maximum(relay.sum(x2 * x2, [1], True), relay.const(1e-3))
    tvm.ir.assert_structural_equal(out["main"],
                                   infer(relay.Function([x2], relay.divide(x2,
                                                                           relay.sqrt(total)))))
    check_numerics(mod, out)


def test_untyped_input_is_a_clear_error():
    x = relay.var("x", shape=(2, 3))
    e = relay.nn.layer_norm(x, relay.var("g", shape=(3,)), relay.var("b", shape=(3,)))
    with pytest.raises(ValueError, match="run relay.transform.InferType"):
        simplify_inference(relay.Function([x], e))


def test_deep_chain():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    e = relay.nn.dropout(e)
    out = simplify_inference(relay.Function([x], e))
    assert isinstance(out.body, relay.Call) and out.body.op.name == "negative"


def _symbolic_layer_norm():
    x = relay.var("x", shape=(relay.Any(), relay.Any()))
    g, b = relay.var("g", shape=(relay.Any(),)), relay.var("b", shape=(relay.Any(),))
    return relay.Function([x, g, b], relay.nn.layer_norm(x, g, b))


def test_symbolic_channels_tie_the_parameters_through_bias_add():
    """With a symbolic channel count a broadcast multiply would take a gamma of length 1 (or a
    data channel of 1) for any count: bias_adds state the lengths agree."""
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(_symbolic_layer_norm()))
    out = run_pass(relay.transform.SimplifyInference(), mod)
    text = out["main"].astext()
    assert "nn.layer_norm" not in text and text.count("nn.bias_add") == 2
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype("float32") for s in ((4, 3), (3,), (3,))]
    check_numerics(mod, out, args)
    x = relay.var("x", shape=(2, 3))
    static = infer(relay.Function([x], relay.nn.layer_norm(
        x, relay.const(np.ones(3, "float32")), relay.const(np.zeros(3, "float32")))))
    assert "bias_add" not in simplify_inference(static).astext()  # (static: checked by typing)


@pytest.mark.parametrize("shapes,match", [
    (((4, 3), (1,), (3,)), "bias_add"), (((4, 1), (3,), (3,)), "bias_add")])
def test_symbolic_layer_norm_refuses_mismatched_parameters_in_the_vm(shapes, match):
    from minitvm.runtime.vm import VirtualMachine

    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(tvm.IRModule.from_expr(_symbolic_layer_norm()), target="llvm")
    vm = VirtualMachine(exe, tvm.cpu())
    args = [np.ones(s, "float32") for s in shapes]
    assert vm.run(*[np.ones(s, "float32") for s in ((4, 3), (3,), (3,))]).shape == (4, 3)
    with pytest.raises(ValueError, match=match):  # (gave a (4, 3) result before)
        vm.run(*args)


def test_symbolic_batch_norm_refuses_a_data_channel_of_one_in_the_vm():
    from minitvm.runtime.vm import VirtualMachine

    x = relay.var("x", shape=[relay.Any()] * 4)
    ps = [relay.var(n, shape=(relay.Any(),)) for n in "gbmv"]
    f = relay.Function([x, *ps], relay.nn.batch_norm(x, *ps)[0])
    with tvm.transform.PassContext(opt_level=3):
        vm = VirtualMachine(relay.vm.compile(tvm.IRModule.from_expr(f), target="llvm"),
                            tvm.cpu())
    vec = [np.full(4, v, "float32") for v in (2.0, 1.0, 0.5, 1.0)]
    x4 = np.ones((1, 4, 2, 2), "float32")
    want = (x4 - 0.5) / np.sqrt(1.0 + 1e-5) * 2.0 + 1.0
    np.testing.assert_allclose(vm.run(x4, *vec).numpy(), want, rtol=1e-5)
    with pytest.raises(ValueError, match="bias_add"):
        vm.run(np.ones((1, 1, 2, 2), "float32"), *vec)  # (a (1, 4, 2, 2) result before)
    with pytest.raises(ValueError, match="bias_add"):
        vm.run(x4, vec[0], vec[1], vec[2][:1], vec[3])
