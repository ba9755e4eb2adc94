"""VGG 11/13/16/19 (TVM's ``relay.testing.vgg``), optionally with batch norm."""

from __future__ import annotations

from ..analysis import free_vars
from ..expr import Function, var
from ..op import nn
from . import layers
from .init import create_workload

__all__ = ["get_net", "get_workload"]

_SPEC = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
         13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
         16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
         19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_net(batch_size: int, image_shape, num_classes: int, dtype: str, num_layers: int = 11,
            batch_norm: bool = False) -> Function:
    if num_layers not in _SPEC:
        raise ValueError(f"vgg: num_layers must be one of {sorted(_SPEC)}, got {num_layers}")
    counts, filters = _SPEC[num_layers]
    x = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    in_c = image_shape[0]
    for i, (n, f) in enumerate(zip(counts, filters)):
        for j in range(n):
            x = layers.conv2d(x, in_c, f, (3, 3), f"conv{i + 1}_{j + 1}", padding=(1, 1),
                              dtype=dtype)
            x = nn.bias_add(x, layers.weight(f"conv{i + 1}_{j + 1}_bias", (f,), dtype))
            if batch_norm:
                x = layers.batch_norm_infer(x, f, f"bn{i + 1}_{j + 1}", dtype=dtype)
            x = nn.relu(x)
            in_c = f
        x = nn.max_pool2d(x, (2, 2), (2, 2))
    x = nn.batch_flatten(x)
    size = in_c * (image_shape[1] // 32) * (image_shape[2] // 32)
    for k, units in enumerate((4096, 4096)):
        x = nn.relu(layers.dense_add_bias(x, size, units, f"fc{k + 6}", dtype))
        x = nn.dropout(x, 0.5)
        size = units
    x = nn.softmax(layers.dense_add_bias(x, size, num_classes, "fc8", dtype))
    return Function(free_vars(x), x)


def get_workload(batch_size: int = 1, num_classes: int = 1000, image_shape=(3, 224, 224),
                 dtype: str = "float32", num_layers: int = 11, batch_norm: bool = False):
    """``(mod, params)`` of VGG-``num_layers``."""
    return create_workload(get_net(batch_size, image_shape, num_classes, dtype, num_layers,
                                   batch_norm))
