"""``vm.update_row`` whose buffer is also passed on as another loop variable (an open finding of
the dynamic fuzzer): the VM wrote the row in place into the tensor the program still read as
the old buffer, so ``prev`` came out with the last row written. A write now goes in place only
where the data register is not read after (``liveness.read_after_update_row``) and nothing else
holds the tensor; the plain loop still makes one copy per run."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.runtime.vm import bytecode as B
from minitvm.runtime.vm import liveness
from minitvm.runtime.vm import vm as vm_module

ANY = relay.Any()


def _loop(shift_prev: bool):
    """(buf, prev) of a loop writing row t = x[t] + 1 into buf; prev is the buffer before the
    step (``shift_prev``) or the one after it, summed into acc before the next write."""
    x = relay.var("x", shape=(ANY, 2), dtype="float32")
    i = relay.var("i", shape=(), dtype="int64")
    cnt = relay.var("count", shape=(), dtype="int64")
    buf = relay.var("buf", shape=(ANY, 2), dtype="float32")
    prev = relay.var("prev", shape=(ANY, 2), dtype="float32")
    acc = relay.var("acc", shape=(), dtype="float32")

    def body(i, cnt, buf, prev, acc):
        row = relay.take(x, i, axis=0) + relay.const(1.0)
        new = relay.op.vm.update_row(buf, row, i)
        return [i + relay.const(1, "int64"), cnt, new, buf if shift_prev else new,
                acc + relay.sum(prev)]

    loop = relay.loops.while_loop(lambda i, cnt, *_: relay.less(i, cnt),
                                  [i, cnt, buf, prev, acc], body)
    rows = relay.take(relay.shape_of(x, "int64"), relay.const(0, "int64"))
    z = relay.zeros_like(x)
    call = relay.Call(loop, [relay.const(0, "int64"), rows, z, z, relay.const(0.0)])
    out = relay.Tuple([relay.TupleGetItem(call, k) for k in (2, 3, 4)])
    return tvm.IRModule.from_expr(relay.Function([x], out))


@pytest.mark.parametrize("shift_prev", [True, False])
@pytest.mark.parametrize("opt_level", [0, 3])
def test_buffer_passed_on_is_not_written_under_the_program(shift_prev, opt_level):
    mod = _loop(shift_prev)
    with tvm.transform.PassContext(opt_level=opt_level):
        exe = relay.vm.compile(mod, target="llvm")
    vm = vm_module.VirtualMachine(exe, tvm.cpu())
    ref = relay.create_executor("debug", mod=mod).evaluate()
    for n in (4, 4, 1, 0, 3):
        xv = np.arange(2 * n, dtype="float32").reshape(n, 2)
        want = [w.numpy() for w in ref(xv)]
        got = [g.numpy() for g in vm.run(xv)]
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
        if shift_prev and n:
            assert not got[1][-1].any()  # the old buffer: the last row not yet written


def test_read_after_marks_only_the_update_whose_data_is_read_later():
    row = (B.UPDATE_ROW, 1, 2, 3, 4)
    assert liveness.read_after_update_row([row, (B.RET, 4)]) == frozenset()
    assert liveness.read_after_update_row([row, (B.MOVE, 1, 5), (B.RET, 5)]) == {0}
    # a loop: the data register is read again at the top, but rewritten before by the move
    loop = [row, (B.MOVE, 4, 1), (B.GOTO, -2)]
    assert liveness.read_after_update_row(loop) == frozenset()
    assert liveness.read_after_update_row([row, (B.MOVE, 1, 6), (B.MOVE, 4, 1), (B.GOTO, -3)]) \
        == {0}


def test_read_after_of_a_long_function():
    """One backward pass per round over the instructions: 100,000 of them."""
    code = [(B.MOVE, 0, 1)] * 100_000 + [(B.UPDATE_ROW, 1, 2, 3, 4), (B.RET, 4)]
    assert liveness.read_after_update_row(code) == frozenset()


def test_buffer_kept_in_a_tuple_is_not_written_under_it():
    """The buffer also kept inside a tuple loop variable, read (summed) at the next step: the
    reference count sees the tuple, the register search finds the buffer in it."""
    x = relay.var("x", shape=(ANY, 2), dtype="float32")
    i = relay.var("i", shape=(), dtype="int64")
    cnt = relay.var("count", shape=(), dtype="int64")
    buf = relay.var("buf", shape=(ANY, 2), dtype="float32")
    kept = relay.var("kept", relay.TupleType([relay.TensorType((ANY, 2), "float32")]))
    acc = relay.var("acc", shape=(), dtype="float32")

    def body(i, cnt, buf, kept, acc):
        row = relay.take(x, i, axis=0) + relay.const(1.0)
        new = relay.op.vm.update_row(buf, row, i)
        seen = relay.sum(relay.TupleGetItem(kept, 0))
        return [i + relay.const(1, "int64"), cnt, new, relay.Tuple([new]), acc + seen]

    loop = relay.loops.while_loop(lambda i, cnt, *_: relay.less(i, cnt),
                                  [i, cnt, buf, kept, acc], body)
    rows = relay.take(relay.shape_of(x, "int64"), relay.const(0, "int64"))
    z = relay.zeros_like(x)
    call = relay.Call(loop, [relay.const(0, "int64"), rows, z, relay.Tuple([z]),
                             relay.const(0.0)])
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.TupleGetItem(call, 4)))
    ref = relay.create_executor("debug", mod=mod).evaluate()
    for opt_level in (0, 3):
        with tvm.transform.PassContext(opt_level=opt_level):
            vm = vm_module.VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
        xv = np.arange(8, dtype="float32").reshape(4, 2)
        assert float(vm.run(xv).numpy()) == float(ref(xv).numpy())
