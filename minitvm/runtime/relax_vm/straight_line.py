"""Straight-line Relax VM functions as generated Python: each instruction one statement, each
register a local variable.

A function the native entry cannot replay (its later sizes depend on data: ``nonzero``,
``unique``, a mask; or it calls packed functions) runs in the interpreter, which per
instruction decodes a tuple, dispatches on the opcode and builds an argument list — about as
much time as the kernels of a small model take. A function without branches or calls of other
Relax functions is the same sequence every call, so it is compiled once into a Python function
that makes the same calls, in the same order, on the same values (the builtins keep their
checks and messages), without the decoding. Functions with branches or Relax calls, and very
long ones (compiling them would cost more than it saves), stay interpreted.
"""

from __future__ import annotations

from collections.abc import Callable

from .executable import (
    ARG_CONST,
    ARG_CTX,
    ARG_FUNC,
    ARG_IMM,
    ARG_REG,
    CALL,
    KILL,
    MOVE,
    RET,
    VMFunction,
)
from .kernel import NativeKernel

__all__ = ["MAX_INSTRUCTIONS", "straight_line_function"]

MAX_INSTRUCTIONS = 20000  # longer functions stay interpreted (the Python compile time)


def _literal(v) -> bool:
    """Whether ``v`` is written into the generated source as itself."""
    return v is None or type(v) in (bool, int, str)


def straight_line_function(func: VMFunction, code: list, move_value: Callable) -> \
        Callable | None:
    """``func``'s linked ``code`` as a Python function of its argument list, or None when it
    branches, calls a Relax function or is too long. ``move_value(kind, value)`` resolves a
    MOVE's constant, function or VM operand."""
    if len(code) > MAX_INSTRUCTIONS:
        return None
    env: dict = {}
    names: dict = {}  # id(value) -> its name in env

    def name_of(v) -> str:
        if _literal(v):
            return repr(v)
        key = names.get(id(v))
        if key is None:
            key = names[id(v)] = f"c{len(names)}"
            env[key] = v
        return key

    lines = []
    written: set[int] = set(range(len(func.params)))
    read_first: set[int] = set()

    def reg(r: int) -> str:
        if r not in written:
            read_first.add(r)
        return f"r{r}"

    for ins in code:
        op = ins[0]
        if op == CALL:
            _, dst, _kind, target, _name, tmpl, slots, regs_only = ins
            if isinstance(target, VMFunction):
                return None  # a Relax call: the interpreter's frames
            if regs_only is not None:
                args = [reg(r) for r in regs_only]
            else:
                args = [name_of(v) for v in tmpl]
                for k, r in slots:
                    args[k] = reg(r)
            fn = target.direct if isinstance(target, NativeKernel) else target  # one frame
            lines.append(f"    r{dst} = {name_of(fn)}({', '.join(args)})")
            written.add(dst)
        elif op == MOVE:
            kind, v = ins[2]
            src = reg(v) if kind == ARG_REG else name_of(move_value(kind, v)) \
                if kind in (ARG_CONST, ARG_IMM, ARG_FUNC, ARG_CTX) else None
            if src is None:
                return None
            lines.append(f"    r{ins[1]} = {src}")
            written.add(ins[1])
        elif op == KILL:
            lines.append(f"    r{ins[1]} = None")
            written.add(ins[1])
        elif op == RET:
            lines.append(f"    return {reg(ins[1])}")
            break
        else:
            return None  # a branch
    else:
        return None  # no return: the interpreter reports it
    params = [f"r{k}" for k in range(len(func.params))]
    head = [f"def run(args):\n    {', '.join(params)}, = args"] if params else ["def run(args):"]
    head += [f"    r{r} = None" for r in sorted(read_first)]
    src = "\n".join(head + lines) + "\n"
    exec(compile(src, f"<relax vm {func.name}>", "exec"), env)  # noqa: S102
    return env["run"]
