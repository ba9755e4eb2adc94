"""SinkUnitSqueeze (Relax, before LegalizeOps): a squeeze of unit dims moves below the
elementwise ops that read it, so a producer and its elementwise epilogue fuse, and a squeeze
meeting a reshape back to the unsqueezed shape cancels. Relay's pass of the same name does the
same on Relay (``relay.transform.SinkUnitSqueeze``; the reasons are written there).

In a dataflow block, ``y = f(squeeze(x), c)`` for an elementwise Relax op ``f`` becomes
``t = f(x, c'); y = squeeze(t)``, ``c'`` a constant given the same unit dims; a
``squeeze`` / ``expand_dims`` / ``reshape`` of such a ``y`` to ``x``'s shape binds ``x``.
The squeezed variable must have one use and ``f``'s output the squeezed shape; ``f``'s other
operands are scalars (constants or ``PrimValue``s) or constants of no more dims. Squeezes left
without uses are removed. Outputs are unchanged: the same ops run over the same values."""

from __future__ import annotations

from ...tir import expr as TE
from ...tir.expr import PrimExpr
from ...transform.stats import record_stat
from ...transform.unit_axes import dropped_unit_axes, unsqueezed
from ..expr import (
    Call,
    Constant,
    DataflowVar,
    Function,
    PrimValue,
    ShapeExpr,
    Var,
    VarBinding,
)
from ..op.manipulate import squeeze
from .dead_code_elimination import elide_intermediate_dataflow_vars, remove_all_unused
from .function_pass import function_pass
from .normalize import DataflowTrackingMutator
from .utils import binding_use_counts, register

__all__ = ["SinkUnitSqueeze", "sink_unit_squeeze"]

_RESHAPES = frozenset({"relax.squeeze", "relax.expand_dims", "relax.reshape"})
_SQUEEZING = frozenset({"relax.squeeze", "relax.reshape"})
# elementwise / broadcasting Relax ops with no axis: the same op over the unsqueezed tensor
_ELEMENTWISE = frozenset({
    "relax.add", "relax.subtract", "relax.multiply", "relax.divide", "relax.floor_divide",
    "relax.maximum", "relax.minimum", "relax.power", "relax.where", "relax.clip",
    "relax.round", "relax.floor", "relax.ceil", "relax.abs", "relax.negative", "relax.sqrt",
    "relax.rsqrt", "relax.exp", "relax.log", "relax.sigmoid", "relax.tanh", "relax.erf",
    "relax.isnan", "relax.isinf", "relax.astype", "relax.nn.relu", "relax.nn.gelu",
    "relax.nn.silu", "relax.equal", "relax.not_equal", "relax.less", "relax.greater",
    "relax.less_equal", "relax.greater_equal", "relax.logical_and", "relax.logical_or",
    "relax.logical_not",
})


def _static_shape(e) -> tuple[int, ...] | None:
    shape = getattr(getattr(e, "_struct_info", None), "shape", None)
    if not isinstance(shape, ShapeExpr) or \
            not all(isinstance(d, TE.IntImm) for d in shape.values):
        return None
    return tuple(int(d.value) for d in shape.values)


class _Sinker(DataflowTrackingMutator):
    def __init__(self, uses: dict, mod=None):
        super().__init__(mod)
        self.uses = uses
        self.sunk: dict = {}  # bound var of a squeeze -> (its input, axes, input shape)
        self.moved = self.cancelled = 0

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = binding.value
        name = getattr(getattr(value, "op", None), "name", "")
        if not self.in_dataflow or not isinstance(value, Call) or \
                (name not in _RESHAPES and name not in _ELEMENTWISE):
            return super().visit_var_binding_(binding)
        out_shape = _static_shape(binding.var)
        if out_shape is None:
            return super().visit_var_binding_(binding)
        args = [self.visit_expr(a) for a in value.args]
        if name in _RESHAPES:
            found = self.sunk.get(args[0]) if args else None
            if found is not None and found[2] == out_shape:
                self.cancelled += 1
                if isinstance(binding.var, DataflowVar):
                    self.set_var_remap(binding.var, found[0])
                else:  # (a block's output keeps its variable: ``gv = lv``, elided after)
                    self.builder_.emit_normalized(VarBinding(binding.var, found[0],
                                                             binding.span))
                return None
            super().visit_var_binding_(binding)
            axes = dropped_unit_axes(_static_shape(args[0]) or (), out_shape)
            if axes:
                self.sunk[self.visit_expr(binding.var)] = (args[0], axes, _static_shape(args[0]))
            return None
        moved = self._sink(value, args, out_shape)
        if moved is None:
            return super().visit_var_binding_(binding)
        inner, axes, full = moved
        self.moved += 1
        value = self.builder_.normalize(squeeze(inner, list(axes)))
        self.builder_.emit_normalized(VarBinding(binding.var, value, binding.span))
        self.sunk[binding.var] = (inner, axes, full)
        return None

    def _sink(self, call, args, out_shape):
        """``(t, axes, full shape)`` with ``t`` bound to ``f`` over the unsqueezed operands,
        or None where the squeeze cannot move."""
        squeezed = [self.sunk.get(a) if isinstance(a, Var) and self.uses.get(o, 0) == 1
                    else None for o, a in zip(call.args, args, strict=True)]
        kinds = {(s[1], s[2]) for s in squeezed if s is not None}
        if len(kinds) != 1:
            return None
        axes, full = next(iter(kinds))
        if tuple(d for i, d in enumerate(full) if i not in axes) != out_shape:
            return None
        new_args = []
        for arg, s in zip(args, squeezed, strict=True):
            if s is not None:
                new_args.append(s[0])
            elif isinstance(arg, (PrimValue, PrimExpr)) or \
                    (isinstance(arg, Constant) and arg.data.numpy().ndim == 0):
                new_args.append(arg)
            elif isinstance(arg, Constant) and arg.data.numpy().ndim <= len(out_shape):
                value = unsqueezed(arg.data.numpy(), len(out_shape), axes, len(full))
                new_args.append(Constant(value))
            else:
                return None
        inner = self.builder_.emit(Call(call.op, new_args, call.attrs, call.sinfo_args,
                                        call.span))
        return inner, axes, full


def sink_unit_squeeze(func: Function, mod=None):
    """SinkUnitSqueeze on one normalized Relax function: ``(function, squeezes moved, pairs
    cancelled)``; squeezes left unused are removed, and ``gv = lv`` bindings elided."""
    if not any(getattr(getattr(b.value, "op", None), "name", "") in _SQUEEZING
               for block in getattr(func.body, "blocks", ()) for b in block.bindings):
        return func, 0, 0  # (nothing squeezes: no walk)
    m = _Sinker(binding_use_counts(func), mod)
    out = m.visit_expr(func)
    if m.moved or m.cancelled:
        out, _ = remove_all_unused(out, mod)
        out, _ = elide_intermediate_dataflow_vars(out)
    return out, m.moved, m.cancelled


@register("SinkUnitSqueeze")
def SinkUnitSqueeze():  # noqa: N802 - the pass factory's name
    """Function pass (opt 0, minitvm's): squeezes of unit dims below elementwise Relax ops,
    cancelled against reshapes back."""

    def transform(func, mod, ctx):
        out, moved, cancelled = sink_unit_squeeze(func, mod)
        record_stat("squeezes moved below an elementwise op", moved)
        record_stat("squeeze / reshape pairs cancelled", cancelled)
        return out

    return function_pass(transform, opt_level=0, name="SinkUnitSqueeze",
                         needs=["relax_normalized"], keeps=["relax_normalized"])
