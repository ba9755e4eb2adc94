"""MobileNet v1 (TVM's ``relay.testing.mobilenet``): depthwise-separable conv blocks."""

from __future__ import annotations

from ..analysis import free_vars
from ..expr import Function, var
from ..op import nn
from . import layers
from .init import create_workload

__all__ = ["mobile_net", "get_workload"]


class _Builder:
    def __init__(self, layout: str, dtype: str):
        self.layout = layout
        self.dtype = dtype
        self.axis = layout.index("C")

    def conv_block(self, x, in_c, channels, name, kernel_size=(3, 3), strides=(1, 1),
                   padding=(1, 1), epsilon=1e-5):
        """conv2d + batch_norm + relu."""
        conv = layers.conv2d(x, in_c, channels, kernel_size, f"{name}_conv", strides=strides,
                             padding=padding, data_layout=self.layout, dtype=self.dtype)
        bn = layers.batch_norm_infer(conv, channels, f"{name}_bn", axis=self.axis,
                                     epsilon=epsilon, dtype=self.dtype)
        return nn.relu(bn)

    def separable_conv_block(self, x, name, depthwise_channels, pointwise_channels,
                             downsample=False, epsilon=1e-5):
        """Depthwise 3x3 conv + bn + relu, then pointwise 1x1 conv + bn + relu."""
        strides = (2, 2) if downsample else (1, 1)
        conv1 = layers.conv2d(x, depthwise_channels, depthwise_channels, (3, 3),
                              f"{name}_depthwise_conv1", strides=strides, padding=(1, 1),
                              groups=depthwise_channels, data_layout=self.layout,
                              dtype=self.dtype)
        bn1 = layers.batch_norm_infer(conv1, depthwise_channels, f"{name}_bn1", axis=self.axis,
                                      epsilon=epsilon, dtype=self.dtype)
        act1 = nn.relu(bn1)
        conv2 = layers.conv2d(act1, depthwise_channels, pointwise_channels, (1, 1),
                              f"{name}_conv2", data_layout=self.layout, dtype=self.dtype)
        bn2 = layers.batch_norm_infer(conv2, pointwise_channels, f"{name}_bn2", axis=self.axis,
                                      epsilon=epsilon, dtype=self.dtype)
        return nn.relu(bn2)


def mobile_net(num_classes: int = 1000, data_shape=(1, 3, 224, 224), dtype: str = "float32",
               alpha: float = 1.0, is_shallow: bool = False, layout: str = "NCHW") -> Function:
    """The MobileNet function of ``data`` and its weights."""
    b = _Builder(layout, dtype)
    data = var("data", shape=data_shape, dtype=dtype)

    def c(n):
        return int(n * alpha)

    body = b.conv_block(data, data_shape[b.axis], c(32), "conv_block_1", strides=(2, 2))
    plan = [(32, 64, False), (64, 128, True), (128, 128, False), (128, 256, True),
            (256, 256, False), (256, 512, True)]
    if is_shallow:
        plan += [(512, 1024, True), (1024, 1024, True)]
    else:
        plan += [(512, 512, False)] * 5 + [(512, 1024, True), (1024, 1024, False)]
    for i, (dw, pw, down) in enumerate(plan, start=1):
        body = b.separable_conv_block(body, f"separable_conv_block_{i}", c(dw), c(pw), down)
    body = nn.batch_flatten(nn.global_avg_pool2d(body, layout=layout))
    body = layers.dense_add_bias(body, c(plan[-1][1]), num_classes, "fc", dtype=dtype)
    body = nn.softmax(body)
    return Function(free_vars(body), body)


def get_workload(batch_size: int = 1, num_classes: int = 1000, image_shape=(3, 224, 224),
                 dtype: str = "float32", layout: str = "NCHW", seed: int = 0):
    """``(mod, params)`` of MobileNet v1."""
    data_shape = (batch_size, *image_shape)
    return create_workload(mobile_net(num_classes, data_shape, dtype, layout=layout), seed=seed)
