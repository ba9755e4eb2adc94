"""The Relay VM's loops: a function's call of itself in tail position (through lets and both
branches of an if) compiles to moves into its parameters and a jump to its start, no frame; in
such a loop a dynamic kernel's call site reuses its outputs of two steps before. Each against
the build with ``relay.vm.tail_call_loops`` off (frames: bitwise the same outputs) and numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend.vm import bound_call
from minitvm.relay.backend.vm.codegen import _tail_self_calls
from minitvm.runtime.vm import bytecode as B
from minitvm.runtime.vm import vm as vm_module


def _counting_loop(dynamic: bool):
    """main(a): acc <- tanh(acc * 1.5) + 0.25, 300 times, by a recursive function (its
    accumulator of a run-time size when ``dynamic``: its kernels then bind per call site)."""
    mod = tvm.IRModule()
    loop = relay.GlobalVar("loop")
    i = relay.var("i", shape=(), dtype="int32")
    shape = (relay.Any(),) if dynamic else (4,)
    acc = relay.var("acc", shape=shape, dtype="float32")
    nxt = relay.tanh(acc * relay.const(np.float32(1.5))) + relay.const(np.float32(0.25))
    mod[loop] = relay.Function(
        [i, acc], relay.If(relay.equal(i, relay.const(0)), acc,
                           relay.Call(loop, [i - relay.const(1), nxt])),
        relay.TensorType(shape, "float32"))
    a = relay.var("a", shape=shape, dtype="float32")
    mod["main"] = relay.Function([a], relay.Call(loop, [relay.const(300), a]))
    return mod


def _swap_loop():
    """main(n, x, y): f(i, a, b) = f(i - 1, b, a) while i != 0, else (a, b)."""
    mod = tvm.IRModule()
    f = relay.GlobalVar("swap")
    i = relay.var("i", shape=(), dtype="int32")
    a = relay.var("a", shape=(2,), dtype="float32")
    b = relay.var("b", shape=(2,), dtype="float32")
    mod[f] = relay.Function([i, a, b], relay.If(
        relay.equal(i, relay.const(0)), relay.Tuple([a, b]),
        relay.Call(f, [i - relay.const(1), b, a])))
    n = relay.var("n", shape=(), dtype="int32")
    x = relay.var("x", shape=(2,), dtype="float32")
    y = relay.var("y", shape=(2,), dtype="float32")
    mod["main"] = relay.Function([n, x, y], relay.Call(f, [n, x, y]))
    return mod


def _compile(mod, loops: bool):
    with tvm.transform.PassContext(config={"relay.vm.tail_call_loops": loops}):
        exe = relay.vm.compile(mod, target="llvm")
    return exe, vm_module.VirtualMachine(exe, tvm.cpu())


def _function(exe, name):
    return next(f for f in exe.functions if f.name == name)


def _reference(x):
    for _ in range(300):
        x = np.tanh(x * np.float32(1.5)) + np.float32(0.25)
    return x


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_tail_call_of_itself_is_a_jump_to_the_start(dynamic):
    exe, vm = _compile(_counting_loop(dynamic), True)
    code = _function(exe, "loop").instructions
    assert not any(ins[0] == B.INVOKE for ins in code)
    back = [pc for pc, ins in enumerate(code) if ins[0] == B.GOTO and pc + ins[1] == 0]
    assert len(back) == 1
    # the two parameters written right before the jump
    assert [ins[0] for ins in code[back[0] - 2:back[0]]] == [B.MOVE, B.MOVE]
    assert sorted(ins[2] for ins in code[back[0] - 2:back[0]]) == [0, 1]
    _, vm_off = _compile(_counting_loop(dynamic), False)
    assert any(ins[0] == B.INVOKE for ins in _function(vm_off.exe, "loop").instructions)
    x = np.linspace(-1, 1, 4).astype("float32")
    got = vm.run(x).numpy()
    np.testing.assert_array_equal(got, vm_off.run(x).numpy())
    np.testing.assert_allclose(got, _reference(x), rtol=1e-5, atol=1e-6)
    if dynamic:  # (one build, another size)
        x = np.linspace(-2, 2, 9).astype("float32")
        np.testing.assert_array_equal(vm.run(x).numpy(), vm_off.run(x).numpy())


@pytest.mark.parametrize("count", [0, 1, 4, 7])
def test_arguments_that_are_other_parameters_move_in_parallel(count):
    exe, vm = _compile(_swap_loop(), True)
    assert not any(ins[0] == B.INVOKE for ins in _function(exe, "swap").instructions)
    x, y = np.array([1, 2], "float32"), np.array([3, 4], "float32")
    got = vm.run(np.array(count, "int32"), x, y)
    want = (y, x) if count % 2 else (x, y)
    np.testing.assert_array_equal(got[0].numpy(), want[0])
    np.testing.assert_array_equal(got[1].numpy(), want[1])


def test_a_loops_dynamic_kernels_reuse_their_outputs(monkeypatch):
    # (a binding's generated ``run`` reuses the outputs, BoundCall._outputs' rule inlined:
    # the spy compares each output with the array the pair kept from two calls before)
    calls = {"fresh": 0, "reused": 0}
    real = bound_call.BoundCall.keep_outputs

    def keep(self):
        real(self)
        run = self.run

        def spy(inputs, self=self, run=run):
            before = [id(p[1]) for p in self.kept]
            outs = run(inputs)
            if outs is not None:
                for o, b in zip(outs, before, strict=True):
                    calls["reused" if id(o) == b else "fresh"] += 1
            return outs

        self.run = spy

    monkeypatch.setattr(bound_call.BoundCall, "keep_outputs", keep)
    _, vm = _compile(_counting_loop(True), True)
    x = np.linspace(-1, 1, 4).astype("float32")
    got = vm.run(x).numpy()
    np.testing.assert_allclose(got, _reference(x), rtol=1e-5, atol=1e-6)
    assert calls["reused"] > 250 and calls["fresh"] < 10, calls
    again = vm.run(x).numpy()  # (the last result, held here, is not written over)
    np.testing.assert_array_equal(got, again)


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_loops_storages_of_one_tensor_make_it_fresh(dynamic):
    # (the counter's compare and decrement results: one array each a step, no storage and
    # view; bitwise the build without the loop, whose frames allocate as before)
    exe, vm = _compile(_counting_loop(dynamic), True)
    index = next(k for k, f in enumerate(exe.functions) if f.name == "loop")
    code = vm._code[index][0]
    made = [ins for ins in code if ins[0] == B.ALLOC_STORAGE and ins[5] is not None]
    assert made and all(code[pc + 1][0] == B.ALLOC_TENSOR and code[pc + 1][5] == ins[5][0]
                        for pc, ins in enumerate(code) if ins in made)
    _, vm_off = _compile(_counting_loop(dynamic), False)
    x = np.linspace(-1, 1, 4).astype("float32")
    got = vm.run(x).numpy()
    assert got.tobytes() == vm_off.run(x).numpy().tobytes()
    np.testing.assert_allclose(got, _reference(x), rtol=1e-5, atol=1e-6)


def test_tail_calls_found_through_a_hundred_thousand_lets():
    f = relay.GlobalVar("f")
    i = relay.var("i", shape=(), dtype="int32")
    call = relay.Call(f, [i])
    body = call
    for k in range(100_000):
        body = relay.Let(relay.var(f"v{k}", shape=(), dtype="int32"), i, body)
    assert _tail_self_calls(body, "f") == {id(call)}
    outer = relay.Call(f, [call])  # (the inner call is an argument: not in tail position)
    assert _tail_self_calls(outer, "f") == {id(outer)}
    assert _tail_self_calls(outer, "g") == set()
