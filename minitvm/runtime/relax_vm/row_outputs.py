"""Where generated code may let a loop step's kernel write its row of a stacked result itself.

A loop over a run-time length (``vm.builtin.update_row``) makes each step's row in a fresh
tensor and copies it into the stacked buffer. When the row's tensor is made (a storage site),
used by one kernel that writes it, and then written into ``data[index]`` in the same block,
the tensor can be that row (a view, ``update_row_site``'s ``row``) and the copy disappears —
when no program value can tell: ``row_outputs`` proves, over the linked code of one function,

- the data and the index are the same values when the row is made and when it is written
  (their registers are not written in between; no kernel writes the index);
- nothing between reads the stacked buffer (any register that may hold it or a value made from
  it), and no kernel anywhere writes such a register (an in-place call);
- the row's value (any register that may hold it, or a tuple of it) is written by one kernel
  only, the one in between, and read only by kernels, tuples, moves and ``update_row``'s row;
  where a function returns it, the return copies the row views (``site.detach``).

What runtime facts remain (the buffer is the site's own, no live value is that row) the site
checks per call. Registers are followed over the whole function (a loop's back edge included),
with a worklist: linear in the code.
"""

from __future__ import annotations

from ..row_site import may_hold
from . import builtins as B
from .builtins import make_tuple, tuple_getitem
from .executable import ARG_REG, CALL, IF, KILL, MOVE, RET
from .kernel import NativeKernel

__all__ = ["call_regs", "reads", "row_outputs"]


def call_regs(ins) -> list[int]:
    """The registers a linked CALL reads."""
    return list(ins[7]) if ins[7] is not None else [r for _, r in ins[6]]


def reads(ins) -> list[int]:
    """The registers an instruction reads."""
    op = ins[0]
    if op == CALL:
        return call_regs(ins)
    if op == MOVE:
        return [ins[2][1]] if ins[2][0] == ARG_REG else []
    if op in (RET, IF):
        return [ins[1]]
    return []


def _arg_regs(ins) -> list[tuple[int, int]]:
    """``(position, register)`` of a linked CALL's register arguments."""
    return list(enumerate(ins[7])) if ins[7] is not None else list(ins[6])


def _kernel_writes(ins) -> set[int]:
    """The registers a kernel call may write (its spec's ``written`` buffers; all of its
    arguments when the spec does not say)."""
    written = ins[3].spec.get("written")
    if written is None:
        return set(call_regs(ins))
    pos = set(written)
    return {r for k, r in _arg_regs(ins) if k in pos}


# builtins whose result holds none of their arguments, nor a view of one, and that write none
_OPAQUE = frozenset({B.check_tensor_info, B.check_shape_info, B.check_prim_value_info,
                     B.check_tuple_info, B.match_shape, B.match_prim_value, B.make_shape,
                     B.make_prim_value, B.shape_of})


def _opaque(ins) -> bool:
    """A CALL of a builtin of ``_OPAQUE`` (or of a site function standing for one)."""
    return getattr(ins[3], "builtin", ins[3]) in _OPAQUE


def _is_update_row(ins) -> bool:
    """A linked CALL of an ``update_row_site`` taking its three arguments as registers."""
    return ins[0] == CALL and getattr(ins[3], "row", None) is not None and \
        ins[7] is not None and len(ins[7]) == 3


def _dst(ins) -> int | None:
    return ins[1] if ins[0] in (CALL, MOVE, KILL) else None


def _may_hold(code: list, start: int) -> set[int]:
    """The registers that may hold register ``start``'s value, a tuple of it or a value made
    from it by a builtin (a view), anywhere in the function."""
    users: dict = {}  # register -> destinations that may then hold its value
    for ins in code:
        if ins[0] == MOVE and ins[2][0] == ARG_REG:
            users.setdefault(ins[2][1], []).append(ins[1])
        elif ins[0] == CALL and not isinstance(ins[3], NativeKernel) and not _opaque(ins):
            # (an update_row's result is its data, or a copy: not its row, nor its index)
            regs = call_regs(ins)[:1] if _is_update_row(ins) else call_regs(ins)
            for r in regs:
                users.setdefault(r, []).append(ins[1])
    return may_hold(users, start)


def _producer(code: list, u: int, row: int, block_start: int) -> int | None:
    """The pc in ``[block_start, u)`` whose result ``row`` (read at ``u``) is, through moves and
    a ``tuple_getitem`` of a ``make_tuple``; None when it is made otherwise."""
    want, field = row, None
    for pc in range(u - 1, block_start - 1, -1):
        ins = code[pc]
        if _dst(ins) != want:
            continue
        if field is not None:  # (looking for the tuple)
            if ins[0] != CALL or ins[3] is not make_tuple or ins[7] is None or \
                    not 0 <= field < len(ins[7]):
                return None
            want, field = ins[7][field], None
        elif ins[0] == MOVE and ins[2][0] == ARG_REG:
            want = ins[2][1]
        elif ins[0] == CALL and ins[3] is tuple_getitem and ins[7] is None and \
                len(ins[5]) == 2 and type(ins[5][1]) is int and len(ins[6]) == 1:
            want, field = ins[6][0][1], ins[5][1]
        else:
            return pc if ins[0] == CALL else None
    return None


def row_outputs(code: list, site_pcs: set[int], leaders: set[int]) -> \
        tuple[dict[int, tuple], dict[int, list]]:
    """``({pc of a storage site's tensor: (update_row site, data register, index register, pc
    of the update_row)},
    {pc of a return: [update_row sites whose row views it may return]})``: the tensors made at
    ``site_pcs`` that may be their ``update_row``'s row of the data (see the module's text).
    ``leaders``: the pcs where basic blocks start."""
    rows, detach = {}, {}
    starts = sorted(leaders)
    for u, ins in enumerate(code):
        if not _is_update_row(ins):
            continue
        data, row, index = ins[7]
        block_start = max(s for s in starts if s <= u)
        a = _producer(code, u, row, block_start)
        if a is None or a not in site_pcs:
            continue
        held, stacked = _may_hold(code, code[a][1]), _may_hold(code, data)
        if data in held or index in held:
            continue
        ok, producers, returns = True, [], []
        for pc, other in enumerate(code):
            op = other[0]
            regs = reads(other)
            if a < pc < u and (_dst(other) in (data, index) or stacked.intersection(regs)):
                ok = False  # (the data or index changes, or the stacked buffer is read)
            elif op == CALL and isinstance(other[3], NativeKernel):
                writes = _kernel_writes(other)
                if writes & stacked or (a < pc < u and index in writes):
                    ok = False
                elif writes & held:
                    producers.append(pc)
            elif op == CALL and held.intersection(regs) and pc != u and \
                    other[3] not in (make_tuple, tuple_getitem) and not _opaque(other):
                ok = False  # (a builtin could keep a view of the row)
            elif op == RET and other[1] in held:
                returns.append(pc)
            if not ok:
                break
        if ok and len(producers) == 1 and a < producers[0] < u:
            rows[a] = (ins[3], data, index, u)
            for pc in returns:
                detach.setdefault(pc, []).append(ins[3])
    return rows, detach
