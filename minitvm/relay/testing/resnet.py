"""ResNet (v2, pre-activation, as in TVM's ``relay.testing.resnet``) and a small ResNet stem.

``get_workload(num_layers=18|34|50|101|152)`` returns ``(mod, params)``; the layer structure
(batch_norm + relu before each conv, ``bn_data`` on the input, global pooling, dense + bias_add,
softmax) and the parameter names follow TVM's builder.
"""

from __future__ import annotations

from ..analysis import free_vars
from ..expr import Function, var
from ..op import nn
from ..op import tensor as _t
from . import layers
from .init import create_workload

__all__ = ["get_net", "get_workload", "resnet", "residual_unit", "get_small_net",
           "get_small_workload"]

_UNITS = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3],
          152: [3, 8, 36, 3], 200: [3, 24, 36, 3], 269: [3, 30, 48, 8]}


class _Net:
    """Tracks the channel count while a network is assembled (weights need their shapes)."""

    def __init__(self, layout: str, dtype: str):
        self.layout = layout
        self.dtype = dtype
        self.axis = layout.index("C")

    def bn_relu(self, x, channels, name):
        bn = layers.batch_norm_infer(x, channels, name, axis=self.axis, epsilon=2e-5,
                                     dtype=self.dtype)
        return nn.relu(bn)

    def conv(self, x, in_c, out_c, kernel, strides, padding, name):
        return layers.conv2d(x, in_c, out_c, kernel, name, strides=strides, padding=padding,
                             data_layout=self.layout, dtype=self.dtype)


def residual_unit(net: _Net, data, in_channels: int, num_filter: int, stride, dim_match: bool,
                  name: str, bottle_neck: bool = True):
    """One pre-activation residual unit; ``dim_match`` False adds a 1x1 projection shortcut."""
    act1 = net.bn_relu(data, in_channels, f"{name}_bn1")
    if bottle_neck:
        mid = int(num_filter * 0.25)
        conv1 = net.conv(act1, in_channels, mid, (1, 1), stride, (0, 0), f"{name}_conv1")
        act2 = net.bn_relu(conv1, mid, f"{name}_bn2")
        conv2 = net.conv(act2, mid, mid, (3, 3), (1, 1), (1, 1), f"{name}_conv2")
        act3 = net.bn_relu(conv2, mid, f"{name}_bn3")
        out = net.conv(act3, mid, num_filter, (1, 1), (1, 1), (0, 0), f"{name}_conv3")
    else:
        conv1 = net.conv(act1, in_channels, num_filter, (3, 3), stride, (1, 1), f"{name}_conv1")
        act2 = net.bn_relu(conv1, num_filter, f"{name}_bn2")
        out = net.conv(act2, num_filter, num_filter, (3, 3), (1, 1), (1, 1), f"{name}_conv2")
    if dim_match:
        shortcut = data
    else:
        shortcut = net.conv(act1, in_channels, num_filter, (1, 1), stride, (0, 0), f"{name}_sc")
    return _t.add(out, shortcut)


def resnet(units, num_stages: int, filter_list, num_classes: int, data_shape,
           bottle_neck: bool = True, layout: str = "NCHW", dtype: str = "float32") -> Function:
    """The ResNet function of ``data`` and all its weights."""
    net = _Net(layout, dtype)
    data = var("data", shape=data_shape, dtype=dtype)
    in_c = data_shape[net.axis]
    height = data_shape[layout.index("H")]
    body = layers.batch_norm_infer(data, in_c, "bn_data", axis=net.axis, epsilon=2e-5,
                                   scale=False, dtype=dtype)
    if height <= 32:  # CIFAR-sized input
        body = net.conv(body, in_c, filter_list[0], (3, 3), (1, 1), (1, 1), "conv0")
    else:
        body = net.conv(body, in_c, filter_list[0], (7, 7), (2, 2), (3, 3), "conv0")
        body = net.bn_relu(body, filter_list[0], "bn0")
        body = nn.max_pool2d(body, pool_size=(3, 3), strides=(2, 2), padding=(1, 1),
                             layout=layout)
    channels = filter_list[0]
    for i in range(num_stages):
        stride = (1, 1) if i == 0 else (2, 2)
        body = residual_unit(net, body, channels, filter_list[i + 1], stride, False,
                             f"stage{i + 1}_unit1", bottle_neck)
        channels = filter_list[i + 1]
        for j in range(units[i] - 1):
            body = residual_unit(net, body, channels, channels, (1, 1), True,
                                 f"stage{i + 1}_unit{j + 2}", bottle_neck)
    body = net.bn_relu(body, channels, "bn1")
    body = nn.batch_flatten(nn.global_avg_pool2d(body, layout=layout))
    body = layers.dense_add_bias(body, channels, num_classes, "fc1", dtype=dtype)
    body = nn.softmax(body)
    return Function(free_vars(body), body)


def get_net(batch_size: int, num_classes: int, num_layers: int = 50, image_shape=(3, 224, 224),
            layout: str = "NCHW", dtype: str = "float32") -> Function:
    """Pick stages, units and filter sizes for ``num_layers`` as TVM does."""
    if layout == "NHWC":
        height = image_shape[0]
    else:
        height = image_shape[1]
    data_shape = (batch_size, *image_shape)
    if height <= 28:
        num_stages = 3
        if (num_layers - 2) % 9 == 0 and num_layers >= 164:
            per_unit, filter_list, bottle_neck = [(num_layers - 2) // 9], [16, 64, 128, 256], True
        elif (num_layers - 2) % 6 == 0 and num_layers < 164:
            per_unit, filter_list, bottle_neck = [(num_layers - 2) // 6], [16, 16, 32, 64], False
        else:
            raise ValueError(f"no ResNet with {num_layers} layers for {height}x{height} images")
        units = per_unit * num_stages
    else:
        if num_layers not in _UNITS:
            raise ValueError(f"no ResNet with {num_layers} layers; choose one of "
                             f"{sorted(_UNITS)}")
        num_stages = 4
        units = _UNITS[num_layers]
        bottle_neck = num_layers >= 50
        filter_list = [64, 256, 512, 1024, 2048] if bottle_neck else [64, 64, 128, 256, 512]
    return resnet(units, num_stages, filter_list, num_classes, data_shape, bottle_neck, layout,
                  dtype)


def get_workload(batch_size: int = 1, num_classes: int = 1000, num_layers: int = 18,
                 image_shape=(3, 224, 224), layout: str = "NCHW", dtype: str = "float32",
                 seed: int = 0):
    """``(mod, params)`` of a ResNet; ``params`` has every weight, ``data`` is the input."""
    net = get_net(batch_size, num_classes, num_layers, tuple(image_shape), layout, dtype)
    return create_workload(net, seed=seed)


def get_small_net(batch_size: int = 1, image_shape=(3, 224, 224), channels: int = 64,
                  num_blocks: int = 2, dtype: str = "float32") -> Function:
    """A ResNet-v1 stem (conv7x7/2 + bn + relu + maxpool) and ``num_blocks`` basic blocks."""
    net = _Net("NCHW", dtype)
    data = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    body = net.conv(data, image_shape[0], channels, (7, 7), (2, 2), (3, 3), "conv0")
    body = net.bn_relu(body, channels, "bn0")
    body = nn.max_pool2d(body, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
    for b in range(num_blocks):
        name = f"block{b + 1}"
        y = net.conv(body, channels, channels, (3, 3), (1, 1), (1, 1), f"{name}_conv1")
        y = net.bn_relu(y, channels, f"{name}_bn1")
        y = net.conv(y, channels, channels, (3, 3), (1, 1), (1, 1), f"{name}_conv2")
        y = layers.batch_norm_infer(y, channels, f"{name}_bn2", epsilon=2e-5, dtype=dtype)
        body = nn.relu(_t.add(y, body))
    return Function(free_vars(body), body)


def get_small_workload(batch_size: int = 1, image_shape=(3, 224, 224), channels: int = 64,
                       num_blocks: int = 2, dtype: str = "float32", seed: int = 0):
    """``(mod, params)`` of ``get_small_net``: output ``(batch, 64, 56, 56)`` for 224x224."""
    return create_workload(get_small_net(batch_size, tuple(image_shape), channels, num_blocks,
                                         dtype), seed=seed)
