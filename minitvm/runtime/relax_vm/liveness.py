"""The registers a Relax VM function no longer needs when it calls another VM function.

A call of a VM function pushes the caller's frame, which keeps every register of the caller
alive until the callee returns. In a recursive loop (an RNN step calling the next step) each
step's intermediates then stay allocated for the whole loop: memory grows with the length,
every step allocates fresh pages, and ``alloc_storage``'s per-site reuse never finds its buffer
free. ``dead_at_vm_calls`` gives, per such call, the registers not read on any path after it,
so the VM drops them before pushing the frame (TVM's ``KillRegister``, at calls only).

One backward pass over the instructions: a function whose jumps all go forward (what the Relax
code generator emits) has its successors' liveness computed before each instruction; one with
a backward jump gets no kills (its registers stay, as before).
"""

from __future__ import annotations

from .executable import ARG_REG, CALL, GOTO, IF, KILL, MOVE, RET

__all__ = ["dead_at_vm_calls"]


def dead_at_vm_calls(code: list, nparams: int, is_vm_call) -> dict[int, tuple[int, ...]]:
    """``{pc: registers}`` for each instruction of ``code`` (``VMFunction.code``) for which
    ``is_vm_call(ins)`` holds: the registers that may hold a value there but are read on no path
    after it (its destination excluded). Empty when a jump goes backward."""
    n = len(code)
    for ins in code:
        if (ins[0] == GOTO and ins[1] <= 0) or (ins[0] == IF and ins[2] <= 0):
            return {}
    defined = set(range(nparams))
    for ins in code:
        if ins[0] in (CALL, MOVE):
            defined.add(ins[1])
    live_in: list = [frozenset()] * (n + 1)
    dead: dict[int, tuple[int, ...]] = {}
    for pc in range(n - 1, -1, -1):
        ins = code[pc]
        op = ins[0]
        if op == RET:
            live_in[pc] = frozenset((ins[1],))
            continue
        if op == GOTO:
            live_in[pc] = live_in[min(pc + ins[1], n)]
            continue
        out = live_in[pc + 1]
        if op == IF:
            out = out | live_in[min(pc + ins[2], n)] | {ins[1]}
            live_in[pc] = out
            continue
        if op == KILL:
            live_in[pc] = out - {ins[1]}
            continue
        if op == CALL:
            reads = [v for k, v in ins[3] if k == ARG_REG]
            if is_vm_call(ins):
                gone = defined - out
                gone.discard(ins[1])
                if gone:
                    dead[pc] = tuple(sorted(gone))
        elif op == MOVE:
            reads = [ins[2][1]] if ins[2][0] == ARG_REG else []
        else:
            raise ValueError(f"Relax VM liveness: unknown opcode {op!r} at pc {pc}")
        live = out - {ins[1]} if ins[1] in out else out
        live_in[pc] = live.union(reads) if reads else live
    return dead
