"""The machinery shared by AlterOpLayout and ConvertLayout: rewrite calls into new layouts and
insert ``layout_transform`` only where a consumer needs a layout its producer doesn't have.

Every rewritten call carries its result in a *new* layout next to the *old* one it had. Each op's
``FInferCorrectLayout`` rule (defaults by op pattern below) says which layouts its inputs must be
in and what layout its output has. An input whose layout is unknown (a param, a constant, an
untouched op) is assumed to be in the layout the original op expected. Transforms of the same
value to the same layout are shared, and a non-call consumer always sees the old layout.
"""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ...ir.type import TensorType
from ..expr import Call, Tuple
from ..expr_functor import ExprMutator
from ..op.layout import Layout


def _rank(t) -> int:
    return len(t.shape) if isinstance(t, TensorType) else -1


def _elemwise_rule(attrs, in_layouts, in_types):
    cur = next((lay for lay in in_layouts if lay is not None), None)
    return [cur] * len(in_layouts), [cur]


def _sub_layout(layout: Layout, rank: int) -> Layout | None:
    """The layout of a lower-rank operand broadcast against the trailing primal axes of layout."""
    primal = layout.primal()
    keep = set(str(primal)[len(primal) - rank:]) if rank else set()
    axes = [str(a) for a in layout.axes if a.to_primal() in keep]
    return Layout("".join(axes)) if axes else None


def _broadcast_rule(attrs, in_layouts, in_types):
    ranks = [_rank(t) for t in in_types]
    top = max(ranks) if ranks else -1
    chosen = next((lay for lay, r in zip(in_layouts, ranks) if lay is not None and r == top), None)
    if chosen is None:
        return [None] * len(in_layouts), [None]
    req = []
    for t, r in zip(in_types, ranks):
        if r == top:
            req.append(chosen)
        elif r <= 0:
            req.append(None)
        else:
            sub = _sub_layout(chosen, r)
            if sub is None or not _splittable(t, sub):
                return [None] * len(in_layouts), [None]  # fall back to the old layouts
            req.append(sub)
    return req, [chosen]


def _splittable(t, layout: Layout) -> bool:
    """A subordinate split of a primal axis needs its extent divisible by the factor."""
    primal = str(layout.primal())
    for i, axis in enumerate(primal):
        f = layout.factor_of(axis)
        if f > 0 and isinstance(t.shape[i], int) and t.shape[i] % f:
            return False
    return True


def _primal_set(layout: Layout) -> set:
    return set(str(layout.primal()))


def _full(req, tinfos) -> Layout | None:
    """The required layout of a highest-rank operand (None when unknown)."""
    ranks = [_rank(t) for t in tinfos]
    top = max(ranks) if ranks else -1
    return next((lay for lay, r in zip(req, ranks) if lay is not None and r == top), None)


def _layout_transform_rule(attrs, in_layouts, in_types):
    return [Layout(attrs.src_layout)], [Layout(attrs.dst_layout)]


def _conv_rule(attrs, in_layouts, in_types):
    """Heavily layout-sensitive: the attrs fix every layout."""
    data = Layout(attrs.data_layout)
    out = Layout(attrs.out_layout) if getattr(attrs, "out_layout", "") else data
    return [data, Layout(attrs.kernel_layout)] + [None] * (len(in_layouts) - 2), [out]


def _pool_rule(attrs, in_layouts, in_types):
    """As TVM's pooling: an explicit ``out_layout`` fixes the layouts; otherwise the pool
    follows the layout its input arrives in (the ``layout`` attribute is rewritten)."""
    layout = Layout(attrs.layout)
    if getattr(attrs, "out_layout", ""):
        return [layout], [Layout(attrs.out_layout)]
    cur = in_layouts[0] if in_layouts else None
    if cur is not None and cur != layout and _primal_set(cur) == _primal_set(layout):
        return [cur], [cur], attrs.with_fields(layout=str(cur))
    return [layout], [layout]


_RULES = {
    "nn.conv2d": _conv_rule, "nn.conv2d_transpose": _conv_rule,
    "nn.contrib_conv2d_NCHWc": _conv_rule,
    "nn.max_pool2d": _pool_rule, "nn.avg_pool2d": _pool_rule, "nn.global_avg_pool2d": _pool_rule,
    "nn.global_max_pool2d": _pool_rule, "nn.adaptive_avg_pool2d": _pool_rule,
    "nn.adaptive_max_pool2d": _pool_rule,
    # broadcasts along its ``axis`` attr, not the trailing axes: stays in the old layout
    "nn.bias_add": lambda attrs, in_layouts, in_types: _fallback_rule(attrs, in_layouts, in_types),
}


def _fallback_rule(attrs, in_layouts, in_types):
    """Ops with no rule want their inputs in the original layouts."""
    return [None] * len(in_layouts), [None]


# reductions that follow their input's new layout (renaming their axes), as in TVM
_REDUCE_OPS = frozenset(("sum", "mean", "max", "min", "prod", "all", "any", "argmax", "argmin"))

# broadcast-pattern ops whose attributes spell out axes or a shape in the original layout
_SHAPED_BY_ATTRS = frozenset(("broadcast_to", "expand_dims", "broadcast_to_like"))


def _axes_in_attrs(call: Call) -> bool:
    """True when ``call``'s attributes name axes or a shape (``repeat(axis=2)``, ``tile``):
    those count in the original layout."""
    attrs = call.attrs
    keys = set(attrs.keys()) if attrs is not None and hasattr(attrs, "keys") else set()
    return bool(keys & {"axis", "axes", "shape", "newshape", "reps", "repeats"})


def _changes_rank(call: Call, in_types) -> bool:
    """True when ``call``'s tensor result has another rank than its highest-rank input."""
    out = call._checked_type
    ranks = [_rank(t) for t in in_types]
    return isinstance(out, TensorType) and bool(ranks) and len(out.shape) != max(ranks)


def infer_correct_layout(call: Call, in_layouts, in_types):
    """(required input layouts, output layouts, new attrs or None) of ``call``; a layout None
    stands for 'the original'. A rule may return new attributes (a pool taking on its input's
    layout), as TVM's FInferCorrectLayout does."""
    op = call.op
    rule = op.get_attr("FInferCorrectLayout") or _RULES.get(op.name)
    if rule is None:
        if op.name == "layout_transform":
            rule = _layout_transform_rule
        else:
            pattern = op.get_attr("TOpPattern")
            if (op.name in _SHAPED_BY_ATTRS or _changes_rank(call, in_types)
                    or _axes_in_attrs(call)):
                rule = _fallback_rule  # output axes are not the inputs' axes in their order
            elif pattern == OpPattern.ELEMWISE and len(call.args) == 1:
                rule = _elemwise_rule
            elif pattern in (OpPattern.ELEMWISE, OpPattern.BROADCAST):
                rule = _broadcast_rule
            else:
                rule = _fallback_rule
    res = rule(call.attrs, list(in_layouts), list(in_types))
    return res if len(res) == 3 else (res[0], res[1], None)


class LayoutRewriter(ExprMutator):
    """Rewrites calls through ``make_call(call, args, tinfos)``; None keeps the call as it is."""

    def __init__(self, make_call):
        super().__init__()
        self.make_call = make_call
        self.altered: dict = {}  # original call -> (expr in new layout, old layout, new layout)
        self.transforms: dict = {}
        self.inserted = 0

    def _transform(self, expr, src: Layout, dst: Layout):
        if src == dst:
            return expr
        key = (expr, str(src), str(dst))
        out = self.transforms.get(key)
        if out is None:
            from ..op.transform import layout_transform

            out = self.transforms[key] = layout_transform(expr, str(src), str(dst))
            self.inserted += 1
        return out

    def _current(self, arg):
        entry = self.altered.get(arg)
        if entry is not None:
            return entry
        return self.visit(arg), None, None

    def visit_call(self, call):
        if isinstance(call.op, Op) and call.op.name == "concatenate" and \
                type(call.args[0]) is Tuple:
            out = self._visit_concatenate(call)
            if out is not None:
                return out
        if isinstance(call.op, Op) and call.op.name in _REDUCE_OPS and len(call.args) == 1:
            out = self._visit_reduce(call)
            if out is not None:
                return out
        if not isinstance(call.op, Op) or not all(
                isinstance(a._checked_type, TensorType) for a in call.args):
            return super().visit_call(call)
        tinfos = [a._checked_type for a in call.args]
        cur = [self._current(a) for a in call.args]
        old_in = [old for _, old, _ in cur]
        old_req, old_out, _ = infer_correct_layout(call, old_in, tinfos)
        args = [e for e, _, _ in cur]
        new_call = self.make_call(call, args, tinfos)
        if new_call is None or not (isinstance(new_call, Call) and isinstance(new_call.op, Op)
                                    and len(new_call.args) == len(args)
                                    and all(a is b for a, b in zip(new_call.args, args))):
            if new_call is not None:  # an arbitrary replacement: feed it old-layout inputs
                return self._replace_opaque(call, cur, old_req, tinfos)
            new_call = Call(call.op, args, call.attrs, call.type_args, call.span)
        cur_layouts = [new if new is not None else old for _, old, new in cur]
        new_req, new_out, new_attrs = infer_correct_layout(new_call, cur_layouts, tinfos)
        if not self._lower_rank_operands_fit(cur, tinfos, old_req, new_req):
            new_req, new_out = [None] * len(args), [None]  # keep the call in the old layouts
            new_attrs = None
        if new_attrs is not None:
            new_call = Call(new_call.op, new_call.args, new_attrs, new_call.type_args,
                            new_call.span)
        fixed = []
        for (expr, old, new), want_old, want_new, t in zip(cur, old_req, new_req, tinfos):
            have = new if new is not None else (old if old is not None else want_old)
            want = want_new if want_new is not None else (old if old is not None else want_old)
            if have is not None and want is not None and have != want:
                if _primal_set(have) != _primal_set(want):  # checked to fit above
                    expr, have = self._expand_to(expr, t, old_req, tinfos)
                    want = _full(new_req, tinfos)
                expr = self._transform(expr, have, want)
            fixed.append(expr)
        result = Call(new_call.op, fixed, new_call.attrs, new_call.type_args, call.span)
        o_old = old_out[0] if old_out else None
        o_new = new_out[0] if new_out else None
        if o_new is not None and o_old is None and len(call.args) and o_new != o_old:
            o_old = old_req[0] if old_req and old_req[0] is not None else None
        self.altered[call] = (result, o_old, o_new)
        if o_new is not None and o_old is not None and o_new != o_old:
            return self._transform(result, o_new, o_old)
        if o_new is not None and o_old is None:
            self.altered[call] = (result, None, None)
        return result

    def _visit_concatenate(self, call):
        """``concatenate`` of a literal tuple whose fields all arrive in one new layout (TVM's
        ConcatenateLayout): concatenate in that layout along the axis the old one names. None
        when that does not apply (the fields then go back to their old layouts)."""
        from ..op.transform import concatenate

        tup = call.args[0]
        if not tup.fields or not all(isinstance(f._checked_type, TensorType)
                                     for f in tup.fields):
            return None
        cur = [self._current(f) for f in tup.fields]
        olds = [old for _, old, _ in cur]
        news = [new for _, _, new in cur]
        new, old = news[0], olds[0]
        if new is None or old is None or new == old or any(
                n != new for n in news) or any(o != old for o in olds):
            return None
        rank = len(tup.fields[0]._checked_type.shape)
        axis = call.attrs.axis + rank if call.attrs.axis < 0 else call.attrs.axis
        dim = old[axis] if 0 <= axis < len(old) else None
        if dim is None or not dim.isupper() or new.factor_of(dim) > 0:
            return None  # a split concatenation axis: keep the old layout
        fields = Tuple([e for e, _, _ in cur], tup.span)
        out = concatenate(fields, new.index_of(dim))
        result = Call(out.op, out.args, out.attrs, call.type_args, call.span)
        self.altered[call] = (result, old, new)
        return self._transform(result, new, old)

    def _visit_reduce(self, call):
        """A reduction whose input arrives in a new layout reduces there (TVM's
        ReduceInferCorrectLayout): the axes are renamed through the old layout and the output
        keeps the new order of the kept axes. Primal layouts only; None otherwise."""
        t = call.args[0]._checked_type
        if not isinstance(t, TensorType):
            return None
        expr, old, new = self._current(call.args[0])
        rank = len(t.shape)
        if new is None or old is None or new == old or len(old) != rank or len(new) != rank \
                or not all(a.isupper() for a in str(old) + str(new)):
            return None
        attrs = call.attrs
        axes = range(rank) if attrs.axis is None else [a + rank if a < 0 else a
                                                          for a in attrs.axis]
        exclude = bool(getattr(attrs, "exclude", False))
        keep = bool(getattr(attrs, "keepdims", False))
        named = {old[a] for a in axes}
        reduced = {old[i] for i in range(rank)} - named if exclude else named
        # the attribute names the reduced axes, or with ``exclude`` the kept ones
        new_axes = [i for i in range(rank) if (new[i] in reduced) != exclude]

        def out_layout(layout):
            kept = "".join(layout[i] for i in range(rank) if keep or layout[i] not in reduced)
            return Layout(kept) if kept else None

        result = Call(call.op, [expr], attrs.with_fields(axis=tuple(new_axes)),
                      call.type_args, call.span)
        o_old, o_new = out_layout(old), out_layout(new)
        if o_old is None or o_old == o_new:
            self.altered[call] = (result, None, None)
            return result
        self.altered[call] = (result, o_old, o_new)
        return self._transform(result, o_new, o_old)

    @staticmethod
    def _lower_rank_operands_fit(cur, tinfos, old_req, new_req) -> bool:
        """A lower-rank operand broadcast in the old layout whose axes the new layout reorders
        (a (C,) bias of NHWC data going to NCHW) is expanded to full rank: that must split."""
        full_old, full_new = _full(old_req, tinfos), _full(new_req, tinfos)
        for (_, old, new), want_old, want_new, t in zip(cur, old_req, new_req, tinfos):
            have = new if new is not None else (old if old is not None else want_old)
            if have is None or want_new is None or _primal_set(have) == _primal_set(want_new):
                continue
            if full_old is None or full_new is None or not isinstance(t, TensorType) or \
                    have != _sub_layout(full_old, len(t.shape)):
                return False
            rank = len(full_old.primal().axes)
            ones = (1,) * (rank - len(t.shape)) + tuple(t.shape)
            if not _splittable(TensorType(ones, t.dtype), full_new):
                return False
        return True

    def _expand_to(self, expr, t, old_req, tinfos):
        """``expr`` (a trailing sub-layout of the old full layout) expanded to full rank."""
        from ..op.transform import expand_dims

        full_old = _full(old_req, tinfos)
        extra = len(full_old.primal().axes) - len(t.shape)
        if extra:
            expr = expand_dims(expr, 0, extra)
        return expr, full_old

    def _replace_opaque(self, call, cur, old_req, tinfos):
        args = []
        for (expr, old, new) in cur:
            if new is not None and old is not None and new != old:
                expr = self._transform(expr, new, old)
            args.append(expr)
        out = self.make_call(call, args, tinfos)
        self.altered[call] = (out, None, None)
        return out
