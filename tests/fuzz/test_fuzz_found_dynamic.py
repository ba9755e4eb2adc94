"""Wrong results and crashes the dynamic-shape fuzzer (``dynamic_differential``: one
``relay.vm.compile`` run at a schedule of batch sizes against the interpreter) found, minimized."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.runtime import native_loop
from minitvm.runtime import vm as runtime_vm


def _vm(mod, opt_level=3):
    with tvm.transform.PassContext(opt_level=opt_level):
        exe = relay.vm.compile(mod, target="llvm")
    return runtime_vm.VirtualMachine(exe, tvm.cpu())


def _interpret(mod, *args):
    return relay.create_executor("debug", mod=mod).evaluate()(*args)


def test_empty_stack_of_gathers_lowers():
    """Seed 260: ``stack([take(x, i), take(x, i)])`` of zero-length gathers is a static (2, 0)
    stage; the plane splitter made a loop over its empty last axis with no statement in it
    (IndexError) in relay.build and in the VM's per-shape kernel at batch 0."""
    x = relay.var("x", shape=(0,), dtype="float32")
    i = relay.var("i", shape=(0,), dtype="int32")
    t = relay.take(x, i, axis=0)
    mod = tvm.IRModule.from_expr(relay.Function([x, i], relay.stack([t, t], 0)))
    lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.run(x=np.zeros(0, "float32"), i=np.zeros(0, "int32"))
    assert m.get_output(0).numpy().shape == (2, 0)
    xd = relay.var("x", shape=(relay.Any(),), dtype="float32")
    order = relay.argsort(xd)
    td = relay.take(xd, order, axis=0)
    dmod = tvm.IRModule.from_expr(relay.Function([xd], relay.stack([td, td], 0)))
    vm = _vm(dmod)
    for n in (1, 1, 0, 3, 0):
        xv = np.random.default_rng(n).standard_normal(n).astype("float32")
        got = vm.run(xv).numpy()
        np.testing.assert_array_equal(got, np.stack([np.sort(xv)] * 2))


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_interpreter_softmax_over_an_empty_axis_is_empty(op):
    """Seeds 122, 163, 172: the interpreter's softmax took the max of an empty axis (a numpy
    error) where the VM's kernel gives the empty result."""
    x = relay.var("x", shape=(relay.Any(), 3), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], getattr(relay.nn, op)(x, axis=0)))
    vm = _vm(mod)
    for n in (2, 0):
        xv = np.linspace(-1, 1, n * 3).astype("float32").reshape(n, 3)
        want = _interpret(mod, xv).numpy()
        assert want.shape == (n, 3)
        np.testing.assert_allclose(vm.run(xv).numpy(), want, rtol=1e-6)
    if n == 0:
        assert want.size == 0


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_interpreter_arg_reduction_with_an_empty_kept_axis(op):
    """Seeds 294, 306: argmin over axis 1 of a (0, 3, 2) tensor (kept axis 0 long): the
    interpreter reshaped to ``(0, -1)``, which numpy cannot infer."""
    x = relay.var("x", shape=(relay.Any(), 3, 2), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function(
        [x], getattr(relay, op)(x, axis=[1], keepdims=True)))
    vm = _vm(mod)
    for n in (2, 0, 1):
        xv = np.random.default_rng(n).standard_normal((n, 3, 2)).astype("float32")
        want = _interpret(mod, xv).numpy()
        ref = getattr(np, op)(xv, axis=1)[:, None, :].astype("int32")
        np.testing.assert_array_equal(want, ref)
        np.testing.assert_array_equal(vm.run(xv).numpy(), ref)


def test_interpreter_batch_flatten_of_zero_rows():
    """Seed 325: ``batch_flatten`` of a (0, 4, 1, 2) slice: the interpreter reshaped to
    ``(0, -1)`` (a numpy error); the result is (0, 8)."""
    x = relay.var("x", shape=(relay.Any(), 4, 1, 2), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.batch_flatten(x)))
    vm = _vm(mod)
    for n in (0, 2):
        xv = np.ones((n, 4, 1, 2), "float32")
        want = _interpret(mod, xv).numpy()
        assert want.shape == (n, 8)
        np.testing.assert_array_equal(vm.run(xv).numpy(), want)


@pytest.mark.parametrize("op", ["sort", "argsort", "topk"])
def test_selection_along_an_axis_empty_at_run_time_is_native(op):
    """The batch-0 specialization of a sort / argsort / top-k along the batch axis: the
    selection kernel refused an empty axis (numpy ran it; a strict build failed). Now an
    empty result, from the same compile as the other sizes."""
    x = relay.var("x", shape=(relay.Any(), 2), dtype="float32")
    if op == "topk":
        y = relay.topk(x, k=0, axis=0, ret_type="indices")  # (k < 1: all of them)
    else:
        y = getattr(relay, op)(x, axis=0)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([y, relay.exp(x)])))
    vm = _vm(mod)
    for n in (3, 0, 2, 0):
        xv = np.random.default_rng(n).standard_normal((n, 2)).astype("float32")
        got = vm.run(xv)
        want = _interpret(mod, xv)
        for g, w in zip(got, want, strict=True):
            assert g.numpy().shape == w.numpy().shape
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


@pytest.mark.parametrize("shape", [(2,), "any"])
def test_unique_of_int64_with_zero_before_negatives_is_sorted(shape):
    """Seeds 10486, 10595 (an exclusive cumsum then unique: [0, -2]): the native unique's
    "keys already ascend" check compared its int64 keys (the sign bit flipped, ordered as
    unsigned numbers by the radix passes) as signed numbers, so [0, -2] (keys 2**63, 2**63 - 2)
    read as ascending, skipped the sort and came back [0, -2]. Relay and Relax share it."""
    rows = [[0, -2], [5, -1], [-2, 0], [3, 3]]
    if shape == "any":
        rows += [[0, -2, 0, -2], [0, 1, -5, 2], [-3, -2, -1, 0], [0, 7, 7, -7]]
    x = relay.var("x", shape=(relay.Any(),) if shape == "any" else shape, dtype="int64")
    u = relay.unique(x, is_sorted=True, return_counts=True)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([u[0], u[2], u[3], u[4]])))
    vm = _vm(mod)
    for row in rows:
        xv = np.array(row, "int64")
        got = [a.numpy() for a in vm.run(xv)]
        want, inverse, counts = np.unique(xv, return_inverse=True, return_counts=True)
        k = len(want)
        assert got[2].tolist() == [k]
        np.testing.assert_array_equal(got[0][:k], want)
        np.testing.assert_array_equal(got[1], inverse)
        np.testing.assert_array_equal(got[3][:k], counts)


def _row_loop(scale: float):
    """``while_loop`` writing ``tanh(src[i] * scale)`` into row i of ``buf`` (vm.update_row):
    call it with (0, rows, src, buf); field 3 of the result is the buffer."""
    i = relay.var("i", shape=(), dtype="int64")
    cnt = relay.var("count", shape=(), dtype="int64")
    src = relay.var("x", shape=(relay.Any(), 3), dtype="float32")
    buf = relay.var("buf", shape=(relay.Any(), 3), dtype="float32")

    def body(i, cnt, src, buf):
        row = relay.tanh(relay.take(src, i, axis=0) * relay.const(scale))
        return [i + relay.const(1, "int64"), cnt, src, relay.op.vm.update_row(buf, row, i)]

    return relay.loops.while_loop(lambda i, cnt, *_: relay.less(i, cnt), [i, cnt, src, buf],
                                  body)


def _rows(x):
    return relay.take(relay.shape_of(x, "int64"), relay.const(0, "int64"))


def _check_sizes(mod, sizes=(3, 3, 1, 4, 0, 3)):
    vm = _vm(mod)
    for n in sizes:
        xv = np.random.default_rng(n).standard_normal((n, 3)).astype("float32")
        got, want = vm.run(xv), _interpret(mod, xv)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)


def test_update_row_into_a_copy_that_cse_shared_with_an_output():
    """Seed 30153: the loop's buffer ``copy(p0)`` and an output ``copy(p0)`` are one value after
    EliminateCommonSubexpr (a pure IR: two equal copies are one), and the VM's in-place
    UpdateRow wrote the loop's rows into the returned copy."""
    p0 = relay.var("p0", shape=(relay.Any(), 3), dtype="float32")
    res = relay.TupleGetItem(relay.Call(_row_loop(-1.0), [relay.const(0, "int64"), _rows(p0),
                                                          p0, relay.copy(p0)]), 3)
    mod = tvm.IRModule.from_expr(relay.Function([p0], relay.Tuple([res, relay.copy(p0)])))
    _check_sizes(mod)


def test_two_loops_whose_zeros_buffers_cse_made_one():
    """Seed 30361: two loops each write into ``zeros_like(p0)``; EliminateCommonSubexpr makes
    the two zeros one tensor, and the second loop's in-place rows overwrote the first loop's
    result."""
    p0 = relay.var("p0", shape=(relay.Any(), 3), dtype="float32")
    outs = [relay.TupleGetItem(relay.Call(_row_loop(scale), [
        relay.const(0, "int64"), _rows(p0), p0, relay.zeros_like(p0)]), 3)
        for scale in (-1.0, 2.0)]
    _check_sizes(tvm.IRModule.from_expr(relay.Function([p0], relay.Tuple(outs))))


def test_update_row_buffer_that_is_the_source_and_an_output():
    """The buffer is the tensor the loop reads its rows from and main returns (by hand, next to
    the two above): rows written in place changed both."""
    p0 = relay.var("p0", shape=(relay.Any(), 3), dtype="float32")
    x = relay.exp(p0)
    res = relay.TupleGetItem(relay.Call(_row_loop(0.5), [relay.const(0, "int64"), _rows(p0), x,
                                                         x]), 3)
    _check_sizes(tvm.IRModule.from_expr(relay.Function([p0], relay.Tuple([res, x]))))


def test_update_row_copies_once_per_loop_then_writes_in_place(monkeypatch):
    """The loop-carried buffer is still written in place: the first step copies the initial
    buffer, every later step writes into the array the step before returned."""
    p0 = relay.var("p0", shape=(relay.Any(), 3), dtype="float32")
    res = relay.TupleGetItem(relay.Call(_row_loop(1.0), [relay.const(0, "int64"), _rows(p0), p0,
                                                         relay.zeros_like(p0)]), 3)
    vm = _vm(tvm.IRModule.from_expr(relay.Function([p0], res)))
    calls = []
    real = runtime_vm.VirtualMachine._update_row

    def spy(self, data, *args):
        out = real(self, data, *args)
        calls.append(out is data)
        return out

    monkeypatch.setattr(runtime_vm.VirtualMachine, "_update_row", spy)
    xv = np.ones((50, 3), "float32")
    vm.native_loops = False  # (the generated Python's steps)
    for _ in range(2):
        calls.clear()
        np.testing.assert_allclose(vm.run(xv).numpy(), np.tanh(xv), rtol=1e-6)
        assert calls == [False] + [True] * 49
    # the native loop (runtime.native_loop) makes every step after the first PYTHON_STEPS
    # (those copy once, then write in place; the kernels are bound at this shape by the runs
    # above), its writes copying the same way
    vm.native_loops = True
    wait = native_loop.PYTHON_STEPS
    (loop,) = [f.__globals__["native_loop"].loop for f in vm._straight
               if f is not None and "native_loop" in f.__globals__]
    for _ in range(2):
        calls.clear()
        np.testing.assert_allclose(vm.run(xv).numpy(), np.tanh(xv), rtol=1e-6)
        assert calls == ([False] + [True] * (wait - 1) if wait else []) and \
            loop.steps == 50 - wait


def test_relax_native_entry_returns_a_folded_constant_at_every_call():
    """Relax seeds 20710, 20613 (one relax.build, the same size twice): an output that folds to
    a 0-d constant came back right from the first call and uninitialized (1, 2**62...) from
    the native entry's plan after: the constant is a view, and the plan looked its root up
    among the constants' own ids, took it for memory the call fills and allocated it empty."""
    from minitvm import relax
    from minitvm.relax import BlockBuilder, const
    from minitvm.relax import op as R
    from minitvm.relax.struct_info import TensorStructInfo
    from minitvm.tir import Var as TirVar

    n = TirVar("n", "int64")
    x = relax.Var("x", TensorStructInfo([n, 3], "float32"))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(R.abs(const(np.array(-2, "int64"))))
            b = bb.emit(R.add(a, const(np.array(1, "int64"))))
            y = bb.emit(R.sum(x, axis=[0], keepdims=False))
            g = bb.emit_output(relax.Tuple([b, y]))
        bb.emit_func_output(g)
    vm = relax.VirtualMachine(relax.build(bb.get(), target="llvm"), tvm.cpu())
    for rows in (2, 2, 2, 5, 2):
        xv = np.full((rows, 3), 0.5, "float32")
        got = vm["main"](xv)
        assert got[0].numpy().tolist() == 3
        np.testing.assert_allclose(got[1].numpy(), xv.sum(0))


@pytest.mark.parametrize("unbiased", [False, True])
def test_variance_and_layer_norm_over_an_any_axis(unbiased):
    """Seed 41447: layer_norm of a slice by begin / end inputs (shape (?, ?)): the variance over
    the Any last axis divided by 1 (Python's ``max`` of the symbolic count and 1 picked 1), so
    the normalized values were off by sqrt(n) -- no error, at every size."""
    x = relay.var("x", shape=(3, relay.Any()), dtype="float32")
    g = np.array([1.5, 0.5, 2.0, 1.0], "float32")
    outs = [relay.variance(x, axis=[1], keepdims=True, unbiased=unbiased),
            relay.std(x, axis=[1], unbiased=unbiased)]
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Tuple(outs)))
    vm = _vm(mod)
    rng = np.random.default_rng(0)
    ddof = 1 if unbiased else 0
    for n in (2, 4, 2, 3):
        xv = rng.standard_normal((3, n)).astype("float32")
        got = vm.run(xv)
        np.testing.assert_allclose(got[0].numpy(), xv.var(1, ddof=ddof, keepdims=True),
                                   rtol=1e-5)
        np.testing.assert_allclose(got[1].numpy(), xv.std(1, ddof=ddof), rtol=1e-5)
    y = relay.var("y", shape=(relay.Any(), relay.Any()), dtype="float32")
    ln = tvm.IRModule.from_expr(relay.Function([y], relay.nn.layer_norm(
        y, relay.const(g[:2]), relay.const(np.zeros(2, "float32")))))
    vm = _vm(ln)
    for rows in (4, 1, 4):
        yv = rng.standard_normal((rows, 2)).astype("float32")
        want = (yv - yv.mean(1, keepdims=True)) / np.sqrt(yv.var(1, keepdims=True) + 1e-5)
        np.testing.assert_allclose(vm.run(yv).numpy(), want * g[:2], rtol=1e-4, atol=1e-5)
