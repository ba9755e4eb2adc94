"""PartitionGraph: turn each annotated region into a global function for its external compiler.

``default`` annotations are dropped first. Every other region becomes
``@tvmgen_<mod_name>_<compiler>_main_<n>`` with the attributes ``Primitive=1``, ``Inline=1``,
``Compiler=<compiler>`` and ``global_symbol=<its name>``; its parameters are the region's
``compiler_begin`` inputs (constants are bound into the function), its result the region's
outputs (a tuple when there are several). The region is replaced by a call of the function
(and projections of its result).
"""

from __future__ import annotations

from ...ir.attrs import DictAttrs
from ...ir.expr import GlobalVar
from ...ir.prim_expr import IntImm
from ..expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from ..expr_functor import _DATAFLOW, ExprMutator, _method_name, dataflow_children
from ._annotated_regions import BEGIN, END, RegionSet, is_annotation
from ._pass_helpers import make_module_pass, register
from .infer_type import infer_type_module

__all__ = ["PartitionGraph", "partition_graph"]


class _RemoveDefault(ExprMutator):
    def visit_call(self, call):
        if (is_annotation(call, BEGIN) or is_annotation(call, END)) and \
                str(call.attrs.compiler) == "default":
            return self.visit(call.args[0])
        return super().visit_call(call)


def _region_function(region, name: str):
    """The external function of ``region``: (function, call arguments)."""
    params, args, env = [], [], {}
    for b in region.ins:
        src = b.args[0]
        if isinstance(src, Constant):
            env[id(b)] = src
            continue
        v = Var(f"{region.target}_{name.rsplit('_', 1)[-1]}_i{len(params)}", src.checked_type)
        params.append(v)
        args.append(src)
        env[id(b)] = v
    members = {id(n) for n in region.nodes}
    outs, seen = [], set()
    for e in region.outs:
        if id(e.args[0]) not in seen:
            seen.add(id(e.args[0]))
            outs.append(e.args[0])
    for e in region.nodes:  # region nodes come in post order: operands first
        if id(e) in env or is_annotation(e, END):
            continue
        env[id(e)] = _rebuild(e, env, members)
    body = env[id(outs[0])] if len(outs) == 1 else Tuple([env[id(o)] for o in outs])
    attrs = DictAttrs({"Primitive": IntImm("int32", 1), "Inline": IntImm("int32", 1),
                       "Compiler": region.target, "global_symbol": name})
    return Function(params, body, attrs=attrs), args, outs


def _rebuild(e, env, members):
    get = lambda x: env.get(id(x), x) if id(x) in members else x  # noqa: E731
    if isinstance(e, Call):
        return Call(e.op, [get(a) for a in e.args], e.attrs, e.type_args, e.span)
    if isinstance(e, Tuple):
        return Tuple([get(f) for f in e.fields], e.span)
    if isinstance(e, TupleGetItem):
        return TupleGetItem(get(e.tuple_value), e.index, e.span)
    raise ValueError(f"PartitionGraph: a {type(e).__name__} inside an annotated region cannot "
                     "be offloaded")


class _Partitioner(ExprMutator):
    def __init__(self, regions: RegionSet, calls: dict):
        super().__init__()
        self.regions = regions
        self.calls = calls  # region id -> (gv, args, outs)
        self.made: dict[int, Call] = {}

    def visit_call(self, call):
        if is_annotation(call, END):
            r = self.regions.region_of(call)
            gv, args, outs = self.calls[r.id]
            res = self.made.get(r.id)
            if res is None:
                res = self.made[r.id] = Call(gv, [self.visit(a) for a in args])
            if len(outs) == 1:
                return res
            return TupleGetItem(res, [id(o) for o in outs].index(id(call.args[0])))
        return super().visit_call(call)

    def _visit_dataflow(self, root):
        # a compiler_end waits only for its region's inputs, never walks into the region
        memo = self.memo_map
        stack = [root]
        entered: set = set()  # expanded, waiting for their inputs: the current path
        while stack:
            node = stack[-1]
            if node in memo:
                stack.pop()
                continue
            if is_annotation(node, END):
                kids = self.calls[self.regions.region_of(node).id][1]
            else:
                kids = dataflow_children(node)
            pending = [c for c in kids if type(c) in _DATAFLOW and c not in memo]
            if pending:
                if node in entered or any(c in entered for c in pending):
                    raise ValueError(
                        "PartitionGraph: the annotated regions form a cycle (a region needs "
                        "a value computed from its own output, e.g. through an If outside the "
                        "region); annotate so that every region is a contiguous piece of "
                        "dataflow")
                entered.add(node)
                stack.extend(reversed(pending))
                continue
            stack.pop()
            memo[node] = getattr(self, _method_name(type(node)))(node)


def partition_graph(mod, mod_name: str = "default"):
    """A copy of ``mod`` with every non-default annotated region outlined (see module doc)."""
    mod = mod.shallow_copy()
    for gv, func in list(mod.functions.items()):
        if isinstance(func, Function) and func.get_attr("Compiler") is None:
            body = _RemoveDefault().visit(func.body)
            if body is not func.body:
                mod.update_func(gv, func.with_fields(body=body))
    mod = infer_type_module(mod)
    new = mod.shallow_copy()
    counter = 0
    taken = {gv.name_hint for gv in mod.functions}
    for gv, func in list(mod.functions.items()):
        if not isinstance(func, Function) or func.get_attr("Compiler") is not None:
            continue
        regions = RegionSet(func.body)
        if not regions.regions:
            continue
        calls = {}
        for r in regions.regions:
            name = f"tvmgen_{mod_name}_{r.target}_main_{counter}"
            while name in taken:
                counter += 1
                name = f"tvmgen_{mod_name}_{r.target}_main_{counter}"
            counter += 1
            taken.add(name)
            fn, args, outs = _region_function(r, name)
            ext = GlobalVar(name)
            new[ext] = fn
            calls[r.id] = (ext, args, outs)
        out = _Partitioner(regions, calls).visit(func.body)
        new.update_func(gv, Function(func.params, out, func.ret_type, func.type_params,
                                     func.attrs, func.span))
    return infer_type_module(new)


@register("PartitionGraph")
def PartitionGraph(mod_name: str = "default", bind_constants: bool = True):  # noqa: N802
    """Partition annotated regions into external functions (module pass, opt 0).

    Parameters
    ----------
    mod_name : str
        Used in the names of the external functions (``tvmgen_<mod_name>_<compiler>_main_<n>``).
    bind_constants : bool
        Constants entering a region stay inside its function (the only mode supported).
    """
    if not bind_constants:
        raise ValueError("PartitionGraph(bind_constants=False) is not supported: constants "
                         "entering a region are always bound into its function")
    return make_module_pass(lambda m, c: partition_graph(m, mod_name), opt_level=0,
                            name="PartitionGraph")
