"""SinkUnitSqueeze: move a squeeze of unit dims below the elementwise ops that read it, so a
producer and its elementwise epilogue fuse, and a squeeze meeting a reshape back to the
unsqueezed shape cancels.

A Conv1d imports as ``expand_dims -> conv2d -> squeeze``; FuseOps ends a conv's group at the
squeeze (an injective op after an out_elemwise_fusable one), so the epilogue after it (bias,
activation, a QDQ model's requantize, the next conv's ``expand_dims``) runs as a kernel of its
own that reads and writes the whole map again. Here ``f(squeeze(x), c)`` for an elementwise or
broadcast ``f`` becomes ``squeeze(f(x, c'))``, ``c'`` a constant given the same unit dims;
a squeeze reaching a ``squeeze`` / ``expand_dims`` / ``reshape`` whose output has ``x``'s
shape is replaced by ``x``. A reshape that only drops unit dims counts as a squeeze.

The squeezed value must have one reader (nothing is computed twice), ``f``'s output the
squeezed shape (broadcasting grows nothing), and its other operands scalars, or constants (or reshapes of
one) of no more dims; ops whose attributes name an axis or a layout are left alone. Outputs are
unchanged: the same elementwise ops run over the same values. Needs types (InferType).
"""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ...ir.type import TensorType
from ...transform.stats import record_stat
from ...transform.unit_axes import dropped_unit_axes, unsqueezed
from ..expr import Call, Constant
from ..expr_functor import ExprMutator, dataflow_post_order
from ..op.transform import squeeze
from ._pass_helpers import dataflow_use_counts, register
from .function_pass import function_pass

__all__ = ["SinkUnitSqueeze", "sink_unit_squeeze"]

_RESHAPES = frozenset({"squeeze", "expand_dims", "reshape"})
# attribute names that tie an op to positions in its operands' shapes
_POSITIONAL = ("axis", "axes", "layout", "shape", "reps")


def _static_shape(e) -> tuple[int, ...] | None:
    t = getattr(e, "_checked_type", None)
    if not isinstance(t, TensorType):
        return None
    try:
        return tuple(int(d) for d in t.shape)
    except (TypeError, ValueError):
        return None


def _constant_of(e):
    """The constant ``e`` is, or reshapes (CanonicalizeOps writes a bias as ``expand_dims`` of
    one), else None."""
    while isinstance(e, Call) and getattr(e.op, "name", "") in _RESHAPES and e.args:
        e = e.args[0]
    return e if isinstance(e, Constant) else None


def _positional(call) -> bool:
    """Does ``call`` name positions or extents of its operands' shapes (an axis, a target
    shape such as ``broadcast_to``'s, ``tile``'s reps, or a ``dyn.`` op's shape operand)?"""
    if getattr(call.op, "name", "").startswith("dyn."):
        return True
    attrs = call.attrs
    if attrs is None:
        return False
    return any(p in name for name in attrs.keys() for p in _POSITIONAL)


class _Sinker(ExprMutator):
    def __init__(self, uses: dict[int, int]):
        super().__init__()
        self.uses = uses
        # id(squeeze) -> (input, axes, input shape, the squeeze: kept alive, so that its id
        # is not reused by a later node while the table holds it)
        self.sunk: dict[int, tuple] = {}
        self.moved = self.cancelled = 0

    def _squeezed(self, orig, new):
        """``(input, axes, input shape)`` when ``new`` (the rewrite of ``orig``) is a squeeze of
        unit dims this pass may move below ``orig``'s one reader, else None."""
        found = self.sunk.get(id(new))
        if found is None or self.uses.get(id(orig), 0) != 1:
            return None
        return found

    def visit_call(self, call):
        args = [self.visit(a) for a in call.args]
        name = call.op.name if isinstance(call.op, Op) else ""
        out_shape = _static_shape(call)
        if out_shape is None or not args:
            return call.with_fields(args=args)
        if name in _RESHAPES:
            found = self.sunk.get(id(args[0]))
            if found is not None and found[2] == out_shape:
                self.cancelled += 1
                return found[0]
            new = call.with_fields(args=args)
            in_shape = _static_shape(call.args[0])
            axes = None if in_shape is None else dropped_unit_axes(in_shape, out_shape)
            if axes:
                self.sunk[id(new)] = (args[0], axes, in_shape, new)
            return new
        pattern = call.op.get_attr("TOpPattern") if isinstance(call.op, Op) else None
        if pattern is None or pattern > OpPattern.BROADCAST or _positional(call):
            return call.with_fields(args=args)
        return self._sink(call, args, out_shape)

    def _sink(self, call, args, out_shape):
        """``squeeze(f(x, c'))`` for ``call`` = ``f`` over ``args``, or ``f`` as it was."""
        plain = call.with_fields(args=args)
        squeezed = [self._squeezed(o, n) for o, n in zip(call.args, args, strict=True)]
        kinds = {(s[1], s[2]) for s in squeezed if s is not None}
        if len(kinds) != 1:
            return plain
        axes, full = next(iter(kinds))
        if tuple(d for i, d in enumerate(full) if i not in axes) != out_shape:
            return plain
        new_args = []
        for orig, new, s in zip(call.args, args, squeezed, strict=True):
            if s is not None:
                new_args.append(s[0])
                continue
            shape = _static_shape(orig)
            if shape is not None and not shape:
                new_args.append(new)  # (a scalar broadcasts the same way at any rank)
            elif len(shape or ()) <= len(out_shape) and _constant_of(new) is not None:
                value = _constant_of(new).data.numpy().reshape(shape)
                new_args.append(Constant(unsqueezed(value, len(out_shape), axes, len(full))))
            else:
                return plain
        self.moved += 1
        out = squeeze(Call(call.op, new_args, call.attrs, call.type_args), list(axes))
        self.sunk[id(out)] = (out.args[0], axes, full, out)
        return out


def sink_unit_squeeze(func):
    """SinkUnitSqueeze on one type-checked function: ``(function, squeezes moved, pairs
    cancelled)``."""
    if not any(type(e) is Call and getattr(e.op, "name", "") in ("squeeze", "reshape")
               for e in dataflow_post_order(func.body)):
        return func, 0, 0  # (nothing squeezes: no rewrite walk)
    m = _Sinker(dataflow_use_counts(func.body))
    out = m.visit(func)
    return out, m.moved, m.cancelled


@register("SinkUnitSqueeze")
def SinkUnitSqueeze():  # noqa: N802 - the pass factory's name
    """Function pass (opt 3, requires InferType): squeezes of unit dims below elementwise ops,
    cancelled against reshapes back (minitvm's; TVM has no such pass)."""

    def transform(func, mod, ctx):
        out, moved, cancelled = sink_unit_squeeze(func)
        record_stat("squeezes moved below an elementwise op", moved)
        record_stat("squeeze / reshape pairs cancelled", cancelled)
        return out

    return function_pass(transform, opt_level=3, name="SinkUnitSqueeze",
                         required=["InferType"], needs=["typed"])
