"""Building blocks of the test networks: every weight is a parameter annotated with its shape."""

from __future__ import annotations

from ..expr import var
from ..op import nn
from ..op import tensor as _op


def weight(name: str, shape, dtype: str = "float32"):
    return var(name, shape=tuple(shape), dtype=dtype)


def batch_norm_infer(data, channels: int, name: str, axis: int = 1, epsilon: float = 1e-5,
                     scale: bool = True, center: bool = True, dtype: str = "float32"):
    """``nn.batch_norm`` with ``{name}_gamma/_beta/_moving_mean/_moving_var``; the output only."""
    shape = (channels,)
    out = nn.batch_norm(data, weight(f"{name}_gamma", shape, dtype),
                        weight(f"{name}_beta", shape, dtype),
                        weight(f"{name}_moving_mean", shape, dtype),
                        weight(f"{name}_moving_var", shape, dtype),
                        axis=axis, epsilon=epsilon, scale=scale, center=center)
    return out[0]


def conv_kernel_layout(data_layout: str, is_depthwise: bool = False) -> str:
    """The kernel layout that goes with a data layout (TVM's defaults)."""
    if data_layout == "NHWC":
        return "HWOI" if is_depthwise else "HWIO"
    return "OIHW"


def _kernel_shape(layout: str, out_c: int, in_c: int, kh: int, kw: int) -> tuple:
    dims = {"O": out_c, "I": in_c, "H": kh, "W": kw}
    return tuple(dims[c] for c in layout)


def conv2d(data, in_channels: int, channels: int, kernel_size, name: str, strides=(1, 1),
           padding=(0, 0), groups: int = 1, data_layout: str = "NCHW", kernel_layout=None,
           dtype: str = "float32"):
    """``nn.conv2d`` with a ``{name}_weight`` parameter of the right shape."""
    kh, kw = kernel_size
    kernel_layout = kernel_layout or conv_kernel_layout(data_layout, groups > 1)
    in_per_group = in_channels // groups
    if kernel_layout == "HWOI":  # depthwise NHWC: O is the channel multiplier's group
        wshape = (kh, kw, channels, in_per_group)
    else:
        wshape = _kernel_shape(kernel_layout, channels, in_per_group, kh, kw)
    w = weight(f"{name}_weight", wshape, dtype)
    return nn.conv2d(data, w, strides=strides, padding=padding, groups=groups, channels=channels,
                     kernel_size=(kh, kw), data_layout=data_layout, kernel_layout=kernel_layout)


def dense_add_bias(data, in_units: int, units: int, name: str, dtype: str = "float32"):
    """``nn.dense`` then ``nn.bias_add`` (axis -1) with ``{name}_weight`` and ``{name}_bias``."""
    out = nn.dense(data, weight(f"{name}_weight", (units, in_units), dtype), units=units)
    return nn.bias_add(out, weight(f"{name}_bias", (units,), dtype), axis=-1)


def layer_norm(data, units: int, name: str, epsilon: float = 1e-12, dtype: str = "float32"):
    """``nn.layer_norm`` over the last axis with ``{name}_gamma`` and ``{name}_beta``."""
    return nn.layer_norm(data, weight(f"{name}_gamma", (units,), dtype),
                         weight(f"{name}_beta", (units,), dtype), axis=-1, epsilon=epsilon)


def gelu(x, dtype: str = "float32"):
    """``x * 0.5 * (1 + erf(x / sqrt(2)))``."""
    from ..expr import const

    half = const(0.5, dtype)
    erf = _op.erf(_op.multiply(x, const(0.7071067811865476, dtype)))
    return _op.multiply(_op.multiply(x, half), _op.add(const(1.0, dtype), erf))
