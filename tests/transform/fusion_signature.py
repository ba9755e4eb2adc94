"""Text signatures of the groups fusion makes, for tests that pin a partition down: each fused
function as its ops joined by ``+`` (post-order), in the order the program first calls them,
runs of equal entries written ``sig*count``; a partition of a plain graph as its groups' sizes
the same way. Walks use stacks (no recursion)."""

from __future__ import annotations


def run_length(items: list[str]) -> str:
    out: list[str] = []
    prev, count = None, 0
    for it in items + [None]:
        if it == prev:
            count += 1
            continue
        if prev is not None:
            out.append(prev if count == 1 else f"{prev}*{count}")
        prev, count = it, 1
    return " | ".join(out)


def _post_order(root, kids):
    """Nodes reachable from root through ``kids(node)``, operands first, each once."""
    out, seen, stack = [], set(), [(root, False)]
    while stack:
        e, ready = stack.pop()
        if ready:
            out.append(e)
            continue
        if id(e) in seen:
            continue
        seen.add(id(e))
        stack.append((e, True))
        stack.extend((k, False) for k in reversed(kids(e)))
    return out


def _relay_kids(e):
    from minitvm.relay.expr import Call, Tuple, TupleGetItem

    if isinstance(e, Call):
        return list(e.args)
    if isinstance(e, Tuple):
        return list(e.fields)
    return [e.tuple_value] if isinstance(e, TupleGetItem) else []


def relay_signature(mod) -> str:
    """The fused functions ``main`` calls, each as its ops (``tuple``/``get`` for tuples and
    their items)."""
    from minitvm.ir.op import Op
    from minitvm.relay.expr import Call, Function, Tuple, TupleGetItem

    def ops(body):
        names = []
        for e in _post_order(body, _relay_kids):
            if isinstance(e, Call) and isinstance(e.op, Op):
                names.append(e.op.name)
            elif isinstance(e, Tuple):
                names.append("tuple")
            elif isinstance(e, TupleGetItem):
                names.append("get")
        return "+".join(names)

    return run_length([ops(e.op.body) for e in _post_order(mod["main"].body, _relay_kids)
                       if isinstance(e, Call) and isinstance(e.op, Function)])


def relax_signature(mod) -> str:
    """The fused functions ``main`` calls, each as the PrimFuncs its bindings call (by name
    without the numeric suffix LegalizeOps' name dedup adds)."""
    import re

    from minitvm.ir.expr import GlobalVar
    from minitvm.relax.expr import Call, Function

    def callee(call) -> str | None:
        if isinstance(call.op, GlobalVar):
            return call.op.name_hint
        if call.args and isinstance(call.args[0], GlobalVar):  # (call_tir)
            return call.args[0].name_hint
        return None

    def fused_ops(fn) -> str:
        names = []
        for block in fn.body.blocks:
            for b in block.bindings:
                if isinstance(b.value, Call) and callee(b.value):
                    names.append(re.sub(r"\d+$", "", callee(b.value)))
        return "+".join(names)

    out = []
    for block in mod["main"].body.blocks:
        for b in block.bindings:
            if isinstance(b.value, Call) and isinstance(b.value.op, GlobalVar):
                f = mod[b.value.op]
                if isinstance(f, Function) and f.attrs and f.attrs.get("Primitive"):
                    out.append(fused_ops(f))
    return run_length(out)


def partition_signature(groups) -> str:
    """A partition of a plain graph (``partition_graph``'s groups, nodes in order) as the sizes
    of its groups in the order of their first node."""
    sizes: dict[int, int] = {}
    for g in groups:
        root = id(g.find_root())
        sizes[root] = sizes.get(root, 0) + 1
    return run_length([str(s) for s in sizes.values()])


def counted(signature: str) -> list[str]:
    """A signature's groups as a multiset: ``"count sig"`` lines, sorted by sig."""
    counts: dict[str, int] = {}
    for item in signature.split(" | "):
        sig, star, k = item.rpartition("*")
        if not (star and k.isdigit()):
            sig, k = item, "1"
        counts[sig] = counts.get(sig, 0) + int(k)
    return [f"{n} {s}" for s, n in sorted(counts.items())]
