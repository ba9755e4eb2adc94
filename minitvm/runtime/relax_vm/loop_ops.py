"""A Relax VM loop as ``runtime.native_loop`` loop ops: the loop of a generated function
(``straight_line``) run natively from a loop head on, once ``native_loop.PYTHON_STEPS`` steps
ran in Python (the Relay VM's ``vm.loop_ops`` does the same for its instructions).

A loop qualifies when its head is the target of one jump back, no jump from outside lands
inside it, each branch inside leaves it, and its instructions are native kernel calls (their
vars and checks worked out from the shapes by the kernel's own ``pack``), tensors of one-tensor
storages (``site_tensor``'s), loop-invariant shapes, moves, register drops and
``vm.builtin.update_row``. The native loop checks the ops against the registers at the head
(or refuses: the generated Python goes on).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import threadpool
from ..native_loop import DECLINED, TRY_LATER, NativeLoop, loop_region, read_after
from .builtins import make_tuple, tuple_getitem, update_row
from .executable import ARG_REG, CALL, GOTO, IF, KILL, MOVE, RET
from .kernel import NativeKernel
from .row_outputs import reads

__all__ = ["native_loop_entry"]



def _kernel_vars(kernel: NativeKernel) -> Callable:
    """``views -> (vars, buffer positions) | None``: the kernel's checks and vars on the
    arguments' values (``NativeKernel.pack``; None where it refuses them)."""
    positions = list(kernel._bufpos)
    # (a scalar parameter read from a tensor may change every step: its value is not a
    # shape's, so such a call does not qualify)
    scalars = [v[1] for v in kernel._vars if v[0] == "scalar"]

    def fn(views):
        if any(k < len(views) and isinstance(views[k], np.ndarray) for k in scalars):
            return None
        try:
            arrays, vals = kernel.pack(views)
        except (ValueError, TypeError, IndexError, AttributeError):
            return None
        if len(arrays) != len(positions) or any(a is not views[k]
                                                for a, k in zip(arrays, positions, strict=True)):
            return None
        return vals, positions

    return fn


def native_loop_entry(code: list, targets: dict, tensors: dict, hoisted: dict,
                      move_value: Callable) -> tuple[int, list[int], int, Callable] | None:
    """``(head pc, registers, size, enter)`` of the loop in linked ``code`` (``targets``: its jumps;
    ``tensors``: straight_line's fused one-tensor storages; ``hoisted``: pc of a loop-invariant
    ``make_shape`` -> its index among the values ``enter`` is given). ``enter(R, shapes)`` runs
    the loop natively from its head on registers ``R`` (a list of ``size`` indexed by register
    number: ``registers`` are the ones the loop uses, the rest None) and returns the pc to go on at, or ``TRY_LATER``
    (``R`` as it was) or ``DECLINED`` (``R`` as at the head of a step whose row write the
    generated code must redo: its error). None when no loop qualifies."""
    # (an IF goes to its target or falls through to the next pc)
    region = loop_region(code, {pc: [pc + 1, t] if code[pc][0] == IF else [t]
                                for pc, t in targets.items()}, GOTO, IF)
    if region is None:
        return None
    head, back = region
    fused = {st_pc for st_pc in range(head, back + 1) if any(
        st is code[st_pc] for st, _ in tensors.values())}
    template: list = []
    exits: list[int] = []
    used: set[int] = set()
    # a tuple made in the loop and only taken apart there: its fields' values kept in hidden
    # registers past the function's (the tuple itself is never made)
    hidden = 1 + max([r for ins in code for r in reads(ins)] +
                     [ins[1] for ins in code if ins[0] in (CALL, MOVE, KILL)], default=0)
    fields: dict[int, list[int]] = {}
    pc = head
    while pc <= back:
        ins = code[pc]
        op = ins[0]
        if pc in fused or (op == KILL and pc - 1 in tensors):
            pc += 1  # (the storage of a fused tensor, and its drop: never made)
            continue
        if op == CALL:
            _, dst, _kind, target, _name, tmpl, slots, regs_only = ins
            used.add(dst)
            if regs_only is not None:
                operands = [("reg", r, None) for r in regs_only]
            else:
                operands = [("val", v) for v in tmpl]
                for k, r in slots:
                    operands[k] = ("reg", r, None)
            used.update(o[1] for o in operands if o[0] == "reg")
            if pc in hoisted:
                template.append(("shape", dst, hoisted[pc]))
            elif target is make_tuple:
                if any(o[0] != "reg" for o in operands):
                    return None
                fields[dst] = list(range(hidden, hidden + len(operands)))
                hidden += len(operands)
                template += [("move", h, o[1]) for h, o in zip(fields[dst], operands,
                                                                strict=True)]
                template.append(("kill", (dst,)))
            elif target is tuple_getitem:
                if len(operands) != 2 or operands[0][0] != "reg" or operands[1][0] != "val" or \
                        operands[0][1] not in fields or type(operands[1][1]) is not int or \
                        not 0 <= operands[1][1] < len(fields[operands[0][1]]):
                    return None
                template.append(("move", dst, fields[operands[0][1]][operands[1][1]]))
            elif pc in tensors:
                storage, more = tensors[pc]
                offset, shape, dtype = more
                s_args = [("val", v) for v in storage[5]]
                for k, r in storage[6]:
                    s_args[k] = ("reg", r, None)
                if storage[7] is not None:
                    s_args = [("reg", r, None) for r in storage[7]]
                if len(s_args) != 5:
                    return None
                size = s_args[1]
                size = ("reg", size[1]) if size[0] == "reg" else size[1]
                if isinstance(shape, int) and type(shape) is not int:  # (a register: _Reg)
                    used.add(int(shape))
                    shape = ("reg", int(shape))
                if type(size) is tuple:
                    used.add(size[1])
                template.append(("fresh", dst, shape, dtype, size, offset))
            elif getattr(target, "builtin", None) is update_row:
                if regs_only is None or len(regs_only) != 3:
                    return None
                template.append(("row", dst, *regs_only))
            elif isinstance(target, NativeKernel) and target.compiled.address:
                template.append(("call", int(target.compiled.address), _kernel_vars(target),
                                 operands, []))
                template.append(("set", dst, None))
            else:
                return None
        elif op == MOVE:
            kind, v = ins[2]
            used.add(ins[1])
            if kind == ARG_REG:
                used.add(v)
                template.append(("move", ins[1], v))
            else:
                template.append(("set", ins[1], move_value(kind, v)))
        elif op == KILL:
            used.add(ins[1])
            template.append(("kill", (ins[1],)))
        elif op == IF:
            used.add(ins[1])
            template.append(("exit", ins[1], ("imm", 0), True, len(exits)))
            exits.append(targets[pc])
        elif op == GOTO:
            if pc == back:
                if fields:  # (the hidden registers: dropped at the end of each step)
                    template.append(("kill", tuple(h for hs in fields.values() for h in hs)))
                template.append(("back",))
        else:
            return None
        pc += 1
    if not any(t[0] == "exit" for t in template):
        return None
    # a tuple read anywhere but by the loop's tuple_getitem: it must exist (not qualified)
    for pc, ins in enumerate(code):
        if ins[0] == CALL and ins[3] is tuple_getitem and head <= pc <= back:
            continue
        if fields.keys() & set(reads(ins)):
            return None
    def successors(pc: int) -> list[int]:
        op = code[pc][0]
        if op == RET:
            return []
        nxt = [pc + 1] if op != GOTO and pc + 1 < len(code) else []
        return nxt + [targets[pc]] if op in (GOTO, IF) else nxt

    # (a tuple's hidden field registers are the loop's own: read after it as the tuple)
    loop = NativeLoop(read_after(exits, successors, lambda pc: reads(code[pc])))

    def enter(R: list, shapes: tuple) -> int:
        def ops() -> list:  # (made only when no layout of these shapes is kept)
            return [("set", t[1], shapes[t[2]]) if t[0] == "shape" else t for t in template]
        got = loop.run(R, ops, threadpool.get_num_threads(), shapes)  # (the rest: fixed)
        if got is None:
            return TRY_LATER
        return DECLINED if got < 0 else exits[got]

    enter.loop = loop
    return head, sorted(used), hidden, enter

