"""FuseOpsByPattern (TVM's ``relax.transform.FuseOpsByPattern(patterns, bind_constants=True,
annotate_codegen=False)``): group the bindings a ``relax.dpl`` pattern matches into
``Composite`` functions.

For each pattern in turn (a ``FusionPattern`` or a tuple ``(name, pattern[, annotations[,
check]])``), every call binding of a dataflow block is tried as the root of a match, looking
through the block's earlier bindings. The bindings whose values matched call or tuple-get-item
sub-patterns join the root's group (wildcard matches stay outside), unless one of them is
already grouped, ``check(context)`` refuses, or the group would not be convex (an outside
binding between two members). Each group becomes a function with attrs ``{"Composite": name,
"Primitive": 1}`` named from its ops (``fused_relax_nn_conv2d_relax_nn_relu``); constants stay
inside unless ``bind_constants`` is False. With ``annotate_codegen`` each composite function is
wrapped in a function with ``{"Codegen": <name prefix>, "global_symbol": ...}`` that calls it.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...transform.decorators import module_pass
from ...transform.graph_partitioner import OPAQUE, Group
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..dpl.matcher import match_expr
from ..dpl.pattern import CallPattern, DFPattern, TupleGetItemPattern
from ..expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    Function,
    SeqExpr,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..expr_functor import ExprMutator
from .fuse_ops import _leaves, make_grouped_functions
from .utils import has_relax_function

__all__ = ["FuseOpsByPattern", "FusionPattern", "PatternCheckContext", "fuse_ops_by_pattern"]


class FusionPattern:
    """A named pattern to fuse (``name`` is ``"<codegen>.<what>"`` for BYOC), with named
    sub-patterns whose matches the ``check`` callback can inspect."""

    __slots__ = ("name", "pattern", "annotation_patterns", "check", "attrs_getter")

    def __init__(self, name: str, pattern: DFPattern, annotation_patterns=None, check=None,
                 attrs_getter=None):
        if not isinstance(pattern, DFPattern):
            raise TypeError(f"FusionPattern {name!r}: pattern must be a relax.dpl pattern, got "
                            f"{type(pattern).__name__}")
        self.name = str(name)
        self.pattern = pattern
        self.annotation_patterns = dict(annotation_patterns or {})
        self.check = check
        self.attrs_getter = attrs_getter


class PatternCheckContext:
    """What a ``check`` callback sees: the matched root call, the annotated sub-matches by name,
    the matched bindings (var -> value), each variable's users in the block and the map from
    bound values to their variables."""

    __slots__ = ("matched_expr", "annotated_expr", "matched_bindings", "var_usages",
                 "value_to_bound_var")

    def __init__(self, matched_expr, annotated_expr, matched_bindings, var_usages,
                 value_to_bound_var):
        self.matched_expr = matched_expr
        self.annotated_expr = annotated_expr
        self.matched_bindings = matched_bindings
        self.var_usages = var_usages
        self.value_to_bound_var = value_to_bound_var


def _as_fusion_pattern(p) -> FusionPattern:
    if isinstance(p, FusionPattern):
        return p
    if isinstance(p, tuple | list) and 2 <= len(p) <= 4:
        return FusionPattern(*p)
    raise TypeError(f"FuseOpsByPattern: a pattern is a FusionPattern or a tuple (name, pattern"
                    f"[, annotation_patterns[, check]]), got {p!r}")


class _BlockPartition:
    """Groups of one dataflow block for one pattern."""

    def __init__(self, fp: FusionPattern, block: DataflowBlock):
        self.fp = fp
        self.bindings = block.bindings
        self.position = {b.var: k for k, b in enumerate(self.bindings)}
        self.groups = {b.var: Group(OPAQUE, b.var) for b in self.bindings}
        self.value_to_var = {id(b.value): b.var for b in self.bindings
                             if isinstance(b, VarBinding)}
        self.bound_var_of = {b.value: b.var for b in self.bindings if isinstance(b, VarBinding)}
        self.users: dict = {}
        for b in self.bindings:
            for leaf in _leaves(b.value):
                if isinstance(leaf, Var) and leaf in self.position:
                    self.users.setdefault(leaf, []).append(b.var)

    def run(self) -> dict:
        var2val: dict = {}
        for b in self.bindings:
            if isinstance(b, VarBinding):
                var2val[b.var] = b.value
                if isinstance(b.value, Call):
                    self._try(b, var2val)
        return self.groups

    def _grouped(self, var) -> bool:
        g = self.groups[var].find_root()
        return g.num_nodes > 1 or bool(g.attrs)

    def _try(self, binding, var2val) -> None:
        if self._grouped(binding.var):
            return
        matches = match_expr(self.fp.pattern, binding.value, var2val)
        if matches is None:
            return
        members = []
        for pat, expr in matches.items():
            if expr is binding.value or not isinstance(pat, CallPattern | TupleGetItemPattern):
                continue
            var = self.value_to_var.get(id(expr))
            if var is None or not isinstance(expr, Call | TupleGetItem):
                continue
            if self._grouped(var):
                return  # already part of an earlier match
            if var not in members:
                members.append(var)
        if not self._convex(binding.var, members):
            return
        ctx = None
        if self.fp.check is not None or self.fp.attrs_getter is not None:
            annotated = {name: matches[p] for name, p in self.fp.annotation_patterns.items()
                         if p in matches}
            matched = {v: var2val[v] for v in [*members, binding.var]}
            ctx = PatternCheckContext(binding.value, annotated, matched, self.users,
                                      self.bound_var_of)
        if self.fp.check is not None and not self.fp.check(ctx):
            return
        group = self.groups[binding.var]
        group.attrs = {"Composite": self.fp.name}
        if self.fp.attrs_getter is not None:
            group.attrs.update(self.fp.attrs_getter(ctx))
        for var in members:
            member = self.groups[var]
            member.parent = group
            group.num_nodes += member.num_nodes

    def _convex(self, root, members) -> bool:
        """No binding outside the group both depends on a member and feeds a member."""
        inside = set(members) | {root}
        first = min(self.position[v] for v in inside)
        tainted: set = set()
        for b in self.bindings[first:self.position[root] + 1]:
            uses = [x for x in _leaves(b.value) if isinstance(x, Var)]
            if b.var in inside:
                if any(u in tainted for u in uses):
                    return False
            elif any(u in inside or u in tainted for u in uses):
                tainted.add(b.var)
        return True


def _pattern_partition(fp: FusionPattern):
    def run(mod, block) -> dict:
        return {v: g.find_root() for v, g in _BlockPartition(fp, block).run().items()}

    return run


class _CodegenAnnotator(ExprMutator):
    """Calls of composite functions go through a wrapper with ``Codegen`` and
    ``global_symbol`` attributes (TVM's CompositeFunctionAnnotator)."""

    def __init__(self, mod):
        super().__init__(mod)
        self.mod = mod
        self.wrapped: dict = {}

    def visit_call_(self, op: Call):
        call = super().visit_call_(op)
        gv = call.op
        if not isinstance(gv, GlobalVar):
            return call
        if gv in self.wrapped:
            return Call(self.wrapped[gv], call.args, call.attrs, call.sinfo_args, call.span)
        func = self.mod.functions.get(gv)
        name = func.attrs.get("Composite") if isinstance(func, Function) and func.attrs \
            else None
        if name is None:
            return call
        codegen = str(name).split(".")[0]
        symbol = f"{gv.name_hint}_{codegen}"
        inner = func.without_attr("Primitive")
        params = [Var(p.name_hint, p.struct_info) for p in func.params]
        local = Var(gv.name_hint, inner.struct_info)
        out = Var("gv", func.ret_struct_info)
        body = SeqExpr([BindingBlock([VarBinding(local, inner),
                                      VarBinding(out, self.builder_.normalize(
                                          Call(local, params)))])], out)
        wrapper = Function(params, body, func.ret_struct_info, inner.is_pure,
                           {"Codegen": codegen, "global_symbol": symbol})
        new_gv = GlobalVar(symbol)
        new_gv._checked_type = wrapper.struct_info
        self.mod.remove(gv)
        self.mod[new_gv] = wrapper
        self.wrapped[gv] = new_gv
        return Call(new_gv, call.args, call.attrs, call.sinfo_args, call.span)


def fuse_ops_by_pattern(mod, patterns, bind_constants: bool = True,
                        annotate_codegen: bool = False):
    """The pass body: the module with each pattern's matches grouped into composite
    functions, and how many functions were made."""
    total = 0
    for p in patterns:
        fp = _as_fusion_pattern(p)
        mod, added = make_grouped_functions(mod, _pattern_partition(fp),
                                            lift_constants=not bind_constants)
        total += added
    if annotate_codegen and total:
        mod = mod.shallow_copy()
        annotator = _CodegenAnnotator(mod)
        for gv, func in list(mod.functions.items()):
            if isinstance(func, Function) and not (func.attrs and "Composite" in func.attrs):
                new = annotator.visit_expr(func)
                if new is not func:
                    mod[gv] = new
    return mod, total


@register_pass("FuseOpsByPattern")
def FuseOpsByPattern(patterns=(), bind_constants: bool = True,  # noqa: N802 - TVM's name
                     annotate_codegen: bool = False, entry_functions=None):
    """Module pass (opt 0): group what each pattern matches into ``Composite`` functions.

    Parameters
    ----------
    patterns : list of FusionPattern or tuple
        Tried in order; ``(name, pattern[, annotation_patterns[, check]])``.
    bind_constants : bool
        Keep constants inside the composite functions (else they become parameters).
    annotate_codegen : bool
        Wrap each composite function in one with ``Codegen`` and ``global_symbol`` attrs.
    """
    pats = [_as_fusion_pattern(p) for p in patterns]

    def run(mod, ctx):
        if not has_relax_function(mod):
            return mod
        mod, made = fuse_ops_by_pattern(mod, pats, bind_constants, annotate_codegen)
        record_stat("composite functions", made)
        return mod

    return module_pass(run, opt_level=0, name="FuseOpsByPattern")
