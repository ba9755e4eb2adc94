"""The whole-graph native entry: one LLVM function calling every kernel of the graph in order.

``void entry(ptr table, i32 num_threads)``: ``table`` holds the argument pointers of all steps
back to back; step ``s`` calls its kernel with ``table + offset_s``. With it a run of a compiled
graph is one ctypes call, so a tiny model pays no per-kernel Python overhead.
"""

from __future__ import annotations

import hashlib

from ...codegen.llvm import jit


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
        lines.append(f"  %a{k} = getelementptr ptr, ptr %table, i64 {off}")
        lines.append(f"  call void @{sym}(ptr %a{k}, ptr null, i32 %nth)")
        off += nargs
    lines.append("  ret void")
    lines.append("}")
    return "\n".join(lines) + "\n", symbol


def compile_entry(ir_text: str, symbol: str, kernel_addresses: dict[str, int]):
    """JIT the entry after telling LLVM where each kernel symbol lives."""
    import llvmlite.binding as llvm

    jit._init()
    for sym, addr in kernel_addresses.items():
        llvm.add_symbol(sym, addr)
    return jit.compile_ir(ir_text, symbol, opt=1 if ir_text.count("\n") < 4000 else 0)
