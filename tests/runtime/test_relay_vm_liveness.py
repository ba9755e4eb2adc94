"""The Relay VM drops each register after its last use (``runtime.vm.liveness``)."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.runtime.vm import bytecode as B
from minitvm.runtime.vm import vm as vm_module
from minitvm.runtime.vm.liveness import kill_points


def test_kill_points_of_straight_line_code_and_of_a_branch():
    code = [(B.LOAD_CONST, 0, 1),                     # $1 = const
            (B.ALLOC_STORAGE, 64, 64, "float32", 2),  # $2 = storage
            (B.ALLOC_TENSOR, 2, 0, (4,), "float32", 3),
            (B.INVOKE_PACKED, 0, 3, 1, (0, 1, 3), False),
            (B.MOVE, 3, 4),
            (B.RET, 4)]
    assert kill_points(code) == [(), (), (2,), (0, 1), (3,), ()]
    assert kill_points(code[:4] + [(B.IF, 3, 0, 1, 2), (B.RET, 3), (B.RET, 1)]) is None


def _chain(n):
    x = relay.var("x", shape=(relay.Any(), 8), dtype="float32")
    y = x
    for k in range(n):
        y = relay.nn.relu(relay.multiply(y, relay.const(np.float32(k + 2))))
        y = relay.add(relay.transpose(y, (1, 0)), relay.const(np.float32(1)))
        y = relay.transpose(y, (1, 0))
    return tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([y, relay.sum(y)])))


def test_results_match_with_and_without_dropping_registers(monkeypatch):
    exe = relay.vm.compile(_chain(4), "llvm")
    x = np.random.default_rng(0).standard_normal((3, 8)).astype("float32")
    outs = {}
    for kill in (False, True):
        monkeypatch.setattr(vm_module, "KILL_DEAD_REGISTERS", kill)
        vm = tvm.runtime.vm.VirtualMachine(exe, tvm.cpu())
        kills = [ins for code, *_ in vm._code for ins in code if ins[0] == vm_module._KILL]
        assert bool(kills) == kill
        outs[kill] = [o.numpy() for o in vm.run(x)]
    ref = x
    for k in range(4):
        ref = np.maximum(ref * (k + 2), 0) + 1
    for kill in (False, True):
        np.testing.assert_allclose(outs[kill][0], ref, rtol=1e-6)
        np.testing.assert_allclose(outs[kill][1], ref.sum(), rtol=1e-5)


def test_dead_at_calls_of_a_branching_function():
    from minitvm.runtime.vm.liveness import dead_at_calls

    code = [(B.LOAD_CONSTI, 1, 2),                 # $2 = 1
            (B.IF, 0, 2, 1, 4),                    # if $0 == $2 -> 2 else -> 5
            (B.INVOKE, 0, (0, 1), 3),              # $3 = f($0, $1): $1 read after
            (B.MOVE, 1, 4),
            (B.GOTO, 2),
            (B.MOVE, 0, 4),
            (B.RET, 4)]
    # ($3: its destination; $4 is written before it is read; $5 is never used)
    assert dead_at_calls(code, 6) == {2: (0, 2, 4, 5)}
    assert dead_at_calls(code + [(B.GOTO, -1)], 6) is None  # a backward jump: no drops


def test_dead_at_calls_of_a_100k_instruction_function():
    from minitvm.runtime.vm.liveness import dead_at_calls

    n = 100_000
    code = [(B.MOVE, k, k + 1) for k in range(n)]
    code += [(B.IF, n, n, 1, 2), (B.INVOKE, 0, (n,), n + 1), (B.RET, n + 1)]
    assert dead_at_calls(code, n + 2) == {n + 1: tuple(range(n + 1))}


def test_a_recursive_loop_drops_registers_at_its_call(monkeypatch):
    """A counting loop (recursive, with an If): the call drops the step's intermediates; the
    result is the same with and without dropping."""
    mod = tvm.IRModule()
    loop = relay.GlobalVar("loop")
    i = relay.var("i", shape=(), dtype="int32")
    acc = relay.var("acc", shape=(4,), dtype="float32")
    nxt = relay.tanh(acc * relay.const(np.float32(1.5))) + relay.const(np.float32(0.25))
    mod[loop] = relay.Function(
        [i, acc], relay.If(relay.equal(i, relay.const(0)), acc,
                           relay.Call(loop, [i - relay.const(1), nxt])),
        relay.TensorType((4,), "float32"))
    a = relay.var("a", shape=(4,), dtype="float32")
    mod["main"] = relay.Function([a], relay.Call(loop, [relay.const(300), a]))
    x = np.linspace(-1, 1, 4).astype("float32")
    # (a tail call: the default build, relay.vm.tail_call_loops, makes it a jump back, no call
    # and no frame, tests/relay/backend/test_relay_vm_tail_call_loops.py; as a call, a
    # recursion that is not a tail call keeps its frames, and drops registers there)
    with tvm.transform.PassContext(config={"relay.vm.tail_call_loops": False}):
        exe = relay.vm.compile(mod, target="llvm")
    got = vm_module.VirtualMachine(exe, tvm.cpu()).run(x).numpy()
    vm = vm_module.VirtualMachine(exe, tvm.cpu())
    calls = [ins for code, _, _, _ in vm._code for ins in code if ins[0] == B.INVOKE]
    assert any(ins[4] for ins in calls)  # the loop's call drops registers
    monkeypatch.setattr(vm_module, "KILL_DEAD_REGISTERS", False)
    vm_off = vm_module.VirtualMachine(exe, tvm.cpu())
    assert not any(ins[4] for code, _, _, _ in vm_off._code for ins in code
                   if ins[0] == B.INVOKE)
    np.testing.assert_array_equal(got, vm_off.run(x).numpy())
    ref = x
    for _ in range(300):
        ref = np.tanh(ref * np.float32(1.5)) + np.float32(0.25)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_fresh_tensor_storages_are_storages_of_the_next_tensor_only():
    from minitvm.runtime.vm.liveness import fresh_tensor_storages

    code = [(B.ALLOC_STORAGE, 8, 64, "int64", 2),     # 0: only the next tensor's: fresh
            (B.ALLOC_TENSOR, 2, 0, (), "int64", 3),
            (B.ALLOC_STORAGE, 64, 64, "float32", 4),  # 2: two tensors in it
            (B.ALLOC_TENSOR, 4, 0, (4,), "float32", 5),
            (B.ALLOC_TENSOR, 4, 16, (4,), "float32", 6),
            (B.ALLOC_STORAGE, 64, 64, "float32", 7),  # 5: its tensor at an offset
            (B.ALLOC_TENSOR, 7, 16, (4,), "float32", 8),
            (B.ALLOC_STORAGE, 16, 64, "float32", 9),  # 7: a jump lands on its tensor
            (B.ALLOC_TENSOR, 9, 0, (4,), "float32", 10),
            (B.IF, 3, 3, 1, -1),
            (B.RET, 10)]
    assert fresh_tensor_storages(code) == {0}
    moved = code[:2] + [(B.MOVE, 2, 11)] + code[2:]  # the storage register read again
    assert 0 not in fresh_tensor_storages(moved)
    assert fresh_tensor_storages(code + [(999, 1)]) == frozenset()  # (an unknown opcode)


def test_fresh_tensor_storages_of_a_100k_instruction_function():
    from minitvm.runtime.vm.liveness import fresh_tensor_storages

    n = 50_000
    code = [ins for k in range(n) for ins in ((B.ALLOC_STORAGE, 4, 64, "float32", 2 * k),
                                               (B.ALLOC_TENSOR, 2 * k, 0, (1,), "float32",
                                                2 * k + 1))]
    assert fresh_tensor_storages(code + [(B.GOTO, -2 * n)]) == set(range(0, 2 * n, 2))
