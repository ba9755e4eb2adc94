"""No Python recursion proportional to the program or to the recursion depth: a recursion
100,000 deep runs, and a 100,000-binding let chain compiles and runs, at the default limit."""

import sys

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.runtime.vm import VirtualMachine


def test_recursion_depth_100k_at_default_limit():
    assert sys.getrecursionlimit() <= 1000 + 100  # nothing raised it
    mod = tvm.IRModule()
    f = relay.GlobalVar("sum_to")
    n = relay.var("n", shape=(), dtype="int64")
    body = relay.If(relay.equal(n, relay.const(0, "int64")), relay.const(0, "int64"),
                    n + relay.Call(f, [n - relay.const(1, "int64")]))
    mod[f] = relay.Function([n], body, relay.TensorType((), "int64"))
    m = relay.var("m", shape=(), dtype="int64")
    mod["main"] = relay.Function([m], relay.Call(f, [m]))
    vm = VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
    depth = 100_000
    assert int(vm.run(np.array(depth, "int64")).numpy()) == depth * (depth + 1) // 2


def test_let_chain_100k_compiles_and_runs():
    x = relay.var("x", shape=(), dtype="float32")
    body = x
    vs = [relay.var(f"v{k}") for k in range(100_000)]
    # build from the inside out: let v0 = x + 1; let v1 = v0 + 1; ...; v_last
    body = vs[-1]
    for k in reversed(range(len(vs))):
        prev = x if k == 0 else vs[k - 1]
        body = relay.Let(vs[k], prev + relay.const(1.0), body)
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    exe = relay.vm.compile(mod, target="llvm")
    assert len(exe.kernels) == 1  # 100,000 structurally equal fused adds share one kernel
    out = VirtualMachine(exe, tvm.cpu()).run(np.array(0.0, "float32"))
    assert float(out.numpy()) == 100_000.0
