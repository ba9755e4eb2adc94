"""The Relay VM's native entry (``runtime.vm.native_entry``): a straight-line function's calls
at a call shape seen before run as one native plan; control flow and shapes read from data stay
in the dispatch loop."""

import threading

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.runtime.container import ADT
from minitvm.runtime.native_plan import arena_offsets
from minitvm.runtime.vm import Executable, VirtualMachine
from minitvm.runtime.vm import bytecode as B
from minitvm.runtime.vm import native_entry as ne
from minitvm.runtime.vm.bytecode import VMFunction


def _conv_dense(batch):
    """conv2d + bias + relu, max pool, flatten, dense, softmax; a tuple of the probabilities
    and the pooled features."""
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(batch, 3, 12, 12), dtype="float32")
    w = relay.const(rng.standard_normal((8, 3, 3, 3)).astype("float32"))
    b = relay.const(rng.standard_normal((8,)).astype("float32"))
    y = relay.nn.conv2d(x, w, padding=(1, 1), channels=8, kernel_size=(3, 3))
    y = relay.nn.max_pool2d(relay.nn.relu(relay.nn.bias_add(y, b)), (2, 2), (2, 2))
    wd = relay.const(rng.standard_normal((10, 8 * 6 * 6)).astype("float32"))
    p = relay.nn.softmax(relay.nn.dense(relay.nn.batch_flatten(y), wd))
    return tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([p, y])))


def _reference(x):
    run = relay.create_executor("debug", mod=_conv_dense(x.shape[0])).evaluate()
    return [o.numpy() for o in run(x)]


@pytest.fixture(scope="module")
def conv_dense_exe():
    return relay.vm.compile(_conv_dense(relay.Any()), target="llvm")


def test_conv_dense_any_batch_runs_its_plan_at_batch_1_and_3(conv_dense_exe):
    exe = conv_dense_exe
    vm = VirtualMachine(exe, tvm.cpu())
    nf = vm._native[exe.global_map["main"]]
    assert isinstance(nf, ne.NativeFunction)
    held = []
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 12, 12)).astype("float32")
        ref = _reference(x)
        key = (x.shape,)
        for call in range(3):  # the dispatch loop, the recording, the plan
            out = vm.run(x)
            assert isinstance(out, ADT) and len(out) == 2
            for o, r in zip(out, ref, strict=True):
                np.testing.assert_allclose(o.numpy(), r, rtol=1e-5, atol=1e-5)
            held.append((out, [o.numpy().copy() for o in out]))
            if call == 0:
                assert nf.plans[key] is ne.SEEN
            else:
                assert isinstance(nf.plans[key], ne._Plan)
        # the plan itself answers (no fallback to the loop) with the same numbers
        got = nf.try_call([x])
        assert isinstance(got, ADT)
        np.testing.assert_allclose(got[0], ref[0], rtol=1e-5, atol=1e-5)
    # every result kept its own memory: later calls (reusing the arena) changed none of them
    for out, copies in held:
        for o, c in zip(out, copies, strict=True):
            np.testing.assert_array_equal(o.numpy(), c)
    # intermediates live in one arena per shape, smaller than all of them side by side
    assert all(p.nbytes > 0 for p in nf.plans.values())


def test_native_entry_off_runs_the_loop_with_the_same_numbers(conv_dense_exe):
    exe = conv_dense_exe
    on, off = VirtualMachine(exe, tvm.cpu()), VirtualMachine(exe, tvm.cpu())
    off.native_entry = False
    x = np.random.default_rng(7).standard_normal((3, 3, 12, 12)).astype("float32")
    for _ in range(3):
        a, b = on.run(x), off.run(x)
        for u, v in zip(a, b, strict=True):
            np.testing.assert_array_equal(u.numpy(), v.numpy())
    assert off._native[0].plans == {}


def test_control_flow_function_stays_in_the_dispatch_loop():
    x = relay.var("x", shape=(relay.Any(), 4), dtype="float32")
    c = relay.var("c", shape=(), dtype="bool")
    body = relay.If(c, relay.nn.relu(x) * relay.const(2.0), relay.exp(x))
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function([x, c], body)), target="llvm")
    vm = VirtualMachine(exe, tvm.cpu())
    assert vm._native[exe.global_map["main"]] is None
    a = np.random.default_rng(1).standard_normal((3, 4)).astype("float32")
    for _ in range(3):
        np.testing.assert_allclose(vm.run(a, np.bool_(True)).numpy(), np.maximum(a, 0) * 2,
                                   rtol=1e-6)
        np.testing.assert_allclose(vm.run(a, np.bool_(False)).numpy(), np.exp(a), rtol=1e-5)


def test_shape_read_from_argument_data_is_not_planned():
    """(its kernel's output shape is the data's: numpy runs it, and the call shape is never
    planned)"""
    x = relay.var("x", shape=(relay.Any(),), dtype="float32")
    s = relay.var("s", shape=(2,), dtype="int64")
    body = relay.reshape(relay.exp(x), s) + relay.const(1.0)
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function([x, s], body)), target="llvm")
    vm = VirtualMachine(exe, tvm.cpu())
    a = np.arange(6, dtype="float32") / 6
    for shape in ((2, 3), (3, 2), (6, 1)):  # the same call shape, other data
        for _ in range(2):
            out = vm.run(a, np.array(shape, "int64")).numpy()
            np.testing.assert_allclose(out, np.exp(a).reshape(shape) + 1, rtol=1e-6)
    nf = vm._native[exe.global_map["main"]]
    assert nf is None or nf.plans[((6,), (2,))] is ne.NO_PLAN


def _add_one_kernel():
    """The native kernel of ``fn (%p: float32) { %p + 1f }`` from a one-op VM build."""
    p = relay.var("p", shape=(), dtype="float32")
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function([p], p + relay.const(1.0))),
                           target="llvm")
    (kernel,) = exe.kernels
    assert kernel.kind == "native"
    return kernel


def test_100k_kernel_straight_line_chain():
    n = 100_000
    code, reg = [], 1  # register 0: the argument
    for _ in range(n):
        code.append((B.ALLOC_STORAGE, 4, 64, "float32", reg + 1))
        code.append((B.ALLOC_TENSOR, reg + 1, 0, (), "float32", reg + 2))
        code.append((B.INVOKE_PACKED, 0, 2, 1, (reg - 1 if reg > 1 else 0, reg + 2), False))
        reg += 3
    code.append((B.RET, reg - 1))
    func = VMFunction("main", ["x"], code, reg, [["tensor", [], "float32"]])
    vm = VirtualMachine(Executable([func], [], [_add_one_kernel()]), tvm.cpu())
    for _ in range(3):  # the dispatch loop, the recording, the plan
        assert float(vm.run(np.float32(0.5)).numpy()) == n + 0.5
    plan = vm._native[0].plans[((),)]
    assert isinstance(plan, ne._Plan)
    assert plan.nbytes <= 4 * 64  # each sum's storage reused once the next one is made


def test_arena_offsets_never_overlap_live_buffers():
    rng = np.random.default_rng(0)
    intervals = []
    for _ in range(300):
        first = int(rng.integers(0, 100))
        intervals.append((int(rng.integers(1, 5000)), first, first + int(rng.integers(0, 10))))
    offsets, size = arena_offsets(intervals)
    assert all(o % 64 == 0 for o in offsets)
    assert size < sum(-(-b // 64) * 64 for b, _, _ in intervals)
    for i, (bi, fi, li) in enumerate(intervals):
        assert offsets[i] + bi <= size
        for j in range(i):
            bj, fj, lj = intervals[j]
            if fi <= lj and fj <= li:  # alive at once: apart in memory
                assert offsets[i] + bi <= offsets[j] or offsets[j] + bj <= offsets[i]


def test_threads_calling_one_vm_get_their_own_results(conv_dense_exe):
    vm, loop = VirtualMachine(conv_dense_exe, tvm.cpu()), VirtualMachine(conv_dense_exe, tvm.cpu())
    loop.native_entry = False
    xs = [np.random.default_rng(10 + k).standard_normal((3, 3, 12, 12)).astype("float32")
          for k in range(2)]
    refs = [loop.run(x)[0].numpy() for x in xs]
    errors = []

    def work(k):
        for _ in range(20):  # one thread may find the plan busy and run the loop instead
            got = vm.run(xs[k])[0].numpy()
            if not np.array_equal(got, refs[k]):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert isinstance(vm._native[0].plans[((3, 3, 12, 12),)], ne._Plan)
