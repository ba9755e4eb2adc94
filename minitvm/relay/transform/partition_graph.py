"""PartitionGraph: turn each annotated region into a global function for its external compiler.

TVM's pipeline, step by step: a ``compiler_end`` around a tuple becomes a tuple of
``compiler_end``s (FlattenTupleOutputs); ``default`` annotations are dropped; every other region
of a function ``@f`` becomes ``@tvmgen_<mod_name>_<compiler>_<f>_<region id>`` (non-alphanumeric
characters made ``_``) with the attributes ``Primitive=1``, ``Inline=1``, ``Compiler=<compiler>``
and ``global_symbol=<its name>``. Region ids are TVM's: every ``compiler_begin`` opens a region
numbered in post-order, and a node joins the region of its first open input, absorbing the
others. The function's parameters are the region's inputs in the order TVM's partitioner meets
them (post-order from the outputs), one per distinct input; constants are bound into the
function unless ``bind_constants=False``; its result is the region's output, or a tuple of its
distinct outputs. A registered ``relay.ext.<compiler>.optimize`` function is applied to it.
"""

from __future__ import annotations

import re

from ...ir.attrs import DictAttrs
from ...ir.expr import GlobalVar
from ...ir.module import IRModule
from ...ir.prim_expr import IntImm
from ..expr import Call, Constant, Function, Tuple, TupleGetItem, Var, bind
from ..expr_functor import ExprMutator, _method_name, dataflow_children, dataflow_worklist
from ._annotated_regions import BEGIN, END, RegionSet, _inputs, is_annotation
from ._pass_helpers import make_module_pass, register
from .infer_type import infer_type_module

__all__ = ["PartitionGraph", "partition_graph"]


class _RemoveDefault(ExprMutator):
    def visit_call(self, call):
        if (is_annotation(call, BEGIN) or is_annotation(call, END)) and \
                str(call.attrs.compiler) == "default":
            return self.visit(call.args[0])
        return super().visit_call(call)


class _FlattenTupleOutputs(ExprMutator):
    """``compiler_end(Tuple(a, b))`` -> ``Tuple(compiler_end(a), compiler_end(b))`` (TVM)."""

    def visit_call(self, call):
        new = super().visit_call(call)
        if is_annotation(new, END) and isinstance(new.args[0], Tuple):
            tup = new.args[0]
            return Tuple([Call(new.op, [f], new.attrs) for f in tup.fields], tup.span)
        return new


def sanitize_name(name: str) -> str:
    """TVM's SanitizeName: every character that is not a letter or digit becomes ``_``."""
    return re.sub(r"[^A-Za-z0-9]", "_", name)


def _tvm_region_ids(regions: RegionSet) -> dict[int, int]:
    """Our region id -> TVM's (AnnotatedRegionSet's creation order with its merges)."""
    parent: dict[int, int] = {}
    of: dict[int, int] = {}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for e in regions.order:
        if is_annotation(e, BEGIN):
            parent[len(parent)] = len(parent)
            of[id(e)] = len(parent) - 1
        elif is_annotation(e, END):
            if id(e.args[0]) in of:
                of[id(e)] = of[id(e.args[0])]
        else:
            open_ins = [of[id(a)] for a in _inputs(e) if id(a) in of and not is_annotation(a, END)]
            if open_ins:
                dest = find(open_ins[0])
                for s in open_ins[1:]:
                    s = find(s)
                    if s != dest:
                        parent[s] = dest  # TVM merges the later region into the first
                of[id(e)] = dest
    return {r.id: find(of[id(r.ins[0])]) for r in regions.regions if r.ins}


def _strip_annotations(e):
    """The expression a compiler_begin reads, past any chain of begin/end annotations."""
    while is_annotation(e, BEGIN) or is_annotation(e, END):
        e = e.args[0]
    return e


def _distinct_outputs(region) -> list:
    outs, seen = [], set()
    for e in region.outs:
        if id(e.args[0]) not in seen:
            seen.add(id(e.args[0]))
            outs.append(e.args[0])
    return outs


def _region_inputs(region, outs: list) -> list:
    """The region's begins in the order TVM's partitioner visits them: post-order from each
    output in turn, not walking past a begin."""
    members = {id(n) for n in region.nodes}
    order, seen = [], set()
    for root in outs:
        stack = [(root, False)]
        while stack:
            e, ready = stack.pop()
            if ready:
                if is_annotation(e, BEGIN):
                    order.append(e)
                continue
            if id(e) in seen or id(e) not in members:
                continue
            seen.add(id(e))
            stack.append((e, True))
            if not is_annotation(e, BEGIN):
                stack.extend((c, False) for c in reversed(_inputs(e)))
    return order


def _region_function(region, tid: int, name: str, bind_constants: bool):
    """The external function of ``region``: (function, call arguments, distinct outputs)."""
    outs = _distinct_outputs(region)
    params, args, env, by_source, binds = [], [], {}, {}, {}
    for b in _region_inputs(region, outs):
        src = _strip_annotations(b.args[0])
        v = by_source.get(id(src))
        if v is None:
            v = Var(f"{region.target}_{tid}_i{region.ins.index(b)}", b.checked_type)
            by_source[id(src)] = v
            params.append(v)
            if bind_constants and isinstance(b.args[0], Constant):
                binds[v] = b.args[0]
            else:
                args.append(b.args[0])
        env[id(b)] = v
    members = {id(n) for n in region.nodes}
    for e in region.nodes:  # region nodes come in post order: operands first
        if id(e) in env or is_annotation(e, END):
            continue
        env[id(e)] = _rebuild(e, env, members)
    body = env[id(outs[0])] if len(outs) == 1 else Tuple([env[id(o)] for o in outs])
    fn = Function(params, body)
    if binds:
        fn = bind(fn, binds)
    return fn, args, outs


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


def _finish(fn: Function, target: str, name: str) -> Function:
    """Apply ``relay.ext.<target>.optimize`` when registered, then TVM's attributes."""
    from ...runtime.registry import get_global_func

    opt = get_global_func(f"relay.ext.{target}.optimize", allow_missing=True)
    if opt is not None:
        fn = opt(infer_type_module(IRModule.from_expr(fn)))["main"]
    attrs = dict(fn.attrs.items()) if fn.attrs is not None else {}
    attrs.update({"Primitive": IntImm("int32", 1), "Inline": IntImm("int32", 1),
                  "Compiler": target, "global_symbol": name})
    return Function(fn.params, fn.body, fn.ret_type, fn.type_params, DictAttrs(attrs), fn.span)


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
        def children(node):
            if is_annotation(node, END):
                return self.calls[self.regions.region_of(node).id][1]
            return dataflow_children(node)

        dataflow_worklist(
            self.memo_map, root, lambda node: getattr(self, _method_name(type(node)))(node),
            children, cycle_error=_REGION_CYCLE)


_REGION_CYCLE = ("PartitionGraph: the annotated regions form a cycle (a region needs a value "
                 "computed from its own output, e.g. through an If outside the region); "
                 "annotate so that every region is a contiguous piece of dataflow")


def _fresh(name: str, taken: set) -> str:
    out, n = name, 0
    while out in taken:
        n += 1
        out = f"{name}_{n}"
    taken.add(out)
    return out


def partition_graph(mod, mod_name: str = "default", bind_constants: bool = True):
    """A copy of ``mod`` with every non-default annotated region outlined (see module doc)."""
    mod = mod.shallow_copy()
    for gv, func in list(mod.functions.items()):
        if isinstance(func, Function) and func.get_attr("Compiler") is None:
            body = _RemoveDefault().visit(_FlattenTupleOutputs().visit(func.body))
            if body is not func.body:
                mod.update_func(gv, func.with_fields(body=body))
    mod = infer_type_module(mod)
    new = mod.shallow_copy()
    prefix = "tvmgen_" + mod_name if mod_name else "tvmgen"
    taken = {gv.name_hint for gv in mod.functions}
    for gv, func in list(mod.functions.items()):
        if not isinstance(func, Function) or func.get_attr("Compiler") is not None:
            continue
        regions = RegionSet(func.body)
        if not regions.regions:
            continue
        tids = _tvm_region_ids(regions)
        calls = {}
        for r in regions.regions:
            if not r.outs:
                raise ValueError(f"PartitionGraph: a {r.target!r} region of @{gv.name_hint} has "
                                 "no compiler_end: its result would be lost")
            tid = tids[r.id]
            name = _fresh(sanitize_name(f"{prefix}_{r.target}_{gv.name_hint}_{tid}"), taken)
            fn, args, outs = _region_function(r, tid, name, bind_constants)
            ext = GlobalVar(name)
            new[ext] = _finish(fn, r.target, name)
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
        Used in the names of the external functions
        (``tvmgen_<mod_name>_<compiler>_<function>_<n>``).
    bind_constants : bool
        Whether constants entering a region are bound into its function (True) or passed to it
        as arguments (False).
    """
    return make_module_pass(lambda m, c: partition_graph(m, mod_name, bind_constants),
                            opt_level=0, name="PartitionGraph")
