"""Types of operator arguments that the other arguments and attributes determine, as TVM's type
relations assign them: ``nn.conv2d(x, weight, channels=8, kernel_size=(3, 3))`` types an
unannotated ``weight`` as ``(8, C, 3, 3)``; ``nn.dense(x, w, units=4)`` types ``w``;
``bias_add``, batch/layer/group/instance norm and prelu type their per-channel parameters.

Each hint is the op attribute ``FInferArgTypes``: ``fn(arg_types, attrs) -> list`` with one
entry per argument, a TensorType for an argument it can type and None elsewhere; ``arg_types``
holds None for the arguments whose type is not known yet. The type checker calls it for a call
whose argument types are incomplete.
"""

from __future__ import annotations

from ...ir.op import register_op_attr
from ...ir.type import TensorType


def _known(t):
    return isinstance(t, TensorType)


def _conv_weight(spatial: str, data_default: str, kernel_default: str, transpose: bool = False):
    def hint(arg_types, attrs):
        data, weight = arg_types[0], arg_types[1]
        if weight is not None or not _known(data):
            return [None, None]
        if attrs.channels is None or attrs.kernel_size is None:
            return [None, None]
        from .nn._utils import shape_from_primal, shape_to_primal

        layout = attrs.data_layout or data_default
        try:  # blocked layouts (NCHW16c) count their channels in full, as TVM's ForwardShape
            in_c = shape_to_primal(data.shape, layout, "NC" + spatial, "data")["C"]
        except (TypeError, ValueError):
            return [None, None]
        groups = int(attrs.groups)
        channels = int(attrs.channels)
        dims = dict(zip(spatial, (int(k) for k in attrs.kernel_size)))
        if transpose:
            dims["I"], dims["O"] = in_c, channels // groups
        else:
            dims["O"], dims["I"] = channels, int(in_c) // groups
        try:
            shape = shape_from_primal(dims, attrs.kernel_layout or kernel_default, what="weight")
        except (TypeError, ValueError):
            return [None, None]
        return [None, TensorType(shape, data.dtype)]

    return hint


def _dense_weight(arg_types, attrs):
    data, weight = arg_types[0], arg_types[1]
    if weight is None and _known(data) and attrs.units is not None and data.shape:
        return [None, TensorType((int(attrs.units), data.shape[-1]), data.dtype)]
    return [None, None]


def _per_channel(param_indices, axis_attr: str | None = "axis", default_axis: int = 1):
    def hint(arg_types, attrs):
        data = arg_types[0]
        out = [None] * len(arg_types)
        if not _known(data) or not data.shape:
            return out
        axis = getattr(attrs, axis_attr) if axis_attr and attrs is not None else default_axis
        axis = int(axis) % len(data.shape)
        vec = TensorType((data.shape[axis],), data.dtype)
        for i in param_indices:
            if i < len(arg_types) and arg_types[i] is None:
                out[i] = vec
        return out

    return hint


register_op_attr("nn.conv1d", "FInferArgTypes", _conv_weight("W", "NCW", "OIW"))
register_op_attr("nn.conv2d", "FInferArgTypes", _conv_weight("HW", "NCHW", "OIHW"))
register_op_attr("nn.conv2d_transpose", "FInferArgTypes",
                 _conv_weight("HW", "NCHW", "IOHW", transpose=True))
register_op_attr("nn.dense", "FInferArgTypes", _dense_weight)
register_op_attr("nn.bias_add", "FInferArgTypes", _per_channel([1]))
register_op_attr("nn.batch_norm", "FInferArgTypes", _per_channel([1, 2, 3, 4]))
register_op_attr("nn.layer_norm", "FInferArgTypes", _per_channel([1, 2]))
register_op_attr("nn.instance_norm", "FInferArgTypes", _per_channel([1, 2]))
register_op_attr("nn.group_norm", "FInferArgTypes", _per_channel([1, 2]))
register_op_attr("nn.prelu", "FInferArgTypes", _per_channel([1]))
