"""SimplifyInference: lower training-time normalizations to inference arithmetic.

* ``batch_norm(x, gamma, beta, mean, var)[0]`` becomes ``x * scale + shift`` with
  ``scale = 1 / sqrt(var + eps) * gamma`` and ``shift = -mean * scale + beta``, both expanded to
  broadcast along ``axis`` (only when output 0 alone is used, as TVM does);
* ``dropout(x)[0]`` becomes ``x``;
* ``layer_norm``, ``group_norm`` and ``instance_norm`` become mean/variance arithmetic, and
  ``l2_normalize`` becomes ``x / sqrt(max(sum(x * x), eps))``.

Where the data's channel count or a parameter's length is symbolic, a broadcasting multiply or
add would take a parameter of length 1 for any channel count (the normalizations' own rules
refuse it): the parameters are then tied to each other and to the channel count through
``nn.bias_add`` (whose rule states the lengths agree, checked by a symbolic kernel at each call).

Needs types (run InferType first). Difference from TVM: the epsilon of instance_norm and
l2_normalize is a constant of the data's dtype (TVM always uses float32, which fails to type check
for float16 data).
"""

from __future__ import annotations

from ...ir.op import Op
from ...topi.utils import is_static_dim
from ...transform.stats import record_stat
from ..analysis.op_names import calls_any
from ..expr import Call, TupleGetItem, const
from ..expr_functor import ExprMutator
from ..op import tensor as _t
from ..op import transform as _tr
from ..op.nn import nn as _nn
from ..op.reduce import VarianceAttrs, mean, sum
from ._pass_helpers import register
from .function_pass import function_pass

__all__ = ["SimplifyInference", "simplify_inference", "expand_bias_to_match_axis"]


def expand_bias_to_match_axis(bias, target_ndim: int, axis: int):
    """Append unit dims to a 1-D ``bias`` so it broadcasts along ``axis`` of an N-d tensor."""
    pad = target_ndim - axis - 1
    return _tr.expand_dims(bias, 1, pad) if pad > 0 else bias


def _tensor_type(e, what: str):
    t = e._checked_type
    if t is None:
        raise ValueError(f"SimplifyInference needs the type of the data of {what}; "
                         "run relay.transform.InferType() first")
    return t


def _norm_axis(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis


def _normalize(data, axes, eps):
    m = mean(data, axes, True, False)
    var = Call(Op.get("variance"), [data, m],
               VarianceAttrs(axis=tuple(axes), keepdims=True, exclude=False, unbiased=False))
    return _t.divide(_t.subtract(data, m), _t.sqrt(_t.add(var, eps)))


def _symbolic(ttype, axis: int, params: list) -> bool:
    """Whether the channel count (``axis`` of ``ttype``) or a parameter's length is symbolic."""
    dims = [ttype.shape[axis]] + [d for p in params for d in _tensor_type(p, "a norm").shape]
    return not all(is_static_dim(d) for d in dims)


def _tie(vec, ref):
    """``vec``, typed as having ``ref``'s length (``bias_add`` of zeros of ``ref``)."""
    row = _nn.bias_add(_tr.expand_dims(vec, 0), _t.zeros_like(ref), axis=1)
    return _tr.squeeze(row, [0])


def _scale_center(out, gamma, beta, attrs, ndim, axis, checked: bool = False):
    if checked and (attrs.scale or attrs.center):  # (channels == len(beta) == len(gamma))
        ref = beta if attrs.center else gamma
        out = _nn.bias_add(out, _t.zeros_like(ref), axis=axis)
        if attrs.scale:
            g = _tie(gamma, beta) if attrs.center else gamma
            out = _t.multiply(out, expand_bias_to_match_axis(g, ndim, axis))
        if attrs.center:
            out = _t.add(out, expand_bias_to_match_axis(beta, ndim, axis))
        return out
    if attrs.scale:
        out = _t.multiply(out, expand_bias_to_match_axis(gamma, ndim, axis))
    if attrs.center:
        out = _t.add(out, expand_bias_to_match_axis(beta, ndim, axis))
    return out


def batch_norm_to_infer(attrs, data, gamma, beta, moving_mean, moving_var, ttype,
                        checked: bool = False):
    eps = const(float(attrs.epsilon), ttype.dtype)
    ndim = len(ttype.shape)
    axis = _norm_axis(attrs.axis, ndim)
    if checked:  # (every parameter tied to the variance's length, it to the channels)
        data = _nn.bias_add(data, _t.zeros_like(moving_var), axis=axis)
        scale = _t.divide(const(1.0, ttype.dtype), _t.sqrt(_t.add(moving_var, eps)))
        if attrs.scale:
            scale = _t.multiply(scale, _tie(gamma, moving_var))
        shift = _t.multiply(_t.negative(_tie(moving_mean, moving_var)), scale)
        if attrs.center:
            shift = _t.add(shift, _tie(beta, moving_var))
        scaled = _t.multiply(data, expand_bias_to_match_axis(scale, ndim, axis))
        return _t.add(scaled, expand_bias_to_match_axis(shift, ndim, axis))
    scale = _t.divide(const(1.0, ttype.dtype), _t.sqrt(_t.add(moving_var, eps)))
    if attrs.scale:
        scale = _t.multiply(scale, gamma)
    shift = _t.multiply(_t.negative(moving_mean), scale)
    if attrs.center:
        shift = _t.add(shift, beta)
    scale = expand_bias_to_match_axis(scale, ndim, axis)
    shift = expand_bias_to_match_axis(shift, ndim, axis)
    return _t.add(_t.multiply(data, scale), shift)


def layer_norm_to_infer(attrs, data, gamma, beta, ttype, checked: bool = False):
    ndim = len(ttype.shape)
    out = _normalize(data, [attrs.axis], const(float(attrs.epsilon), ttype.dtype))
    return _scale_center(out, gamma, beta, attrs, ndim, _norm_axis(attrs.axis, ndim), checked)


def instance_norm_to_infer(attrs, data, gamma, beta, ttype, checked: bool = False):
    ndim = len(ttype.shape)
    axis = _norm_axis(attrs.axis, ndim)
    axes = [i for i in range(1, ndim) if i != axis]
    out = _normalize(data, axes, const(float(attrs.epsilon), ttype.dtype))
    return _scale_center(out, gamma, beta, attrs, ndim, axis, checked)


def group_norm_to_infer(attrs, data, gamma, beta, ttype, checked: bool = False):
    ndim = len(ttype.shape)
    axis = _norm_axis(attrs.axis, ndim)
    groups = int(attrs.num_groups)
    axes = list(range(axis + 1, ndim + 1))  # (the channels within a group, and what follows)
    if all(is_static_dim(d) for d in ttype.shape):
        shape = list(ttype.shape)
        new_shape = shape[:axis] + [groups, shape[axis] // groups] + shape[axis + 1:]
        grouped = _tr.reshape(data, new_shape)
    else:  # (run-time sizes: keep the dims before, split the channels, keep the rest)
        grouped = _tr.reshape(data, [0] * axis + [-4, groups, -1] + ([-2] if axis + 1 < ndim
                                                                     else []))
    out = _normalize(grouped, axes, const(float(attrs.epsilon), ttype.dtype))
    out = _tr.reshape(out, list(ttype.shape)) if all(is_static_dim(d) for d in ttype.shape) \
        else _tr.reshape_like(out, data)
    return _scale_center(out, gamma, beta, attrs, ndim, axis, checked)


def l2_norm_to_infer(attrs, data, ttype):
    eps = const(float(attrs.eps), ttype.dtype)
    total = _t.maximum(sum(_t.multiply(data, data), list(attrs.axis), True, False), eps)
    return _t.divide(data, _t.sqrt(total))


#: the ops _InferenceSimplifier rewrites
_REWRITTEN = ("nn.batch_norm", "nn.dropout", "nn.layer_norm", "nn.group_norm",
              "nn.instance_norm", "nn.l2_normalize")


class _InferenceSimplifier(ExprMutator):
    def __init__(self):
        super().__init__()
        self.bn = Op.get("nn.batch_norm")
        self.dropout = Op.get("nn.dropout")
        self.rewrites = {
            Op.get("nn.layer_norm"): layer_norm_to_infer,
            Op.get("nn.group_norm"): group_norm_to_infer,
            Op.get("nn.instance_norm"): instance_norm_to_infer,
        }
        self.l2 = Op.get("nn.l2_normalize")
        self.count = 0
        self.batch_norms = 0
        self.dropouts = 0

    def visit_tuple_getitem(self, op):
        new = super().visit_tuple_getitem(op)
        if new.index != 0 or not isinstance(new, TupleGetItem):
            return new
        call, orig = new.tuple_value, op.tuple_value
        if isinstance(call, Call) and call.op is self.bn and isinstance(orig, Call):
            self.count += 1
            self.batch_norms += 1
            ttype = _tensor_type(orig.args[0], "nn.batch_norm")
            checked = _symbolic(ttype, _norm_axis(call.attrs.axis, len(ttype.shape)),
                                orig.args[1:])
            return batch_norm_to_infer(call.attrs, *call.args, ttype, checked)
        if isinstance(call, Call) and call.op is self.dropout:
            self.count += 1
            self.dropouts += 1
            return call.args[0]
        return new

    def visit_call(self, call):
        new = super().visit_call(call)
        rewrite = self.rewrites.get(call.op)
        if rewrite is not None:
            self.count += 1
            ttype = _tensor_type(call.args[0], call.op.name)
            checked = _symbolic(ttype, _norm_axis(call.attrs.axis, len(ttype.shape)),
                                call.args[1:3])
            return rewrite(new.attrs, new.args[0], new.args[1], new.args[2], ttype, checked)
        if call.op is self.l2:
            self.count += 1
            return l2_norm_to_infer(new.attrs, new.args[0], _tensor_type(call.args[0], "l2"))
        return new


def simplify_inference(expr):
    """SimplifyInference on one (type-checked) expression or function."""
    return _InferenceSimplifier().visit(expr)


@register("SimplifyInference")
def SimplifyInference():  # noqa: N802 - TVM's name
    """Function pass (opt 0, requires InferType): lower batch_norm, dropout and the norms."""

    def transform(func, mod, ctx):
        if not calls_any(func, _REWRITTEN):  # (none of its ops: the same function)
            record_stat("expanded batch_norms", 0)
            return func
        m = _InferenceSimplifier()
        out = m.visit(func)
        record_stat("expanded batch_norms", m.batch_norms)
        if m.dropouts:
            record_stat("removed dropouts", m.dropouts)
        others = m.count - m.batch_norms - m.dropouts
        if others:
            record_stat("expanded other normalizations", others)
        return out

    return function_pass(transform, opt_level=0, name="SimplifyInference",
                         required=["InferType"], needs=["typed"])
