"""ONNX RNN / GRU / LSTM over a sequence whose length is known at run time only, on Relax: per
direction, the input projection of every step in one product in ``main``, then a private
recursive Relax function taking one step a call (the Relax VM runs the recursion in a list of
frames, not on Python's stack). A step reads its row of the projection by the step's index and
writes its output into that row of a ``[seq, batch, H]`` result made once before the loop, in
place (``R.call_inplace_packed("vm.builtin.update_row", ...)``: O(batch * H) a step, where a
concatenation would copy the rows so far). One build runs any length and any batch."""

from __future__ import annotations

import numpy as np

from ....frontend_common.onnx_rnn import (
    RowStep,
    direction_cell,
    direction_params,
    gate_width,
    weights_input_size,
)
from ....ir.module import GlobalVar
from ....tir import Var as TirVar
from ... import op as _op
from ...block_builder import BlockBuilder
from ...expr import Call, If, SeqExpr, Tuple, TupleGetItem, Var, const
from ...op.call_inplace import call_inplace_packed
from ...struct_info import FuncStructInfo, TensorStructInfo, TupleStructInfo
from .context import Context

__all__ = ["recurrent_loop", "run_time_reverse"]

UPDATE_ROW = "vm.builtin.update_row"


def _scalar(name: str, dtype: str) -> Var:
    return Var(name, TensorStructInfo([], dtype))


def run_time_reverse(ctx: Context, x, lens):
    """``x`` ``[seq, batch, ...]`` with each batch entry's first ``lens[b]`` steps reversed
    (ONNX's reverse direction), lengths known at run time: a gather along the steps of the
    indices ``where(t < len, len - 1 - t, t)``."""
    emit = ctx.emit
    if lens is None:
        return emit(_op.flip(ctx.expr(x), 0))
    shape = ctx.shape(x)
    steps = emit(_op.arange(0, shape[0], 1, "int64"))  # (the symbolic length)
    t = emit(_op.expand_dims(steps, 1))  # [seq, 1]
    ln = emit(_op.expand_dims(emit(_op.astype(ctx.expr(lens), "int64")), 0))  # [1, batch]
    src = emit(_op.where(emit(_op.less(t, ln)),
                         emit(_op.subtract(emit(_op.subtract(ln, const(np.array(1, "int64")))),
                                           t)), t))
    for _ in shape[2:]:
        src = emit(_op.expand_dims(src, -1))
    src = emit(_op.broadcast_to(src, ctx.shape_expr(shape)))
    return emit(_op.gather_elements(ctx.expr(x), src, 0))


def recurrent_loop(ctx: Context, spec, ops, x, w, r, b=None, lens=None, h0=None, c0=None,
                   p=None) -> tuple:
    """``(Y, Y_h, Y_c)`` of an ONNX RNN / GRU / LSTM node whose sequence length is symbolic.
    ``ops`` is the importer's ``RelaxRecurrentOps``; arguments and results as
    ``onnx_rnn.unroll``'s. The batch may be symbolic; so may the input size when ``W`` fixes
    it (``x`` is then match-cast to it: an input of another size fails at run time, naming
    it)."""
    emit = ctx.emit
    x = ctx.expr(x)
    if spec.layout:
        x = emit(_op.permute_dims(x, [1, 0, 2]))
    seq, batch, width = ctx.shape(x)
    if not isinstance(width, int):
        fixed = weights_input_size(ops, w)
        if fixed is None:
            raise ctx.fail(f"a {spec.kind} over a run-time sequence length needs a static "
                           f"input size (of the input or of its weights W), got "
                           f"{ctx.shape(x)}")
        x = ctx.bb.match_cast(x, TensorStructInfo([seq, batch, fixed], ops.dtype))
        width = fixed
    hid, gates, dtype = spec.hidden, gate_width(spec), ops.dtype
    lstm = spec.kind == "LSTM"
    state_axis = 1 if spec.layout else 0
    length = emit(_op.take(emit(_op.shape_to_tensor(ctx.shape_expr([seq, batch, width]))),
                           const(np.array(0, "int64")), 0))
    lens_arg = emit(_op.astype(ctx.expr(lens), "int64")) if lens is not None else None
    ys_all, hs, cs = [], [], []
    for d, direction in enumerate(spec.directions):
        w_d, r_d, wb, rb, p_d = direction_params(spec, ops, d, w, r, b, p)
        reverse = direction == "reverse"
        xs = run_time_reverse(ctx, x, lens) if reverse else x
        # (the projection of the [seq, batch, width] input as it is: [seq, batch, G*H])
        xw, cell = direction_cell(spec, ops, d, xs, w_d, r_d, wb, rb, p_d)
        zeros = ops.zeros((batch, hid))
        h = ops.take(h0, d, state_axis) if h0 is not None else zeros
        c = ops.take(c0, d, state_axis) if c0 is not None and lstm else zeros
        init = [ctx.expr(h)] + ([ctx.expr(c)] if lstm else [])
        ys0 = emit(_op.zeros(ctx.shape_expr([seq, batch, hid]), dtype))  # (fresh each run)
        res = _loop(ctx, spec, ops, cell, ctx.expr(xw), length, init, ys0, lens_arg,
                    batch, gates)
        ys = emit(TupleGetItem(res, len(init)))
        ys = ctx.bb.match_cast(ys, TensorStructInfo([seq, batch, hid], dtype))
        if reverse:
            ys = run_time_reverse(ctx, ys, lens)
        ys_all.append(emit(_op.expand_dims(ys, 1)))
        hs.append(emit(_op.expand_dims(emit(TupleGetItem(res, 0)), state_axis)))
        if lstm:
            cs.append(emit(_op.expand_dims(emit(TupleGetItem(res, 1)), state_axis)))
    y = emit(_op.concat(ys_all, 1)) if len(ys_all) > 1 else ys_all[0]  # [seq, dirs, batch, H]
    if spec.layout:
        y = emit(_op.permute_dims(y, [2, 0, 1, 3]))
    y_h = emit(_op.concat(hs, state_axis)) if len(hs) > 1 else hs[0]
    y_c = (emit(_op.concat(cs, state_axis)) if len(cs) > 1 else cs[0]) if lstm else None
    return y, y_h, y_c


def _loop(ctx: Context, spec, ops, cell, xw, length, init: list, ys0, lens, batch, gates: int):
    """Call a new private recursive function ``f(t, n, xw, h[, c], ys[, lens])``: while
    ``t < n`` one step, else ``(h[, c], ys)``; returns the call's tuple."""
    dtype, hid = ops.dtype, spec.hidden
    rows = batch if isinstance(batch, int) else TirVar("batch", "int64")
    n_sym = TirVar("steps", "int64")
    t, n = _scalar("t", "int64"), _scalar("n", "int64")
    xw_v = Var("xw", TensorStructInfo([n_sym, rows, gates], dtype))
    states = [Var(name, TensorStructInfo([rows, hid], dtype))
              for name in (["h", "c"][:len(init)])]
    ys = Var("ys", TensorStructInfo([n_sym, rows, hid], dtype))
    extra = [Var("lens", TensorStructInfo([rows], "int64"))] if lens is not None else []
    params = [t, n, xw_v, *states, ys, *extra]
    ret = TupleStructInfo([s.struct_info for s in states] + [ys.struct_info])
    gv = GlobalVar(ctx.root_bb._global_names.fresh(f"onnx_{spec.kind.lower()}_loop"))
    gv._checked_type = FuncStructInfo([v.struct_info for v in params], ret)
    saved_bb = ctx.bb
    fbb = BlockBuilder()
    try:
        with fbb.function(gv.name_hint, params, private=True):
            ctx.bb = fbb
            go = fbb.emit(_op.less(t, n))
            fbb.begin_dataflow_block()  # (a step's ops in a dataflow block: fused)
            mask = None
            if extra:
                mask = ctx.emit(_op.expand_dims(ctx.emit(_op.less(t, extra[0])), 1))
            row = ctx.emit(_op.take(xw_v, t, 0))
            h, c = states[0], (states[1] if len(states) > 1 else None)
            y, h_new, c_new = cell(RowStep(spec, ops, row, rows), None, h, c, mask)
            ys_new = ctx.emit(call_inplace_packed(UPDATE_ROW, ys, ctx.expr(y), t,
                                                  inplace_indices=[0],
                                                  sinfo_args=ys.struct_info))
            nxt = [ctx.emit(_op.add(t, const(np.array(1, "int64")))), n, xw_v, ctx.expr(h_new)]
            nxt += [ctx.expr(c_new)] if c is not None else []
            nxt = [v if any(v is q for q in params) else fbb.emit_output(v)
                   for v in nxt + [ys_new]]
            step = fbb.end_block()
            fbb.begin_binding_block()
            again = fbb.emit(Call(gv, nxt + extra))
            then = SeqExpr([step, fbb.end_block()], again)
            done = SeqExpr([], Tuple([*states, ys]))
            fgv = fbb.emit_func_output(fbb.emit(If(go, then, done)))
        func = fbb.get()[fgv]
    finally:
        ctx.bb = saved_bb
    ctx.root_bb.update_func(gv, func)
    start = const(np.array(0, "int64"))
    return ctx.emit(Call(gv, [start, length, xw, *init, ys0] + ([lens] if lens is not None else [])))
