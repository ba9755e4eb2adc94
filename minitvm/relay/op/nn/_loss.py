"""Training losses nn.nll_loss, nn.cross_entropy, nn.cross_entropy_with_logits and the streaming
nn.fifo_buffer, with TVM's attrs, type relations and constructors (numpy references:
``minitvm.topi.reference.loss``)."""

from __future__ import annotations

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType
from ...expr import Call, Expr
from ..op import define_op
from ..type_relations import check_num_args, dims_equal, normalize_axis, tensor_arg, type_str

__all__ = ["NLLLossAttrs", "FIFOBufferAttrs", "nll_loss", "cross_entropy",
           "cross_entropy_with_logits", "fifo_buffer"]


class NLLLossAttrs(Attrs):
    __slots__ = ()
    _fields = (("reduction", "mean"), ("ignore_index", -100))


class FIFOBufferAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", 0),)


def _nll_loss_rel(arg_types, attrs):
    op_name = "nn.nll_loss"
    check_num_args(op_name, arg_types, 3)
    pred = tensor_arg(arg_types, 0, op_name)
    tgt = tensor_arg(arg_types, 1, op_name)
    w = tensor_arg(arg_types, 2, op_name)
    if len(pred.shape) < 2 or len(tgt.shape) != len(pred.shape) - 1 or len(w.shape) != 1:
        raise TypeError(f"{op_name}: expects predictions (N, C, d...), targets (N, d...) and "
                        f"weights (C,), got {type_str(pred)}, {type_str(tgt)} and {type_str(w)}")
    want = (pred.shape[0],) + tuple(pred.shape[2:])
    if not all(dims_equal(a, b) for a, b in zip(tgt.shape, want)):
        raise TypeError(f"{op_name}: targets {type_str(tgt)} do not match predictions "
                        f"{type_str(pred)} (need shape {want})")
    if not dims_equal(w.shape[0], pred.shape[1]):
        raise TypeError(f"{op_name}: weights {type_str(w)} must have one entry per class "
                        f"({pred.shape[1]})")
    if not tgt.dtype.startswith(("int", "uint")):
        raise TypeError(f"{op_name}: targets must be integers, got {type_str(tgt)}")
    if w.dtype != pred.dtype:
        raise TypeError(f"{op_name}: weights dtype {w.dtype} differs from predictions dtype "
                        f"{pred.dtype}")
    if attrs.reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{op_name}: reduction must be mean, sum or none, got "
                         f"{attrs.reduction!r}")
    if attrs.reduction == "none":
        return TensorType(tgt.shape, pred.dtype)
    return TensorType((), pred.dtype)


def _ce_rel(op_name):
    def rel(arg_types, attrs):
        check_num_args(op_name, arg_types, 2)
        x = tensor_arg(arg_types, 0, op_name)
        y = tensor_arg(arg_types, 1, op_name)
        if len(x.shape) != len(y.shape) or not all(dims_equal(a, b)
                                                   for a, b in zip(x.shape, y.shape)):
            raise TypeError(f"{op_name}: predictions and targets must have one shape, got "
                            f"{type_str(x)} and {type_str(y)}")
        if not x.shape:
            raise TypeError(f"{op_name}: expects batched inputs of rank >= 1, got {type_str(x)}")
        return TensorType((), x.dtype)

    rel.__name__ = f"ce_rel[{op_name}]"
    return rel


def _fifo_rel(arg_types, attrs):
    op_name = "nn.fifo_buffer"
    check_num_args(op_name, arg_types, 2)
    data = tensor_arg(arg_types, 0, op_name)
    buf = tensor_arg(arg_types, 1, op_name)
    if len(data.shape) != len(buf.shape):
        raise TypeError(f"{op_name}: data {type_str(data)} and buffer {type_str(buf)} must have "
                        f"the same rank")
    axis = normalize_axis(int(attrs.axis), len(buf.shape), op_name)
    for i, (a, b) in enumerate(zip(data.shape, buf.shape)):
        if i != axis and not dims_equal(a, b):
            raise TypeError(f"{op_name}: data {type_str(data)} and buffer {type_str(buf)} differ "
                            f"outside axis {axis}")
    return TensorType(buf.shape, buf.dtype)


define_op("nn.nll_loss", _nll_loss_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
          attrs_type=NLLLossAttrs, num_inputs=3, describe="Negative log-likelihood loss.")
define_op("nn.cross_entropy", _ce_rel("nn.cross_entropy"), pattern=OpPattern.OPAQUE,
          num_inputs=2, describe="Cross entropy of probabilities, averaged over the batch.")
define_op("nn.cross_entropy_with_logits", _ce_rel("nn.cross_entropy_with_logits"),
          pattern=OpPattern.OPAQUE, num_inputs=2,
          describe="Cross entropy of log-probabilities, averaged over the batch.")
define_op("nn.fifo_buffer", _fifo_rel, pattern=OpPattern.OPAQUE, attrs_type=FIFOBufferAttrs,
          num_inputs=2, describe="Push data into a FIFO buffer along an axis.")


def nll_loss(predictions: Expr, targets: Expr, weights: Expr, reduction: str = "mean",
             ignore_index: int = -100) -> Call:
    return Call(Op.get("nn.nll_loss"), [predictions, targets, weights],
                NLLLossAttrs(reduction=reduction, ignore_index=int(ignore_index)))


def cross_entropy(predictions: Expr, targets: Expr) -> Call:
    return Call(Op.get("nn.cross_entropy"), [predictions, targets])


def cross_entropy_with_logits(predictions: Expr, targets: Expr) -> Call:
    return Call(Op.get("nn.cross_entropy_with_logits"), [predictions, targets])


def fifo_buffer(data: Expr, buffer: Expr, axis: int) -> Call:
    return Call(Op.get("nn.fifo_buffer"), [data, buffer], FIFOBufferAttrs(axis=int(axis)))
