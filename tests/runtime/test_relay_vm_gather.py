"""The Relay VM's dispatch loop gathers a kernel call's registers into its argument tuple with
one C call (``native_loop.gather``); prepared calls without constants carry one, and a loop's results
are the same as the native entry's and the interpreter's before."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.runtime import vm as runtime_vm
from minitvm.runtime.native_loop import gather as _gather
from minitvm.runtime.vm.vm import B


def test_gather_returns_a_tuple_of_any_length():
    regs = ["a", "b", "c", "d"]
    assert _gather(())(regs) == ()
    assert _gather((2,))(regs) == ("c",)
    assert _gather((3, 0, 3))(regs) == ("d", "a", "d")


def test_prepared_calls_gather_and_give_the_same_results():
    x = relay.var("x", shape=(relay.Any(), 3), dtype="float32")
    w = relay.var("w", shape=(4, 3), dtype="float32")
    y = relay.nn.relu(relay.nn.dense(x, w)) + relay.const(1.0)
    mod = tvm.IRModule.from_expr(relay.Function([x, w], y))
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
    vm.native_entry = False  # (the dispatch loop)
    calls = [ins for code, _, _, _ in vm._code for ins in code if ins[0] == B.INVOKE_PACKED]
    assert calls and all(ins[8] is not None for ins in calls if not ins[6])
    rng = np.random.default_rng(0)
    wv = rng.standard_normal((4, 3)).astype("float32")
    for n in (2, 2, 5):
        xv = rng.standard_normal((n, 3)).astype("float32")
        got = vm.run(xv, wv).numpy()
        np.testing.assert_allclose(got, np.maximum(xv @ wv.T, 0) + 1, rtol=1e-5, atol=1e-5)
