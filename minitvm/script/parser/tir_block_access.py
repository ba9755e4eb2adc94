"""Read/write regions of a parsed TIR block whose ``T.reads`` / ``T.writes`` are omitted, as
TVM's parser infers them: every buffer the block's init and body load (reads) or store (writes),
in order of first access, except buffers the block allocates. An index using a loop of the block
body covers that loop's range; other indices are points; differing accesses of one buffer widen
to the whole dimension."""

from __future__ import annotations

from ...ir.structural import structural_equal
from ...tir import expr as E
from ...tir import stmt as S
from ...tir.stmt_functor import post_order, stmt_exprs, substitute, walk_stmts

__all__ = ["infer_block_access"]


def _range_of(index, loops: dict, extent_dim) -> E.Range:
    """The range ``index`` covers while the body's loops run."""
    if isinstance(index, E.Var) and index in loops:
        lo, ext = loops[index]
        return E.Range.from_min_extent(lo, ext)
    if any(isinstance(n, E.Var) and n in loops for n in post_order(index)):
        return E.Range.from_min_extent(E.IntImm(extent_dim.dtype, 0), extent_dim)
    return E.Range.from_min_extent(index, 1)


def _same(a: E.Range, b: E.Range) -> bool:
    return structural_equal(a.min, b.min) and structural_equal(a.extent, b.extent)


class _Regions:
    """Ordered buffer -> region, widening a dimension where two accesses differ."""

    def __init__(self):
        self.order: list = []
        self.ranges: dict = {}

    def add(self, buf, ranges: list) -> None:
        key = id(buf)
        if key not in self.ranges:
            self.order.append(buf)
            self.ranges[key] = list(ranges)
            return
        old = self.ranges[key]
        for d, (a, b) in enumerate(zip(old, ranges, strict=True)):
            if not _same(a, b):
                dim = buf.shape[d]
                old[d] = E.Range.from_min_extent(E.IntImm(dim.dtype, 0), dim)

    def regions(self) -> list:
        return [S.BufferRegion(b, self.ranges[id(b)]) for b in self.order]


def infer_block_access(body, init=None, allocs=()) -> tuple[list, list]:
    """(reads, writes) of a block with ``body`` and ``init``, ignoring ``allocs``."""
    skip = {id(b) for b in allocs}
    loops: dict = {}
    reads, writes = _Regions(), _Regions()

    def point(buf, indices) -> list:
        return [_range_of(i, loops, buf.shape[d]) for d, i in enumerate(indices)]

    def loads_of(exprs) -> None:
        for e in exprs:
            for n in post_order(e):
                if isinstance(n, E.BufferLoad) and id(n.buffer) not in skip:
                    reads.add(n.buffer, point(n.buffer, n.indices))

    for root in (init, body):
        if root is None:
            continue
        for s in walk_stmts(root):
            if isinstance(s, S.For):
                loops[s.loop_var] = (s.min, s.extent)
                loads_of([s.min, s.extent])
            elif isinstance(s, S.BufferStore):
                loads_of([s.value, *s.indices])
                if id(s.buffer) not in skip:
                    writes.add(s.buffer, point(s.buffer, s.indices))
            elif isinstance(s, S.BlockRealize):
                inner = s.block
                vmap = dict(zip([iv.var for iv in inner.iter_vars], s.iter_values, strict=True))
                for src, dst in ((inner.reads, reads), (inner.writes, writes)):
                    for r in src:
                        if id(r.buffer) in skip:
                            continue
                        dst.add(r.buffer, [_range_of(substitute(x.min, vmap), loops, dim)
                                           if _is_point(x) else
                                           E.Range.from_min_extent(E.IntImm(dim.dtype, 0), dim)
                                           for x, dim in zip(r.region, r.buffer.shape,
                                                             strict=True)])
                loads_of([s.predicate, *s.iter_values])
            elif isinstance(s, S.Block):
                continue  # a nested block's own statements are summarized by its regions
            else:
                loads_of(stmt_exprs(s))
    return reads.regions(), writes.regions()


def _is_point(r: E.Range) -> bool:
    return isinstance(r.extent, E.IntImm) and r.extent.value == 1
