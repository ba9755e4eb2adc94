"""The machinery shared by AlterOpLayout and ConvertLayout (TVM's transform_layout.h): rewrite
calls into new layouts and insert ``layout_transform`` only where a consumer needs a layout its
producer doesn't have.

Every rewritten call yields a *temp* (value, old layout, new layout). Each op's
``FInferCorrectLayout`` rule (``relay/op/_layout_rules.py``) is asked twice: once with the old
layouts (what the call wanted before) and once with the new ones its producers give it (what it
wants now, possibly with new attrs). Inputs are transformed from what they are to what is wanted;
a call whose rule fails gets its inputs back in their old layouts. Temps flow through calls,
tuples and tuple projections; any other consumer sees the old layout ("realize"). Transforms of
the same value between the same layouts are shared.
"""

from __future__ import annotations

from ...ir.op import Op
from ...ir.type import TensorType, TupleType
from ..expr import Call, Tuple, TupleGetItem
from ..expr_functor import ExprMutator
from ..op import _image_layout_hooks as _image_hooks  # noqa: F401  (resize ConvertLayout hook)
from ..op._layout_rules import expand_primal, is_defined, rule_of
from ..op.layout import Layout
from ..op.vision import _layout_hooks as _vision_hooks  # noqa: F401  (roi ConvertLayout hooks)


class _Temp:
    """A value with the layout it had before the pass (``old``) and the one it has now."""

    __slots__ = ("value", "old", "new")

    def __init__(self, value, old=None, new=None):
        self.value = value
        self.old = old
        self.new = new


def _same(a: Layout | None, b: Layout | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and a == b)


def _is_scalar(expr) -> bool:
    """All dimensions 1 (TVM's IsScalar): broadcasts against any layout as it is."""
    t = expr._checked_type
    return isinstance(t, TensorType) and all(isinstance(d, int) and d == 1 for d in t.shape)


def _infer(rule, call, new_in, old_in, types):
    """(input layouts, output layouts, attrs), or None when any layout is undefined."""
    ins, outs, attrs = rule(call.attrs, new_in, old_in, types)
    ins = [Layout(lay) if isinstance(lay, str) else lay for lay in ins]
    outs = [Layout(lay) if isinstance(lay, str) else lay for lay in outs]
    if not all(is_defined(lay) for lay in ins + outs):
        return None
    return ins, outs, attrs if attrs is not None else call.attrs


class LayoutRewriter(ExprMutator):
    """Rewrites calls through ``make_call(call, attrs, args, tinfos)`` (the pass's
    CallWithNewLayouts: None keeps the op with ``attrs``); ``alter`` marks AlterOpLayout."""

    def __init__(self, make_call, alter: bool = False):
        super().__init__()
        self.make_call = make_call
        self.alter = alter
        self.temps: dict = {}  # original node -> _Temp, or list of _Temp (a tuple)
        self.transforms: dict = {}
        self.inserted = 0

    # -- transforms -------------------------------------------------------------------------
    def transform(self, raw, src: Layout | None, dst: Layout | None):
        """``raw`` (in ``src``) in ``dst``, memoized per (value, src, dst)."""
        if _same(src, dst):
            return raw
        if src is None or dst is None:
            raise ValueError("Cannot insert layout transform because there are undefined "
                             f"layouts ({src} -> {dst})")
        key = (raw, src.name, dst.name)
        out = self.transforms.get(key)
        if out is None:
            out = self.transforms[key] = self._transform_helper(raw, src, dst)
        return out

    def _transform_helper(self, raw, src: Layout, dst: Layout):
        from ..op.transform import expand_dims, layout_transform

        expr, new_src = raw, src
        if src.ndim_primal() < dst.ndim_primal():
            if _is_scalar(raw):
                return raw
            extra = dst.ndim_primal() - src.ndim_primal()
            new_src = expand_primal(src, dst)
            expr = expand_dims(expr, 0, extra)
            if new_src == dst:
                return expr
        self.inserted += 1
        return layout_transform(expr, new_src.name, dst.name)

    def realize(self, state):
        """The plain expression of a temp (back in its old layout) or a tuple of temps."""
        if isinstance(state, list):
            return Tuple([self.realize(s) for s in state])
        return self.transform(state.value, state.new, state.old)

    # -- states -----------------------------------------------------------------------------
    def _state(self, arg):
        state = self.temps.get(arg)
        return state if state is not None else _Temp(self.visit(arg))

    def visit_tuple(self, tup):
        states = [self._state(f) for f in tup.fields]
        self.temps[tup] = states
        fields = [self.realize(s) for s in states]
        if all(a is b for a, b in zip(fields, tup.fields)):
            return tup
        return Tuple(fields, tup.span)

    def visit_tuple_getitem(self, op):
        state = self.temps.get(op.tuple_value)
        if isinstance(state, list):  # a projection of a tuple of temps folds (ForwardRewrite)
            self.temps[op] = state[op.index]
            return self.realize(state[op.index])
        return super().visit_tuple_getitem(op)

    def visit_call(self, call):
        if not isinstance(call.op, Op):
            return super().visit_call(call)
        states = [self._state(a) for a in call.args]
        out = self._rewrite(call, states)
        if out is None:  # the fallback: inputs back in their old layouts
            args = [self.realize(s) for s in states]
            if all(a is b for a, b in zip(args, call.args)):
                return call
            return Call(call.op, args, call.attrs, call.type_args, call.span)
        if isinstance(out, (list, _Temp)):
            self.temps[call] = out
            return self.realize(out)
        return out

    # -- TVM's LayoutRewriter -----------------------------------------------------------------
    def _rewrite(self, ref, states):
        inputs, normal_args = [], []
        for s in states:
            if isinstance(s, list):
                inputs.extend(s)
                normal_args.append(Tuple([x.value for x in s]))
            else:
                inputs.append(s)
                normal_args.append(s.value)
        rule = rule_of(ref.op)
        if rule is None and ref.op.get_attr("FTVMAlterOpLayout") is not None:
            return self.make_call(ref, ref.attrs, normal_args)  # as TVM: no layouts tracked
        if rule is None:
            return None
        types = [a._checked_type for a in ref.args]
        if not all(isinstance(t, (TensorType, TupleType)) for t in types):
            return None
        old_prd = [s.old for s in inputs]
        new_prd = [s.new for s in inputs]
        first = _infer(rule, ref, None, old_prd, types)
        if first is None:
            return None
        old_cur, old_out, attrs1 = first
        if len(old_cur) != len(new_prd):
            return None
        new_prd_inf = [n if n is not None else c for n, c in zip(new_prd, old_cur)]
        old_prd_inf = [o if o is not None else c for o, c in zip(old_prd, old_cur)]
        new_call = self.make_call(ref, attrs1, normal_args)
        if not isinstance(new_call, Call) or not isinstance(new_call.op, Op):
            return None
        rule2 = rule_of(new_call.op)
        if rule2 is None:
            return None
        second = _infer(rule2, new_call, new_prd_inf, old_prd_inf, types)
        if second is None:
            return None
        new_cur, new_out, attrs2 = second
        if len(new_out) != len(old_out) or len(new_cur) != len(new_prd):
            raise ValueError(f"{ref.op.name}: the number of input/output layouts changed while "
                             "altering its layout")
        pos = 0
        args = []
        for arg in new_call.args:
            if type(arg) is Tuple:
                fields = []
                for f in arg.fields:
                    fields.append(self._fit(f, old_prd[pos], old_cur[pos], new_prd[pos],
                                            new_cur[pos]))
                    pos += 1
                args.append(Tuple(fields, arg.span))
            else:
                args.append(self._fit(arg, old_prd[pos], old_cur[pos], new_prd[pos],
                                      new_cur[pos]))
                pos += 1
        if isinstance(ref._checked_type, TupleType):
            value = Call(new_call.op, args, attrs2, None, ref.span)
            return [_Temp(TupleGetItem(value, i), o, n)
                    for i, (o, n) in enumerate(zip(old_out, new_out))]
        return _Temp(Call(new_call.op, args, attrs2, None, ref.span), old_out[0], new_out[0])

    def _fit(self, arg, old_prd, old_cur, new_prd, new_cur):
        if _same(old_cur, old_prd):  # the two transforms fuse into one
            return self.transform(arg, new_prd, new_cur)
        if old_prd is not None:
            arg = self.transform(arg, new_prd, old_prd)
        return self.transform(arg, old_cur, new_cur)
