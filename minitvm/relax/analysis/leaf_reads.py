"""The variables a binding of leaves reads, found without a walk.

Nearly every binding of a lowered Relax function is a call of leaves and tuples of leaves
(``call_tir(f, (a, b), out_sinfo)``); the passes that ask what a binding reads (dead-code
elimination, the output-alias check of FuseOps) walked each with ``free_vars``, a few percent
of a 100,000-call ``relax.build``.
"""

from __future__ import annotations

from ..expr import Call, Tuple, Var


def leaf_reads(value) -> list[Var] | None:
    """The Relax variables ``value`` reads in operand order (a call's callee first) when it is
    a call or tuple whose operands are leaves (nodes without operands: variables, constants,
    shapes, global vars, ops) or tuples of leaves; None for any other value (walk it)."""
    if type(value) is Call:
        op = value.op
        if isinstance(op, Var):
            out = [op]
        elif type(op)._node_operands:
            return None
        else:
            out = []
        kids = value.args
    elif type(value) is Tuple:
        out, kids = [], value.fields
    else:
        return None
    for k in kids:
        if isinstance(k, Var):
            out.append(k)
        elif type(k) is Tuple:
            for f in k.fields:
                if isinstance(f, Var):
                    out.append(f)
                elif type(f)._node_operands:
                    return None
        elif type(k)._node_operands:
            return None
    return out
