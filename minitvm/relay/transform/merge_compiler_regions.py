"""MergeCompilerRegions: merge neighbouring annotated regions of the same compiler.

Regions are visited in topological order (TVM's RegionMerger): a region inherits its parents'
restrictions, a parent of another compiler is a restriction, and a parent of the same compiler
that is not restricted is merged into it -- merging a restricted one would create a cycle
between the partitioned functions. The compiler_end/compiler_begin pairs left inside a
merged region are removed, so PartitionGraph makes one function of it.
"""

from __future__ import annotations

from ..expr_functor import ExprMutator
from ._annotated_regions import BEGIN, END, RegionSet, is_annotation
from ._pass_helpers import make_function_pass, register

__all__ = ["MergeCompilerRegions", "merge_compiler_regions"]


class _Merger:
    def __init__(self, regions: RegionSet):
        self.rs = regions
        self.up = {r.id: r.id for r in regions.regions}
        self.parents = {r.id: {p.id for p in regions.parents(r)} for r in regions.regions}
        self.target = {r.id: r.target for r in regions.regions}
        # regions reaching this one only through nodes outside every region: never merged
        self.outside = {r.id: {p.id for p in regions.upstream_outside(r)}
                        for r in regions.regions}

    def find(self, i: int) -> int:
        while self.up[i] != i:
            self.up[i] = self.up[self.up[i]]
            i = self.up[i]
        return i

    def _parents(self, i: int) -> set[int]:
        return {self.find(p) for p in self.parents[i]} - {i}

    def _parents_first(self) -> list[int]:
        """Region ids with every region after its parents (an iterative post-order DFS)."""
        order, seen = [], set()
        for r in self.rs.regions:
            if r.id in seen:
                continue
            seen.add(r.id)
            stack = [(r.id, iter(sorted(self.parents[r.id] | self.outside[r.id])))]
            while stack:
                rid, it = stack[-1]
                nxt = next((p for p in it if p not in seen), None)
                if nxt is None:
                    stack.pop()
                    order.append(rid)
                else:
                    seen.add(nxt)
                    stack.append((nxt, iter(sorted(self.parents[nxt] | self.outside[nxt]))))
        return order

    def run(self) -> None:
        """TVM's RegionMerger: each region, after its parents, first
        inherits its parents' restrictions; a parent of another compiler becomes a
        restriction, and a parent of the same compiler not in the restrictions is merged into
        it. Restriction and parent sets hold region ids as recorded and are read through
        ``find``, so a set naming a merged region names the merged result without rewriting
        every set at each merge (which made a long chain of regions quadratic)."""
        restrictions: dict[int, set[int]] = {}

        def restricted_by(i: int) -> set[int]:
            return {self.find(q) for q in restrictions.get(i, ())}

        for rid in self._parents_first():
            cur = self.find(rid)
            parents = sorted(self._parents(cur))
            own = restricted_by(cur)
            for p in parents:
                own |= restricted_by(p)
            for q in {self.find(i) for i in self.outside[rid]} - {cur}:
                own.add(q)
                own |= restricted_by(q)
            for p in parents:
                if self.target[p] != self.target[cur]:
                    own.add(p)
                    continue
                if p in own:
                    continue  # merging would make a cycle through another compiler's region
                self.up[p] = cur
                self.parents[cur] = {self.find(i) for i in self.parents[cur] | self.parents[p]}
                self.parents[cur].discard(cur)
            restrictions[cur] = own

    def same(self, a, b) -> bool:
        of = self.rs._of
        ra, rb = of.get(id(a)), of.get(id(b))
        return ra is not None and rb is not None and self.find(ra.id) == self.find(rb.id)


class _RemoveInnerAnnotations(ExprMutator):
    def __init__(self, merger: _Merger):
        super().__init__()
        self.merger = merger
        self.count = 0

    def visit_call(self, call):
        if is_annotation(call, BEGIN) and is_annotation(call.args[0], END) and \
                self.merger.same(call, call.args[0]):
            self.count += 1
            return self.visit(call.args[0].args[0])
        return super().visit_call(call)


def merge_compiler_regions(func):
    """``func`` with adjacent regions of the same compiler merged."""
    regions = RegionSet(func.body)
    if not regions.regions:
        return func
    merger = _Merger(regions)
    merger.run()
    body = _RemoveInnerAnnotations(merger).visit(func.body)
    return func if body is func.body else func.with_fields(body=body)


@register("MergeCompilerRegions")
def MergeCompilerRegions():  # noqa: N802 - TVM's name
    """Merge together compiler regions (function pass, opt 0)."""
    return make_function_pass(lambda f, m, c: merge_compiler_regions(f), opt_level=0,
                              name="MergeCompilerRegions", required=["InferType"],
                              needs=["typed"])
