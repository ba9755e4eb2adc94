"""No Python recursion proportional to the program or to the recursion depth: a recursion
100,000 deep runs, a 100,000-binding fused let chain goes through the VM's code generator, and a
long let chain goes through the whole of relay.vm.compile — all at the default limit."""

import sys

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.ir.attrs import DictAttrs
from minitvm.relay.backend.vm.codegen import FunctionCompiler
from minitvm.relay.backend.vm.kernels import KernelTable
from minitvm.runtime.vm import Executable, VirtualMachine
from minitvm.schedule import LoweringOptions

F32 = relay.TensorType((), "float32")


def test_recursion_depth_100k_at_default_limit():
    assert sys.getrecursionlimit() <= 1100  # nothing raised it
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


def _typed(e, t):
    e._checked_type = t
    return e


PRIMITIVE = DictAttrs({"Primitive": 1})
F32_TO_F32 = relay.FuncType([F32], F32)


def _fused_add_one(one):
    """fn (%p0: float32, Primitive=1) { add(%p0, 1f) } — what FuseOps makes of one binding."""
    p = _typed(relay.var("p0", F32), F32)
    body = _typed(relay.add(p, one), F32)
    return _typed(relay.Function([p], body, F32, attrs=PRIMITIVE), F32_TO_F32)


def test_codegen_of_a_100k_fused_let_chain():
    n = 100_000
    x = _typed(relay.var("x", F32), F32)
    vs = [_typed(relay.var(f"v{k}", F32), F32) for k in range(n)]
    body = vs[-1]
    one = _typed(relay.const(1.0), F32)
    for k in reversed(range(n)):  # a fresh (structurally equal) fused function per binding
        call = _typed(relay.Call(_fused_add_one(one), [x if k == 0 else vs[k - 1]]), F32)
        body = _typed(relay.Let(vs[k], call, body), F32)
    main = _typed(relay.Function([x], body, F32), relay.FuncType([F32], F32))
    mod = tvm.IRModule()
    kernels, constants = KernelTable(LoweringOptions()), []
    vmf = FunctionCompiler(mod, {"main": 0}, kernels, constants).compile("main", main)
    assert len(kernels.kernels) == 1  # 100,000 equal functions share one kernel
    exe = Executable([vmf], constants, kernels.kernels)
    assert float(VirtualMachine(exe, tvm.cpu()).run(np.float32(0.0)).numpy()) == n


def test_let_chain_through_the_whole_compile():
    n = 2_000
    x = relay.var("x", shape=(), dtype="float32")
    vs = [relay.var(f"v{k}", shape=(), dtype="float32") for k in range(n)]
    body = vs[-1]
    for k in reversed(range(n)):
        body = relay.Let(vs[k], (x if k == 0 else vs[k - 1]) + relay.const(1.0), body)
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function([x], body)), target="llvm")
    assert len(exe.kernels) == 1
    assert float(VirtualMachine(exe, tvm.cpu()).run(np.float32(0.0)).numpy()) == n
