"""``relax.vm.build.compile_kernels``: every kernel is scheduled once, before a parallel build's
workers fork (they inherit the schedules), and the kernels are handed to the workers costliest
first by ``compile_cost`` (statements, times the copies ``unroll`` loops make)."""

import sys

import numpy as np

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.vm.build import compile_cost

vm_build = sys.modules["minitvm.relax.vm.build"]


def _loop_func(kind, extent: int = 8):
    A = tir.decl_buffer((extent,), "float32", "A")
    i = tir.Var("i", "int32")
    body = tir.For(i, 0, extent, kind, tir.BufferStore(A, A[i] + tir.const(1.0, "float32"), [i]))
    return tir.PrimFunc([A], body)


def test_compile_cost_counts_each_unrolled_copy():
    assert compile_cost(_loop_func(tir.ForKind.SERIAL)) == 2  # the loop and its store
    assert compile_cost(_loop_func(tir.ForKind.UNROLLED)) == 1 + 8
    assert compile_cost(_loop_func(tir.ForKind.UNROLLED, 16)) == 1 + 16
    assert compile_cost(_loop_func(tir.ForKind.VECTORIZED)) == 2
    assert compile_cost(None) == 0


def _chain(widths):
    """matmul + bias + relu layers of distinct widths over a symbolic batch (one kernel each),
    and their (weight, bias) arrays."""
    rng = np.random.default_rng(0)
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 8], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y, k, layers = x, 8, []
            for w in widths:
                layers.append((rng.standard_normal((k, w)).astype("float32"),
                               rng.standard_normal((w,)).astype("float32")))
                wt, b = (relax.const(v) for v in layers[-1])
                y = bb.emit(relax.op.nn.relu(relax.op.add(relax.op.matmul(y, wt), b)))
                k = w
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get(), layers


def test_kernels_scheduled_once_and_handed_out_costliest_first(monkeypatch):
    calls: list = []
    shared: list = []
    real_sched = vm_build.optimize_prim_func_prepacked
    real_plain = vm_build.optimize_prim_func
    real_shard = vm_build.run_sharded

    def sched(func, options, pos):
        calls.append(func)
        return real_sched(func, options, pos)

    def plain(func, options):
        calls.append(func)
        return real_plain(func, options)

    def shard(tasks, run_one, group, ctx=None, cost=None):
        shared.append((list(tasks), cost))
        return real_shard(tasks, run_one, group, ctx, cost)

    monkeypatch.setattr(vm_build, "optimize_prim_func_prepacked", sched)
    monkeypatch.setattr(vm_build, "optimize_prim_func", plain)
    monkeypatch.setattr(vm_build, "run_sharded", shard)
    mod, layers = _chain((12, 40, 16, 24))
    ex = relax.build(mod, "llvm")
    assert len(calls) == len(ex.kernels) == len({id(f) for f in calls})  # once each
    ((tasks, cost),) = shared
    assert sorted(tasks) == sorted(ex.kernels)
    costs = [cost(t) for t in tasks]
    assert costs == sorted(costs, reverse=True) and costs[0] > costs[-1]
    vm = relax.VirtualMachine(ex, tvm.cpu())
    rng = np.random.default_rng(1)
    for batch in (1, 3):
        a = rng.standard_normal((batch, 8)).astype("float32")
        want = a
        for w, b in layers:
            want = np.maximum(want @ w + b, 0)
        np.testing.assert_allclose(vm["main"](a).numpy(), want, rtol=1e-4, atol=1e-4)
