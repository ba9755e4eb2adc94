"""ONNX control flow on Relax, resolved at import (``frontend_common.onnx_control``): an
``If`` whose condition is known takes one branch, a ``Loop`` with a known trip count or
condition is unrolled. Otherwise control flow goes into private Relax functions called from
``main`` (keeping it out of the dataflow block): an ``If`` becomes a function holding a Relax
``If``, a ``Loop`` a recursive function."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_control import (
    check_tensors_carried,
    import_loop,
    known_branch,
    loop_parts,
    unroll_loop,
)
from ....frontend_common.onnx_sequence import OnnxOptional, OnnxSequence, flatten, unflatten_all
from ....ir.module import GlobalVar
from ....ir.prim_expr import PrimExpr
from ....tir import IntImm
from ....tir import Var as TirVar
from ... import op as _op
from ...block_builder import BlockBuilder
from ...expr import Call, If, SeqExpr, ShapeExpr, Tuple, TupleGetItem, Var, const
from ...struct_info import FuncStructInfo, TensorStructInfo, TupleStructInfo
from .context import Context, NeedsConstantInput, ONNXImportError, is_known, register


@register("If")
def _if(ctx: Context, ins, attrs):
    known = ctx.known(ins[0])
    if known is not None:
        return known_branch(ctx, known, attrs)
    try:
        outs = _run_time_if(ctx, ins[0], attrs)
        why = "the branches give values of different types"
    except ONNXImportError as e:  # a branch that needs its inputs known at import
        outs, why = None, f"a branch cannot run at run time: {e}"
    if outs is not None:
        return outs
    known = ctx.value(ins[0], f"If's condition ({why}, so the branch must be taken at "
                              "import)")
    return known_branch(ctx, known, attrs)


def _fresh_global(ctx: Context, hint: str) -> str:
    """A function name not yet used in the module being built."""
    return ctx.root_bb._global_names.fresh(hint)


def _captured(ctx: Context, graphs) -> tuple[list, list]:
    """(ONNX names, values) of the tensors the subgraphs read from enclosing scopes that are
    not known at import: they become parameters of the function the subgraphs turn into."""
    scope = ctx.scope()
    names, args = [], []
    for g in graphs:
        for name in _outer_names(g):
            v = scope.get(name)
            if name in names or v is None or is_known(v):
                continue
            if isinstance(v, OnnxSequence | OnnxOptional):
                raise ctx.fail(f"the subgraph reads the sequence or optional {name!r} from the "
                               "enclosing graph; a run-time subgraph must read tensors")
            names.append(name)
            args.append(ctx.expr(v))
    return names, args


def _run_time_if(ctx: Context, cond, attrs):
    """An If whose condition is only known at run time: a private Relax function
    ``f(cond, captured...)`` holding a Relax ``If`` (control flow stays out of the dataflow
    block of ``main``). None when the branches' outputs differ in type."""
    names, args = _captured(ctx, [attrs["then_branch"], attrs["else_branch"]])
    c = _scalar_var("cond", "bool")
    ev = [Var(f"outer{k}", a.struct_info) for k, a in enumerate(args)]
    binds = dict(zip(names, ev))
    saved_bb = ctx.bb
    fbb = BlockBuilder()
    try:
        with fbb.function("onnx_if", [c] + ev, private=True):
            ctx.bb = fbb
            sides = []
            for key in ("then_branch", "else_branch"):
                fbb.begin_binding_block()
                structures, leaves = [], []
                for v in ctx.subgraph(attrs[key], binds):
                    structure, ls = flatten(v)
                    structures.append((structure, len(ls)))
                    leaves += [ctx.expr(x) for x in ls]
                res = fbb.emit(Tuple(leaves))
                sides.append((structures, leaves, SeqExpr([fbb.end_block()], res)))
            (s_then, l_then, then), (s_else, l_else, other) = sides
            if s_then != s_else or len(l_then) != len(l_else) or not all(
                    _same_tensor_sinfo(a.struct_info, b.struct_info)
                    for a, b in zip(l_then, l_else)):
                fbb.emit_func_output(Tuple([]))
                return None
            result = fbb.emit(If(c, then, other))
            fgv = fbb.emit_func_output(result)
        func = fbb.get()[fgv]
    finally:
        ctx.bb = saved_bb
    gv = GlobalVar(_fresh_global(ctx, "onnx_if"))
    gv._checked_type = FuncStructInfo([p.struct_info for p in [c] + ev],
                                      TupleStructInfo([v.struct_info for v in l_then]))
    ctx.root_bb.update_func(gv, func)
    flag = ctx.emit(_op.astype(_op.reshape(ctx.expr(cond), ShapeExpr([])), "bool"))
    res = ctx.emit(Call(gv, [flag] + args))
    leaves = [ctx.emit(TupleGetItem(res, k)) for k in range(len(l_then))]
    return unflatten_all(s_then, leaves)


def _stack(ctx: Context, values):
    return ctx.emit(_op.concat([ctx.emit(_op.expand_dims(ctx.expr(v), 0)) for v in values], 0))


def _static(k) -> bool:
    """A value known at import as numbers (not a symbolic dim such as the batch size)."""
    return k is not None and k.dtype != object


@register("Loop")
def _loop(ctx: Context, ins, attrs):
    return import_loop(
        ctx, ins, attrs, known=lambda v: _static(ctx.known(v)),
        unroll=lambda: unroll_loop(ctx, ins, attrs, value=ctx.value, maybe_value=ctx.known,
                                   const=lambda a: a, stack=lambda vs: _stack(ctx, vs)),
        run_time_loop=lambda: _run_time_loop(ctx, ins, attrs), needs_input=NeedsConstantInput)


def _outer_names(body) -> list[str]:
    """The names a loop body (and the subgraphs inside it) reads from enclosing scopes, in
    first-use order; an explicit stack over the nested graphs."""
    defined, used = set(), []
    stack = [body]
    while stack:
        g = stack.pop()
        defined.update(vi.name for vi in g.input)
        defined.update(t.name for t in g.initializer)
        for n in g.node:
            used.extend(i for i in n.input if i)
            defined.update(o for o in n.output if o)
            for a in n.attribute:
                if a.type == a.GRAPH:
                    stack.append(a.g)
                elif a.type == a.GRAPHS:
                    stack.extend(a.graphs)
        used.extend(o.name for o in g.output)
    seen, out = set(), []
    for name in used:
        if name not in defined and name not in seen:
            seen.add(name)
            out.append(name)
    return out


def _scalar_var(name: str, dtype: str) -> Var:
    return Var(name, TensorStructInfo([], dtype))


def _run_time_loop(ctx: Context, ins, attrs):
    """An ONNX Loop whose trip count or condition is only known at run time: a private
    recursive Relax function ``f(iter, cond, carried..., scans..., captured...)`` that, while
    ``iter < M and cond``, runs the body and calls itself (the Relax VM runs the recursion
    without Python recursion); scan outputs grow along a symbolic first axis."""
    body, m, cond, carried, formal, ns = loop_parts(ctx, ins, attrs)
    nc = len(carried)
    check_tensors_carried(ctx, carried)
    carried = [ctx.expr(v) for v in carried]
    # outer values the body reads become extra parameters (a Relax function closes over
    # nothing); values known at import stay constants
    captured_names, captured_args = _captured(ctx, [body])
    trip = None if m is None else ctx.emit(_op.astype(_op.reshape(ctx.expr(m), ShapeExpr([])),
                                                      "int64"))
    go0 = const(np.array(True)) if cond is None else \
        ctx.emit(_op.astype(_op.reshape(ctx.expr(cond), ShapeExpr([])), "bool"))
    extra = ([trip] if trip is not None else []) + captured_args

    def params_for(acc_sinfos):
        it, go = _scalar_var("iter", "int64"), _scalar_var("cond", "bool")
        cv = [Var(f"carried{k}", v.struct_info) for k, v in enumerate(carried)]
        av = [Var(f"scan{k}", s) for k, s in enumerate(acc_sinfos)]
        ev = [Var(f"outer{k}", a.struct_info) for k, a in enumerate(extra)]
        return it, go, cv, av, ev

    # a first conversion of the body, in a scratch function, gives the scan outputs' types
    saved_bb, saved_root = ctx.bb, ctx.root_bb
    try:
        probe_bb = BlockBuilder()
        ctx.root_bb = probe_bb  # functions the probe makes are dropped with it
        it, go, cv, _, ev = params_for([])
        with probe_bb.function("probe", [it, go] + cv + ev, private=True):
            ctx.bb = probe_bb
            outs = ctx.subgraph(body, _bindings(formal, captured_names, it, go, cv, ev,
                                                trip is not None))
            stays_true = _is_true(ctx, outs[0]) or outs[0] is go
            scan_sinfo = [ctx.expr(v).struct_info for v in outs[1 + nc:]]
            carried_sinfo = [ctx.expr(v).struct_info for v in outs[1:1 + nc]]
            probe_bb.emit_func_output(Tuple([]))
        ctx.root_bb = saved_root
        for k, (before, after) in enumerate(zip(cv, carried_sinfo)):
            if not _same_tensor_sinfo(before.struct_info, after):
                raise ctx.fail(f"loop-carried value {k} changes from {before.struct_info} to "
                               f"{after} in the body; with a run-time trip count its type "
                               "must stay the same")
        for k, si in enumerate(scan_sinfo):
            if not isinstance(si, TensorStructInfo) or si.shape is None or \
                    not all(isinstance(d, int) for d in ctx.shape(_probe_value(si))):
                raise ctx.fail(f"scan output {k} has {si}; with a run-time trip count scan "
                               "outputs need static shapes")
        elem = [list(ctx.shape(_probe_value(si))) for si in scan_sinfo]
        acc_param = [TensorStructInfo([TirVar(f"n{k}", "int64")] + e, si.dtype)
                     for k, (e, si) in enumerate(zip(elem, scan_sinfo))]
        acc_ret = [TensorStructInfo(None, si.dtype, ndim=len(e) + 1)
                   for e, si in zip(elem, scan_sinfo)]
        it, go, cv, av, ev = params_for(acc_param)
        ret = TupleStructInfo([it.struct_info, go.struct_info] + [v.struct_info for v in cv]
                              + acc_ret)
        gv = GlobalVar(_fresh_global(ctx, "onnx_loop"))
        gv._checked_type = FuncStructInfo([p.struct_info for p in [it, go] + cv + av + ev], ret)
        fbb = BlockBuilder()
        with fbb.function("onnx_loop", [it, go] + cv + av + ev, private=True):
            ctx.bb = fbb
            test = go if trip is None else \
                fbb.emit(_op.logical_and(_op.less(it, ev[0]), go))
            fbb.begin_binding_block()
            outs = ctx.subgraph(body, _bindings(formal, captured_names, it, go, cv, ev,
                                                trip is not None))
            nxt = [ctx.emit(_op.add(it, const(np.array(1, "int64")))),
                   ctx.emit(_op.astype(_op.reshape(ctx.expr(outs[0]), ShapeExpr([])), "bool"))]
            nxt += [ctx.expr(v) for v in outs[1:1 + nc]]
            nxt += [ctx.emit(_op.concat([a, _op.expand_dims(ctx.expr(v), 0)], 0))
                    for a, v in zip(av, outs[1 + nc:])]
            again = fbb.emit(Call(gv, nxt + ev))
            then = SeqExpr([fbb.end_block()], again)
            done = SeqExpr([], Tuple([it, go] + cv + av))
            result = fbb.emit(If(test, then, done))
            fgv = fbb.emit_func_output(result)
        func = fbb.get()[fgv]
    finally:
        ctx.bb, ctx.root_bb = saved_bb, saved_root
    ctx.root_bb.update_func(gv, func)
    init = [ctx.emit(_op.zeros(ctx.shape_expr([0] + e), si.dtype))
            for e, si in zip(elem, scan_sinfo)]
    res = ctx.emit(Call(gv, [const(np.array(0, "int64")), go0] + carried + init + extra))
    outs = [ctx.emit(TupleGetItem(res, 2 + k)) for k in range(nc)]
    # a loop whose condition starts and stays true runs its trip count: when that is a known
    # (symbolic) value such as the batch size, the scan outputs have that length, so they
    # line up with other tensors of the batch
    known_m = None if m is None else ctx.known(m)
    runs_m = known_m is not None and known_m.size == 1 and stays_true and \
        (cond is None or _is_true(ctx, cond))
    for k, e in enumerate(elem):
        acc = ctx.emit(TupleGetItem(res, 2 + nc + k))
        n = known_m.reshape(-1)[0] if runs_m else TirVar(f"loop_len{k}", "int64")
        n = n if isinstance(n, PrimExpr) else IntImm("int64", int(n))
        outs.append(ctx.bb.match_cast(acc, TensorStructInfo([n] + e, scan_sinfo[k].dtype)))
    return outs


def _is_true(ctx: Context, v) -> bool:
    k = ctx.known(v) if v is not None else None
    return k is not None and k.dtype != object and k.size == 1 and bool(k.reshape(-1)[0])


def _bindings(formal, captured_names, it, go, cv, ev, has_trip: bool) -> dict:
    binds = dict(zip(formal, [it, go] + cv))
    binds.update(zip(captured_names, ev[1:] if has_trip else ev))
    return binds


def _probe_value(sinfo):
    return Var("probe", sinfo)


def _same_tensor_sinfo(a, b) -> bool:
    if not isinstance(a, TensorStructInfo) or not isinstance(b, TensorStructInfo):
        return False
    if a.dtype != b.dtype or a.ndim != b.ndim or a.shape is None or b.shape is None:
        return False
    return all(str(x) == str(y) for x, y in zip(a.shape.values, b.shape.values))
