"""Where a Relay VM loop's step kernel may write its row of a stacked result itself.

``UpdateRow data row index`` copies a step's row into the stacked buffer. When the row is the
one output of a dynamic kernel call (``InvokePacked`` whose kernel makes its outputs) in the
same basic block, the kernel can write into ``data[index]`` directly (``runtime.row_site``'s
view, the site shared with Relax) when no program value can tell — ``row_producers`` proves,
over the function's bytecode:

- the data and the index are the same values when the kernel runs and when the row is written
  (nothing between writes their registers);
- nothing from the kernel call to the write reads the stacked buffer (any register that may
  hold it, a tuple of it or a view: ``row_site.may_hold``), the kernel's inputs included;
- no kernel writes a register that may hold the row as an output but the producer (Relay
  kernels write only their outputs: the row's value, once written, is read only);
- the data register is not read after the write (``liveness.read_after_update_row``).

What remains per call (the buffer is the site's own, nothing else holds it now, no live value
is that row) the VM checks when it hands the view out (``VirtualMachine._row_view``).
"""

from __future__ import annotations

from ..row_site import may_hold
from . import bytecode as B
from .liveness import _reads, _written

__all__ = ["row_producers"]


def _users(instructions: list) -> dict:
    """register -> the registers an instruction may make hold its value (or a part, a view)."""
    users: dict = {}
    for ins in instructions:
        op = ins[0]
        if op == B.MOVE:
            users.setdefault(ins[1], []).append(ins[2])
        elif op in (B.ALLOC_ADT, B.ALLOC_CLOSURE):
            for r in ins[2]:
                users.setdefault(r, []).append(ins[3])
        elif op in (B.GET_FIELD, B.RESHAPE_TENSOR):
            users.setdefault(ins[1], []).append(ins[3])
        elif op == B.UPDATE_ROW:  # (its result is its data, or a copy)
            users.setdefault(ins[1], []).append(ins[4])
        elif op in (B.INVOKE, B.INVOKE_CLOSURE):  # (a call may return what it is given)
            for r in ins[2]:
                users.setdefault(r, []).append(ins[3])
            if op == B.INVOKE_CLOSURE:
                users.setdefault(ins[1], []).append(ins[3])
    return users


def _outputs(ins: tuple) -> tuple:
    """The output registers of an ``InvokePacked``."""
    _, _, arity, nout, args, _ = ins
    return tuple(args[arity - nout:])


def row_producers(instructions: list, leaders: set[int], read_after: frozenset) -> \
        dict[int, int]:
    """``{pc of a dynamic kernel call: pc of the UpdateRow whose row it makes}`` for the calls
    that may write their output into the row of the stacked buffer (see the module's text);
    ``leaders``: the pcs where basic blocks start; ``read_after``: the UpdateRows whose data
    may be read after them."""
    users = _users(instructions)
    starts = sorted(leaders)
    out = {}
    for u, ins in enumerate(instructions):
        if ins[0] != B.UPDATE_ROW or u in read_after:
            continue
        data, row, index = ins[1], ins[2], ins[3]
        block_start = max(s for s in starts if s <= u)
        p = next((pc for pc in range(u - 1, block_start - 1, -1)
                  if _written(instructions[pc]) == row or
                  (instructions[pc][0] == B.INVOKE_PACKED and
                   row in _outputs(instructions[pc]))), None)
        if p is None:
            continue
        prod = instructions[p]
        if prod[0] != B.INVOKE_PACKED or not prod[5] or _outputs(prod) != (row,):
            continue  # (not a dynamic kernel's one output)
        stacked = may_hold(users, data)
        if row in stacked or index in stacked:
            continue
        quiet = all(_written(instructions[pc]) not in (data, index) and
                    not stacked.intersection(_reads(instructions[pc])) and
                    (instructions[pc][0] != B.INVOKE_PACKED or
                     index not in _outputs(instructions[pc]))
                    for pc in range(p, u))
        held = may_hold(users, row)
        if quiet and not any(other[0] == B.INVOKE_PACKED and pc != p and
                             held.intersection(_outputs(other))
                             for pc, other in enumerate(instructions)):
            out[p] = u
    return out
