"""DenseNet 121/161/169/201 (TVM's ``relay.testing.densenet``): dense blocks whose layers see
the concatenation of every earlier feature map, joined by transition (1x1 conv + pool)."""

from __future__ import annotations

from ..analysis import free_vars
from ..expr import Function, var
from ..op import nn
from ..op import transform as _t
from . import layers
from .init import create_workload

__all__ = ["get_net", "get_workload"]

_SPEC = {121: (64, 32, [6, 12, 24, 16]), 161: (96, 48, [6, 12, 36, 24]),
         169: (64, 32, [6, 12, 32, 32]), 201: (64, 32, [6, 12, 48, 32])}


def _bn_relu_conv(x, in_c, out_c, k, name, dtype, padding=(0, 0)):
    x = nn.relu(layers.batch_norm_infer(x, in_c, f"{name}_bn", dtype=dtype))
    return layers.conv2d(x, in_c, out_c, (k, k), f"{name}_conv", padding=padding, dtype=dtype)


def get_net(batch_size: int, num_classes: int, densenet_size: int, image_shape, dtype: str,
            bn_size: int = 4):
    if densenet_size not in _SPEC:
        raise ValueError(f"densenet: size must be one of {sorted(_SPEC)}, got {densenet_size}")
    init_c, growth, blocks = _SPEC[densenet_size]
    x = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    x = layers.conv2d(x, image_shape[0], init_c, (7, 7), "conv0", strides=(2, 2),
                      padding=(3, 3), dtype=dtype)
    x = nn.relu(layers.batch_norm_infer(x, init_c, "norm0", dtype=dtype))
    x = nn.max_pool2d(x, (3, 3), (2, 2), padding=(1, 1))
    c = init_c
    for b, n in enumerate(blocks):
        for i in range(n):
            name = f"block{b + 1}_layer{i + 1}"
            y = _bn_relu_conv(x, c, bn_size * growth, 1, f"{name}_1", dtype)
            y = _bn_relu_conv(y, bn_size * growth, growth, 3, f"{name}_2", dtype, (1, 1))
            x = _t.concatenate([x, y], axis=1)
            c += growth
        if b != len(blocks) - 1:
            x = _bn_relu_conv(x, c, c // 2, 1, f"transition{b + 1}", dtype)
            x = nn.avg_pool2d(x, (2, 2), (2, 2))
            c //= 2
    x = nn.relu(layers.batch_norm_infer(x, c, "norm5", dtype=dtype))
    x = nn.batch_flatten(nn.global_avg_pool2d(x))
    x = layers.dense_add_bias(x, c, num_classes, "classifier", dtype)
    return Function(free_vars(x), x)


def get_workload(densenet_size: int = 121, classes: int = 1000, batch_size: int = 4,
                 image_shape=(3, 224, 224), dtype: str = "float32"):
    """``(mod, params)`` of DenseNet-``densenet_size``."""
    return create_workload(get_net(batch_size, classes, densenet_size, image_shape, dtype))
