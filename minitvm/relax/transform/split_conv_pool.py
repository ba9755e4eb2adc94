"""SplitConvPool (Relax, before LegalizeOps): a conv2d whose large output only feeds a window
pool, through per-channel elementwise ops (a bias add, a relu), runs as a few convs of a slice
of the output channels each, every one followed by its own pool, the pooled slices
concatenated along the channels. Relay's pass of the same name does it on Relay
(``relay.transform.SplitConvPool``: the measurements are written there).

A stem's map (ResNet's 7x7 / 2 conv to 64x112x112: 3.2 MB an image) is more than a core's L2,
so the conv's stores and the pool's loads both go out to L3; in parts of at most
``channel_parts.PART_BYTES`` each part is still in L2 when its pool reads it. The batch may be
symbolic: the sizes are an image's, and the VM's native entry runs such kernels image by image
and writes the pooled slices in place into the concatenation (``_concat_parts``).

The conv must be a float32 NCHW / OIHW conv of groups 1 with a constant weight and static
channels and spatial dims; each op between it and the pool (NCHW ``max_pool2d`` /
``avg_pool2d``) takes the chain and at most a constant that broadcasts per channel (``(O, 1,
1)``, ``(1, O, 1, 1)``, a scalar); the conv and every op of the chain have one use."""

from __future__ import annotations

import numpy as np

from ...tir import expr as TE
from ...transform import channel_parts
from ...transform.stats import record_stat
from ..expr import Call, Constant, DataflowBlock, Function, ShapeExpr, Var, VarBinding
from ..op.manipulate import concat
from .dead_code_elimination import remove_all_unused
from .function_pass import function_pass
from .normalize import DataflowTrackingMutator
from .utils import binding_use_counts, register

__all__ = ["SplitConvPool", "split_conv_pool"]

_POOLS = frozenset({"relax.nn.max_pool2d", "relax.nn.avg_pool2d"})
_UNARY = frozenset({"relax.nn.relu", "relax.clip", "relax.sigmoid", "relax.tanh",
                    "relax.nn.leaky_relu", "relax.negative"})
_BINARY = frozenset({"relax.add", "relax.subtract", "relax.multiply", "relax.divide",
                     "relax.maximum", "relax.minimum"})


def _name(e) -> str:
    return getattr(getattr(e, "op", None), "name", "") if isinstance(e, Call) else ""


def _sinfo(e):
    return getattr(e, "_struct_info", None)


def _image_shape(e) -> tuple[int, int, int] | None:
    """(C, H, W) of a float32 4-d tensor whose dims after the batch are constants."""
    sinfo = _sinfo(e)
    shape = getattr(sinfo, "shape", None)
    if str(getattr(sinfo, "dtype", "")) != "float32" or not isinstance(shape, ShapeExpr) or \
            len(shape.values) != 4 or \
            not all(isinstance(d, TE.IntImm) for d in shape.values[1:]):
        return None
    return tuple(int(d.value) for d in shape.values[1:])


def _per_channel(c, o: int) -> bool:
    """Does constant ``c`` broadcast against an ``(N, o, H, W)`` map per channel only?"""
    if not isinstance(c, Constant):
        return False
    s = tuple(c.data.numpy().shape)
    if len(s) > 4:
        return False
    full = (1,) * (4 - len(s)) + s
    return full[0] == 1 and full[2] == 1 and full[3] == 1 and full[1] in (1, o)


def _slice_const(c: Constant, lo: int, hi: int) -> Constant:
    """Channels ``lo:hi`` of a per-channel constant (as it is where it has one value)."""
    a = c.data.numpy()
    ax = a.ndim - 3
    if ax < 0 or a.shape[ax] == 1:
        return c
    idx = [slice(None)] * a.ndim
    idx[ax] = slice(lo, hi)
    return Constant(np.ascontiguousarray(a[tuple(idx)]))


def match(pool, bound: dict, uses: dict):
    """``(conv, chain from the conv's user to the pool's input)`` of a pool this pass splits,
    else None (sizes not checked); ``bound`` maps dataflow vars to their values."""
    if _name(pool) not in _POOLS or str(pool.attrs.layout) != "NCHW" or \
            str(pool.attrs.out_layout) != "NCHW":
        return None
    chain = []
    x = pool.args[0]
    while True:
        value = bound.get(x)
        if value is None or uses.get(x, 0) != 1:
            return None
        name = _name(value)
        if name == "relax.nn.conv2d":
            break
        if name in _UNARY:
            chain.append(value)
            x = value.args[0]
        elif name in _BINARY:
            chain.append(value)
            a, b = value.args
            x = a if not isinstance(a, Constant) else b
        else:
            return None
        if not isinstance(x, Var):
            return None
    conv, shape = value, _image_shape(x)
    a = conv.attrs
    if (str(a.data_layout) != "NCHW" or str(a.kernel_layout) != "OIHW" or
            str(a.out_layout) != "NCHW" or int(a.groups) != 1 or shape is None or
            not isinstance(conv.args[1], Constant)):
        return None
    o = shape[0]
    for step in chain:
        if _name(step) in _BINARY:
            p, q = step.args
            if isinstance(p, Constant) == isinstance(q, Constant) or \
                    not _per_channel(q if not isinstance(p, Constant) else p, o):
                return None
        if _image_shape(step) is None and str(getattr(_sinfo(step), "dtype", "")) != "float32":
            return None
    return conv, chain, shape


class _Splitter(DataflowTrackingMutator):
    def __init__(self, bound: dict, uses: dict, mod=None):
        super().__init__(mod)
        self.bound = bound
        self.uses = uses
        self.count = 0

    def visit_var_binding_(self, binding: VarBinding) -> None:
        found = match(binding.value, self.bound, self.uses) if self.in_dataflow else None
        if found is None:
            return super().visit_var_binding_(binding)
        conv, chain, (o, h, w) = found
        ranges = channel_parts.channel_parts(o, 4 * o * h * w)
        if len(ranges) < 2:
            return super().visit_var_binding_(binding)
        data = self.visit_expr(conv.args[0])
        weight = conv.args[1].data.numpy()
        pool = binding.value
        outs = []
        for lo, hi in ranges:
            y = self.builder_.emit(Call(conv.op, [data, Constant(
                np.ascontiguousarray(weight[lo:hi]))], conv.attrs, conv.sinfo_args, conv.span))
            for step in reversed(chain):
                if _name(step) in _BINARY:
                    p, q = step.args
                    args = [y, _slice_const(q, lo, hi)] if not isinstance(p, Constant) \
                        else [_slice_const(p, lo, hi), y]
                else:
                    args = [y, *step.args[1:]]
                y = self.builder_.emit(Call(step.op, args, step.attrs, step.sinfo_args,
                                            step.span))
            outs.append(self.builder_.emit(Call(pool.op, [y], pool.attrs, pool.sinfo_args,
                                                pool.span)))
        value = self.builder_.normalize(concat(outs, axis=1))
        self.builder_.emit_normalized(VarBinding(binding.var, value, binding.span))
        self.count += 1
        return None


def _dataflow_values(func: Function) -> dict:
    """Var -> its bound value, over the function's dataflow blocks."""
    return {b.var: b.value for block in getattr(func.body, "blocks", ())
            if isinstance(block, DataflowBlock) for b in block.bindings
            if isinstance(b, VarBinding)}


def split_conv_pool(func: Function, mod=None):
    """SplitConvPool on one normalized Relax function: ``(function, convs split)``."""
    bound = _dataflow_values(func)
    if not any(_name(v) in _POOLS for v in bound.values()):
        return func, 0  # (no pool: no walk)
    m = _Splitter(bound, binding_use_counts(func), mod)
    out = m.visit_expr(func)
    if m.count:
        out, _ = remove_all_unused(out, mod)
    return out, m.count


@register("SplitConvPool")
def SplitConvPool():  # noqa: N802 - the pass factory's name
    """Function pass (opt 0, minitvm's): a large conv output read only by a pool, split by
    channels into convs each followed by its own pool."""

    def transform(func, mod, ctx):
        out, count = split_conv_pool(func, mod)
        record_stat("conv + pool pairs split", count)
        return out

    return function_pass(transform, opt_level=0, name="SplitConvPool",
                         needs=["relax_normalized"], keeps=["relax_normalized"])
