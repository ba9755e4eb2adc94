"""Inlined sizes of the fused functions FuseOps made (the measure the fusion partitioner's
``MAX_INLINED`` bounds), read back from the IR for tests: each fused op counts 1 plus the sizes
of the fused ops it reads, one per use. Walks use stacks (no recursion)."""

from __future__ import annotations


def relay_group_sizes(mod) -> list[int]:
    """The inlined size of each fused Relay function (calls, tuples and their items; one
    per use), walked with a stack."""
    from minitvm.relay.expr import Call, Function, Tuple, TupleGetItem

    out = []
    stack, seen = [mod["main"].body], set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, Call):
            if isinstance(e.op, Function) and e.op.get_attr("Primitive", 0):
                out.append(size_of_body(e.op.body))
            stack.extend(e.args)
        elif isinstance(e, Tuple):
            stack.extend(e.fields)
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
    return out


def size_of_body(body) -> int:
    from minitvm.relay.expr import Call, Tuple, TupleGetItem

    def kids(e):
        if isinstance(e, Call):
            return list(e.args)
        if isinstance(e, Tuple):
            return list(e.fields)
        return [e.tuple_value] if isinstance(e, TupleGetItem) else []

    size: dict[int, int] = {}
    stack = [(body, False)]
    while stack:
        e, ready = stack.pop()
        if id(e) in size:
            continue
        if not ready:
            stack.append((e, True))
            stack.extend((k, False) for k in kids(e) if id(k) not in size)
            continue
        size[id(e)] = (1 + sum(size[id(k)] for k in kids(e))) if kids(e) else 0
    return size[id(body)]


def relax_group_sizes(mod) -> list[int]:
    """The inlined size of the fused Relax function of each call in ``main`` (structurally
    equal groups share one function): per binding, 1 plus the sizes of the function's own
    bindings it reads (one per use)."""
    from minitvm.ir.expr import GlobalVar
    from minitvm.relax.expr import Call, Function, Tuple, Var

    per_fn = {}
    for gv in mod.get_global_vars():
        f = mod[gv]
        if not isinstance(f, Function) or not f.attrs or not f.attrs.get("Primitive"):
            continue
        size: dict = {}
        for block in f.body.blocks:
            for b in block.bindings:
                args = []
                if isinstance(b.value, Call):
                    for a in b.value.args:
                        args.extend(a.fields if isinstance(a, Tuple) else [a])
                size[b.var] = 1 + sum(size.get(a, 0) for a in args if isinstance(a, Var))
        per_fn[gv.name_hint] = max(size.values())
    calls = [
        b.value.op.name_hint
        for block in mod["main"].body.blocks
        for b in block.bindings
        if isinstance(b.value, Call) and isinstance(b.value.op, GlobalVar)
    ]
    return [per_fn[c] for c in calls if c in per_fn]
