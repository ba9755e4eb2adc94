"""Mark the outermost spatial loop of each block-structured stage ``parallel``.

``te.create_prim_func`` produces serial loop nests. A stage's outermost loop that binds a
data-parallel block axis writes disjoint outputs per iteration, so it can run on the thread
pool; reductions and small stages (under ``min_work`` iterations) are left serial.
"""

from __future__ import annotations

from .. import expr as E
from .. import stmt as S
from ..function import PrimFunc


def _nest_work(loop: S.For) -> int | None:
    """Product of the constant extents of the perfect nest under ``loop`` (None if symbolic)."""
    work = 1
    s = loop
    while isinstance(s, S.For):
        if not isinstance(s.extent, E.IntImm):
            return None
        work *= s.extent.value
        s = s.body
    return work


def _first_block(loop: S.For):
    s = loop
    while isinstance(s, S.For):
        s = s.body
    return s if isinstance(s, S.BlockRealize) else None


def _parallel_ok(loop: S.For, min_work: int) -> bool:
    if loop.kind != S.ForKind.SERIAL or loop.annotations:
        return False
    realize = _first_block(loop)
    if realize is None:
        return False
    for iv, val in zip(realize.block.iter_vars, realize.iter_values):
        if val is loop.loop_var:
            if iv.iter_type != E.IterVar.DataPar:
                return False
            work = _nest_work(loop)
            return work is None or work >= min_work
    return False


def parallelize_outer_loops(func: PrimFunc, min_work: int = 1 << 16) -> PrimFunc:
    """``func`` with each eligible top-level stage loop turned into a parallel loop."""
    body = func.body
    root = body.block if isinstance(body, S.BlockRealize) and not body.iter_values else None
    stages = root.body if root is not None else body
    items = list(stages.seq) if isinstance(stages, S.SeqStmt) else [stages]
    changed = False
    for k, s in enumerate(items):
        if isinstance(s, S.For) and _parallel_ok(s, min_work):
            items[k] = S.For(s.loop_var, s.min, s.extent, S.ForKind.PARALLEL, s.body,
                             s.thread_binding, s.annotations)
            changed = True
    if not changed:
        return func
    new_stages = S.SeqStmt(items) if isinstance(stages, S.SeqStmt) else items[0]
    if root is None:
        return func.with_body(new_stages)
    new_root = S.Block(root.iter_vars, root.reads, root.writes, root.name_hint, new_stages,
                       root.init, root.alloc_buffers, root.match_buffers, root.annotations)
    return func.with_body(S.BlockRealize(body.iter_values, body.predicate, new_root))
