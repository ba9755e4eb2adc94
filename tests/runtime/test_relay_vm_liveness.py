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
