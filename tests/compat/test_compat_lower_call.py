"""tvm.relay.backend.te_compiler.lower_call (issue 13): one op call lowered to tensor
expressions through the op's strategy, as TVM's TE compiler calls it (``relay.backend.lower_call``
global function), returning a LoweredOutput (outputs, implement)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay, te
from minitvm.relay.backend import te_compiler


def _typed_call(expr_of, *shapes):
    params = [relay.var(f"p{k}", shape=s) for k, s in enumerate(shapes)]
    func = relay.Function(params, expr_of(*params))
    return relay.transform.InferType()(tvm.IRModule.from_expr(func))["main"].body


def _evaluate(outputs, inputs, arrays):
    results = [tvm.nd.array(np.zeros([int(d) for d in o.shape], o.dtype)) for o in outputs]
    f = tvm.codegen.build(te.create_prim_func([*inputs, *outputs]))
    f["main"](*[tvm.nd.array(a) for a in arrays], *results)
    return [r.numpy() for r in results]


def test_lower_call_uses_the_op_implementation():
    call = _typed_call(lambda a, b: relay.add(a, b), (2, 3), (2, 3))
    inputs = [te.placeholder((2, 3), "float32", f"in{k}") for k in range(2)]
    lowered = te_compiler.lower_call(call, inputs, tvm.target.Target("llvm"))
    assert isinstance(lowered, te_compiler.LoweredOutput)
    assert lowered.implement.name == "add.generic" and len(lowered.outputs) == 1
    out = lowered.outputs[0]
    assert [int(d) for d in out.shape] == [2, 3] and out.dtype == "float32"
    a, b = np.random.rand(2, 3).astype("float32"), np.random.rand(2, 3).astype("float32")
    np.testing.assert_allclose(_evaluate(lowered.outputs, inputs, [a, b])[0], a + b, rtol=1e-6)
    assert tvm.get_global_func("relay.backend.lower_call") is te_compiler.lower_call


def test_lower_call_picks_the_highest_priority_strategy():
    from minitvm.relay.op.strategy import generic
    from minitvm.relay.testing.temp_op_attr import TempOpAttr

    def strategy(attrs, inputs, out_type, target):
        s = relay.op.OpStrategy()
        s.add_implementation(
            generic.wrap_topi_compute(lambda x, y: te.compute(x.shape, lambda i, j:
                                                              x[i, j] * y[i, j], name="mul")),
            generic.naive_schedule, name="multiply_instead", plevel=30)
        s.add_implementation(generic.wrap_topi_compute(lambda x, y: x), generic.naive_schedule,
                             name="first_only", plevel=10)
        return s

    call = _typed_call(lambda a, b: relay.add(a, b), (2, 2), (2, 2))
    inputs = [te.placeholder((2, 2), "float32", f"in{k}") for k in range(2)]
    with TempOpAttr("add", "FTVMStrategy", strategy):
        lowered = te_compiler.lower_call(call, inputs, "llvm")
    assert lowered.implement.name == "multiply_instead"
    a, b = np.full((2, 2), 3.0, "float32"), np.full((2, 2), 4.0, "float32")
    np.testing.assert_allclose(_evaluate(lowered.outputs, inputs, [a, b])[0], a * b)


def test_lower_call_with_an_explicit_output_type():
    seen = {}

    def strategy(attrs, inputs, out_type, target):
        from minitvm.relay.op.strategy import generic

        seen["otype"] = out_type
        s = relay.op.OpStrategy()
        s.add_implementation(generic.wrap_topi_compute(lambda x: te.compute(
            x.shape, lambda i: x[i] + 1.0, name="inc")), generic.naive_schedule, name="inc")
        return s

    from minitvm.relay.testing.temp_op_attr import TempOpAttr

    call = _typed_call(relay.negative, (4,))
    otype = relay.TensorType((4,), "float32")
    with TempOpAttr("negative", "FTVMStrategy", strategy):
        te_compiler.lower_call(call, [te.placeholder((4,), "float32")], "llvm", otype)
    assert seen["otype"] is otype
    with TempOpAttr("negative", "FTVMStrategy", strategy):
        te_compiler.lower_call(call, [te.placeholder((4,), "float32")], "llvm")
    # default: the call's own type (its dimensions as int32 constants, as TVM's get_shape)
    assert seen["otype"] is not otype
    assert tvm.ir.structural_equal(seen["otype"], call.checked_type)


def test_lower_call_rejects_non_op_calls():
    x = relay.var("x", shape=(2,))
    f = relay.Function([x], x)
    with pytest.raises(TypeError, match="call of an operator"):
        te_compiler.lower_call(relay.Call(f, [x]), [], "llvm")
    with pytest.raises(TypeError, match="call of an operator"):
        te_compiler.lower_call(x, [], "llvm")


def test_te_compiler_lowers_every_call_through_the_global_lower_call():
    """TVM's TE compiler reaches each op through ``relay.backend.lower_call``: a function
    registered over it decides the kernel (here: add computed as subtraction)."""
    x = relay.var("x", shape=(2, 2))
    y = relay.var("y", shape=(2, 2))
    func = relay.Function([x, y], relay.add(x, y))
    original = tvm.get_global_func("relay.backend.lower_call")
    seen = []

    def as_subtract(call, inputs, target, otype=None):
        seen.append((call.op.name, str(target)))
        a, b = inputs
        out = te.compute(a.shape, lambda i, j: a[i, j] - b[i, j], name="sub")
        return te_compiler.LoweredOutput([out], original(call, inputs, target, otype).implement)

    tvm.register_func("relay.backend.lower_call", as_subtract, override=True)
    try:
        eng = te_compiler.TECompiler()
        key = te_compiler.CCacheKey(func, "llvm")
        assert isinstance(key.target, tvm.target.Target) and key.source_func is func
        cf = eng.lower(key)
        assert seen == [("add", "llvm -keys=cpu")] and eng.lower(func, "llvm") is cf  # one cache entry
        a, b = np.full((2, 2), 5.0, "float32"), np.full((2, 2), 2.0, "float32")
        np.testing.assert_allclose(eng.jit(key)(a, b).numpy(), a - b)
    finally:
        tvm.register_func("relay.backend.lower_call", original, override=True)
    np.testing.assert_allclose(te_compiler.TECompiler().jit(func)(a, b).numpy(), a + b)
    with pytest.raises(TypeError, match="relay.Function"):
        te_compiler.CCacheKey(x, "llvm")
