"""ONNX control flow on Relay: If and Loop.

``If`` with a condition known at import converts only the branch taken; otherwise it becomes a
Relay ``If`` (run by the interpreter and the VM). ``Loop`` is unrolled at import when its trip
count and condition are known then (see ``frontend_common.onnx_control``); otherwise it
becomes a recursive local function (``relay.loops.while_loop``, as TVM's importer does), run by
the interpreter and the VM, its scan outputs growing along a dynamic (``?``) first axis."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_control import (
    check_tensors_carried,
    import_loop,
    known_branch,
    loop_parts,
    unroll_loop,
)
from ....frontend_common.onnx_sequence import flatten, unflatten_all
from ....ir.prim_expr import Any
from ....ir.type import TensorType
from ... import op as _op
from ...expr import Call, Function, If, Let, Tuple, TupleGetItem, Var
from ..common import infer_type
from .registry import Context, NeedsConstantInput, register


@register("If")
def _if(ctx: Context, ins, attrs):
    cond = ins[0]
    known = ctx.maybe_value(cond)
    if known is not None:
        return known_branch(ctx, known, attrs)
    then_out = ctx.subgraph(attrs["then_branch"], {})
    else_out = ctx.subgraph(attrs["else_branch"], {})
    if len(then_out) != len(else_out):
        raise ctx.fail(f"the branches produce {len(then_out)} and {len(else_out)} outputs")
    # sequences and optionals are flattened to their tensors; both branches must give the
    # same structure of same-typed tensors for a run-time condition
    structures, then_leaves, else_leaves = [], [], []
    for i, (a, b) in enumerate(zip(then_out, else_out)):
        (sa, la), (sb, lb) = flatten(a), flatten(b)
        same = sa == sb and all(ctx.shape(x) == ctx.shape(y) and ctx.dtype(x) == ctx.dtype(y)
                                for x, y in zip(la, lb))
        if not same:
            # the branches differ in type: the condition must be known at import
            known = ctx.value(cond, f"If's condition (output {i} differs between the branches "
                                    "in type, so the taken branch must be known at import)")
            return known_branch(ctx, known, attrs)
        structures.append((sa, len(la)))
        then_leaves += la
        else_leaves += lb
    c = _op.reshape(cond, ())
    if len(then_leaves) == 1:
        leaves = [If(c, then_leaves[0], else_leaves[0])]
    else:
        joined = If(c, Tuple(then_leaves), Tuple(else_leaves))
        leaves = [TupleGetItem(joined, i) for i in range(len(then_leaves))]
    return unflatten_all(structures, leaves)


@register("Loop")
def _loop(ctx: Context, ins, attrs):
    return import_loop(
        ctx, ins, attrs, known=lambda v: ctx.maybe_value(v) is not None,
        unroll=lambda: unroll_loop(ctx, ins, attrs, value=ctx.value,
                                   maybe_value=ctx.maybe_value, const=ctx.const,
                                   stack=lambda vs: _op.stack(vs, 0)),
        run_time_loop=lambda: _run_time_loop(ctx, ins, attrs), needs_input=NeedsConstantInput)


def _run_time_loop(ctx: Context, ins, attrs):
    """An ONNX Loop whose trip count or condition is only known at run time, as a recursive
    Relay function over (iteration, condition, carried values..., scan accumulators...)."""
    body, m, cond, carried, formal, n_scan = loop_parts(ctx, ins, attrs)
    n_carried = len(carried)
    check_tensors_carried(ctx, carried)
    i64 = "int64"
    trip = None if m is None else _op.cast(_op.reshape(m, ()), i64)
    go0 = ctx.const(np.array(True)) if cond is None else _op.reshape(cond, ())
    carried_types = [infer_type(v) for v in carried]
    # a first conversion of the body, on variables of the initial types, gives the types of
    # the scan outputs and tells which carried values change shape (those become dynamic)
    probe = _convert_body(ctx, body, formal, carried_types)
    for k in range(n_carried):
        got = infer_type(probe[1 + k])
        if got != carried_types[k]:
            carried_types[k] = _widen(carried_types[k], got, ctx, k)
    scan_types = [infer_type(v) for v in probe[1 + n_carried:]]
    for k, t in enumerate(scan_types):
        if not isinstance(t, TensorType) or not t.is_static():
            raise ctx.fail(f"scan output {k} has type {t}; with a run-time trip count scan "
                           "outputs need static shapes")
    acc_types = [TensorType((Any(),) + tuple(t.shape), t.dtype) for t in scan_types]
    it = Var("iter", TensorType((), i64))
    go = Var("cond", TensorType((), "bool"))
    vars_ = [Var(f"carried{k}", t) for k, t in enumerate(carried_types)]
    accs = [Var(f"scan{k}", t) for k, t in enumerate(acc_types)]
    outs = ctx.subgraph(body, dict(zip(formal, [it, go] + vars_)))
    nxt_go = _op.reshape(outs[0], ())
    nxt_acc = [_op.concatenate([a, _op.expand_dims(s, 0)], 0)
               for a, s in zip(accs, outs[1 + n_carried:])]
    test = go if trip is None else _op.logical_and(_op.less(it, trip), go)
    loop = Var("while_loop")
    step = Call(loop, [_op.add(it, ctx.const(np.array(1, i64))), nxt_go]
                + list(outs[1:1 + n_carried]) + nxt_acc)
    done = Tuple([it, go] + vars_ + accs)
    fn = Function([it, go] + vars_ + accs, If(test, step, done))
    init_acc = [_op.zeros((0,) + tuple(int(d) for d in t.shape), t.dtype) for t in scan_types]
    result = Let(loop, fn, Call(loop, [ctx.const(np.array(0, i64)), go0] + carried + init_acc))
    return [TupleGetItem(result, 2 + k) for k in range(n_carried + n_scan)]


def _convert_body(ctx: Context, body, formal: list, carried_types: list) -> list:
    probe_vars = [Var("iter", TensorType((), "int64")), Var("cond", TensorType((), "bool"))]
    probe_vars += [Var(f"carried{k}", t) for k, t in enumerate(carried_types)]
    return ctx.subgraph(body, dict(zip(formal, probe_vars)))


def _widen(before, after, ctx: Context, k: int):
    """The type of a carried value whose shape the body changes: the dims that change are
    dynamic."""
    if not isinstance(before, TensorType) or not isinstance(after, TensorType) or \
            before.dtype != after.dtype or len(before.shape) != len(after.shape):
        raise ctx.fail(f"loop-carried value {k} changes type in the body ({before} -> "
                       f"{after}); with a run-time trip count only its dims may change")
    return TensorType(tuple(a if str(a) == str(b) else Any()
                            for a, b in zip(before.shape, after.shape)), before.dtype)
