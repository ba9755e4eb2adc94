"""Relay VM loop functions as generated Python: each instruction one statement, basic blocks as
jumps in a ``while`` (the counterpart of ``relax_vm.straight_line``).

A loop over a run-time length (an RNN's step: a tail call became a jump back) runs about twenty
instructions a step in the dispatch loop, which per instruction fetches a tuple, walks a chain
of opcode tests and unpacks its operands: with one thread that is a third of a GRU step's time.
A function that loops and calls no VM function (no frames to push) is compiled once into a
Python function that does the same things, in the same order, on the same values, with the
operands as literals: a kernel's argument tuple written out, a dynamic kernel's binding read
from its call site, ``UpdateRow`` through the VM's own ``_update_row`` (its checks unchanged).
Where ``row_outputs`` proves it, the dynamic kernel making a step's row writes it into the
stacked result's row itself (a view from the ``UpdateRow``'s ``runtime.row_site``, handed out
when the VM's checks allow the write in place then, for rows of ``ROW_VIEW_MIN_BYTES`` or more),
and the ``UpdateRow`` of that view writes nothing.

A storage made fresh every step for one tensor (``liveness.fresh_tensor_storages``: a loop's
scalar condition, its next index) reuses the array it made two steps before when nothing else
refers to it any more (its reference count), instead of allocating one a step.

A loop whose instructions are only these kernel calls, tensors, moves and row writes
(``loop_ops``) runs natively once it has run ``native_loop.PYTHON_STEPS`` steps here and its
dynamic kernels are bound at these shapes (by this run's first step, or an earlier run's): one
call to ``runtime.native_loop`` to the loop's exit, the values then back in the registers
(``vm.native_loops = False`` keeps every step here).

A function whose calls (``Invoke``, ``InvokeClosure`` of a closure it made itself) all go to
such generated functions that call none (a model's main invoking its loop) is generated too,
each call one Python call with the dispatch loop's checks, dropped registers and frame.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

import numpy as np

from .. import native_loop
from ..container import ADT
from . import bytecode as B
from .loop_ops import native_loop_entry
from .row_outputs import row_producers

__all__ = ["MAX_INSTRUCTIONS", "ROW_VIEW_MIN_BYTES", "straight_line_function"]

MAX_INSTRUCTIONS = 5000  # longer functions stay interpreted (the Python compile time)

_SUPPORTED = frozenset({B.INVOKE_PACKED, B.ALLOC_STORAGE, B.ALLOC_TENSOR, B.MOVE, B.GOTO, B.IF,
                        B.LOAD_CONST, B.LOAD_CONSTI, B.UPDATE_ROW, B.ALLOC_ADT, B.GET_FIELD,
                        B.RET})


#: the smallest row (bytes) a kernel writes into its stacked result itself; smaller ones are
#: made in the kernel's own output and copied: handing the view out (the VM's checks, a view)
#: costs about what the copy of a 1 KB row does (a GRU step 0.95x and 1.06x in two runs), less
#: at 8 KB (0.98x) and 128 KB (0.92x); measured with one thread on a loaded 2-core host
ROW_VIEW_MIN_BYTES = 8192


def _pays(out: tuple) -> bool:
    """Whether a kernel output of ``(shape, dtype)`` is a row worth writing in place."""
    return math.prod(out[0]) * np.dtype(out[1]).itemsize >= ROW_VIEW_MIN_BYTES


def _targets(code: list) -> dict[int, tuple[int, ...]] | None:
    """``{pc of a jump: the pcs it may go to}``; None when a jump leaves the code."""
    n = len(code)
    out = {}
    for pc, ins in enumerate(code):
        if ins[0] == B.GOTO:
            out[pc] = (pc + ins[1],)
        elif ins[0] == B.IF:
            out[pc] = (pc + ins[3], pc + ins[4])
        else:
            continue
        if any(not 0 <= t < n for t in out[pc]):
            return None
    return out


def straight_line_function(vm, func_index: int, kill: int, callees: list | None = None,
                           closure: type | None = None) -> Callable | None:
    """``run(values, frames, args)``: function ``func_index`` of ``vm`` (its prepared code)
    run on its argument list ``values`` (``frames``: its callers' frames, ``args``: the
    outermost call's arguments, as ``_update_row`` reads them), or None when it does not loop,
    calls a VM function, has an instruction not handled here or is too long. ``kill``: the
    prepared code's register-drop pseudo-opcode. ``callees``: per function, its generated
    function when it calls none (``closure``: the VM's closure type); a function whose calls
    (``Invoke``, ``InvokeClosure`` of a closure it made) all go to those is generated too, loop
    or not (a model's main calling its loop): each call one Python frame, no dispatch."""
    code, nreg, nparams, _ = vm._code[func_index]
    if len(code) > MAX_INSTRUCTIONS or not code:
        return None
    leaf_calls = callees is not None and closure is not None
    called = _leaf_calls(code, callees, nparams) if leaf_calls else {}
    if called is None or any(ins[0] not in _SUPPORTED and ins[0] != kill and pc not in called
                             and not (leaf_calls and ins[0] == B.ALLOC_CLOSURE)
                             for pc, ins in enumerate(code)):
        return None
    targets = _targets(code)
    if targets is None or not (called or any(t <= pc for pc, ts in targets.items()
                                             for t in ts)):
        return None  # (no loop: the dispatch loop, or the native entry, runs it)
    if code[-1][0] not in (B.GOTO, B.RET):
        return None  # (code running off its end: the dispatch loop reports it)
    env: dict = {"ND": np.ndarray, "empty": np.empty, "refs": sys.getrefcount, "ADT": ADT,
                 "C": vm.exe.constants, "vm": vm, "Closure": closure,
                 "packed": vm._invoke_packed, "dynamic": vm._invoke_dynamic}
    names: dict = {}

    def name_of(v) -> str:
        key = names.get(id(v))
        if key is None:
            key = names[id(v)] = f"c{len(names)}"
            env[key] = v
        return key

    def regs(rs) -> str:
        return "".join(f"R[{r}], " for r in rs)

    # the loop run natively from its second step (loop_ops, runtime.native_loop)
    native = native_loop_entry(vm, code, targets, kill)
    if native is not None:
        env["native_loop"] = native[1]
    leaders = {0} | {t for ts in targets.values() for t in ts}
    # the dynamic kernels that may write their row of a stacked result (row_outputs)
    instructions = vm.exe.functions[func_index].instructions
    producers = {} if len(instructions) != len(code) else row_producers(
        instructions, leaders, frozenset(pc for pc, ins in enumerate(code)
                                         if ins[0] == B.UPDATE_ROW and ins[5]))
    producers = {p: u for p, u in producers.items() if code[p][7] is not None}
    rows = set(producers.values())
    ind = "            "
    lines: list[str] = []
    skip = set()
    dead = False  # (after a jump or return, until a block no jump reaches: never run)
    for pc, ins in enumerate(code):
        if pc in leaders:
            if pc and not dead:
                lines.append(f"{ind}pc = {pc}")  # (the block before falls through)
            if native is not None and pc == native[0]:  # (then on at the exit's pc)
                lines += native_loop.head_try_lines(pc, ind, "native_loop(R)")
            lines.append(f"        if pc == {pc}:")
            dead = False
        if pc in skip or dead:
            continue
        dead = ins[0] in (B.GOTO, B.IF, B.RET)
        op = ins[0]
        if op == B.INVOKE_PACKED:
            _, idx, ins_regs, out_regs, dyn, fast, consts, site, _ = ins
            cs = f"*{name_of(consts)}, " if consts else ""
            if fast is not None:
                lines.append(f"{ind}{name_of(fast)}(({regs(ins_regs)}{cs}{regs(out_regs)}), "
                             "nthreads)")
            elif dyn:
                inputs = f"({regs(ins_regs)}{cs})"
                outs = "o" if len(out_regs) != 1 else f"R[{out_regs[0]}],"
                if site is not None and pc in producers:  # (its output: a row's view)
                    u = code[producers[pc]]
                    s, handed = name_of(site), name_of(u[6][4])
                    k = name_of([None, False])  # (the binding last seen, whether its row pays)
                    lines += [f"{ind}b = {s}[0]",
                              f"{ind}o = None",
                              f"{ind}if b is not {k}[0]:",
                              f"{ind}    {k}[0] = b",
                              f"{ind}    {k}[1] = b is not None and b.into is not None and "
                              f"{name_of(_pays)}(b.outs[0])",
                              f"{ind}if {k}[1]:",
                              f"{ind}    v = b.outs[0]",  # (shape, dtype) of its output
                              f"{ind}    v = vm._row_view(R[{u[1]}], R[{u[3]}], v[0], v[1], "
                              f"args, {name_of(u)}, R, frames)",
                              f"{ind}    if v is not None:",
                              f"{ind}        o = b.into({inputs}, [v])",
                              f"{ind}        v = None",
                              f"{ind}        if o is None:",  # (not written: no view out)
                              f"{ind}            {handed}[0] = None",
                              f"{ind}if o is None:",
                              f"{ind}    o = b.run({inputs}) if b is not None else None",
                              f"{ind}if o is None:",
                              f"{ind}    o = dynamic({name_of(ins)}, [{regs(ins_regs)}])"]
                elif site is not None:  # (its binding first: the call repeats its shapes)
                    s = name_of(site)
                    lines += [f"{ind}b = {s}[0]",
                              f"{ind}o = b.run({inputs}) if b is not None else None",
                              f"{ind}if o is None:",
                              f"{ind}    o = dynamic({name_of(ins)}, [{regs(ins_regs)}])"]
                else:
                    lines.append(f"{ind}o = dynamic({name_of(ins)}, [{regs(ins_regs)}])")
                if len(out_regs) == 1:
                    lines.append(f"{ind}{outs} = o")
                else:
                    lines.append(f"{ind}for r, v in zip({out_regs!r}, o):")
                    lines.append(f"{ind}    R[r] = v")
                lines.append(f"{ind}o = None")  # (a kept output's count: BoundCall reuses it)
            else:
                lines.append(f"{ind}packed({idx}, [{regs(ins_regs)}], [{regs(out_regs)}])")
        elif op == B.ALLOC_STORAGE:
            made = ins[5]
            if made is None:
                lines.append(f"{ind}R[{ins[4]}] = empty({ins[1]}, np.uint8)")
                continue
            skip.add(pc + 1)  # (its tensor, made here)
            pair = name_of([None, None])  # (the arrays made the last two steps)
            shape, dt = name_of(made[1]), name_of(made[2])
            lines += [f"{ind}t = {pair}[1]",
                      f"{ind}if t is None or refs(t) != 3:",  # (the pair's, t's, refs' own)
                      f"{ind}    t = empty({shape}, {dt})",
                      f"{ind}{pair}[1] = {pair}[0]",
                      f"{ind}{pair}[0] = t",
                      f"{ind}R[{made[0]}] = t",
                      f"{ind}t = None"]
        elif op == B.ALLOC_TENSOR:
            _, src, off, shape, dt, dst, n = ins
            lines.append(f"{ind}R[{dst}] = R[{src}][{off}:{off + n}].view({name_of(dt)})"
                         f".reshape({shape!r})")
        elif op == B.MOVE:
            lines.append(f"{ind}R[{ins[2]}] = R[{ins[1]}]")
        elif op == B.GOTO:
            lines += [f"{ind}pc = {pc + ins[1]}", f"{ind}continue"]
        elif op == B.IF:
            lines += [f"{ind}a = R[{ins[1]}]", f"{ind}b = R[{ins[2]}]",
                      f"{ind}if type(a) is ND:", f"{ind}    a = a.item()",
                      f"{ind}if type(b) is ND:", f"{ind}    b = b.item()",
                      f"{ind}pc = {pc + ins[3]} if a == b else {pc + ins[4]}",
                      f"{ind}continue"]
        elif op == B.LOAD_CONST:
            lines.append(f"{ind}R[{ins[2]}] = C[{ins[1]}]")
        elif op == B.LOAD_CONSTI:
            lines.append(f"{ind}R[{ins[2]}] = {int(ins[1])!r}")
        elif op == B.UPDATE_ROW:
            write = f"vm._update_row(R[{ins[1]}], R[{ins[2]}], R[{ins[3]}], args, " \
                f"{name_of(ins)}, R, frames)"
            if pc in rows:  # (the row may be the data's row already: then no write)
                lines.append(f"{ind}R[{ins[4]}] = R[{ins[1]}] if R[{ins[2]}] is "
                             f"{name_of(ins[6][4])}[0] else {write}")
            else:
                lines.append(f"{ind}R[{ins[4]}] = {write}")
        elif op == B.ALLOC_ADT:
            lines.append(f"{ind}R[{ins[3]}] = ADT({ins[1]!r}, [{regs(ins[2])}])")
        elif op == B.GET_FIELD:
            lines.append(f"{ind}R[{ins[3]}] = R[{ins[1]}].fields[{int(ins[2])}]")
        elif op == B.RET:
            lines.append(f"{ind}return R[{ins[1]}]")
        elif op == B.ALLOC_CLOSURE:
            lines.append(f"{ind}R[{ins[3]}] = Closure({ins[1]!r}, [{regs(ins[2])}])")
        elif pc in called:  # (the dispatch loop's Invoke / InvokeClosure of a leaf)
            target, fn = called[pc]
            _, cnreg, cparams, cname = vm._code[target]
            if op == B.INVOKE:
                lines.append(f"{ind}v = [{regs(ins[2])}]")
            else:
                lines += [f"{ind}v = R[{ins[1]}]",
                          f"{ind}if type(v) is not Closure:",
                          f"{ind}    raise RuntimeError('Relay VM: invoke_closure on a ' + "
                          "type(v).__name__ + ', not a closure')",
                          f"{ind}v = v.captured + [{regs(ins[2])}]"]
            wrong = name_of(f"Relay VM: {cname} takes {cparams} arguments, got ")
            lines += [f"{ind}if len(v) != {cparams}:",
                      f"{ind}    raise RuntimeError({wrong} + str(len(v)))"]
            lines += [f"{ind}R[{r}] = None" for r in ins[4]]  # (read on no path after it)
            lines += [f"{ind}frames.append((None, {pc + 1}, R, {ins[3]}))",
                      f"{ind}v = {name_of(fn)}(v, frames, args)",
                      f"{ind}frames.pop()",
                      f"{ind}R[{ins[3]}] = v",
                      f"{ind}v = None"]
        else:  # (the register drops)
            lines += [f"{ind}R[{r}] = None" for r in ins[1]]
    src = "\n".join(["def run(values, frames, args):", f"    R = [None] * {nreg}",
                     f"    R[:{nparams}] = values", "    nthreads = vm._nthreads", "    pc = 0",
                     f"    native_on = {native_loop.TRIES if native else 0} if vm.native_loops else 0",
                     f"    native_wait = {native_loop.PYTHON_STEPS}",
                     "    while True:", *lines])
    env["np"] = np
    exec(compile(src + "\n", f"<relay vm loop {func_index}>", "exec"), env)  # noqa: S102
    run = env["run"]
    run.source = src
    return run


def _leaf_calls(code: list, callees: list, nparams: int) -> dict | None:
    """``{pc: (function index, its generated function)}`` of prepared ``code``'s calls when
    each goes to a function with a generated function in ``callees`` (an ``InvokeClosure`` on
    a register, not a parameter's, only an ``AllocClosure`` of that function writes); None
    when one does not."""
    writers: dict[int, list] = {}
    for ins in code:
        op = ins[0]
        if op in (B.ALLOC_CLOSURE, B.INVOKE, B.INVOKE_CLOSURE, B.GET_FIELD, B.ALLOC_ADT,
                  B.INVOKE_PACKED, B.RESHAPE_TENSOR):
            dsts = ins[3] if op == B.INVOKE_PACKED else (ins[3],)
        elif op in (B.MOVE, B.GET_TAG, B.SHAPE_OF, B.LOAD_CONST, B.LOAD_CONSTI):
            dsts = (ins[2],)
        elif op in (B.ALLOC_STORAGE, B.UPDATE_ROW):
            dsts = (ins[4],)
        elif op in (B.ALLOC_TENSOR, B.ALLOC_TENSOR_REG):
            dsts = (ins[5],)
        else:
            dsts = ()
        for d in dsts:
            writers.setdefault(d, []).append(ins)
    called = {}
    for pc, ins in enumerate(code):
        if ins[0] == B.INVOKE:
            target = ins[1]
        elif ins[0] == B.INVOKE_CLOSURE:
            made = writers.get(ins[1], [])
            if ins[1] < nparams or len(made) != 1 or made[0][0] != B.ALLOC_CLOSURE:
                return None
            target = made[0][1]
        else:
            continue
        if not 0 <= target < len(callees) or callees[target] is None:
            return None
        called[pc] = (target, callees[target])
    return called
