"""MergeCompositeFunctions (TVM's ``relax.transform.MergeCompositeFunctions()``): gather the
calls of ``Composite`` functions (from FuseOpsByPattern) that one external codegen can run into
functions offloaded as a whole.

1. In each dataflow block, a call of a composite function named ``"<codegen>.<what>"`` joins
   the group of an argument's producer of the same codegen when no binding outside the two
   groups lies on a path between them (merging would otherwise create a cycle); every other
   binding stays alone.
2. Each group becomes a function with attrs ``{"Codegen": codegen, "global_symbol": name}``
   named ``fused_`` + the composite functions' names (their ``fused_`` prefix dropped), in which
   each composite function is bound locally and called.
3. Composite functions no longer called from the module are removed.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...transform.decorators import module_pass
from ...transform.graph_partitioner import OPAQUE, Group
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call, DataflowBlock, DataflowVar, Function, SeqExpr, VarBinding
from ..expr_functor import ExprMutator
from .dead_code_elimination import collect_call_map
from .fuse_ops import _leaves, make_grouped_functions
from .utils import has_relax_function

__all__ = ["MergeCompositeFunctions", "merge_composite_functions"]


def _codegen_of(mod, value) -> str | None:
    if not (isinstance(value, Call) and isinstance(value.op, GlobalVar)):
        return None
    func = mod.functions.get(value.op)
    if not isinstance(func, Function) or not func.attrs:
        return None
    name = func.attrs.get("Composite")
    return None if name is None else str(getattr(name, "value", name)).split(".")[0]


class _Grouper:
    """Union-find groups of one block with their codegen and direct dependencies."""

    def __init__(self, mod, block: DataflowBlock):
        self.groups: dict = {}
        self.codegen: dict = {}  # root group -> codegen (None: not offloaded)
        self.deps: dict = {}  # root group -> groups it uses directly
        self.span: dict = {}  # root group -> (first, last) position of its bindings
        for pos, b in enumerate(block.bindings):
            g = Group(OPAQUE, b.var)
            self.span[g] = (pos, pos)
            cg = _codegen_of(mod, b.value)
            self.groups[b.var] = g
            self.codegen[g] = cg
            parents = []
            for leaf in _leaves(b.value):
                pg = self.groups.get(leaf)
                if pg is not None and pg.find_root() not in parents:
                    parents.append(pg.find_root())
            self.deps[g] = set(parents)
            if cg is None:
                continue
            for p in parents:
                root = g.find_root()
                if p is not root and self.codegen.get(p) == cg and self._mergeable(root, p):
                    self._merge(root, p)
            g.find_root().attrs = {"Codegen": cg}

    def _reaches(self, start, target, skip) -> bool:
        """Whether ``target`` is reachable from ``start`` through dependencies. A group that
        depends on ``target`` has a binding after ``target``'s first one, so groups ending
        before it are not explored (keeps a long chain linear)."""
        first = self.span[target][0]
        stack, seen = [start], set()
        while stack:
            g = stack.pop().find_root()
            if g is target:
                return True
            if g in seen or self.span[g][1] < first:
                continue
            seen.add(g)
            stack.extend(d for d in self.deps.get(g, ()) if d.find_root() is not skip)
        return False

    def _mergeable(self, a, b) -> bool:
        """No group outside ``a`` and ``b`` lies on a path between them."""
        for x, y in ((a, b), (b, a)):
            for d in self.deps.get(x, ()):
                d = d.find_root()
                if d is not x and d is not y and self._reaches(d, y, x):
                    return False
        return True

    def _merge(self, child, parent) -> None:
        child.parent = parent
        parent.num_nodes += child.num_nodes
        (a, b), (c, d) = self.span.pop(child), self.span[parent]
        self.span[parent] = (min(a, c), max(b, d))
        self.deps[parent] = {d.find_root() for d in self.deps[parent] | self.deps.pop(child)
                             if d.find_root() is not parent}

    def result(self) -> dict:
        return {v: g.find_root() for v, g in self.groups.items()}


class _CompositeInliner(ExprMutator):
    """Binds each composite function called in an offloaded function locally."""

    def __init__(self, mod):
        super().__init__(mod)
        self.mod = mod

    def inline(self, func: Function) -> Function:
        body = func.body
        local: dict = {}
        bindings = []
        for block in body.blocks:
            for b in block.bindings:
                v = b.value
                if isinstance(v, Call) and isinstance(v.op, GlobalVar) and \
                        _codegen_of(self.mod, v) is not None:
                    if v.op not in local:
                        comp = self.mod.functions[v.op]
                        local[v.op] = DataflowVar(v.op.name_hint, comp.struct_info)
                        bindings.append(VarBinding(local[v.op], comp))
                    b = VarBinding(b.var, self.builder_.normalize(
                        Call(local[v.op], v.args, v.attrs, v.sinfo_args, v.span)), b.span)
                bindings.append(b)
        new_body = SeqExpr([DataflowBlock(bindings)], body.body, body.span)
        return Function(func.params, new_body, func.ret_struct_info, func.is_pure, func.attrs,
                        func.span)


def merge_composite_functions(mod):
    """The pass body: the module with offloaded functions, and how many were made."""
    before = set(mod.functions)
    mod, made = make_grouped_functions(
        mod, lambda m, block: _Grouper(m, block).result(), lift_constants=True)
    mod = mod.shallow_copy()
    inliner = _CompositeInliner(mod)
    for gv, func in list(mod.functions.items()):
        if gv in before or not isinstance(func, Function) or "Codegen" not in (func.attrs or {}):
            continue
        new = inliner.inline(func.without_attr("Primitive").with_attr("global_symbol",
                                                                      gv.name_hint))
        mod[gv] = new
    called = {c for gv, callees in collect_call_map(mod).items() for c in callees if c != gv}
    for gv, func in list(mod.functions.items()):
        if isinstance(func, Function) and func.attrs and "Composite" in func.attrs and \
                gv not in called:
            mod.remove(gv)
    return mod, made


@register_pass("MergeCompositeFunctions")
def MergeCompositeFunctions():  # noqa: N802 - TVM's name
    """Module pass (opt 0): merge calls of composite functions of one codegen into functions
    with ``Codegen`` and ``global_symbol`` attributes."""

    def run(mod, ctx):
        if not has_relax_function(mod):
            return mod
        mod, made = merge_composite_functions(mod)
        record_stat("offloaded functions", made)
        return mod

    return module_pass(run, opt_level=0, name="MergeCompositeFunctions")

