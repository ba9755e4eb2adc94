"""FuseConvPool (after FuseOps): a fused conv2d function whose only reader is a function of
one ``k x k`` max pool becomes one function, ``max_pool2d(conv's body)``.

FuseOps keeps a conv and a pool apart (both anchor ops), so the conv writes its whole map and
the pool reads it back: for ProtoNet's Conv-4 blocks (conv, batch norm, relu, 2x2 max pool)
at batch 75, a 7.5 MB map out to L3 and back. In one function the lowering pools inside the
conv's tiles (``schedule.conv_pool``): each tile holds whole windows and stores one maximum
a window. Only convs that schedule takes are merged (``pools_in_tiles``: by default convs of
few taps, the stems; merged, another conv would lower stage by stage, its epilogue a pass of
its own). ProtoNet (``bench_model_switch``, one process, one thread, against ONNX Runtime):
1.18x -> 0.95-0.96x (two A/B pairs), its two 3 -> 32 stems (batch 75 and 25) merged.

Merged: a call of a ``Primitive`` function whose body is exactly ``nn.max_pool2d`` of its one
parameter (NCHW, a ``k x k`` window, ``k >= 2``, at stride ``k``, dilation 1, each padding
below ``k``, every window of the pooled plane holding a conv pixel: padded and ceil-mode
windows, whose outside positions the tiles clamp into the window; overlapping windows, at a
stride below ``k``, only with ``schedule.conv_lanes.POOL_OVERLAP``, off: recomputing the
shared pixels lost; ``schedule.conv_pool.takes_windows``), whose argument is the only use of
a call of a
``Primitive`` function computing one float32 NCHW / OIHW conv2d of groups 1, static shapes,
a constant weight and a filter of two or more taps, followed by elementwise or broadcast ops
only, where ``pools_in_tiles``.
"""

from __future__ import annotations

from ...ir.op import Op
from ...ir.type import TensorType
from ...transform.graph_partitioner import BROADCAST
from ...transform.stats import record_stat
from ..analysis.op_names import calls_any
from ..expr import Call, Constant, Function, Var
from ..expr_functor import ExprMutator, dataflow_post_order
from ._pass_helpers import dataflow_use_counts, register
from .function_pass import function_pass

__all__ = ["FuseConvPool", "fuse_conv_pool"]

# the pass merges (an A/B switch: ``benchmarks/bench_model_switch.py --switch
# relay.transform.fuse_conv_pool.ENABLED``; the PassContext's disabled_pass also turns it off)
ENABLED = True


def _primitive(f) -> bool:
    return isinstance(f, Function) and f.attrs is not None and bool(f.attrs.get("Primitive", 0)) \
        and not f.attrs.get("Compiler")


def _ints(v) -> tuple[int, ...]:
    return tuple(int(x) for x in v)


def _static(e) -> list[int] | None:
    """The static shape of typed tensor expression ``e``, else None (a symbolic dimension)."""
    ty = e.checked_type
    if not isinstance(ty, TensorType):
        return None
    try:
        return [int(d) for d in ty.shape]
    except (TypeError, ValueError):
        return None


def pool_window(fn) -> tuple[int, int, int, int] | None:
    """``(k, stride, top padding, left padding)`` when primitive function ``fn`` is
    ``nn.max_pool2d(p0)`` (NCHW) of a ``k x k`` window (``k >= 2``) at a stride of at most
    ``k`` (overlapping windows from stride 1), each padding below ``k``, dilation 1; else
    None."""
    if not _primitive(fn) or len(fn.params) != 1:
        return None
    b = fn.body
    if not (isinstance(b, Call) and isinstance(b.op, Op) and b.op.name == "nn.max_pool2d" and
            b.args[0] is fn.params[0]):
        return None
    a = b.attrs
    if str(getattr(a, "layout", "NCHW")) != "NCHW" or \
            str(getattr(a, "out_layout", "") or "NCHW") != "NCHW":
        return None
    size, strides, pad = _ints(a.pool_size), _ints(a.strides), _ints(a.padding)
    if len(size) != 2 or len(strides) != 2 or size[0] != size[1] or strides[0] != strides[1] \
            or size[0] < 2 or not 1 <= strides[0] <= size[0] or \
            any(q < 0 or q >= size[0] for q in pad) or any(d != 1 for d in _ints(a.dilation)):
        return None
    pad = pad * 2 if len(pad) == 1 else pad
    return size[0], strides[0], pad[0], pad[1]


def conv_function(fn) -> bool:
    """Is primitive function ``fn`` one float32 NCHW / OIHW conv2d of groups 1 and two or
    more filter taps, then elementwise or broadcast ops only?"""
    if not _primitive(fn) or not isinstance(fn.body, Call):
        return False
    convs = 0
    for e in dataflow_post_order(fn.body):
        if isinstance(e, (Var, Constant)):
            continue
        if not isinstance(e, Call):
            return False
        if not isinstance(e.op, Op):
            return False
        if e.op.name == "nn.conv2d":
            a = e.attrs
            shapes = [_static(x) for x in (e.args[0], e.args[1], e)]
            if any(sh is None for sh in shapes):
                return False
            kh, kw = shapes[1][2:]
            if (str(a.data_layout) != "NCHW" or str(a.kernel_layout) != "OIHW" or
                    str(a.out_layout or "NCHW") != "NCHW" or int(a.groups) != 1 or
                    kh * kw < 2 or str(e.checked_type.dtype) != "float32"):
                return False
            convs += 1
            continue
        pattern = e.op.get_attr("TOpPattern")
        if pattern is None or int(pattern) > BROADCAST:
            return False
    return convs == 1 and isinstance(fn.body.checked_type, TensorType) and \
        str(fn.body.checked_type.dtype) == "float32"


def _conv_call(fn):
    return next(e for e in dataflow_post_order(fn.body)
                if isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "nn.conv2d")


def pools_in_tiles(conv: Call, k: int) -> bool:
    """Would the lowering pool ``k x k`` windows in the tiles of ``conv`` (typed), its weight a
    constant (``schedule.conv_pool.pools_in_tiles``, asked of the conv's own compute for the
    current target and the PassContext's lowering options)? Else merged, the conv would lower
    into a temporary with its epilogue in a pass of its own: slower than the two functions."""
    from ... import te
    from ...backend.options import lowering_options
    from ...schedule import conv_pool
    from ...target import Target
    from ..backend.te_compiler import lower_call

    inputs = [te.placeholder([int(d) for d in a.checked_type.shape], a.checked_type.dtype)
              for a in conv.args]
    target = Target.current(allow_none=True) or Target("llvm")
    out = lower_call(conv, inputs, target).outputs[0]
    return conv_pool.pools_in_tiles(out, k, lowering_options())


class _Merge(ExprMutator):
    def __init__(self, counts: dict[int, int]):
        super().__init__()
        self.counts = counts
        self.count = 0

    def visit_call(self, call):
        window = pool_window(call.op) if isinstance(call.op, Function) else None
        arg = call.args[0] if window is not None else None
        if arg is None or not isinstance(arg, Call) or not isinstance(arg.op, Function) or \
                self.counts.get(id(arg), 0) != 1 or not conv_function(arg.op):
            return super().visit_call(call)
        k, at = window[0], window[1:]
        pool = call.op.body
        conv_fn = arg.op
        conv = _conv_call(conv_fn)
        weight = conv.args[1]
        if isinstance(weight, Var) and any(weight is q for q in conv_fn.params):
            weight = arg.args[[id(q) for q in conv_fn.params].index(id(weight))]
        if not isinstance(weight, Constant) or not pools_in_tiles(conv, k):
            return super().visit_call(call)
        shape, pooled = _static(conv_fn.body), _static(pool)
        from ...schedule.conv_pool import takes_windows

        if shape is None or pooled is None or not takes_windows(k, at, pooled[2:], shape[2:]):
            return super().visit_call(call)
        body = Call(pool.op, [conv_fn.body], pool.attrs, pool.type_args, pool.span)
        fn = Function(list(conv_fn.params), body, pool.checked_type, None, dict(conv_fn.attrs))
        self.count += 1
        return Call(fn, [self.visit(a) for a in arg.args], None, None, call.span)


def fuse_conv_pool(func):
    """FuseConvPool on one (fused, typed) function: ``(function, pairs merged)``."""
    m = _Merge(dataflow_use_counts(func.body))
    return m.visit(func), m.count


@register("FuseConvPool")
def FuseConvPool():  # noqa: N802 - the pass factory's name, as TVM names passes
    """Function pass (opt 3), after FuseOps: a fused conv read only by a fused ``k x k`` max
    pool (stride ``k``, padded or not), merged into one function the lowering pools in the
    conv's tiles."""

    def transform(func, mod, ctx):
        if not ENABLED or func.attrs is not None and (func.attrs.get("Primitive", 0) or
                                                      func.attrs.get("Compiler")):
            return func
        if not (calls_any(func, ("nn.max_pool2d",)) and calls_any(func, ("nn.conv2d",))):
            record_stat("conv + max pool functions merged", 0)
            return func  # (no max pool or no conv: nothing to merge)
        out, count = fuse_conv_pool(func)
        record_stat("conv + max pool functions merged", count)
        return out

    return function_pass(transform, opt_level=3, name="FuseConvPool", required=["InferType"],
                         needs=["typed"])
