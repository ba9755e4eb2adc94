"""A Relay VM loop as ``runtime.native_loop`` loop ops: the loop of a generated function
(``straight_line``) run natively once ``native_loop.PYTHON_STEPS`` steps ran in Python.

A loop qualifies when its head is the target of one jump back, no jump from outside lands
inside it, each branch inside leaves it (or falls through), and its instructions are kernel
calls (static ones, dynamic ones through their call site's binding), fresh tensors, moves,
constants, register drops and ``UpdateRow``. The dynamic kernels' bindings are made by a
step in Python (this run's first, or an earlier run's); the ops are built from them at a head
where they are bound, and the native loop checks them against the registers there (or
refuses: the VM loop goes on, its next step binding the kernels anew). Registers read on no
path after the exit taken (``native_loop.read_after``) are dropped there.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from operator import itemgetter

import numpy as np

from ..native_loop import DECLINED, TRY_LATER, NativeLoop, loop_region, read_after
from . import bytecode as B

__all__ = ["native_loop_entry"]



def native_loop_entry(vm, code: list, targets: dict, kill: int) -> tuple[int, Callable] | None:
    """``(head pc, enter)`` of the loop in prepared ``code`` (``targets``: its jumps, ``kill``:
    the register-drop opcode): ``enter(R)`` runs the loop natively from its head with registers
    ``R`` to an exit and returns the pc to go on at (``R`` then the values there), or
    ``TRY_LATER`` (``R`` as it was: a dynamic kernel is not bound yet, or the checks refused
    the loop) or ``DECLINED`` (``R`` as at the head of a step whose row write the VM must redo,
    for its error; or a binding without a native entry). None when no loop qualifies."""
    region = loop_region(code, targets, B.GOTO, B.IF)
    if region is None:
        return None
    head, back = region
    consts = vm.exe.constants
    template: list = []  # loop ops, a dynamic call as its instruction (bound at entry)
    exits: list[int] = []
    pc = head
    while pc <= back:
        ins = code[pc]
        op = ins[0]
        if op == kill:
            template.append(("kill", tuple(ins[1])))
        elif op == B.INVOKE_PACKED:
            _, idx, ins_regs, out_regs, dyn, fast, kconsts, site, _ = ins
            if fast is not None:
                k = vm.exe.kernels[idx]
                if not getattr(k, "address", 0):
                    return None
                args = [("reg", r, None) for r in ins_regs] + [("val", c) for c in kconsts] + \
                    [("out", r) for r in out_regs]
                template.append(("call", int(k.address), 0, args, []))
            elif dyn and site is not None:
                template.append(ins)
            else:
                return None
        elif op == B.ALLOC_STORAGE:
            made = ins[5]
            if made is None:
                return None
            template.append(("fresh", made[0], tuple(made[1]), made[2]))
            pc += 1  # (its tensor, made here)
        elif op == B.MOVE:
            template.append(("move", ins[2], ins[1]))
        elif op == B.LOAD_CONST:
            template.append(("set", ins[2], consts[ins[1]]))
        elif op == B.LOAD_CONSTI:
            template.append(("set", ins[2], int(ins[1])))
        elif op == B.UPDATE_ROW:
            template.append(("row", ins[4], ins[1], ins[2], ins[3]))
        elif op == B.IF:
            ts = targets[pc]
            out = ts[1] if ts[0] == pc + 1 else ts[0]
            template.append(("exit", ins[1], ins[2], out == ts[0], len(exits)))
            exits.append(out)
        elif op == B.GOTO:
            if pc == back:
                template.append(("back",))
        else:
            return None
        pc += 1
    loop = NativeLoop(read_after(exits, lambda pc: _successors(code, pc),
                                 lambda pc: _reads(code[pc], kill)))

    sites = [t[7] for t in template if type(t[0]) is not str]
    last: list = [None, None]  # the bindings the ops were made for last, those ops

    first = itemgetter(0)

    def enter(R: list) -> int:
        bound = tuple(map(first, sites))
        ops = last[1]
        if ops is None or bound != last[0]:  # (bindings: equal only as the same objects)
            ops = []
            for t in template:
                if type(t[0]) is str:
                    ops.append(t)
                    continue
                op = _bound_call(t)
                if type(op) is int:
                    return op
                ops.append(op)
            last[:] = bound, ops
        # (the ops: the template's, fixed, and the bindings')
        got = loop.run(R, ops, vm._nthreads, bound)
        if got is None:  # (a binding of an earlier run's shapes: the next step binds anew)
            return TRY_LATER
        return DECLINED if got < 0 else exits[got]

    enter.loop = loop
    return head, enter


def _bound_call(ins: tuple):
    """The loop op of dynamic kernel call ``ins`` through its site's binding; ``TRY_LATER``
    when it has none yet, ``DECLINED`` when the binding has no native entry to call."""
    _, _, ins_regs, out_regs, _, _, kconsts, site, _ = ins
    b = site[0]
    if b is None:
        return TRY_LATER
    if not b.address or len(b.outs) != len(out_regs) or \
            len(b.shapes) != len(ins_regs) + len(kconsts) or \
            any(type(c) is not np.ndarray for c in b.consts):
        return DECLINED
    packs = {pos: (src, packed) for pos, src, packed in b.packs}
    if any(type(p) is not np.ndarray for _, p in packs.values()):
        return DECLINED
    args = []
    for pos, (shape, dtype) in enumerate(zip(b.shapes, b.dtypes, strict=True)):
        if pos < len(ins_regs):
            r = ins_regs[pos]
            args.append(("pack", r, *packs[pos]) if pos in packs else
                        ("reg", r, (shape, dtype)))
            continue
        c = kconsts[pos - len(ins_regs)]
        if pos in packs:
            if c is not packs[pos][0]:
                return DECLINED
            c = packs[pos][1]
        elif type(c) is not np.ndarray or c.shape != shape or c.dtype != dtype or \
                not c.flags.c_contiguous:
            return DECLINED
        args.append(("val", c))
    args += [("val", c) for c in b.consts]
    kvars = 0 if b.kvars is None else ctypes.addressof(b.kvars)
    news = [(r, tuple(s), d) for r, (s, d) in zip(out_regs, b.outs, strict=True)]
    return ("call", int(b.address), kvars, args, news)



def _successors(code: list, pc: int) -> list[int]:
    """The pcs prepared ``code`` may go to after ``pc``."""
    ins = code[pc]
    if ins[0] == B.GOTO:
        return [pc + ins[1]]
    if ins[0] == B.IF:
        return [pc + ins[3], pc + ins[4]]
    if ins[0] in (B.RET, B.FATAL) or pc + 1 >= len(code):
        return []
    return [pc + 1]


def _reads(ins: tuple, kill: int) -> list[int]:
    """The registers prepared instruction ``ins`` may read (over-approximated: a kernel's
    outputs too; ``kill``: the register-drop opcode, which reads none)."""
    op = ins[0]
    if op == kill or op in (B.LOAD_CONST, B.LOAD_CONSTI, B.ALLOC_STORAGE, B.GOTO, B.FATAL):
        return []
    if op == B.INVOKE_PACKED:
        return [*ins[2], *ins[3]]
    if op in (B.MOVE, B.GET_TAG, B.SHAPE_OF, B.RET, B.ALLOC_TENSOR, B.GET_FIELD):
        return [ins[1]]
    if op in (B.INVOKE, B.ALLOC_ADT, B.ALLOC_CLOSURE):
        return list(ins[2])
    if op == B.INVOKE_CLOSURE:
        return [ins[1], *ins[2]]
    if op in (B.ALLOC_TENSOR_REG, B.RESHAPE_TENSOR):
        return [ins[1], ins[2], ins[3]]
    if op in (B.IF, B.UPDATE_ROW):
        return [ins[1], ins[2], ins[3]] if op == B.UPDATE_ROW else [ins[1], ins[2]]
    return [x for x in ins[1:] if type(x) is int]  # (anything else: every int operand)
