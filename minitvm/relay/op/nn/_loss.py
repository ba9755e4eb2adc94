"""Training losses nn.nll_loss, nn.cross_entropy, nn.cross_entropy_with_logits and the streaming
nn.fifo_buffer, with TVM's attrs, type relations and constructors (numpy references:
``minitvm.topi.reference.loss``)."""

from __future__ import annotations

from ....ir.attrs import Attrs
from ....ir.op import Op, OpPattern
from ....ir.type import TensorType
from ....topi.shape_conditions import agree
from ...expr import Call, Expr
from ..op import define_op
from ..type_relations import check_num_args, normalize_axis, tensor_arg, type_str

__all__ = ["NLLLossAttrs", "FIFOBufferAttrs", "CTCAttrs", "nll_loss", "cross_entropy",
           "cross_entropy_with_logits", "fifo_buffer", "ctc_log_alpha"]


class NLLLossAttrs(Attrs):
    __slots__ = ()
    _fields = (("reduction", "mean"), ("ignore_index", -100))


class FIFOBufferAttrs(Attrs):
    __slots__ = ()
    _fields = (("axis", 0),)


class CTCAttrs(Attrs):
    __slots__ = ()
    _fields = (("blank", 0), ("width", 1))


def _ctc_rel(arg_types, attrs):
    op_name = "nn.ctc_log_alpha"
    check_num_args(op_name, arg_types, 4)
    lp, tg, il, tl = (tensor_arg(arg_types, i, op_name) for i in range(4))
    if len(lp.shape) != 3 or len(tg.shape) not in (1, 2) or len(il.shape) != 1 or \
            len(tl.shape) != 1:
        raise TypeError(f"{op_name}: expects log_probs (T, N, C), targets (N, S) or (total,) "
                        f"and lengths (N,), got {type_str(lp)}, {type_str(tg)}, "
                        f"{type_str(il)} and {type_str(tl)}")
    # (any dim may be a run-time one, the frames and the batch most often: a symbolic batch's
    # agreement with the targets' and lengths' is a shape condition, checked at each call)
    batch = lp.shape[1]
    if not (agree(il.shape[0], batch) and agree(tl.shape[0], batch) and
            (len(tg.shape) == 1 or agree(tg.shape[0], batch))):
        raise TypeError(f"{op_name}: targets {type_str(tg)} and lengths {type_str(il)}, "
                        f"{type_str(tl)} must have the batch {batch} of {type_str(lp)}")
    if not lp.dtype.startswith("float"):
        raise TypeError(f"{op_name}: log_probs must be floats, got {type_str(lp)}")
    if not all(t.dtype.startswith(("int", "uint")) for t in (tg, il, tl)):
        raise TypeError(f"{op_name}: targets and lengths must be integers")
    if int(attrs.width) < 1:
        raise TypeError(f"{op_name}: width must be at least 1, got {attrs.width}")
    return TensorType((batch, lp.shape[0], int(attrs.width)), lp.dtype)


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
    if not all(agree(a, b) for a, b in zip(tgt.shape, want, strict=True)):
        raise TypeError(f"{op_name}: targets {type_str(tgt)} do not match predictions "
                        f"{type_str(pred)} (need shape {want})")
    if not agree(w.shape[0], pred.shape[1]):
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
        if len(x.shape) != len(y.shape) or not all(agree(a, b)
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
        if i != axis and not agree(a, b):
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


define_op("nn.ctc_log_alpha", _ctc_rel, pattern=OpPattern.OPAQUE, attrs_type=CTCAttrs,
          num_inputs=4, describe="CTC forward variables (N, T, width) in log space.")


def ctc_log_alpha(log_probs, targets, input_lengths, target_lengths, blank: int = 0,
                  width: int = 1) -> Call:
    """``log_alpha`` ``(N, T, width)`` of CTC over ``log_probs`` ``(T, N, C)`` and padded
    ``(N, S)`` or concatenated ``(total,)`` ``targets`` (``topi.ctc``); ``width`` is at least
    twice the longest target plus one."""
    return Call(Op.get("nn.ctc_log_alpha"), [log_probs, targets, input_lengths, target_lengths],
                CTCAttrs(blank=int(blank), width=int(width)))
