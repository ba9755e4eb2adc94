"""Reading a kernel's machine code in the schedule tests: its innermost FMA loops."""

import re


def fma_loops(asm: str) -> list[str]:
    """The loops of ``asm`` (x86 assembly text) with FMAs that branch back to themselves, each
    from its label to the backward jump: the hottest loops of a GEMM or conv micro-kernel."""
    out = []
    for block in re.split(r"\n(?=\.LBB\d+_\d+:)", asm):
        label = block.split(":")[0].strip()
        back = re.search(r"\bj\w+\s+" + re.escape(label) + r"\b", block)
        if label.startswith(".LBB") and back and "vfmadd" in block[:back.end()]:
            out.append(block[:back.end()])
    return out
