"""``relay.op.strategy.generic``: the strategy functions of Relay's ops and the wrappers that
adapt a topi-style compute or schedule to the strategy calling convention.

A strategy function ``f(attrs, inputs, out_type, target) -> OpStrategy`` dispatches on the
target's keys (``f.register("cpu")`` adds a target-specific version, as TVM's generic functions
do). The default implementation of an op is its ``FTECompute`` scheduled by the rule table
(``minitvm.schedule``): ``naive_schedule`` and the ``schedule_*`` functions return a
``RuleSchedule`` naming the rule each output stage gets."""

from __future__ import annotations

from collections.abc import Callable

from ....ir.op import Op
from ....schedule import LoweringOptions, select_rule
from ..op_strategy import OpStrategy

__all__ = [
    "RuleSchedule", "GenericStrategy", "generic_strategy", "default_strategy", "naive_schedule",
    "schedule_injective", "schedule_reduce", "schedule_concatenate", "schedule_pool",
    "schedule_adaptive_pool", "schedule_softmax", "schedule_lrn", "schedule_extern",
    "wrap_topi_schedule", "wrap_topi_compute", "wrap_compute_conv2d", "wrap_compute_dense",
    "wrap_compute_batch_matmul", "wrap_compute_softmax", "is_depthwise_conv2d",
    "get_conv2d_in_channels", "get_conv2d_out_channels",
]


class RuleSchedule:
    """The schedule minitvm gives ``outs``: the rule table's choice per output stage (``None``
    for stages lowered as plain injective or reduction loop nests)."""

    __slots__ = ("outs", "target", "rules")

    def __init__(self, outs, target=None):
        self.outs = list(outs) if isinstance(outs, list | tuple) else [outs]
        self.target = target
        options = LoweringOptions()
        self.rules = [getattr(select_rule(t, options), "name", None) for t in self.outs]

    def __repr__(self):
        return f"RuleSchedule(rules={self.rules})"


def naive_schedule(attrs, outs, target) -> RuleSchedule:
    """The rule-table schedule of ``outs``."""
    return RuleSchedule(outs, target)


schedule_injective = schedule_reduce = schedule_concatenate = naive_schedule
schedule_pool = schedule_adaptive_pool = schedule_softmax = naive_schedule
schedule_lrn = schedule_extern = naive_schedule


def wrap_topi_schedule(topi_schedule: Callable) -> Callable:
    """A strategy schedule calling ``topi_schedule(outs)``."""

    def schedule(attrs, outs, target):
        return topi_schedule(outs)

    schedule.__name__ = f"schedule[{getattr(topi_schedule, '__name__', 'topi')}]"
    return schedule


def wrap_topi_compute(topi_compute: Callable) -> Callable:
    """A strategy compute calling ``topi_compute(*inputs)``."""

    def compute(attrs, inputs, out_type):
        return [topi_compute(*inputs)]

    return compute


def _out_dtype(attrs, out_type, inputs) -> str:
    dt = getattr(attrs, "out_dtype", "") or ""
    if dt in ("", "void"):
        dt = getattr(out_type, "dtype", None) or inputs[0].dtype
    return dt


def wrap_compute_conv2d(topi_compute: Callable, need_data_layout: bool = False,
                        need_kernel_layout: bool = False, need_out_layout: bool = False,
                        has_groups: bool = False, need_auto_scheduler_layout: bool = False,
                        need_meta_schedule_layout: bool = False) -> Callable:
    """A strategy compute calling ``topi_compute(data, kernel, strides, padding, dilation,
    [groups], [data_layout], [kernel_layout], [out_layout], out_dtype)`` from conv2d attrs."""

    def compute(attrs, inputs, out_type):
        args = [inputs[0], inputs[1], tuple(attrs.strides), tuple(attrs.padding),
                tuple(attrs.dilation)]
        if has_groups:
            args.append(attrs.groups)
        if need_data_layout:
            args.append(attrs.data_layout)
        if need_kernel_layout:
            args.append(attrs.kernel_layout)
        if need_out_layout:
            args.append(attrs.out_layout or attrs.data_layout)
        args.append(_out_dtype(attrs, out_type, inputs))
        return [topi_compute(*args)]

    return compute


def wrap_compute_dense(topi_compute: Callable, need_auto_scheduler_layout: bool = False,
                       need_meta_schedule_layout: bool = False) -> Callable:
    """A strategy compute calling ``topi_compute(data, weight, bias=None, out_dtype)``."""

    def compute(attrs, inputs, out_type):
        return [topi_compute(inputs[0], inputs[1], None, _out_dtype(attrs, out_type, inputs))]

    return compute


def wrap_compute_batch_matmul(topi_compute: Callable, need_out_dtype: bool = False,
                              need_auto_scheduler_layout: bool = False,
                              need_meta_schedule_layout: bool = False) -> Callable:
    """A strategy compute calling ``topi_compute(x, y, oshape, [out_dtype, transpose_a,
    transpose_b])``."""

    def compute(attrs, inputs, out_type):
        args = [inputs[0], inputs[1], getattr(out_type, "shape", None)]
        if need_out_dtype:
            args += [_out_dtype(attrs, out_type, inputs), bool(attrs.transpose_a),
                     bool(attrs.transpose_b)]
        return [topi_compute(*args)]

    return compute


def wrap_compute_softmax(topi_compute: Callable) -> Callable:
    """A strategy compute calling ``topi_compute(x, axis)``."""

    def compute(attrs, inputs, out_type):
        return [topi_compute(inputs[0], attrs.axis)]

    return compute


def get_conv2d_in_channels(data_shape, data_layout: str) -> int:
    """The input channels of a conv2d's data (``NCHW``, ``NHWC``, ``NCHWc``)."""
    shape = list(data_shape)
    if data_layout == "NCHW" or data_layout == "NCDHW":
        return shape[1]
    if data_layout in ("NHWC", "NDHWC"):
        return shape[-1]
    if len(data_layout) == 5 and data_layout[:4] == "NCHW":  # NCHW[x]c
        return shape[1] * shape[4]
    raise ValueError(f"get_conv2d_in_channels: unknown data layout {data_layout!r}")


def get_conv2d_out_channels(kernel_shape, kernel_layout: str) -> int:
    """The output channels of a conv2d's kernel (``OIHW``, ``HWIO``, ``HWOI``, ``OHWI``)."""
    shape = list(kernel_shape)
    pos = kernel_layout.find("O")
    if pos < 0 or len(kernel_layout) != len(shape):
        raise ValueError(f"get_conv2d_out_channels: unknown kernel layout {kernel_layout!r}")
    return shape[pos]


def is_depthwise_conv2d(data_shape, data_layout: str, kernel_shape, kernel_layout: str,
                        groups: int) -> bool:
    """Whether a grouped conv2d is depthwise: as many groups as input and output channels."""
    ic = get_conv2d_in_channels(data_shape, data_layout)
    oc = get_conv2d_out_channels(kernel_shape, kernel_layout)
    return ic == groups and oc == groups


def _op_compute(op_name: str) -> Callable:
    def compute(attrs, inputs, out_type):
        fcompute = Op.get(op_name).get_attr("FTECompute")
        if fcompute is None:
            raise NotImplementedError(f"operator {op_name} has no tensor-expression compute "
                                      "(FTECompute); it runs through its numpy reference")
        outs = fcompute(attrs, inputs, out_type)
        return list(outs) if isinstance(outs, list | tuple) else [outs]

    compute.__name__ = f"compute[{op_name}]"
    return compute


def default_strategy(op_name: str, plevel: int = 10) -> OpStrategy:
    """The strategy minitvm lowers ``op_name`` with: its ``FTECompute`` and the rule table."""
    strategy = OpStrategy()
    strategy.add_implementation(_op_compute(op_name), naive_schedule,
                                name=f"{op_name}.generic", plevel=plevel)
    return strategy


def _target_keys(target) -> list[str]:
    if target is None:
        return []
    if isinstance(target, str):
        from ....target import Target

        target = Target(target)
    keys = list(getattr(target, "keys", ()) or ())
    kind = getattr(getattr(target, "kind", None), "name", None)
    return ([kind] if kind else []) + keys


class GenericStrategy:
    """A strategy function with per-target-key overrides (``.register(["cpu"])``)."""

    def __init__(self, name: str, default: Callable):
        self.name = name
        self.default = default
        self.dispatch: dict[str, Callable] = {}

    def register(self, keys, override: bool = False) -> Callable:
        keys = [keys] if isinstance(keys, str) else list(keys)

        def decorator(fn):
            for k in keys:
                if k in self.dispatch and not override:
                    raise ValueError(f"{self.name}: a strategy for {k!r} is already registered")
                self.dispatch[k] = fn
            return fn

        return decorator

    def __call__(self, attrs, inputs, out_type, target):
        for k in _target_keys(target):
            fn = self.dispatch.get(k)
            if fn is not None:
                return fn(attrs, inputs, out_type, target)
        return self.default(attrs, inputs, out_type, target)


def generic_strategy(name: str, op_name: str) -> GenericStrategy:
    """A strategy function whose default is ``op_name``'s ``default_strategy``."""

    def default(attrs, inputs, out_type, target):
        return default_strategy(op_name)

    return GenericStrategy(name, default)


# strategy function name (TVM's) -> the op it serves
_STRATEGIES = {
    "conv1d_strategy": "nn.conv1d", "conv2d_strategy": "nn.conv2d",
    "conv3d_strategy": "nn.conv3d", "conv1d_transpose_strategy": "nn.conv1d_transpose",
    "conv2d_transpose_strategy": "nn.conv2d_transpose",
    "conv3d_transpose_strategy": "nn.conv3d_transpose",
    "conv2d_NCHWc_strategy": "nn.contrib_conv2d_NCHWc",
    "depthwise_conv2d_NCHWc_strategy": "nn.contrib_depthwise_conv2d_NCHWc",
    "dense_strategy": "nn.dense", "dense_pack_strategy": "nn.contrib_dense_pack",
    "matmul_strategy": "nn.matmul", "batch_matmul_strategy": "nn.batch_matmul",
    "softmax_strategy": "nn.softmax", "fast_softmax_strategy": "nn.fast_softmax",
    "log_softmax_strategy": "nn.log_softmax", "bitpack_strategy": "nn.bitpack",
    "bitserial_conv2d_strategy": "nn.bitserial_conv2d",
    "bitserial_dense_strategy": "nn.bitserial_dense", "correlation_strategy": "nn.correlation",
    "deformable_conv2d_strategy": "nn.deformable_conv2d", "lrn_strategy": "nn.lrn",
    "argsort_strategy": "argsort", "topk_strategy": "topk", "sort_strategy": "sort",
    "scatter_elements_strategy": "scatter_elements", "scatter_nd_strategy": "scatter_nd",
    "cumsum_strategy": "cumsum", "cumprod_strategy": "cumprod", "einsum_strategy": "einsum",
    "sparse_dense_strategy": "nn.sparse_dense", "roi_align_strategy": "vision.roi_align",
    "nms_strategy": "vision.non_max_suppression", "multibox_prior_strategy":
    "vision.multibox_prior", "resize2d_strategy": "image.resize2d",
    "unique_strategy": "unique", "invert_permutation_strategy": "invert_permutation",
}
for _name, _op in _STRATEGIES.items():
    globals()[_name] = generic_strategy(_name, _op)
    __all__.append(_name)
