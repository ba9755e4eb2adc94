"""Dynamic shapes on the Relay VM: one compile serves several input sizes (Any dims)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend.vm.symbolic import SymbolicKernel
from minitvm.runtime import vm as runtime_vm


def test_any_batch_dense_runs_for_several_sizes():
    x = relay.var("x", shape=(relay.Any(), 3), dtype="float32")
    w = relay.var("w", shape=(4, 3), dtype="float32")
    y = relay.nn.relu(relay.nn.dense(x, w)) + relay.const(1.0)
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.sum(y, axis=0) * relay.const(2.0)))
    exe = relay.vm.compile(mod, target="llvm")
    assert "Tensor[(?, 3), float32]" in exe.bytecode
    assert "outputs allocated by the kernel" in exe.bytecode  # dynamic output shape
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    rng = np.random.default_rng(1)
    wv = rng.standard_normal((4, 3)).astype("float32")
    ref = relay.create_executor("debug", mod=mod).evaluate()
    for n in (1, 5, 2, 5):
        xv = rng.standard_normal((n, 3)).astype("float32")
        np.testing.assert_allclose(vm.run(xv, wv).numpy(), ref(xv, wv).numpy(), rtol=1e-5,
                                   atol=1e-5)
    dyn = [k for k in exe.kernels if k.kind == "fallback"]
    assert dyn and all("one symbolic kernel" in k.reason for k in dyn)
    # each dynamic kernel is one native kernel over the symbolic batch, serving the three
    # distinct input shapes (1, 5, 2)
    for k in dyn:
        assert isinstance(k.run, SymbolicKernel) and k.run.kernel.kind == "native"
        assert len(k.run._calls) == 3 and all(v is not None for v in k.run._calls.values())


def test_dynamic_output_shape_flows_into_a_static_tail():
    x = relay.var("x", shape=(relay.Any(),), dtype="float32")
    y = relay.reshape(relay.exp(x), (-1, 1))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([y, relay.sum(y)])))
    exe = relay.vm.compile(mod, target="llvm")
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    for n in (3, 6):
        xv = np.linspace(0, 1, n).astype("float32")
        out = vm.run(xv)
        np.testing.assert_allclose(out[0].numpy(), np.exp(xv).reshape(-1, 1), rtol=1e-6)
        np.testing.assert_allclose(out[1].numpy(), np.exp(xv).sum(), rtol=1e-5)


def test_dynamic_recursion_concatenates_to_growing_shapes():
    """A loop whose carried tensor grows each iteration: shapes differ on every call."""
    mod = tvm.IRModule()
    loop = relay.GlobalVar("grow")
    i = relay.var("i", shape=(), dtype="int32")
    acc = relay.var("acc", shape=(relay.Any(),), dtype="float32")
    step = relay.concatenate([acc, relay.reshape(i.astype("float32"), (1,))], axis=0)
    mod[loop] = relay.Function(
        [i, acc], relay.If(relay.equal(i, relay.const(0)), acc,
                           relay.Call(loop, [i - relay.const(1), step])),
        relay.TensorType((relay.Any(),), "float32"))
    n = relay.var("n", shape=(), dtype="int32")
    mod["main"] = relay.Function([n], relay.Call(loop, [n, relay.zeros((0,), "float32")]))
    exe = relay.vm.compile(mod, target="llvm")
    out = runtime_vm.VirtualMachine(exe, tvm.cpu()).run(np.array(4, "int32"))
    np.testing.assert_array_equal(out.numpy(), [4.0, 3.0, 2.0, 1.0])


def test_vm_shape_of_and_reshape_tensor_become_instructions():
    x = relay.var("x", shape=(relay.Any(), 4), dtype="float32")
    shape = relay.op.vm.shape_of(x)
    y = relay.op.vm.reshape_tensor(relay.exp(x), relay.const(np.array([4, 3], "int64")), (4, 3))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([shape, y])))
    exe = relay.vm.compile(mod, target="llvm")
    assert "shape_of $" in exe.bytecode and "reshape_tensor $" in exe.bytecode
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    xv = np.arange(12, dtype="float32").reshape(3, 4) / 10
    out = vm.run(xv)
    np.testing.assert_array_equal(out[0].numpy(), [3, 4])
    np.testing.assert_allclose(out[1].numpy(), np.exp(xv).reshape(4, 3), rtol=1e-6)


def _row_loop(init):
    """main(n, rows, buf?): a while loop writing ``rows[t] * 2`` into row t of a buffer by
    ``vm.update_row``; the buffer is ``init(rows)`` (an expression) or the argument ``buf``."""
    t = relay.var("t", shape=(), dtype="int64")
    n = relay.var("n", shape=(), dtype="int64")
    src = relay.var("src", shape=(relay.Any(), 3), dtype="float32")
    buf = relay.var("buf", shape=(relay.Any(), 3), dtype="float32")

    def body(t, n, src, buf):
        row = relay.take(src, t, axis=0) * relay.const(2.0)
        return [t + relay.const(1, "int64"), n, src, relay.op.vm.update_row(buf, row, t)]

    loop = relay.loops.while_loop(lambda t, n, *_: relay.less(t, n), [t, n, src, buf], body)
    rows = relay.var("rows", shape=(relay.Any(), 3), dtype="float32")
    length = relay.take(relay.shape_of(rows, "int64"), relay.const(0, "int64"))
    arg = relay.var("buf0", shape=(relay.Any(), 3), dtype="float32")
    start = init(rows) if init is not None else arg
    res = relay.TupleGetItem(relay.Call(loop, [relay.const(0, "int64"), length, rows, start]), 3)
    params = [rows] + ([] if init is not None else [arg])
    return tvm.IRModule.from_expr(relay.Function(params, res))


def test_update_row_writes_in_place_in_a_run_time_loop():
    mod = _row_loop(relay.zeros_like)
    exe = relay.vm.compile(mod, target="llvm")
    assert "update_row $" in exe.bytecode
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    for steps in (1, 5, 2000):  # (one frame a step in a list: no Python recursion)
        xv = np.arange(steps * 3, dtype="float32").reshape(steps, 3)
        np.testing.assert_array_equal(vm.run(xv).numpy(), xv * 2)
    want = relay.create_executor("debug", mod=mod).evaluate()(xv[:5])  # (the reference copies)
    np.testing.assert_array_equal(want.numpy(), xv[:5] * 2)
    code, lib = exe.save()  # (the instruction survives a save and load)
    loaded = runtime_vm.Executable.load_exec(code, lib)
    assert loaded.bytecode == exe.bytecode
    np.testing.assert_array_equal(runtime_vm.VirtualMachine(loaded, tvm.cpu()).run(xv[:7])
                                  .numpy(), xv[:7] * 2)


def test_update_row_copies_memory_the_vm_does_not_own():
    """An argument (or a constant) given as the buffer is copied before the first write."""
    vm = runtime_vm.VirtualMachine(relay.vm.compile(_row_loop(None), target="llvm"), tvm.cpu())
    xv = np.ones((3, 3), "float32")
    buf = np.full((3, 3), 7.0, "float32")
    np.testing.assert_array_equal(vm.run(xv, buf).numpy(), xv * 2)
    np.testing.assert_array_equal(buf, 7.0)
    const = np.full((3, 3), 5.0, "float32")
    mod = _row_loop(lambda rows: relay.const(const))
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
    for _ in range(2):
        np.testing.assert_array_equal(vm.run(xv[:2]).numpy()[:2], xv[:2] * 2)
    np.testing.assert_array_equal(vm.run(xv[:1]).numpy(), [[2, 2, 2], [5, 5, 5], [5, 5, 5]])
    np.testing.assert_array_equal(const, 5.0)


def test_update_row_out_of_range_is_a_clear_error():
    vm = runtime_vm.VirtualMachine(relay.vm.compile(_row_loop(None), target="llvm"), tvm.cpu())
    with pytest.raises(RuntimeError, match=r"update_row writes row 2 of a tensor of 2 rows"):
        vm.run(np.ones((3, 3), "float32"), np.zeros((2, 3), "float32"))


def _gathered_rows_minus_points():
    """Point Transformer's relative features: rows gathered by index, ``dyn.reshape``d to
    ``(batch, 4, 16)`` (the batch read by ``shape_of`` at run time, the sizes concatenated), and
    subtracted from a tensor of that shape; the reshape fuses with the gather and the subtract."""
    batch = relay.Any()
    feats = relay.var("feats", shape=(relay.Any(), 16), dtype="float32")
    idx = relay.var("idx", shape=(relay.Any(),), dtype="int64")
    pts = relay.var("pts", shape=(batch, 4, 16), dtype="float32")
    b = relay.take(relay.shape_of(pts, "int64"), relay.const(0, "int64"))
    sizes = relay.const(np.array([4, 16]), "int64")
    newshape = relay.concatenate([relay.reshape(b, [1]), sizes], 0)
    rows = relay.dyn.reshape(relay.take(feats, idx, axis=0), newshape)
    return tvm.IRModule.from_expr(relay.Function([feats, idx, pts],
                                                 relay.subtract(pts, rows)))


def test_fused_dyn_reshape_of_run_time_sizes_is_native_at_each_batch():
    """The kernel holding the ``dyn.reshape`` specializes on its new shape's values too, so the
    reshape is static and the kernel native (it failed strict-native at batch 3: 'dyn.reshape
    has no compute')."""
    from minitvm.relay.backend.vm.kernels import ShapeSpecializer, shape_value_inputs

    mod = _gathered_rows_minus_points()
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.strict_native": True}):
        exe = relay.vm.compile(mod, target="llvm")
    specs = [k.run for k in exe.kernels if isinstance(getattr(k, "run", None), ShapeSpecializer)
             and "dyn.reshape" in k.run.func.astext()]
    assert len(specs) == 1 and len(shape_value_inputs(specs[0].func)) >= 1
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    rng = np.random.default_rng(0)
    feats = rng.standard_normal((10, 16)).astype("float32")
    for b in (1, 3, 2, 3):
        idx = rng.integers(0, 10, b * 4).astype("int64")
        pts = rng.standard_normal((b, 4, 16)).astype("float32")
        got = vm.invoke("main", tvm.nd.array(feats), tvm.nd.array(idx), tvm.nd.array(pts))
        np.testing.assert_allclose(got.numpy(), pts - feats[idx].reshape(b, 4, 16), rtol=1e-6)
    kernels = [k for k, _ in specs[0].cache.values()]
    assert len(kernels) == 3 and all(k is not None and k.kind == "native" for k in kernels)


def test_shape_value_inputs_of_a_100k_op_shape_computation():
    """``shape_value_inputs`` walks a shape argument of 100,000 ops iteratively: the parameter
    it is computed from is found at the default recursion limit; a float input is not one."""
    from minitvm.relay.backend.vm.kernels import shape_value_inputs

    x = relay.var("x", shape=(relay.Any(), 16), dtype="float32")
    s = relay.var("s", shape=(2,), dtype="int64")
    zero = relay.const(0, "int64")
    e = s
    for _ in range(100_000):
        e = relay.add(e, zero)
    f = relay.Function([x, s], relay.dyn.reshape(x, e))
    for p in f.params:
        p._checked_type = p.type_annotation  # (typing 100,000 adds is not what this tests)
    assert shape_value_inputs(f) == (1,)


def test_shape_values_pick_the_specialization_at_every_call():
    """A kernel whose ``dyn.reshape`` reads its new shape from an input: calls with the same
    input shapes and other shape values each get their own specialization, after the VM has
    seen the call shape often enough to plan it (``native_entry``) and bound its call site
    (``BoundCall``), which both key on shapes alone."""
    x = relay.var("x", shape=(relay.Any(), 12), dtype="float32")
    s = relay.var("s", shape=(2,), dtype="int64")
    y = relay.exp(relay.reshape(relay.add(x, relay.const(1.0)), s))
    mod = tvm.IRModule.from_expr(relay.Function([x, s], y))
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm")
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    xv = np.arange(12, dtype="float32").reshape(1, 12) / 12
    for shape in ([3, 4], [3, 4], [4, 3], [2, 6], [3, 4], [12, 1]):
        out = vm.run(xv, np.array(shape, "int64")).numpy()
        np.testing.assert_allclose(out, np.exp(xv + 1).reshape(shape), rtol=1e-6)


def test_shape_values_after_a_tuple_parameter_are_read_from_their_own_argument():
    """A fused ``dyn.strided_slice`` of unique's outputs (a tuple parameter, which the VM passes
    as one array per field) with its begin and end read from inputs: the specialization binds
    the begin / end arrays, not the tuple's fields at their parameter positions."""
    x = relay.var("x", shape=(8,), dtype="int32")
    b = relay.var("b", shape=(1,), dtype="int32")
    e = relay.var("e", shape=(1,), dtype="int32")
    u = relay.unique(x, is_sorted=True, return_counts=True)
    y = relay.strided_slice(relay.add(u[0], relay.const(1, "int32")), begin=b, end=e)
    mod = tvm.IRModule.from_expr(relay.Function([x, b, e], y))
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm")
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    xv = np.array([5, 3, 5, 1, 9, 3, 7, 1], "int32")
    for lo, hi in ((0, 2), (1, 4), (0, 2), (2, 5)):
        out = vm.run(xv, np.array([lo], "int32"), np.array([hi], "int32")).numpy()
        np.testing.assert_array_equal(out, (np.unique(xv) + 1)[lo:hi])
