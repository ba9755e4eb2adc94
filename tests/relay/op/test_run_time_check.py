"""``run_time_check``: a value passed through once a run-time condition holds, else a
ValueError filled with run-time values — on the Relay VM (strict-native: numpy runs it by
design), the interpreter, FoldConstant and the text format; and the ONNX importer's run-time
sized Split / Pad / OneHot / ConstantOfShape built with it (no ``onnx`` package needed)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.frontend.common import Folder
from minitvm.relay.frontend.onnx import run_time_sized
from minitvm.relay.frontend.onnx.registry import Context
from minitvm.runtime.vm import VirtualMachine


def _batch(x):
    return relay.take(relay.shape_of(x, "int64"), relay.const(0, "int64"))


def _sized_rows():
    """fn(x: (?, 3), s: (2,)) { the first s[0] rows of x * 2 }, s checked to add up to the
    batch."""
    x = relay.var("x", shape=(relay.Any(), 3))
    s = relay.var("s", shape=(2,), dtype="int64")
    n = _batch(x)
    s = relay.op.run_time_check(s, relay.equal(relay.sum(s), n),
                                "sizes {} do not add up to {}", [s, n])
    rows = relay.arange(relay.const(0, "int64"), relay.take(s, relay.const(0, "int64")),
                        dtype="int64")
    body = relay.multiply(relay.take(x, rows, axis=0), relay.const(2.0))
    return tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(body), body))


def _vm(mod):
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.strict_native": True}):
        return VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())


def test_the_vm_passes_the_value_or_raises_with_the_values():
    mod = _sized_rows()
    x = np.arange(15, dtype="float32").reshape(5, 3)
    vm = _vm(mod)
    np.testing.assert_array_equal(vm.run(x, np.array([2, 3])).numpy(), x[:2] * 2)
    with pytest.raises(RuntimeError, match=r"sizes \[2, 2\] do not add up to 5"):
        vm.run(x, np.array([2, 2]))
    run = relay.create_executor("debug", mod=mod).evaluate()
    np.testing.assert_array_equal(run(x, np.array([4, 1])).numpy(), x[:4] * 2)
    with pytest.raises(RuntimeError, match=r"ValueError: sizes \[9, 0\] do not add up to 5"):
        run(x, np.array([9, 0]))


def test_fold_constant_folds_a_check_that_holds_and_keeps_one_that_fails():
    v = relay.const(np.array([1, 2], "int64"))
    for cond, kept in ((True, False), (False, True)):
        body = relay.add(relay.op.run_time_check(v, relay.const(cond), "no {}", [v]), v)
        mod = relay.transform.FoldConstant()(tvm.IRModule.from_expr(relay.Function([], body)))
        assert ("run_time_check" in mod.astext()) == kept


def test_the_type_and_the_text_format():
    x = relay.var("x", shape=(2,), dtype="int64")
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x], relay.op.run_time_check(x, relay.const(True), "bad {}", [x]))))
    assert mod["main"].ret_type == relay.TensorType((2,), "int64")
    back = relay.transform.InferType()(relay.parse(mod.astext()))
    assert tvm.ir.structural_equal(back, mod)
    for cond in (relay.const(1), relay.const(np.array([True]))):
        bad = tvm.IRModule.from_expr(relay.Function(
            [x], relay.op.run_time_check(x, cond, "bad")))
        with pytest.raises(TypeError, match="the condition must be a bool scalar"):
            relay.transform.InferType()(bad)
    with pytest.raises(ValueError, match="1 placeholders for 0 shown values"):
        relay.op.run_time_check(x, relay.const(True), "bad {}")


def _ctx(op_type: str, *graph_inputs):
    ctx = Context(18, Folder(), graph_inputs)
    ctx.node = SimpleNamespace(op_type=op_type, name="n", output=["y"])
    return ctx


def _compiled(ctx, params, body):
    return _vm(tvm.IRModule.from_expr(relay.Function(params, body)))


def test_split_by_sizes_read_at_run_time():
    x = relay.var("x", shape=(relay.Any(), 2))
    s = relay.var("s", shape=(2,), dtype="int64")
    ctx = _ctx("Split", x, s)
    vm = _compiled(ctx, [x, s], relay.Tuple(run_time_sized.split(ctx, x, s, 0, 2)))
    xs = np.arange(10, dtype="float32").reshape(5, 2)
    a, b = vm.run(xs, np.array([1, 4]))
    np.testing.assert_array_equal(a.numpy(), xs[:1])
    np.testing.assert_array_equal(b.numpy(), xs[1:])
    with pytest.raises(RuntimeError, match=r"Split node 'n': the split sizes \[3, 3\] must be "
                                           r"2 values >= 0 adding up to 5, the size of axis 0"):
        vm.run(xs, np.array([3, 3]))


def test_constant_pads_crop_after_padding():
    """pads (-3, 0) then (+1, 0) on 2 rows: begin -3 reaches into the end's padding."""
    x = relay.var("x", shape=(relay.Any(), 2))
    p = relay.var("p", shape=(4,), dtype="int64")
    ctx = _ctx("Pad", x, p)
    vm = _compiled(ctx, [x, p], run_time_sized.pad(ctx, x, p, relay.const(7.0), [0, 1],
                                                   "constant"))
    xs = np.ones((2, 2), "float32")
    np.testing.assert_array_equal(vm.run(xs, np.array([-2, 0, 1, 0])).numpy(),
                                  np.full((1, 2), 7.0, "float32"))
    with pytest.raises(RuntimeError, match=r"Pad node 'n': constant pads \[\[-2, -1\], \[0, 0\]\]"
                                           r" .* shape \[2, 2\]: an axis' output size is "
                                           "negative"):
        vm.run(xs, np.array([-2, 0, -1, 0]))


def test_one_hot_depth_and_full_shape_are_checked():
    ids = relay.var("ids", shape=(relay.Any(),), dtype="int64")
    d = relay.var("d", shape=(1,), dtype="int64")
    ctx = _ctx("OneHot", ids, d)
    vm = _compiled(ctx, [ids, d], run_time_sized.one_hot(
        ctx, ids, d, relay.const(1.0), relay.const(0.0), 1, "float32"))
    np.testing.assert_array_equal(vm.run(np.array([1, -1]), np.array([2])).numpy(),
                                  [[0, 1], [0, 1]])
    with pytest.raises(RuntimeError, match=r"OneHot node 'n': depth 0 must be positive"):
        vm.run(np.array([0]), np.array([0]))
    s = relay.var("s", shape=(2,), dtype="int64")
    ctx = _ctx("ConstantOfShape", s)
    vm = _compiled(ctx, [s], run_time_sized.full(ctx, np.float32(2.0), s))
    assert vm.run(np.array([0, 3])).numpy().shape == (0, 3)
    with pytest.raises(RuntimeError, match=r"the shape \[-1, 3\] has a negative size"):
        vm.run(np.array([-1, 3]))


def test_pad_axes_read_at_run_time_pick_each_axis_row():
    # (x: (?, 4), pads [b, e] of the one axis ``ax`` names at run time, negatives from the end)
    x = relay.var("x", shape=(relay.Any(), 4))
    p = relay.var("p", shape=(2,), dtype="int64")
    ax = relay.var("ax", shape=(1,), dtype="int64")
    ctx = _ctx("Pad", x, p, ax)
    ctx.node.input = ["x", "p", "", "ax"]
    vm = _compiled(ctx, [x, p, ax], run_time_sized.pad(ctx, x, p, relay.const(-1.0), ax,
                                                       "edge"))
    v = np.arange(12, dtype="float32").reshape(3, 4)
    for pads, axis in (([1, 2], 1), ([1, 2], -1), ([2, 0], 0), ([0, -1], -2)):
        width = [(0, 0), (0, 0)]
        width[axis] = tuple(pads)
        want = np.pad(v[max(-width[0][0], 0): 3 - max(-width[0][1], 0)],
                      [(max(b, 0), max(e, 0)) for b, e in width], mode="edge")
        np.testing.assert_array_equal(vm.run(v, np.array(pads), np.array([axis])).numpy(), want)
    with pytest.raises(RuntimeError, match=r"Pad node 'n': the axes \[2\] must be distinct, "
                       r"each in \[-2, 2\)"):
        vm.run(v, np.array([1, 1]), np.array([2]))
