"""FoldScaleAxis: fold per-axis scales into the weights of conv2d / conv3d / dense, as TVM does.

A value is seen as ``(value, axes, scale)``: the real result is ``value`` with its ``axes``
multiplied by ``scale``. Each direction runs in two phases, like TVM's fold_scale_axis.cc:

* Forward: a prepare phase walks from the outputs back to the inputs and records, per node, the
  axes its consumers could absorb (a *message*; ``require_positive`` once it passes relu). Then a
  rewrite phase turns ``multiply(x, s)`` with such a message into a scaled value, carries it
  through relu/leaky_relu and add/subtract (dividing the other operand) and folds it into the
  weight of the consuming conv/dense.
* Backward: a prepare phase walks inputs to outputs and records the axes a producer could take
  a scale on (only values used once). A ``multiply`` whose operand has a message pushes its
  scale down through relu, add/subtract and bias_add (scaling the bias) into the weight of the
  producing conv/dense.

Deviations, only where TVM's result would be wrong or much slower: dense takes part only with
2-D data (TVM assumes the channel axis is 1); a multi-axis scale is not pushed into an add whose
extents are symbolic (TVM drops the scale there); and a scale computed from the value it
scales (``x * f(x)``: hardswish, swish, squeeze-and-excitation gates) or from an input or
intermediate value the two share (an LSTM cell's ``h = sigmoid(o) * tanh(c)``) is not folded,
in either direction; nor is a scale folded into a conv / dense whose constant float weight is
all whole numbers (``_integer_weight``: a quantized model's exact integer products in float32,
as the ONNX importer makes them without VNNI, whose requantization a folded scale would move
by a step). TVM folds those too, and then every call rewrites the whole weight
instead of scaling the activation: MobileNetV3's last dense multiplied its 1000x1024 weight per
call (0.30 ms, more than the dense itself) to scale 1024 values; Show-Attend-Tell's unrolled
LSTM multiplied three weights (500, 512 and 64 x 128) per step; and a weight that is no longer
constant loses its prepacked layout. The scale is reshaped exactly as TVM builds it (``squeeze`` of the broadcast dims, then
``expand_dims`` or ``reshape`` to the target axes), so the result is structurally equal to TVM's.
A forward scale with a zero (a batch_norm's zero gamma) is not carried through an add, whose
other operand it would divide (TVM does, and gives NaN). Every traversal is iterative. The
weight products are folded by the FoldConstant that follows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir.op import Op
from ...ir.type import TensorType
from ...tir.expr import IntImm
from ...topi.layout import Layout, primal_extents
from ...transform.registry import register_pass
from ...transform.sequential import Sequential
from ...transform.stats import record_stat
from ..adt import Match
from ..analysis.op_names import calls_any
from ..expr import Call, Constant, Function, If, Let, Tuple, TupleGetItem
from ..expr_functor import ExprMutator, dataflow_children, dataflow_post_order
from ..op.tensor import divide, multiply
from ..op.transform import expand_dims, repeat, reshape, squeeze
from .function_pass import function_pass

# ------------------------------------------------------------------------------------- messages


@dataclass(frozen=True)
class Message:
    """The axes a scale may run along, and whether the scale must be non-negative."""

    axes: tuple
    require_positive: bool


def _intersect(a: Message | None, b: Message | None) -> Message | None:
    if a is None or b is None:
        return None
    axes = tuple(x for x in a.axes if x in b.axes)
    return Message(axes, a.require_positive or b.require_positive)


class _Scaled:
    """A rewritten value still carrying a scale along ``axes`` (TVM's ScaledExpr)."""

    __slots__ = ("value", "axes", "scale", "ref_type")

    def __init__(self, value, axes, scale, ref_type):
        self.value, self.axes, self.scale, self.ref_type = value, axes, scale, ref_type


# -------------------------------------------------------------------------------------- helpers


def _op_name(e) -> str:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else ""


def _ttype(e):
    t = getattr(e, "_checked_type", None)
    return t if isinstance(t, TensorType) else None


def _as_int(d):
    if isinstance(d, int | np.integer):
        return int(d)
    if isinstance(d, IntImm):
        return int(d.value)
    return None


def _dim_equal(a, b) -> bool:
    ia, ib = _as_int(a), _as_int(b)
    if ia is not None or ib is not None:
        return ia == ib
    from ...ir.structural import structural_equal
    return a is b or structural_equal(a, b)


def match_broadcast_to_left_axes(tlhs, trhs, axes, rhs_value=None):
    """Whether ``rhs`` broadcasts onto ``lhs`` varying only along ``axes`` (all of them).

    Returns ``(ok, squeezed)``: with ``rhs_value`` given, ``squeezed`` is it reduced to the
    matched axes (``squeeze`` of the unit dims; a scalar is expanded and repeated, as TVM does).
    """
    if tlhs is None or trhs is None:
        return False, None
    lshape, rshape = list(tlhs.shape), list(trhs.shape)
    if len(lshape) < len(rshape):
        return False, None
    base = len(lshape) - len(rshape)
    if not rshape and rhs_value is not None and axes:
        # TVM repeats along every new axis by the extent of the first matched axis
        out = expand_dims(rhs_value, 0, len(axes))
        first = _as_int(lshape[axes[0]])
        if first is None:
            return False, None
        for i in range(len(axes)):
            out = repeat(out, first, i)
        return True, out
    squeeze_axes, j = [], 0
    for i in range(len(lshape)):
        if j < len(axes) and i == axes[j]:
            if i < base or not _dim_equal(lshape[i], rshape[i - base]):
                return False, None
            j += 1
        elif i >= base:
            if _as_int(rshape[i - base]) != 1:
                return False, None
            squeeze_axes.append(i - base)
    if rhs_value is not None and squeeze_axes:
        rhs_value = squeeze(rhs_value, squeeze_axes)
    return True, rhs_value


def expand_bias_to_match_axis(bias, target_ndim: int, axes):
    """Append unit dims after the scale so it broadcasts along ``axes`` of a rank-N value."""
    for i in range(len(axes), 0, -1):
        if i == len(axes):
            pad = target_ndim - axes[i - 1] - 1
            if pad > 0:
                bias = expand_dims(bias, i, pad)
        else:
            diff = axes[i] - axes[i - 1]
            if diff > 0:
                bias = expand_dims(bias, i, diff)
    return bias


def reshape_to_match_axis(scale, shape, axes):
    """``reshape`` the scale to ``shape`` on ``axes`` and 1 elsewhere (None if not static)."""
    new = []
    for i, d in enumerate(shape):
        if i in axes:
            v = _as_int(d)
            if v is None:
                return None
            new.append(v)
        else:
            new.append(1)
    return reshape(scale, new)


def reshape_or_expand_to_match_axis(scale, shape, axes):
    if len(axes) > 1:
        return reshape_to_match_axis(scale, shape, axes)
    return expand_bias_to_match_axis(scale, len(shape), axes)


_POSITIVE_CHECKED = frozenset({"float32", "float64", "int8", "int32", "uint8", "uint32"})
_PEELABLE = frozenset({"expand_dims", "reshape", "transpose", "squeeze", "repeat"})


def is_all_positive_constant(e) -> bool:
    """A constant (possibly under reshapes) whose entries are all >= 0."""
    while _op_name(e) in _PEELABLE:
        e = e.args[0]
    if not isinstance(e, Constant):
        return False
    data = e.data.numpy()
    if data.dtype.name not in _POSITIVE_CHECKED:  # TVM answers "no" for other dtypes
        return False
    return bool(np.all(data >= 0))


_CONVS = ("nn.conv2d", "nn.conv3d")


def _is_depthwise(call, kernel_layout: Layout) -> bool:
    wt = _ttype(call.args[1])
    if wt is None:
        return False
    try:
        ext = primal_extents(kernel_layout, list(wt.shape))
    except ValueError:
        return False
    return _as_int(ext.get("O")) == int(call.attrs.groups) and _as_int(ext.get("I")) == 1


def _conv_channel_axes(call, layout_name: str):
    """Message axes of a conv's data/output layout: C (and c when blocked), or None."""
    attrs = call.attrs
    layout = Layout(layout_name)
    kernel = Layout(attrs.kernel_layout)
    c_big, c_small = layout.index_of("C"), layout.index_of("c")
    if c_big < 0:
        return None
    if attrs.groups != 1 and not _is_depthwise(call, kernel):
        return None
    ko, ki = kernel.index_of("o"), kernel.index_of("i")
    if ko < 0 and ki < 0 and c_small < 0:
        return (c_big,)
    if ko >= 0 and ki >= 0 and c_small >= 0:
        return tuple(sorted((c_big, c_small)))
    return None


def _kernel_scale(call, scale, weight_type, big: str, small: str):
    """The scale laid onto the kernel's ``big``/``small`` axes (None if not static)."""
    kernel = Layout(call.attrs.kernel_layout)
    kb, ks = kernel.index_of(big), kernel.index_of(small)
    if kernel.index_of("o") < 0 and kernel.index_of("i") < 0:
        return expand_bias_to_match_axis(scale, kernel.ndim(), (kb,))
    if weight_type is None:
        return None
    return reshape_to_match_axis(scale, list(weight_type.shape), (kb, ks))


def _integer_weight(call) -> bool:
    """Is the weight of conv / dense ``call`` a float constant of whole numbers, not all 0?
    Then its products are a quantized model's exact integer arithmetic (the importers' float32
    convs and denses over 8-bit values less their zero points), which a scale folded into the
    weight would round, moving the requantized result by a step. (Zeros stay zeros, exactly.)"""
    w = call.args[1]
    if not isinstance(w, Constant) or not str(w.data.dtype).startswith("float"):
        return False
    v = w.data.numpy()
    head = v.reshape(-1)[:64]  # (a float model's weights fail here, without a full pass)
    return bool(np.all(head == np.round(head)) and np.all(v == np.round(v)) and np.any(v))


def _conv_is_foldable_kernel(call) -> bool:
    wt, ct = _ttype(call.args[1]), _ttype(call)
    if wt is not None and ct is not None and wt.dtype != ct.dtype:
        return False  # (an int8 weight of a float conv cannot take a float scale)
    if _integer_weight(call):
        return False
    kernel = Layout(call.attrs.kernel_layout)
    ko, ki, big_i = kernel.index_of("o"), kernel.index_of("i"), kernel.index_of("I")
    return big_i >= 0 and ((ko < 0 and ki < 0) or (ko >= 0 and ki >= 0))


def _rank2(e) -> bool:
    t = _ttype(e)
    return t is not None and len(t.shape) == 2


# ------------------------------------------------------------------------------ forward folding


def _fwd_prep(call, out: Message | None) -> list:
    name = _op_name(call)
    none = [None] * len(call.args)
    if name in ("nn.relu", "nn.leaky_relu"):
        return [None if out is None else Message(out.axes, True)]
    if name in ("add", "subtract"):
        if out is not None:
            tl, tr = _ttype(call.args[0]), _ttype(call.args[1])
            if match_broadcast_to_left_axes(tl, tr, out.axes)[0]:
                return [out, None]
            if match_broadcast_to_left_axes(tr, tl, out.axes)[0]:
                return [None, out]
        return none
    if name in _CONVS:
        axes = _conv_channel_axes(call, call.attrs.data_layout)
        return none if axes is None else [Message(axes, False), None]
    if name == "nn.dense" and _rank2(call.args[0]) and not _integer_weight(call):
        return [Message((1,), False), None]
    return none


def _post_order_all(root) -> list:
    """Every node under ``root`` (into functions, lets and matches), operands first."""
    def children(e):
        if isinstance(e, Function):
            return (*e.params, e.body)
        if isinstance(e, Let):
            return (e.var, e.value, e.body)
        if isinstance(e, Match):
            return (e.data, *(c.rhs for c in e.clauses))
        kids = dataflow_children(e)
        if isinstance(e, Call) and not isinstance(e.op, Op):
            kids = (e.op, *kids) if e.op not in kids else kids
        return kids

    return dataflow_post_order(root, children)


def forward_prepare(func) -> dict:
    """Message per node: the axes along which all its consumers accept a scale (or None)."""
    messages: dict = {}

    def update(node, msg):
        if node in messages:
            messages[node] = _intersect(messages[node], msg)
        else:
            messages[node] = msg

    update(func, None)
    for e in reversed(_post_order_all(func)):
        if isinstance(e, Call):
            ins = _fwd_prep(e, messages.get(e))
            for a, m in zip(e.args, ins):
                update(a, m)
            if not isinstance(e.op, Op):
                update(e.op, None)
        elif isinstance(e, Function):
            update(e.body, None)
        elif isinstance(e, Let):
            update(e.value, None)
            update(e.body, None)
        elif isinstance(e, If):
            for c in (e.cond, e.true_branch, e.false_branch):
                update(c, None)
        elif isinstance(e, Match):
            update(e.data, None)
            for c in e.clauses:
                update(c.rhs, None)
        elif isinstance(e, Tuple | TupleGetItem):
            for c in dataflow_children(e):
                update(c, None)
        else:
            for c in dataflow_children(e):
                update(c, None)
    return messages


def _realize(v):
    """A plain expression for ``v``; a pending scale is applied with a multiply."""
    if not isinstance(v, _Scaled):
        return v
    s = reshape_or_expand_to_match_axis(v.scale, list(v.ref_type.shape), v.axes)
    return multiply(v.value, s)


def _fwd_relu(call, args, msg):
    x = args[0]
    if not isinstance(x, _Scaled):
        return None
    return _Scaled(Call(call.op, [x.value], call.attrs, call.type_args), x.axes, x.scale,
                   call._checked_type)


def _fwd_add_sub(call, args, msg):
    sl, sr = (isinstance(a, _Scaled) for a in args)
    if not sl and not sr:
        return None
    tl, tr = _ttype(call.args[0]), _ttype(call.args[1])
    scaled, other = (args[0], args[1]) if sl else (args[1], args[0])
    tscaled = tl if sl else tr
    s = reshape_or_expand_to_match_axis(scaled.scale, list(tscaled.shape), scaled.axes)
    if s is None or isinstance(other, _Scaled) or _has_zero(scaled.scale):
        return None
    other = divide(other, s)
    new_args = [scaled.value, other] if sl else [other, scaled.value]
    return _Scaled(Call(call.op, new_args, call.attrs, call.type_args), scaled.axes,
                   scaled.scale, call._checked_type)


def _has_zero(scale) -> bool:
    """Whether a constant scale holds a 0 (or a non-finite value): the add's other operand
    divided by it is inf or NaN, and ``(x + b / 0) * 0`` is NaN where ``x * 0 + b`` is ``b``
    (a batch_norm with a zero gamma). TVM divides regardless."""
    if not isinstance(scale, Constant):
        return False
    v = scale.data.numpy()
    return bool(v.dtype.kind == "f" and (not np.isfinite(v).all() or (v == 0).any())
                or v.dtype.kind in "iu" and (v == 0).any())


# expressions searched on each side for an input the scale shares with the value (``_gates``)
GATE_SEARCH = 256


def _inputs_of(root, limit: int) -> set | None:
    """ids of ``root`` and the non-constant expressions it is computed from, up to ``limit``
    of them (None past that)."""
    stack, seen = [root], set()
    while stack:
        e = stack.pop()
        if id(e) in seen or isinstance(e, (Op, Constant)):
            continue
        seen.add(id(e))
        if len(seen) > limit:
            return None
        stack.extend(dataflow_children(e))
    return seen


def _gates(scale, value) -> bool:
    """Whether ``scale`` is computed from what ``value`` is computed from: from ``value`` itself
    (a gate, ``value * f(value)``) or from an input or intermediate value they share (an LSTM's
    ``h = sigmoid(o) * tanh(c)``, both from one split of the gates). Such a scale changes on
    every call, so folding it rewrites the whole weight each time. Searches at most
    ``GATE_SEARCH`` expressions on each side; a larger scale expression counts as a gate (a
    scale that folding helps is a constant or a parameter, or a small expression of them)."""
    from_scale = _inputs_of(scale, GATE_SEARCH)
    if from_scale is None:
        return True
    if not from_scale:  # a constant scale (the common case) shares nothing with the value
        return False
    stack, seen = [value], set()
    while stack and len(seen) <= GATE_SEARCH:
        e = stack.pop()
        if id(e) in seen or isinstance(e, (Op, Constant)):
            continue
        if id(e) in from_scale:
            return True
        seen.add(id(e))
        stack.extend(dataflow_children(e))
    return False


def _fwd_multiply(call, args, msg):
    if msg is None or not msg.axes or any(isinstance(a, _Scaled) for a in args):
        return None
    if _gates(call.args[1], call.args[0]):
        return None  # (see the module docstring; the test is symmetric)
    tl, tr = _ttype(call.args[0]), _ttype(call.args[1])
    ok, s = match_broadcast_to_left_axes(tl, tr, msg.axes, args[1])
    if ok and (not msg.require_positive or is_all_positive_constant(s)):
        return _Scaled(args[0], msg.axes, s, call._checked_type)
    ok, s = match_broadcast_to_left_axes(tr, tl, msg.axes, args[0])
    if ok and (not msg.require_positive or is_all_positive_constant(s)):
        return _Scaled(args[1], msg.axes, s, call._checked_type)
    return None


def _fwd_conv(call, args, msg):
    data, weight = args
    if not isinstance(data, _Scaled) or isinstance(weight, _Scaled):
        return None
    if not _conv_is_foldable_kernel(call):
        return None
    kernel = Layout(call.attrs.kernel_layout)
    depthwise = _is_depthwise(call, kernel)
    if call.attrs.groups != 1 and not depthwise:
        return None
    big, small = ("O", "o") if depthwise else ("I", "i")
    ws = _kernel_scale(call, data.scale, _ttype(call.args[1]), big, small)
    if ws is None:
        return None
    return Call(call.op, [data.value, multiply(weight, ws)], call.attrs, call.type_args)


def _fwd_dense(call, args, msg):
    data, weight = args
    if not isinstance(data, _Scaled) or isinstance(weight, _Scaled) or _integer_weight(call):
        return None
    return Call(call.op, [data.value, multiply(weight, data.scale)], call.attrs, call.type_args)


_FWD_RULES = {"nn.relu": _fwd_relu, "nn.leaky_relu": _fwd_relu, "add": _fwd_add_sub,
              "subtract": _fwd_add_sub, "multiply": _fwd_multiply, "nn.conv2d": _fwd_conv,
              "nn.conv3d": _fwd_conv, "nn.dense": _fwd_dense}


class _ForwardRewriter(ExprMutator):
    """Post-order rewrite; a call's operands may come back as pending scaled values."""

    def __init__(self, messages):
        super().__init__()
        self.messages = messages
        self.folded = 0

    def visit(self, expr):
        return _realize(super().visit(expr))

    def visit_call(self, call):
        raw = [ExprMutator.visit(self, a) for a in call.args]
        rule = _FWD_RULES.get(_op_name(call))
        if rule is not None:
            res = rule(call, raw, self.messages.get(call))
            if res is not None:
                if _op_name(call) in ("nn.conv2d", "nn.conv3d", "nn.dense"):
                    self.folded += 1
                return res
        new_op = self.visit(call.op)
        args = [_realize(a) for a in raw]
        if new_op is call.op and all(a is b for a, b in zip(args, call.args)):
            return call
        return Call(new_op, args, call.attrs, call.type_args, call.span)


def forward_fold_scale_axis(func):
    """(rewritten function, number of folded consumers)."""
    messages = forward_prepare(func)
    if all(m is None for m in messages.values()):
        return func, 0
    r = _ForwardRewriter(messages)
    return r.visit(func), r.folded


# ----------------------------------------------------------------------------- backward folding


def _ref_counts(func) -> dict:
    counts: dict = {func: 1}
    for e in _post_order_all(func):
        if isinstance(e, Function):
            kids = (*e.params, e.body)
        elif isinstance(e, Let):
            kids = (e.var, e.value, e.body)
        elif isinstance(e, Match):
            kids = (e.data, *(c.rhs for c in e.clauses))
        else:
            kids = dataflow_children(e)
            if isinstance(e, Call) and not isinstance(e.op, Op) and e.op not in kids:
                kids = (e.op, *kids)
        for c in kids:
            counts[c] = counts.get(c, 0) + 1
    return counts


def _static_axes(t, axes) -> bool:
    """A multi-axis scale is reshaped onto the bias: its extents must be known. (TVM drops the
    scale silently when they are not; refusing here keeps the program correct.)"""
    return len(axes) < 2 or all(_as_int(t.shape[a]) is not None for a in axes)


def _bwd_prep(call, ins) -> Message | None:
    name = _op_name(call)
    if name in ("nn.relu", "nn.leaky_relu"):
        return None if ins[0] is None else Message(ins[0].axes, True)
    if name in ("add", "subtract"):
        tl, tr = _ttype(call.args[0]), _ttype(call.args[1])
        if ins[0] is not None and match_broadcast_to_left_axes(tl, tr, ins[0].axes)[0]:
            return ins[0] if _static_axes(tl, ins[0].axes) else None
        if ins[1] is not None and match_broadcast_to_left_axes(tr, tl, ins[1].axes)[0]:
            return ins[1] if _static_axes(tr, ins[1].axes) else None
        if ins[0] is not None and ins[1] is not None and ins[0].axes == ins[1].axes and \
                tl is not None and tr is not None and len(tl.shape) == len(tr.shape) and \
                all(_dim_equal(a, b) for a, b in zip(tl.shape, tr.shape)):
            return ins[0]
        return None
    if name in _CONVS:
        if not _conv_is_foldable_kernel(call):
            return None
        attrs = call.attrs
        axes = _conv_channel_axes(call, attrs.out_layout or attrs.data_layout)
        return None if axes is None else Message(axes, False)
    if name == "nn.bias_add":
        m = ins[0]
        if m is not None and len(m.axes) == 1 and int(call.attrs.axis) == m.axes[0]:
            return m
        return None
    if name == "nn.dense" and _rank2(call) and not _integer_weight(call):
        return Message((1,), False)
    return None


_BWD_PREP_OPS = frozenset({"nn.relu", "nn.leaky_relu", "add", "subtract", "nn.conv2d",
                           "nn.conv3d", "nn.bias_add", "nn.dense"})


def backward_prepare(func) -> dict:
    """Message per call used once: the axes along which it could absorb a scale."""
    counts = _ref_counts(func)
    messages: dict = {}
    for e in _post_order_all(func):
        if not isinstance(e, Call) or _op_name(e) not in _BWD_PREP_OPS or counts.get(e) != 1:
            continue
        m = _bwd_prep(e, [messages.get(a) for a in e.args])
        if m is not None:
            messages[e] = m
    return messages


class _OutstandingScale(Exception):
    pass


class _BackwardTransformer(ExprMutator):
    """Rewrites calls bottom-up; a multiply pushes its scale into its operand's producers.

    Pushing a scale is a chain of rule generators run on an explicit stack (no recursion).
    """

    def __init__(self, messages):
        super().__init__()
        self.messages = messages
        self.folded = 0

    def normal(self, call):
        return ExprMutator.visit_call(self, call)

    def visit_call(self, call):
        return self._drive(call, None, None)

    def _rule(self, call, msg, scale):
        rule = _BWD_RULES.get(_op_name(call))
        if rule is None:
            if msg is not None:
                raise _OutstandingScale(f"outstanding scale at {_op_name(call) or 'a call'}")
            return self.normal(call)
        return rule(self, call, msg, scale)

    def _drive(self, call, msg, scale):
        first = self._rule(call, msg, scale)
        if not hasattr(first, "send"):
            return first
        stack, value = [(first, call)], None
        while stack:
            gen, node = stack[-1]
            try:
                expr, m, s = gen.send(value)
            except StopIteration as stop:
                stack.pop()
                value = stop.value
                if stack:  # a pushed-into producer: remember its rewritten form
                    self.memo_map[node] = value
                continue
            if m is None:
                value = self.visit(expr)
                continue
            if not isinstance(expr, Call):
                raise _OutstandingScale("outstanding scale on a non-call expression")
            nxt = self._rule(expr, m, s)
            if hasattr(nxt, "send"):
                stack.append((nxt, expr))
                value = None
            else:
                value = nxt
                self.memo_map[expr] = value
        return value


def _bwd_relu(t, call, msg, scale):
    if msg is None:
        return t.normal(call)
    return _bwd_relu_push(call, msg, scale)


def _bwd_relu_push(call, msg, scale):
    x = yield (call.args[0], msg, scale)
    return Call(call.op, [x], call.attrs, call.type_args)


def _bwd_add_sub(t, call, msg, scale):
    if msg is None:
        return t.normal(call)
    return _bwd_add_sub_push(t, call, msg, scale)


def _bwd_add_sub_push(t, call, msg, scale):
    lm, rm = t.messages.get(call.args[0]), t.messages.get(call.args[1])
    tl, tr = _ttype(call.args[0]), _ttype(call.args[1])
    if lm is not None and rm is not None:
        lhs = yield (call.args[0], msg, scale)
        rhs = yield (call.args[1], msg, scale)
        return Call(call.op, [lhs, rhs], call.attrs, call.type_args)
    if lm is None and rm is None:
        raise _OutstandingScale("outstanding scale at add/subtract")
    pushed = 0 if lm is not None else 1
    s = reshape_or_expand_to_match_axis(scale, list((tl if pushed == 0 else tr).shape), msg.axes)
    if s is None:
        return t.normal(call)
    new = [None, None]
    new[pushed] = yield (call.args[pushed], msg, scale)
    other = yield (call.args[1 - pushed], None, None)
    new[1 - pushed] = multiply(other, s)
    return Call(call.op, new, call.attrs, call.type_args)


def _bwd_multiply(t, call, msg, scale):
    if msg is not None:
        raise _OutstandingScale("outstanding scale at multiply")
    tl, tr = _ttype(call.args[0]), _ttype(call.args[1])
    lm, rm = t.messages.get(call.args[0]), t.messages.get(call.args[1])
    if (lm is not None or rm is not None) and _gates(call.args[1], call.args[0]):
        return t.normal(call)  # (a scale computed from the value's inputs: see _gates)
    if lm is not None:
        ok, s = match_broadcast_to_left_axes(tl, tr, lm.axes, call.args[1])
        if lm.axes and ok and (not lm.require_positive or is_all_positive_constant(s)):
            t.folded += 1
            return _bwd_forward_to(call.args[0], lm, s)
    elif rm is not None:
        ok, s = match_broadcast_to_left_axes(tr, tl, rm.axes, call.args[0])
        if rm.axes and ok and (not rm.require_positive or is_all_positive_constant(s)):
            t.folded += 1
            return _bwd_forward_to(call.args[1], rm, s)
    return t.normal(call)


def _bwd_forward_to(expr, msg, scale):
    out = yield (expr, msg, scale)
    return out


def _bwd_conv(t, call, msg, scale):
    if msg is None:
        return t.normal(call)
    return _bwd_conv_push(t, call, scale)


def _bwd_conv_push(t, call, scale):
    ws = _kernel_scale(call, scale, _ttype(call.args[1]), "O", "o")
    if ws is None:
        return t.normal(call)
    data = yield (call.args[0], None, None)
    weight = yield (call.args[1], None, None)
    return Call(call.op, [data, multiply(weight, ws)], call.attrs, call.type_args)


def _bwd_bias_add(t, call, msg, scale):
    if msg is None:
        return t.normal(call)
    if t.messages.get(call.args[0]) is None:
        raise _OutstandingScale("outstanding scale at nn.bias_add")
    return _bwd_bias_add_push(call, msg, scale)


def _bwd_bias_add_push(call, msg, scale):
    lhs = yield (call.args[0], msg, scale)
    rhs = yield (call.args[1], None, None)
    return Call(call.op, [lhs, multiply(rhs, scale)], call.attrs, call.type_args)


def _bwd_dense(t, call, msg, scale):
    if msg is None:
        return t.normal(call)
    return _bwd_dense_push(call, scale)


def _bwd_dense_push(call, scale):
    data = yield (call.args[0], None, None)
    weight = yield (call.args[1], None, None)
    return Call(call.op, [data, multiply(weight, expand_bias_to_match_axis(scale, 2, (0,)))],
                call.attrs, call.type_args)


_BWD_RULES = {"nn.relu": _bwd_relu, "nn.leaky_relu": _bwd_relu, "add": _bwd_add_sub,
              "subtract": _bwd_add_sub, "multiply": _bwd_multiply, "nn.conv2d": _bwd_conv,
              "nn.conv3d": _bwd_conv, "nn.bias_add": _bwd_bias_add, "nn.dense": _bwd_dense}


def backward_fold_scale_axis(func):
    """(rewritten function, number of multiplies folded away)."""
    messages = backward_prepare(func)
    if not messages:
        return func, 0
    t = _BackwardTransformer(messages)
    return t.visit(func), t.folded


# ------------------------------------------------------------------------------------ the passes
#: the ops every scale message starts from (``_fwd_prep`` / ``_bwd_prep``): a function calling
#: none of them has nothing to fold, and both passes return it without the preparing walk
_SCALED = (*_CONVS, "nn.dense")


@register_pass("BackwardFoldScaleAxis")
def BackwardFoldScaleAxis():
    """Fold scales applied after conv2d/conv3d/dense into their weights (function pass, 3)."""

    def transform(func, mod, ctx):
        if not calls_any(func, _SCALED):
            record_stat("backward-folded scales", 0)
            return func
        out, n = backward_fold_scale_axis(func)
        record_stat("backward-folded scales", n)
        return out

    return function_pass(transform, opt_level=3, name="BackwardFoldScaleAxis",
                         required=["InferType"], needs=["typed"])


@register_pass("ForwardFoldScaleAxis")
def ForwardFoldScaleAxis():
    """Fold scales applied before conv2d/conv3d/dense into their weights (function pass, 3)."""

    def transform(func, mod, ctx):
        if not calls_any(func, _SCALED):
            record_stat("forward-folded scales", 0)
            return func
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
