"""Where each register of a Relay VM function dies, so the VM can drop it there.

A register file keeps every intermediate tensor of a call alive until the call returns: a CNN's
activations then all stay allocated at once (tens of MB), and each kernel writes fresh memory
instead of a buffer just freed and still in cache. ``kill_points`` gives, per instruction, the
registers last used there (TVM's ``KillRegister``), for straight-line functions (a function
with ``If``/``Goto`` keeps its registers: its uses depend on the branch taken).
"""

from __future__ import annotations

from . import bytecode as B

__all__ = ["fresh_tensor_storages", "kill_points", "read_after_update_row"]


def _uses(ins: tuple) -> list[int] | None:
    """Every register ``ins`` reads or writes; None for an instruction that branches."""
    op = ins[0]
    if op in (B.MOVE, B.GET_TAG, B.SHAPE_OF):
        return [ins[1], ins[2]]
    if op in (B.LOAD_CONST, B.LOAD_CONSTI):  # (operand 1 is a constant, not a register)
        return [ins[2]]
    if op == B.RET:
        return [ins[1]]
    if op == B.FATAL:
        return []
    if op == B.INVOKE:
        return [*ins[2], ins[3]]
    if op == B.INVOKE_CLOSURE:
        return [ins[1], *ins[2], ins[3]]
    if op == B.INVOKE_PACKED:
        return list(ins[4])
    if op == B.ALLOC_STORAGE:
        return [ins[4]]
    if op == B.ALLOC_TENSOR:
        return [ins[1], ins[5]]
    if op == B.ALLOC_TENSOR_REG:
        return [ins[1], ins[3], ins[5]]
    if op in (B.ALLOC_ADT, B.ALLOC_CLOSURE):
        return [*ins[2], ins[3]]
    if op == B.GET_FIELD:
        return [ins[1], ins[3]]
    if op == B.RESHAPE_TENSOR:
        return [ins[1], ins[2], ins[3]]
    if op == B.UPDATE_ROW:
        return [ins[1], ins[2], ins[3], ins[4]]
    return None  # If, Goto, or an opcode this analysis does not know


def kill_points(instructions: list[tuple]) -> list[tuple[int, ...]] | None:
    """Per instruction, the registers used there for the last time (nothing after ``Ret``,
    whose frame goes anyway); None when the function branches."""
    last: dict[int, int] = {}
    for pc, ins in enumerate(instructions):
        regs = _uses(ins)
        if regs is None:
            return None
        for r in regs:
            last[r] = pc
    kills: list[list[int]] = [[] for _ in instructions]
    for r, pc in last.items():
        if instructions[pc][0] != B.RET:
            kills[pc].append(r)
    return [tuple(sorted(k)) for k in kills]


def _reads(ins: tuple) -> list[int]:
    """Registers ``ins`` may read (an over-approximation: a kernel's outputs count as read)."""
    op = ins[0]
    if op in (B.MOVE, B.GET_TAG, B.SHAPE_OF, B.RET, B.ALLOC_TENSOR, B.GET_FIELD):
        return [ins[1]]
    if op in (B.INVOKE, B.ALLOC_ADT, B.ALLOC_CLOSURE):
        return list(ins[2])
    if op == B.INVOKE_CLOSURE:
        return [ins[1], *ins[2]]
    if op == B.INVOKE_PACKED:
        return list(ins[4])
    if op in (B.ALLOC_TENSOR_REG, B.IF):
        return [ins[1], ins[2] if op == B.IF else ins[3]]
    if op == B.RESHAPE_TENSOR:
        return [ins[1], ins[2]]
    if op == B.UPDATE_ROW:
        return [ins[1], ins[2], ins[3]]
    return []  # LoadConst(i), AllocStorage, Goto, Fatal


def _written(ins: tuple) -> int | None:
    """The register ``ins`` sets (None: none, or a kernel's outputs, which count as read)."""
    op = ins[0]
    if op in (B.MOVE, B.GET_TAG, B.SHAPE_OF, B.LOAD_CONST, B.LOAD_CONSTI):
        return ins[2]
    if op in (B.INVOKE, B.INVOKE_CLOSURE, B.ALLOC_ADT, B.ALLOC_CLOSURE, B.GET_FIELD,
              B.RESHAPE_TENSOR):
        return ins[3]
    if op in (B.ALLOC_STORAGE, B.UPDATE_ROW):
        return ins[4]
    if op in (B.ALLOC_TENSOR, B.ALLOC_TENSOR_REG):
        return ins[5]
    return None


def dead_at_calls(instructions: list[tuple], nregs: int) -> dict[int, tuple[int, ...]] | None:
    """For a function that branches (``kill_points`` gives it nothing): ``{pc: registers}`` for
    each ``Invoke`` / ``InvokeClosure``, the registers read on no path after it (its destination
    excluded), which the VM drops before pushing the caller's frame: a recursive loop's frames
    then do not keep every step's intermediates alive. A kernel's outputs count as read (fewer
    drops, never a wrong one); one backward pass, so None when a jump goes backward."""
    n = len(instructions)
    for ins in instructions:
        if (ins[0] == B.GOTO and ins[1] <= 0) or (ins[0] == B.IF and min(ins[3], ins[4]) <= 0):
            return None
    live_in: list = [frozenset()] * (n + 1)
    dead: dict[int, tuple[int, ...]] = {}
    everything = frozenset(range(nregs))
    for pc in range(n - 1, -1, -1):
        ins = instructions[pc]
        op = ins[0]
        if op in (B.RET, B.FATAL):
            out = frozenset()
        elif op == B.GOTO:
            out = live_in[min(pc + ins[1], n)]
        elif op == B.IF:
            out = live_in[min(pc + ins[3], n)] | live_in[min(pc + ins[4], n)]
        else:
            out = live_in[pc + 1]
        if op in (B.INVOKE, B.INVOKE_CLOSURE):
            gone = everything - out - {ins[3]}
            if gone:
                dead[pc] = tuple(sorted(gone))
        w = _written(ins)
        if w is not None and w in out:
            out = out - {w}
        reads = _reads(ins)
        live_in[pc] = out.union(reads) if reads else out
    return dead


#: rounds of the backward fixed point of ``read_after_update_row`` (a function's loops nest
#: shallowly: a few rounds reach it); past it every UpdateRow counts as read after
MAX_ROUNDS = 64


def read_after_update_row(instructions: list[tuple]) -> frozenset[int]:
    """The pcs of the ``UpdateRow`` instructions whose ``data`` register may be read after them
    (on some path, loops included, before it is written again): there the old tensor is still
    a value of the program, so the row must go into a copy. A backward liveness fixed point
    over the jumps; capped at ``MAX_ROUNDS`` (then every UpdateRow is answered)."""
    rows = [pc for pc, ins in enumerate(instructions) if ins[0] == B.UPDATE_ROW]
    if not rows:
        return frozenset()
    n = len(instructions)
    live_in: list = [frozenset()] * (n + 1)

    def live_out(pc: int, ins: tuple) -> frozenset:
        op = ins[0]
        if op in (B.RET, B.FATAL):
            return frozenset()
        if op == B.GOTO:
            return live_in[min(max(pc + ins[1], 0), n)]
        if op == B.IF:
            return live_in[min(max(pc + ins[3], 0), n)] | live_in[min(max(pc + ins[4], 0), n)]
        return live_in[pc + 1]

    for _ in range(MAX_ROUNDS):
        changed = False
        for pc in range(n - 1, -1, -1):
            ins = instructions[pc]
            out = live_out(pc, ins)
            w = _written(ins)
            if w is not None and w in out:
                out = out - {w}
            reads = _reads(ins)
            new = out.union(reads) if reads else out
            if new != live_in[pc]:
                live_in[pc] = new
                changed = True
        if not changed:
            return frozenset(pc for pc in rows if instructions[pc][1] != instructions[pc][4]
                             and instructions[pc][1] in live_out(pc, instructions[pc]))
    return frozenset(rows)


def fresh_tensor_storages(instructions: list[tuple]) -> frozenset[int]:
    """The pcs of ``AllocStorage`` instructions whose storage holds just the one tensor the next
    instruction makes in it, at offset 0, and nothing else mentions (no other instruction reads
    or writes its register; no jump lands between the two): the VM may make that tensor as a
    fresh array of its own, one allocation instead of a storage and a view of it."""
    count: dict[int, int] = {}
    targets = set()
    for pc, ins in enumerate(instructions):
        op = ins[0]
        if op == B.GOTO:
            targets.add(pc + ins[1])
            continue
        if op == B.IF:
            targets.update((pc + ins[3], pc + ins[4]))
            regs = [ins[1], ins[2]]
        else:
            regs = _uses(ins)
            if regs is None:
                return frozenset()  # (an opcode this analysis does not know)
        for r in regs:
            count[r] = count.get(r, 0) + 1
    out = set()
    for pc, ins in enumerate(instructions[:-1]):
        nxt = instructions[pc + 1]
        if ins[0] == B.ALLOC_STORAGE and nxt[0] == B.ALLOC_TENSOR and nxt[1] == ins[4] and \
                nxt[2] == 0 and count.get(ins[4]) == 2 and pc + 1 not in targets and \
                nxt[5] != ins[4]:
            out.add(pc)
    return frozenset(out)
