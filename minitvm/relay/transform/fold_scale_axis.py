"""FoldScaleAxis: fold per-channel constant scales into conv2d / dense weights.

Backward: ``multiply(conv2d(x, w), s)`` with ``s`` constant along the output-channel axis becomes
``conv2d(x, w * s')``; the scale also passes backward through an ``add`` of a constant bias
(which is scaled too). Forward: ``conv2d(multiply(x, s), w)`` with ``s`` along the input-channel
axis becomes ``conv2d(x, w * s')``; the scale passes forward through ``nn.relu`` when every
entry is positive and through ``add`` of a constant (``x*s + b == (x + b/s) * s``). Only values
used once are rewritten. The weight products are folded by the FoldConstant that follows.
"""

from __future__ import annotations

import numpy as np

from ...ir.op import Op
from ...ir.type import TensorType
from ...transform.registry import register_pass
from ...transform.sequential import Sequential
from ...transform.stats import record_stat
from ..expr import Call, Constant, const
from ..expr_functor import ExprMutator, ExprVisitor
from ..op.layout import Layout
from .function_pass import function_pass


def _use_counts(expr, users: dict | None = None) -> dict:
    counts: dict = {}

    class _Count(ExprVisitor):
        def visit_call(self, call):
            for a in call.args:
                counts[a] = counts.get(a, 0) + 1
                if users is not None:
                    users.setdefault(a, []).append(call)
            super().visit_call(call)

        def visit_tuple(self, tup):
            for a in tup.fields:
                counts[a] = counts.get(a, 0) + 2  # a tuple use pins the value
            super().visit_tuple(tup)

    _Count().visit(expr)
    return counts


def _op_name(e) -> str:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else ""


def _channel_vector(scale, value_type, axis: int):
    """The 1-D scale if ``scale`` is a constant varying only along ``axis`` of value_type."""
    if not isinstance(scale, Constant) or not isinstance(value_type, TensorType):
        return None
    s = scale.data.numpy()
    rank = len(value_type.shape)
    if s.ndim > rank or s.ndim == 0 or axis < 0:
        return None
    full = s.reshape((1,) * (rank - s.ndim) + s.shape)
    channels = value_type.shape[axis]
    for i, d in enumerate(full.shape):
        if i != axis and d != 1:
            return None
    if full.shape[axis] not in (1, channels):
        return None
    return np.broadcast_to(full.reshape(-1), (channels,)) if full.shape[axis] == 1 else \
        full.reshape(-1)


def _conv_axes(call):
    """(channel axis of the output, O axis and I axis of the kernel) of a conv2d call."""
    attrs = call.attrs
    out = Layout(attrs.out_layout or attrs.data_layout)
    data = Layout(attrs.data_layout)
    kernel = Layout(attrs.kernel_layout)
    if out.factor_of("C") > 0 or kernel.factor_of("O") > 0 or kernel.factor_of("I") > 0:
        return None
    return out.index_of("C"), data.index_of("C"), kernel.index_of("O"), kernel.index_of("I")


def _scaled_weight(weight, wtype, vec, axis):
    shape = [1] * len(wtype.shape)
    shape[axis] = len(vec)
    return Call(Op.get("multiply"), [weight, const(vec.astype(wtype.dtype).reshape(shape))])


class _Backward(ExprMutator):
    """Push output-channel scales back into the producing conv2d / dense."""

    def __init__(self, counts):
        super().__init__()
        self.counts = counts
        self.folded = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        if _op_name(call) != "multiply":
            return new
        for value, scale in ((call.args[0], call.args[1]), (call.args[1], call.args[0])):
            if self.counts.get(value, 0) != 1 or not isinstance(scale, Constant):
                continue
            pushed = self._push(value, scale)
            if pushed is not None:
                self.folded += 1
                return pushed
        return new

    def _axis(self, value):
        name = _op_name(value)
        if name == "nn.conv2d":
            axes = _conv_axes(value)
            return None if axes is None else axes[0]
        if name == "nn.dense":
            return len(value._checked_type.shape) - 1
        if name == "add":
            for a in value.args:
                if not isinstance(a, Constant) and self.counts.get(a, 0) == 1:
                    return self._axis(a)
        return None

    def _push(self, value, scale):
        axis = self._axis(value)
        vec = None if axis is None else _channel_vector(scale, value._checked_type, axis)
        if vec is None:
            return None
        return self._rewrite(value, vec)

    def _rewrite(self, value, vec):
        name = _op_name(value)
        if name == "nn.conv2d":
            w = value.args[1]
            _, _, o_axis, _ = _conv_axes(value)
            nw = _scaled_weight(self.visit(w), w._checked_type, vec, o_axis)
            return Call(value.op, [self.visit(value.args[0]), nw], value.attrs)
        if name == "nn.dense":
            w = value.args[1]
            nw = _scaled_weight(self.visit(w), w._checked_type, vec, 0)
            return Call(value.op, [self.visit(value.args[0]), nw], value.attrs)
        if name == "add":
            a, b = value.args
            inner, bias = (a, b) if isinstance(b, Constant) else (b, a)
            if not isinstance(bias, Constant) or isinstance(inner, Constant):
                return None
            inner_new = self._rewrite(inner, vec)
            if inner_new is None:
                return None
            shape = [1] * len(value._checked_type.shape)
            shape[self._axis(value)] = len(vec)
            s = const(vec.astype(bias.data.dtype).reshape(shape))
            return Call(value.op, [inner_new, Call(Op.get("multiply"), [bias, s])], value.attrs)
        return None


class _Forward(ExprMutator):
    """Pull input-channel scales forward into the consuming conv2ds.

    A scaled value read by several conv2ds is folded when every one of its readers is a conv2d
    that can absorb the scale (then each gets its own scaled weight, as TVM does).
    """

    def __init__(self, counts, users):
        super().__init__()
        self.counts = counts
        self.users = users
        self.pulled: dict = {}
        self.folded = 0

    def _absorbs(self, conv, data) -> bool:
        if _op_name(conv) not in ("nn.dense", "nn.conv2d") or conv.args[0] is not data \
                or conv.args[1] is data:
            return False
        if _op_name(conv) == "nn.dense":
            return len(data._checked_type.shape) == 2
        if _op_name(conv) != "nn.conv2d" or conv.attrs.groups != 1:
            return False
        return _conv_axes(conv) is not None

    @staticmethod
    def _data_axes(call):
        """(axis of the input the scale must run along, axis of the weight it scales)."""
        if _op_name(call) == "nn.dense":
            return 1, 1
        axes = _conv_axes(call)
        return axes[1], axes[3]

    def visit_call(self, call):
        new = super().visit_call(call)
        data = call.args[0] if call.args else None
        if data is None or not self._absorbs(call, data):
            return new
        readers = self.users.get(data, ())
        if len(readers) != self.counts.get(data, 0) or not all(
                self._absorbs(r, data) for r in readers):
            return new
        in_axis, w_axis = self._data_axes(call)
        key = (data, in_axis)
        if key not in self.pulled:
            self.pulled[key] = self._pull(data, in_axis)
        pulled = self.pulled[key]
        if pulled is None:
            return new
        unscaled, vec = pulled
        w = call.args[1]
        nw = _scaled_weight(self.visit(w), w._checked_type, vec, w_axis)
        self.folded += 1
        return Call(call.op, [unscaled, nw], call.attrs)

    def _pull(self, e, axis):
        """(expression without the scale, scale vector) or None."""
        name = _op_name(e)
        if name == "multiply":
            for value, scale in ((e.args[0], e.args[1]), (e.args[1], e.args[0])):
                vec = _channel_vector(scale, e._checked_type, axis) if isinstance(
                    scale, Constant) and scale.data.shape != e._checked_type.concrete_shape \
                    else None
                if vec is not None and np.all(vec != 0):
                    return self.visit(value), vec
            return None
        if name in ("nn.global_avg_pool2d", "nn.batch_flatten"):
            inner = e.args[0]
            if self.counts.get(inner, 0) != 1:
                return None
            if name == "nn.batch_flatten":  # a flattened 1x1 NCHW map keeps C on axis 1
                shape = inner._checked_type.shape
                if axis != 1 or len(shape) != 4 or tuple(shape[2:]) != (1, 1):
                    return None
            elif Layout(e.attrs.layout).index_of("C") != axis:
                return None
            got = self._pull(inner, axis)
            if got is None:
                return None
            return Call(e.op, [got[0]], e.attrs), got[1]
        if name == "nn.relu":
            inner = e.args[0]
            if self.counts.get(inner, 0) != 1:
                return None
            got = self._pull(inner, axis)
            if got is None or not np.all(got[1] > 0):
                return None
            return Call(e.op, [got[0]], e.attrs), got[1]
        if name == "add":
            a, b = e.args
            inner, bias = (a, b) if isinstance(b, Constant) else (b, a)
            if not isinstance(bias, Constant) or self.counts.get(inner, 0) != 1:
                return None
            got = self._pull(inner, axis)
            if got is None:
                return None
            bvec = _channel_vector(bias, e._checked_type, axis)
            if bvec is None:
                return None
            rank = len(e._checked_type.shape)
            shape = [1] * rank
            shape[axis] = len(bvec)
            adjusted = (bvec / got[1]).astype(bias.data.dtype).reshape(shape)
            return Call(e.op, [got[0], const(adjusted)], e.attrs), got[1]
        return None


def backward_fold_scale_axis(func):
    b = _Backward(_use_counts(func))
    return b.visit(func), b.folded


def forward_fold_scale_axis(func):
    users: dict = {}
    counts = _use_counts(func, users)
    f = _Forward(counts, users)
    return f.visit(func), f.folded


@register_pass("BackwardFoldScaleAxis")
def BackwardFoldScaleAxis():
    """Fold scales applied after conv2d/dense into their weights (function pass, opt 3)."""

    def transform(func, mod, ctx):
        out, n = backward_fold_scale_axis(func)
        record_stat("backward-folded scales", n)
        return out

    return function_pass(transform, opt_level=3, name="BackwardFoldScaleAxis",
                         required=["InferType"], needs=["typed"])


@register_pass("ForwardFoldScaleAxis")
def ForwardFoldScaleAxis():
    """Fold scales applied before conv2d (through relu/add) into its weights (function pass, 3)."""

    def transform(func, mod, ctx):
        out, n = forward_fold_scale_axis(func)
        record_stat("forward-folded scales", n)
        return out

    return function_pass(transform, opt_level=3, name="ForwardFoldScaleAxis",
                         required=["InferType"], needs=["typed"])


@register_pass("FoldScaleAxis")
def FoldScaleAxis():
    """Sequential [BackwardFoldScaleAxis, ForwardFoldScaleAxis, FoldConstant] (opt_level 0)."""
    from .fold_constant import FoldConstant

    return Sequential([BackwardFoldScaleAxis(), ForwardFoldScaleAxis(), FoldConstant()],
                      opt_level=0, name="FoldScaleAxis")
