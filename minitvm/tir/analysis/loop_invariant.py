"""Memory accesses that do not change across the iterations of their innermost loop.

Such an access is work for LLVM's loop-invariant code motion (hoist the load, keep the value in
a register, store it once after the loop). A kernel without any that matters can skip LLVM's
loop pipeline: ``codegen.build`` asks ``hoistable_accesses`` to choose between its IR pipelines.
What matters: an invariant store (a read-modify-write chain through memory each iteration), or
two or more invariant loads in one loop (an inner loop re-reading its coefficients, or
recomputing something from them, as a layer norm's ``rsqrt(var + eps)``). A lone invariant
load (a bias read per output vector) costs next to nothing: on ResNet-50, MobileNet and BERT
such kernels ran as fast without LLVM's loop passes (the machine code generator still hoists).
Not counted either: an access under a condition inside its innermost loop (``if kb == last:``
a conv's epilogue reading its per-channel scale and shift in the last block of input channels).
LLVM's loop-invariant code motion hoists only what runs on every iteration, or what it knows may
be read on any (kernel parameters carry no ``dereferenceable``), and the O1 pipeline unswitches
no such condition: the two ResNet-50 conv + residual + scale/shift + relu kernels compiled to
the same machine code loop with and without it, their 64 epilogue loads still in the loop.

Loops that stay loops in machine code count (serial and parallel ones); vectorized and unrolled
loops are expanded by the code generator, so their variables are lanes and constants. Accesses
to a local allocation are left out at indices that depend on no loop (LLVM's SROA turns those
into registers without any loop pass) and inside the loop it was allocated in (each iteration
has its own).
"""

from __future__ import annotations

from .. import expr as E
from .. import stmt as S
from ..stmt_functor import post_order, stmt_children, stmt_exprs

_LOOPS = (S.ForKind.SERIAL, S.ForKind.PARALLEL)


def invariant_accesses(func) -> list[tuple[str, str, bool]]:
    """``(loop variable, buffer, is_store)`` names of each load or store in ``func`` whose
    address is the same in every iteration of its innermost enclosing loop (program order)."""
    return [(loop.loop_var.name, buf.name, store)
            for loop, buf, store, inv, _ in _accesses(func) if inv]


def hoistable_accesses(func) -> list[tuple[str, str, bool]]:
    """The ``invariant_accesses`` of ``func`` that are worth hoisting (see the module's doc)."""
    per_loop: dict[int, list] = {}
    for loop, buf, store, inv, guarded in _accesses(func):
        if not guarded:
            per_loop.setdefault(id(loop), []).append((loop, buf, store, inv))
    out = []
    for accesses in per_loop.values():
        inv_loads = {id(a[1]) for a in accesses if a[3] and not a[2]}
        if any(a[2] and a[3] for a in accesses) or len(inv_loads) >= 2:
            out.extend((a[0].loop_var.name, a[1].name, a[2]) for a in accesses if a[3])
    return out


def _accesses(func) -> list[tuple]:
    """``(innermost loop, buffer, is_store, invariant in that loop, under a condition inside that
    loop)`` of every access inside a loop. Left out: local allocations at fixed places (SROA keeps them in registers) and those
    made inside the access's innermost loop (each iteration has its own)."""
    deps: dict[int, frozenset] = {}  # id(Var) -> ids of the loop variables its value depends on
    local: dict[int, int] = {}  # id(data var) of a local allocation -> loops around it
    found: list[tuple] = []

    def var_deps(nodes) -> frozenset:
        return frozenset().union(*(deps.get(id(n), ()) for n in nodes if isinstance(n, E.Var)))

    def loop_deps(e) -> frozenset:
        nodes = list(post_order(e))
        lets = [n for n in nodes if isinstance(n, E.Let)]
        changed = bool(lets)  # a let's value may use another let's variable: to a fixed point
        while changed:
            changed = False
            for n in lets:
                d = var_deps(post_order(n.value))
                if d != deps.get(id(n.var)):
                    deps[id(n.var)], changed = d, True
        return var_deps(nodes)

    def check(buf, indices, loops, store: bool, guarded: bool) -> None:
        if loops is None:
            return
        used = frozenset().union(*(loop_deps(i) for i in indices)) if indices else frozenset()
        depth = local.get(id(buf.data))
        if depth is not None and (not used or depth >= loops[1]):
            return  # a register after SROA, or private to one iteration of the loop
        inner = loops[0]
        found.append((inner, buf, store, id(inner.loop_var) not in used, guarded))

    # (statement, innermost loop around it, whether a condition inside that loop guards it) in
    # pre-order, the loops as (loop, depth, outer) links: no recursion, nor copying, on the
    # program's depth
    stack: list[tuple[S.Stmt, tuple | None, bool]] = [(func.body, None, False)]
    while stack:
        s, loops, guarded = stack.pop()
        if s is None:
            continue
        if isinstance(s, S.For):
            own = frozenset({id(s.loop_var)}) if s.kind in _LOOPS else frozenset()
            deps[id(s.loop_var)] = own
            if s.kind in _LOOPS and not (isinstance(s.extent, E.IntImm) and s.extent.value == 1):
                loops, guarded = (s, 1 + (loops[1] if loops else 0), loops), False
        elif isinstance(s, S.LetStmt):
            deps[id(s.var)] = loop_deps(s.value)
        elif isinstance(s, S.Allocate):
            local[id(s.buffer_var)] = loops[1] if loops else 0
        for e in stmt_exprs(s):
            for n in post_order(e):
                if isinstance(n, E.BufferLoad):
                    check(n.buffer, n.indices, loops, False, guarded)
        if isinstance(s, S.BufferStore):
            check(s.buffer, s.indices, loops, True, guarded)
        inside = guarded or (isinstance(s, S.IfThenElse) and loops is not None)
        stack.extend((c, loops, inside) for c in reversed(stmt_children(s)))
    return found
