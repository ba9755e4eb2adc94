"""FoldConvScale (Relax, before LegalizeOps, minitvm's): a per-output-channel constant scale
after a conv2d with constant weights goes into the weights, as Relay's FoldScaleAxis and
SimplifyInference + FoldConstant do for Relay models, so the conv's epilogue is a bias add.

In a dataflow block, with ``W`` a constant OIHW weight and the NCHW conv2d's result read only
by the rewritten op:

* ``multiply(conv2d(x, W), s)`` (``s`` a constant of shape ``(C, 1, 1)``, ``(1, C, 1, 1)``,
  ``(1,)``... : one value per output channel, or one for all) becomes
  ``conv2d(x, W * s[:, None, None, None])``;
* ``batch_norm(conv2d(x, W), gamma, beta, mean, var)`` (all four constant: inference) becomes
  the tuple ``(conv2d(x, W * k) + (beta - mean * k), mean, var)`` with
  ``k = gamma / sqrt(var + epsilon)`` (``gamma`` only with ``scale``, ``beta`` only with
  ``center``); an item 0 of that tuple names the sum directly.

Without the fold, a torch.export'ed ResNet or MobileNetV2 kept one multiply per conv (or a
whole batch norm) in each fused kernel's epilogue, where Relay's kernels add a bias only.
Outputs change only by float rounding (the scale is applied to the weights, not the sums), so
a product that is rounded next (``round`` / ``floor`` / ``ceil`` / ``trunc``, a cast to an
integer: a requantize, where the conv sums integers exactly in float32) keeps its multiply:
one rounding step of the scaled sums flips an integer there (an ONNX QLinearConv one step off
ONNX Runtime's)."""

from __future__ import annotations

import numpy as np

from ...ir.op import Op
from ...transform.stats import record_stat
from ..expr import Call, Constant, DataflowVar, Function, Tuple, TupleGetItem, VarBinding
from ..op import binary
from .dead_code_elimination import elide_intermediate_dataflow_vars, remove_all_unused
from .function_pass import function_pass
from .normalize import DataflowTrackingMutator
from .utils import binding_use_counts, register

__all__ = ["FoldConvScale", "fold_conv_scale"]


def _op_name(e) -> str:
    op = getattr(e, "op", None)
    return op.name if isinstance(op, Op) else ""


def _foldable_conv(call) -> bool:
    """An NCHW / OIHW float conv2d whose weight is a constant."""
    if _op_name(call) != "relax.nn.conv2d" or not isinstance(call.args[1], Constant):
        return False
    a = call.attrs
    w = call.args[1].data.numpy()
    return a.data_layout == "NCHW" and a.kernel_layout == "OIHW" and \
        (a.out_layout or "NCHW") == "NCHW" and w.ndim == 4 and w.dtype.kind == "f" and \
        str(a.out_dtype) in ("", "void", str(w.dtype))


def _channel_scale(c, channels: int, dtype) -> np.ndarray | None:
    """The constant ``c`` as one value per output channel of an NCHW result, or None where it
    varies along another axis or would broadcast the result to a larger shape."""
    if not isinstance(c, Constant):
        return None
    v = c.data.numpy()
    if v.dtype != dtype or v.ndim > 4:
        return None
    shape = (1,) * (4 - v.ndim) + v.shape
    if shape[0] != 1 or shape[2] != 1 or shape[3] != 1 or shape[1] not in (1, channels):
        return None
    return np.broadcast_to(v.reshape(shape[1]), (channels,))


_ROUNDING = frozenset(f"relax.{n}" for n in ("round", "floor", "ceil", "trunc"))


def _rounded_vars(func: Function) -> set:
    """The variables some binding of ``func`` rounds to integers (their exact values matter)."""
    out = set()
    for block in getattr(func.body, "blocks", ()):
        for b in block.bindings:
            v = b.value
            name = _op_name(v)
            if name in _ROUNDING or (name == "relax.astype" and
                                     str(v.attrs.dtype).startswith(("int", "uint", "bool"))):
                out.add(v.args[0])
    return out


class _Folder(DataflowTrackingMutator):
    def __init__(self, uses: dict, mod=None, rounded: frozenset | set = frozenset()):
        super().__init__(mod)
        self.uses = uses
        self.rounded = rounded  # products rounded next: their multiply stays (module doc)
        self.convs: dict = {}  # bound var of a foldable conv2d (one use) -> its call
        self.norms: dict = {}  # bound var of a folded batch norm's tuple -> its item 0
        self.folded = 0

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = binding.value
        if not self.in_dataflow:
            return super().visit_var_binding_(binding)
        if isinstance(value, TupleGetItem) and value.index == 0 and \
                value.tuple_value in self.norms:
            item = self.norms[value.tuple_value]
            if isinstance(binding.var, DataflowVar):
                self.set_var_remap(binding.var, item)
            else:  # (a block's output keeps its variable: ``gv = lv``, elided after)
                self.builder_.emit_normalized(VarBinding(binding.var, item, binding.span))
            return None
        name = _op_name(value)
        if name == "relax.nn.conv2d" and self.uses.get(binding.var, 0) == 1 and \
                _foldable_conv(value):
            self.convs[binding.var] = Call(value.op, [self.visit_expr(value.args[0]),
                                                      value.args[1]], value.attrs,
                                           value.sinfo_args, value.span)
        new = self._fold(value) if name == "relax.nn.batch_norm" or (
            name == "relax.multiply" and binding.var not in self.rounded) else None
        if new is None:
            return super().visit_var_binding_(binding)
        self.folded += 1
        if isinstance(new, tuple):  # a batch norm: (the sum, the tuple of its results)
            item, tup = new
            self.norms[binding.var] = item
            new = tup
        return super().visit_var_binding_(VarBinding(binding.var, new, binding.span))

    def _scaled_conv(self, conv, k: np.ndarray):
        w = conv.args[1].data.numpy()
        weight = Constant((w * k.astype(w.dtype).reshape(-1, 1, 1, 1)).astype(w.dtype))
        return Call(conv.op, [conv.args[0], weight], conv.attrs, conv.sinfo_args, conv.span)

    def _fold(self, call):
        """The folded expression (a batch norm: (the sum, the tuple)), or None."""
        name = _op_name(call)
        if name == "relax.multiply":
            for a, b in ((0, 1), (1, 0)):
                conv = self.convs.get(call.args[a])
                if conv is None:
                    continue
                w = conv.args[1].data.numpy()
                k = _channel_scale(self.visit_expr(call.args[b]), w.shape[0], w.dtype)
                if k is not None:
                    del self.convs[call.args[a]]
                    return self._scaled_conv(conv, k)
            return None
        if name != "relax.nn.batch_norm" or call.attrs.axis not in (1, -3):
            return None
        conv = self.convs.get(call.args[0])
        stats = [self.visit_expr(a) for a in call.args[1:]]
        if conv is None or not all(isinstance(s, Constant) for s in stats):
            return None
        w = conv.args[1].data.numpy()
        gamma, beta, mean, var = (s.data.numpy().astype(np.float64) for s in stats)
        if any(v.shape != (w.shape[0],) for v in (gamma, beta, mean, var)):
            return None
        a = call.attrs
        k = 1.0 / np.sqrt(var + a.epsilon)
        if a.scale:
            k = k * gamma
        shift = -mean * k + (beta if a.center else 0.0)
        del self.convs[call.args[0]]
        scaled = self.builder_.emit(self._scaled_conv(conv, k))
        item = self.builder_.emit(binary.add(
            scaled, Constant(shift.astype(w.dtype).reshape(-1, 1, 1))))
        return item, Tuple([item, stats[2], stats[3]])


def fold_conv_scale(func: Function, mod=None):
    """FoldConvScale on one normalized Relax function: ``(function, scales folded)``."""
    names = {_op_name(b.value) for block in getattr(func.body, "blocks", ())
             for b in block.bindings}
    if "relax.nn.conv2d" not in names or \
            not names & {"relax.multiply", "relax.nn.batch_norm"}:
        return func, 0  # (nothing to fold: no walk)
    m = _Folder(binding_use_counts(func), mod, _rounded_vars(func))
    out = m.visit_expr(func)
    if m.folded:
        out, _ = remove_all_unused(out, mod)
        out, _ = elide_intermediate_dataflow_vars(out)
    return out, m.folded


@register("FoldConvScale")
def FoldConvScale():  # noqa: N802 - the pass factory's name
    """Function pass (opt 0, minitvm's): per-output-channel constant scales and inference
    batch norms after a conv2d with constant weights folded into the weights."""

    def transform(func, mod, ctx):
        out, folded = fold_conv_scale(func, mod)
        record_stat("conv2d scales folded into weights", folded)
        return out

    return function_pass(transform, opt_level=0, name="FoldConvScale",
                         needs=["relax_normalized"], keeps=["relax_normalized"])
