"""The whole-graph entry calls its kernels in basic blocks of ``aot.BLOCK_STEPS`` (LLVM's code
generator is quadratic in one block's calls): same calls at the same table offsets, a small
graph's IR unchanged, and a graph of several blocks runs as numpy does."""

import hashlib

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.backend import aot
from minitvm.contrib import graph_executor
from minitvm.runtime import graph_check


def _one_block_ir(steps):
    """The entry's IR as it was before the blocks: every call in the entry block."""
    symbol = "mtvm_graph_" + hashlib.sha256(repr(steps).encode()).hexdigest()[:20]
    lines = [f"declare void @{s}(ptr, ptr, i32)" for s in sorted({s for s, _ in steps})]
    lines += [f"define void @{symbol}(ptr %table, i32 %nth) {{", "entry:"]
    off = 0
    for k, (sym, nargs) in enumerate(steps):
        lines.append(f"  %a{k} = getelementptr ptr, ptr %table, i64 {off}")
        lines.append(f"  call void @{sym}(ptr %a{k}, ptr null, i32 %nth)")
        off += nargs
    lines += ["  ret void", "}"]
    return "\n".join(lines) + "\n", symbol


def test_small_entry_is_one_block_as_before():
    steps = [(f"k{i % 5}", 2 + i % 3) for i in range(aot.BLOCK_STEPS)]
    assert aot.entry_ir(steps) == _one_block_ir(steps)
    assert " br " not in aot.entry_ir(steps)[0]


def test_large_entry_blocks_keep_calls_and_offsets():
    n = 3 * aot.BLOCK_STEPS + 7
    steps = [(f"k{i % 4}", 1 + i % 3) for i in range(n)]
    ir, symbol = aot.entry_ir(steps)
    assert symbol == _one_block_ir(steps)[1]
    assert ir.count("br label %steps") == 3
    assert [line for line in ir.splitlines() if line.startswith("steps")] == [
        f"steps{k * aot.BLOCK_STEPS}:" for k in (1, 2, 3)]
    graph_check.check_entry(ir, steps, "test")  # calls in order at the executor's offsets
    old = _one_block_ir(steps)[0].splitlines()
    new = [ln for ln in ir.splitlines() if not ln.startswith(("steps", "  br label"))]
    assert new == old


def test_many_step_graph_runs_through_blocked_entry():
    # x_i = x_{i-1} - x_{i-2}: every value feeds two steps, so none fuse; bounded (period 6)
    n = aot.BLOCK_STEPS + 90
    x = relay.var("x", shape=(1, 8), dtype="float32")
    prev, y = x, relay.negative(x)
    for _ in range(n - 1):
        prev, y = y, relay.subtract(y, prev)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    lib = relay.build(mod, target="llvm")
    entry = lib.get_lib().entry
    assert entry is not None and entry[0].count("br label %steps") >= 1
    data = np.random.default_rng(0).standard_normal((1, 8)).astype("float32")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", data)
    m.run()
    p, v = data, -data
    for _ in range(n - 1):
        p, v = v, v - p
    np.testing.assert_allclose(m.get_output(0).numpy(), v, rtol=1e-5, atol=1e-5)
