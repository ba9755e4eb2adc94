"""QuantizeAnnotate: mark where values enter the integer domain with
``relay.op.annotation.simulated_quantize`` calls (TVM's annotate step).

``simulated_quantize(x, dom_scale, clip_min, clip_max, kind, sign, rounding)`` computes
``round(clip(x / dom_scale, clip_min, clip_max)) * dom_scale`` in float: the error the chosen
integer representation brings. ``dom_scale``/``clip_min``/``clip_max`` are fresh scalar
variables, left free until calibration binds them.

Rules (TVM's annotate functions, with its partition step folded in): conv2d (unless skipped by
``skip_conv_layers``), dense (unless ``skip_dense_layer``) and batch_matmul quantize their data
input as INPUT and a weight as WEIGHT, and produce an ACTIVATION (int32 accumulator); multiply
and add with one quantized operand quantize the other (WEIGHT when constant, INPUT otherwise);
value-moving ops (reshape, transpose, relu, clip, pools, batch_flatten, ...) carry their
input's kind, an ACTIVATION first narrowed to INPUT; an ACTIVATION reaching the function's
result or any other op is narrowed to INPUT the same way (TVM's cast_hint). global_avg_pool2d
goes back to float and stops quantizing what follows (TVM's stop_quantize).
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType
from ..expr import Call, Constant, Function, Var
from ..expr_functor import ExprMutator
from ..op.op import define_op
from ..op.type_relations import check_num_args, tensor_arg


class QAnnotateKind:
    """The role of an annotated value; picks its bit width and dtype in the qconfig."""

    IDENTITY = 0
    INPUT = 1
    WEIGHT = 2
    ACTIVATION = 3


_KIND_NAMES = {0: "identity", 1: "input", 2: "weight", 3: "activation"}


def kind2str(kind: int) -> str:
    """'input', 'weight', 'activation' or 'identity'."""
    if kind not in _KIND_NAMES:
        raise ValueError(f"unknown QAnnotateKind {kind!r}")
    return _KIND_NAMES[kind]


class SimulatedQuantizeAttrs(Attrs):
    __slots__ = ()
    _fields = (("kind", 1), ("sign", True), ("rounding", "round"))


SQ_NAME = "relay.op.annotation.simulated_quantize"


def _sq_rel(arg_types, attrs):
    check_num_args(SQ_NAME, arg_types, 4)
    data = tensor_arg(arg_types, 0, SQ_NAME)
    for i in (1, 2, 3):
        t = tensor_arg(arg_types, i, SQ_NAME)
        if len(t.shape) != 0:
            raise TypeError(f"{SQ_NAME}: dom_scale, clip_min and clip_max must be scalars")
    return TensorType(data.shape, data.dtype)


def _sq_np(attrs, args, out_type):
    data, scale, cmin, cmax = args
    if attrs.kind == QAnnotateKind.IDENTITY:
        return data
    scaled = np.clip(data / scale, cmin, cmax)
    return (np.round(scaled) * scale).astype(data.dtype)


define_op(SQ_NAME, _sq_rel, _sq_np, pattern=OpPattern.ELEMWISE,
          attrs_type=SimulatedQuantizeAttrs, num_inputs=4,
          describe="Simulate the rounding and clipping error of a quantized representation.")


def simulated_quantize(data, dom_scale, clip_min, clip_max, kind: int = QAnnotateKind.INPUT,
                       sign: bool = True, rounding: str = "round") -> Call:
    """TVM's ``relay.quantize.simulated_quantize`` constructor."""
    return Call(Op.get(SQ_NAME), [data, dom_scale, clip_min, clip_max],
                SimulatedQuantizeAttrs(kind=int(kind), sign=bool(sign), rounding=rounding))


def attach_simulated_quantize(data, kind: int, sign: bool = True, rounding: str = "round"):
    """``data`` wrapped in a simulated_quantize with fresh free parameter variables."""
    scalar = TensorType((), "float32")
    return simulated_quantize(data, Var("dom_scale", scalar), Var("clip_min", scalar),
                              Var("clip_max", scalar), kind, sign, rounding)


ANCHORS = ("nn.conv2d", "nn.dense", "nn.batch_matmul")
IDENTITY_OPS = frozenset({"reshape", "clip", "nn.relu", "strided_slice", "nn.avg_pool2d",
                          "nn.max_pool2d", "nn.batch_flatten", "transpose", "squeeze",
                          "expand_dims", "annotation.stop_fusion"})
_INPUT, _WEIGHT, _ACT = QAnnotateKind.INPUT, QAnnotateKind.WEIGHT, QAnnotateKind.ACTIVATION


class _Annotator(ExprMutator):
    """Post-order rewrite; ``kind`` maps each rewritten value to its QAnnotateKind."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.kind: dict = {}
        self.conv_index = 0
        self.stopped = False
        self.uses: dict = {}

    def _skip(self, name: str) -> bool:
        if self.stopped:
            return True
        if self.cfg.debug_enabled_ops is not None and name not in [
                str(x) for x in self.cfg.debug_enabled_ops]:
            return True
        if name == "nn.conv2d":
            index = self.conv_index
            self.conv_index += 1
            return index in [int(i) for i in (self.cfg.skip_conv_layers or [])]
        return name == "nn.dense" and bool(self.cfg.skip_dense_layer)

    def _as_input(self, e):
        """``e`` quantized as INPUT (an ACTIVATION narrowed; a float value quantized)."""
        k = self.kind.get(e)
        if k == _INPUT:
            return e
        out = attach_simulated_quantize(e, _INPUT)
        self.kind[out] = _INPUT
        return out

    def _operand(self, e):
        """A quantized operand of a binary op: constants as WEIGHT, the rest as INPUT."""
        if self.kind.get(e) is None and isinstance(e, Constant):
            return attach_simulated_quantize(e, _WEIGHT)
        return self._as_input(e)

    def _settle(self, e):
        """A value leaving the quantized ops: ACTIVATIONs narrowed to INPUT."""
        return self._as_input(e) if self.kind.get(e) == _ACT else e

    def visit_call(self, call):
        new = super().visit_call(call)
        op = call.op
        if not isinstance(op, Op):
            return self._forward(new, [self._settle(a) for a in new.args])
        name = op.name
        args = list(new.args)
        kinds = [self.kind.get(a) for a in args]
        if name in ANCHORS and not self._skip(name):
            lhs = self._as_input(args[0])
            rhs = (attach_simulated_quantize(args[1], _WEIGHT) if name != "nn.batch_matmul"
                   or isinstance(args[1], Constant) else self._as_input(args[1]))
            return self._mark(self._forward(new, [lhs, rhs]), _ACT)
        if name in ("add", "multiply") and not self.stopped and any(k is not None
                                                                       for k in kinds):
            if name == "add" and kinds[0] == _ACT and kinds[1] == _ACT:
                return self._mark(self._forward(new, args), _ACT)
            return self._mark(self._forward(new, [self._operand(a) for a in args]), _ACT)
        if name in IDENTITY_OPS and kinds and kinds[0] is not None and not self.stopped:
            x = self._settle(args[0])
            return self._mark(self._forward(new, [x, *args[1:]]), self.kind[x])
        if name == "nn.global_avg_pool2d" and kinds and kinds[0] is not None:
            self.stopped = True
        return self._forward(new, [self._settle(a) for a in args])

    def visit_tuple(self, tup):
        new = super().visit_tuple(tup)
        return new.with_fields([self._settle(f) for f in new.fields])

    def _forward(self, call, args):
        if all(a is b for a, b in zip(args, call.args, strict=True)):
            return call
        return Call(call.op, args, call.attrs, call.type_args, call.span)

    def _mark(self, e, kind):
        self.kind[e] = kind
        return e


def annotate_function(func: Function, cfg) -> Function:
    """The annotate step on one function (its result narrowed like any escaping value)."""
    a = _Annotator(cfg)
    body = a._settle(a.visit(func.body))
    return Function(func.params, body, func.ret_type, func.type_params, func.attrs, func.span)


def annotate():
    """The QuantizeAnnotate pass (module pass, opt 1): insert simulated_quantize calls."""
    from ...transform.decorators import module_pass
    from .quantize import current_qconfig

    def transform(mod, ctx):
        out = mod.shallow_copy()
        out["main"] = annotate_function(mod["main"], current_qconfig())
        return out

    return module_pass(transform, opt_level=1, name="QuantizeAnnotate")


__all__ = ["QAnnotateKind", "kind2str", "simulated_quantize", "attach_simulated_quantize",
           "annotate", "annotate_function"]
