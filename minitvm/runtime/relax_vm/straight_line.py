"""Relax VM functions without calls of other Relax functions as generated Python: each
instruction one statement, each register a local variable, branches and loops as jumps between
basic blocks.

A function the native entry cannot replay (its later sizes depend on data: ``nonzero``,
``unique``, a mask; it calls packed functions; it branches or loops) runs in the interpreter,
which per instruction decodes a tuple, dispatches on the opcode and builds an argument list —
about as much time as the kernels of a small model take. A function that calls no other Relax
function is compiled once into a Python function that makes the same calls, in the same order,
on the same values (the builtins keep their checks and messages), without the decoding. With
branches (an ``if``, a self tail call's jump back: the loops of ``relax.vm.tail_call_loops``) the
code is a ``while`` over its basic blocks, the block to run next in ``pc``. A function whose
Relax calls all go to such generated functions calling none (a model's main calling its loop)
is generated too, each call one Python call; functions with other Relax calls, and very long
ones (compiling them would cost more than it saves), stay interpreted.

In a loop, the shapes made from the shape heap (``make_shape``) are the same at every step when
nothing in the loop writes the heap: each distinct one is made once, on entering the loop
(``loop_invariant_shapes``), instead of once a step. A step's row of a stacked result
(``vm.builtin.update_row``) is made as a view of that row where ``row_outputs`` proves no value
can tell (the site checks the rest per call), and the write is skipped when its row is the view.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import native_loop
from .builtins import (
    alloc_storage,
    make_shape,
    make_tuple,
    site_tensor,
    storage_tensor,
    tuple_getitem,
)
from .executable import (
    ARG_CONST,
    ARG_CTX,
    ARG_FUNC,
    ARG_IMM,
    ARG_REG,
    CALL,
    GOTO,
    IF,
    KILL,
    MOVE,
    RET,
    VMFunction,
)
from .kernel import NativeKernel
from .loop_ops import native_loop_entry
from .row_outputs import call_regs as _call_regs
from .row_outputs import reads as _reads
from .row_outputs import row_outputs

__all__ = ["MAX_INSTRUCTIONS", "loop_invariant_shapes", "straight_line_function"]

MAX_INSTRUCTIONS = 20000  # longer functions stay interpreted (the Python compile time)


def _literal(v) -> bool:
    """Whether ``v`` is written into the generated source as itself."""
    return v is None or type(v) in (bool, int, str)


def _is_heap_shape(ins) -> bool:
    """A linked CALL of a ``make_shape`` site function reading only the heap register."""
    return ins[0] == CALL and getattr(ins[3], "builtin", None) is make_shape and \
        ins[7] is not None and len(ins[7]) == 1


def _targets(code: list) -> dict[int, int] | None:
    """{pc of a branch: its target pc} (an IF's target is where it jumps when false); None when
    one leaves the function."""
    out = {}
    for pc, ins in enumerate(code):
        if ins[0] == GOTO:
            out[pc] = pc + ins[1]
        elif ins[0] == IF:
            out[pc] = pc + ins[2]
        else:
            continue
        if not 0 <= out[pc] < len(code):
            return None
    return out


def loop_invariant_shapes(code: list, targets: dict[int, int]) -> tuple[int, set[int]]:
    """``(head, pcs)``: the loop's first pc (the lowest target of a jump back) and the pcs at or
    after it of ``make_shape`` calls on a shape heap that only code before ``head`` writes.

    Code before ``head`` runs at most once a call (nothing jumps back into it), so a heap made
    there (in the first block: before any branch) and written only there holds the same values
    wherever the code after ``head`` reads it; a make_shape of it there is the same value each
    time. ``(-1, set())`` when the function has no loop or nothing qualifies."""
    backs = [t for pc, t in targets.items() if t <= pc]
    if not backs:
        return -1, set()
    head = min(backs)
    first_branch = min((pc for pc, ins in enumerate(code) if ins[0] in (GOTO, IF, RET)),
                       default=len(code))
    heaps = {ins[7][0] for pc, ins in enumerate(code) if pc >= head and _is_heap_shape(ins)}
    for pc, ins in enumerate(code):
        op = ins[0]
        if op == CALL:
            if ins[1] in heaps and (pc >= head or pc >= first_branch):
                heaps.discard(ins[1])  # written in the loop, or after a branch
            if pc >= head and not _is_heap_shape(ins):
                heaps.difference_update(_call_regs(ins))  # (a call may write its arguments)
        elif op in (MOVE, KILL):
            if ins[1] in heaps:
                heaps.discard(ins[1])
            if op == MOVE and ins[2][0] == ARG_REG:
                heaps.discard(ins[2][1])  # (another name for the heap)
    written = {ins[1] for pc, ins in enumerate(code) if ins[0] == CALL and pc < first_branch}
    heaps &= written
    pcs = {pc for pc, ins in enumerate(code)
           if pc >= head and _is_heap_shape(ins) and ins[7][0] in heaps}
    return (head, pcs) if pcs else (-1, set())


def straight_line_function(func: VMFunction, code: list, move_value: Callable,
                           native_loops: bool = True, callee: Callable | None = None,
                           dead: dict | None = None) -> Callable | None:
    """``func``'s linked ``code`` as a Python function of its argument list, or None when it
    calls a Relax function (other than through ``callee``), has no return, jumps out of its
    code or is too long. ``move_value(kind, value)`` resolves a MOVE's constant, function or VM
    operand; ``native_loops``: its loop runs natively (``loop_ops``) where it qualifies.
    ``callee(function)``: the generated function of a Relax function this one calls, one that
    calls none itself (None: the call stays with the interpreter); ``dead``: ``{pc of such a
    call: the registers dropped before it}``, as the interpreter drops them."""
    if len(code) > MAX_INSTRUCTIONS:
        return None
    targets = _targets(code)
    if targets is None:
        return None
    # the Relax functions called (each through its own generated function: no frames)
    called: dict = {}
    for pc, ins in enumerate(code):
        if ins[0] == CALL and isinstance(ins[3], VMFunction):
            fn = callee(ins[3]) if callee is not None and ins[3] is not func else None
            if fn is None or len(ins[7] if ins[7] is not None else ins[5]) != \
                    len(ins[3].params):
                return None  # (the interpreter's frames, or its error)
            called[pc] = fn
    env: dict = {"ND": np.ndarray, "truth": _truth_of(func.name)}
    names: dict = {}  # id(value) -> its name in env

    def name_of(v) -> str:
        if _literal(v):
            return repr(v)
        key = names.get(id(v))
        if key is None:
            key = names[id(v)] = f"c{len(names)}"
            env[key] = v
        return key

    # (a Relax call may hold or write any value passed: no shapes hoisted, no row views)
    head, hoist = loop_invariant_shapes(code, targets) if not called else (-1, set())
    hoisted: dict = {}  # (site function, heap register) -> the local holding its shape
    for pc in sorted(hoist):
        hoisted.setdefault((id(code[pc][3]), code[pc][7][0]), (f"h{len(hoisted)}", code[pc]))
    enter_loop = [f"{h} = {name_of(ins[3])}(r{ins[7][0]})" for h, ins in hoisted.values()]
    leaders = {0} | set(targets.values())  # (code after a jump or return no jump reaches: dead)
    branchy = bool(targets)
    ind = "            " if branchy else "    "
    lines: list[str] = []

    def jump(pc: int, to: int) -> list[str]:
        """Lines going from ``pc`` to ``to`` (entering the loop makes its shapes)."""
        out = [ind + s for s in enter_loop] if pc < head <= to else []
        return out + [f"{ind}pc = {to}"]

    returns = False
    # {pc of a tensor-from-storage call: (its storage's alloc_storage, operands)}; the
    # alloc_storage and the kill after are folded into it
    tensors, fused = {}, set()
    for pc, ins in enumerate(code):
        if ins[0] == CALL and ins[3] is alloc_storage:
            got = _storage_tensor(func, code, pc, leaders, hoist, move_value)
            if got is not None:
                tensors[got[0]] = (ins, got[1])
                fused.update((pc, got[0] + 1))
    # the row tensors a kernel may write into their stacked result's row (row_outputs)
    rows, detach = row_outputs(code, {pc for pc, (st, _) in tensors.items() if len(st[5]) == 5},
                               leaders) if not called else ({}, {})
    row_writes = {u for _, _, _, u in rows.values()}
    # the loop run natively from its head once native_loop.PYTHON_STEPS steps ran here
    # (loop_ops, runtime.native_loop)
    native = native_loop_entry(code, targets, tensors, {
        pc: int(hoisted[(id(code[pc][3]), code[pc][7][0])][0][1:]) for pc in hoist},
        move_value) if native_loops and branchy else None
    if native is not None:
        env["native_loop"] = native[3]
        regs = native[1]
        gather = ", ".join(f"r{r}" if r in regs else "None" for r in range(native[2]))
        shapes = "".join(f"{h}, " for h, _ in hoisted.values())
    for pc, ins in enumerate(code):
        if branchy and pc in leaders:
            if pc and code[pc - 1][0] not in (GOTO, RET):  # the block before falls through
                lines += jump(pc - 1, pc)
            if native is not None and pc == native[0]:  # (then on at the exit's pc)
                lines += native_loop.head_try_lines(
                    pc, ind, f"native_loop(R, ({shapes}))", load=[f"R = [{gather}]"],
                    store=[f"{', '.join(f'r{r}' for r in regs)}, = "
                           f"{', '.join(f'R[{r}]' for r in regs)},", "R = None"])
            lines.append(f"        if pc == {pc}:")
        if pc in fused:
            continue
        op = ins[0]
        if op == CALL:
            _, dst, _kind, target, _name, tmpl, slots, regs_only = ins
            if pc in hoist:
                lines.append(f"{ind}r{dst} = {hoisted[(id(target), regs_only[0])][0]}")
                continue
            if pc in tensors:  # (its storage's alloc_storage, whose arguments come first)
                storage, more = tensors[pc]
                _, _, _, target, _, tmpl, slots, regs_only = storage
                more = [f"r{int(v)}" if isinstance(v, _Reg) else name_of(v) for v in more]
            else:
                more = []
            if regs_only is not None:
                args = [f"r{r}" for r in regs_only]
            else:
                args = [name_of(v) for v in tmpl]
                for k, r in slots:
                    args[k] = f"r{r}"
            if pc in called:  # (its registers dead after it dropped, as the interpreter does)
                lines.append(f"{ind}a = [{', '.join(args)}]")
                lines += [f"{ind}r{r} = None" for r in (dead or {}).get(pc, ())]
                lines += [f"{ind}r{dst} = {name_of(called[pc])}(a)", f"{ind}a = None"]
                continue
            if more:
                offset, _, dtype = tensors[pc][1]
                if len(args) == 5:  # (vm, size, device, dtype, site)
                    # the site's own allocator, which reuses its free tensors: (size, shape)
                    fn = name_of(site_tensor(offset, dtype))
                    if pc in rows:  # (its stacked result's row when the site can)
                        site, data, index, _ = rows[pc]
                        lines.append(f"{ind}r{dst} = {name_of(site.row)}({fn}, {args[1]}, "
                                     f"{more[1]}, r{data}, r{index})")
                    else:
                        lines.append(f"{ind}r{dst} = {fn}({args[1]}, {more[1]})")
                else:
                    lines.append(f"{ind}r{dst} = {name_of(storage_tensor)}"
                                 f"({', '.join(args + more)})")
                continue
            if target is make_tuple:  # (the builtins' own expressions: no call)
                lines.append(f"{ind}r{dst} = ({''.join(a + ', ' for a in args)})")
                continue
            if target is tuple_getitem and len(args) == 2 and args[1].isdigit():
                lines.append(f"{ind}r{dst} = {args[0]}[{args[1]}]")
                continue
            if pc in row_writes:  # (the row is the data's row already: no call)
                lines.append(f"{ind}r{dst} = {args[0]} if {args[1]} is "
                             f"{name_of(target.handed)}[0] else {name_of(target)}"
                             f"({', '.join(args)})")
                continue
            fn = target.direct if isinstance(target, NativeKernel) else target  # one frame
            lines.append(f"{ind}r{dst} = {name_of(fn)}({', '.join(args)})")
        elif op == MOVE:
            kind, v = ins[2]
            src = f"r{v}" if kind == ARG_REG else name_of(move_value(kind, v)) \
                if kind in (ARG_CONST, ARG_IMM, ARG_FUNC, ARG_CTX) else None
            if src is None:
                return None
            lines.append(f"{ind}r{ins[1]} = {src}")
        elif op == KILL:
            lines.append(f"{ind}r{ins[1]} = None")
        elif op == RET:
            value = f"r{ins[1]}"
            for site in detach.get(pc, ()):  # (no row view leaves the function)
                value = f"{name_of(site.detach)}({value})"
            lines.append(f"{ind}return {value}")
            returns = True
            if not branchy:
                break
        elif op == GOTO:
            lines += jump(pc, targets[pc])
            lines.append(f"{ind}continue")
        elif op == IF:
            lines.append(f"{ind}if not truth(r{ins[1]}):")
            lines += ["    " + s for s in jump(pc, targets[pc])]
            lines.append(f"{ind}    continue")
        else:
            return None  # an unknown instruction: the interpreter reports it
    if not returns or (branchy and code[-1][0] not in (GOTO, RET)):
        return None  # no return (or code running off its end): the interpreter reports it
    params = [f"r{k}" for k in range(len(func.params))]
    head_src = [f"def run(args):\n    {', '.join(params)}, = args"] if params else \
        ["def run(args):"]
    # a register may be read on a path that never wrote it (the interpreter's None)
    read = {r for ins in code for r in _reads(ins)} - set(range(len(params)))
    if native is not None:  # (the native loop reads and writes every register of the loop)
        read |= set(native[1]) - set(range(len(params)))
    head_src += [f"    r{r} = None" for r in sorted(read)]
    if branchy:
        head_src += ["    pc = 0", "    while True:"]
    if native is not None:
        head_src[-1:-1] = [f"    native_on = {native_loop.TRIES}",
                           f"    native_wait = {native_loop.PYTHON_STEPS}"]
    src = "\n".join(head_src + lines) + "\n"
    exec(compile(src, f"<relax vm {func.name}>", "exec"), env)  # noqa: S102
    return env["run"]


def _storage_tensor(func: VMFunction, code: list, pc: int, leaders: set, hoist: set,
                    move_value):
    """``(pc of the tensor, [offset, shape, dtype])`` when ``code[pc]``'s storage has one tensor
    made after it, with only loop-invariant shapes (``hoist``) made between, and is killed right
    after that (``alloc_storage``, ``alloc_tensor_from_storage``, ``kill``: the code generator's
    pattern) — one ``storage_tensor`` call makes it; else None."""
    storage, at = code[pc][1], pc + 1
    while at in hoist and at not in leaders:
        at += 1
    if at + 1 >= len(code) or at in leaders or at + 1 in leaders:
        return None
    make, kill = code[at], code[at + 1]
    if make[0] != CALL or make[4] != "vm.builtin.alloc_tensor_from_storage" or \
            kill[0] != KILL or kill[1] != storage:
        return None
    args = func.code[at][3]  # (the unlinked call: its offset, shape and dtype operands)
    if len(args) != 4 or tuple(args[0]) != (ARG_REG, storage):
        return None
    operands = []
    for kind, v in args[1:]:
        if kind == ARG_REG and v != storage:
            operands.append(_Reg(v))
        elif kind in (ARG_CONST, ARG_IMM):
            operands.append(move_value(kind, v))
        else:
            return None
    if type(operands[0]) is not int or type(operands[2]) is not str:
        return None  # (a register offset or dtype: the generic calls)
    return at, operands


class _Reg(int):
    """A register operand among the values ``_storage_tensor`` gives (named ``r<k>``)."""

    __slots__ = ()


def _truth_of(name: str) -> Callable:
    """An ``if``'s condition as the interpreter takes it: a one-element tensor's value, or the
    value itself."""

    def truth(c) -> bool:
        if isinstance(c, np.ndarray):
            if c.size != 1:
                raise ValueError(f"{name}: the condition of an if must be a scalar (a 0-d "
                                 f"bool tensor), got a tensor of shape {c.shape}")
            c = c.item()
        return bool(c)

    return truth
