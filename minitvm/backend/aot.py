"""The whole-graph native entry: one LLVM function calling every kernel of the graph in order.

``void entry(ptr table, i32 num_threads)``: ``table`` holds the argument pointers of all steps
back to back; step ``s`` calls its kernel with ``table + offset_s``. With it a run of a compiled
graph is one ctypes call, so a tiny model pays no per-kernel Python overhead.

The calls go in basic blocks of ``BLOCK_STEPS``: LLVM's code generator takes time quadratic in
the calls of one block (at O0, 8,000 calls 0.98 s, 16,000 9.6 s; in blocks of 256: 0.15 and
0.60 s). A graph of at most ``BLOCK_STEPS`` steps has one block, its IR as before the split.
"""

from __future__ import annotations

import hashlib

from ..runtime import jit

BLOCK_STEPS = 256  # calls per basic block of the entry (see the module doc)


def entry_ir(steps: list[tuple[str, int]]) -> tuple[str, str]:
    """LLVM IR of the entry for ``[(kernel symbol, number of args)]``; returns (ir, symbol)."""
    key = hashlib.sha256(repr(steps).encode()).hexdigest()[:20]
    symbol = f"mtvm_graph_{key}"
    decls = sorted({s for s, _ in steps})
    lines = [f"declare void @{s}(ptr, ptr, i32)" for s in decls]
    lines.append(f"define void @{symbol}(ptr %table, i32 %nth) {{")
    lines.append("entry:")
    off = 0
    for k, (sym, nargs) in enumerate(steps):
        if k and k % BLOCK_STEPS == 0:  # (same calls, same order: straight-line jumps)
            lines.append(f"  br label %steps{k}")
            lines.append(f"steps{k}:")
        lines.append(f"  %a{k} = getelementptr ptr, ptr %table, i64 {off}")
        lines.append(f"  call void @{sym}(ptr %a{k}, ptr null, i32 %nth)")
        off += nargs
    lines.append("  ret void")
    lines.append("}")
    return "\n".join(lines) + "\n", symbol


# beyond this many steps no entry is compiled (its LLVM time grows with the steps: 100,000 took
# 4.5 CPU s) and the graph executor runs the kernels through runtime.step_loop, compiled once
MAX_ENTRY_STEPS = 20000


def graph_entry(nodes: list[dict], kernels: dict):
    """The whole-graph native entry ``(ir, symbol, compiled)`` for graph-JSON ``nodes`` when
    every step is a native kernel (else None)."""
    steps = []
    for node in nodes:
        if node["op"] == "null":
            continue
        fname = node["attrs"]["func_name"]
        if fname in ("__nop", "__concat"):  # views: no kernel runs
            continue
        k = kernels[fname]
        if k.kind != "native":
            return None
        nargs = int(node["attrs"]["num_inputs"]) + len(k.consts) + \
            int(node["attrs"]["num_outputs"]) + (1 if k.ws_bytes else 0)
        steps.append((k.symbol, nargs))
    if len(steps) > MAX_ENTRY_STEPS:
        return None
    ir, symbol = entry_ir(steps)
    compiled = jit.link_entry(ir, symbol, {k.symbol: k.address for k in kernels.values()
                                           if k.kind == "native"})
    return ir, symbol, compiled
