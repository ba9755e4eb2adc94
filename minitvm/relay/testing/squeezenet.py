"""SqueezeNet 1.0 / 1.1 (TVM's ``relay.testing.squeezenet``): fire modules of squeeze 1x1
then parallel expand 1x1 / 3x3 convs, concatenated."""

from __future__ import annotations

from ..analysis import free_vars
from ..expr import Function, var
from ..op import nn
from ..op import transform as _t
from . import layers
from .init import create_workload

__all__ = ["get_net", "get_workload"]


def _conv(x, in_c, out_c, k, name, strides=(1, 1), padding=(0, 0), dtype="float32"):
    x = layers.conv2d(x, in_c, out_c, (k, k), name, strides=strides, padding=padding,
                      dtype=dtype)
    return nn.relu(nn.bias_add(x, layers.weight(f"{name}_bias", (out_c,), dtype)))


def _fire(x, in_c, squeeze, expand1, expand3, name, dtype):
    s = _conv(x, in_c, squeeze, 1, f"{name}_squeeze1x1", dtype=dtype)
    left = _conv(s, squeeze, expand1, 1, f"{name}_expand1x1", dtype=dtype)
    right = _conv(s, squeeze, expand3, 3, f"{name}_expand3x3", padding=(1, 1), dtype=dtype)
    return _t.concatenate([left, right], axis=1), expand1 + expand3


def get_net(batch_size: int, image_shape, num_classes: int, version: str, dtype: str):
    if version not in ("1.0", "1.1"):
        raise ValueError(f"squeezenet: version must be '1.0' or '1.1', got {version!r}")
    x = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    if version == "1.0":
        x = _conv(x, image_shape[0], 96, 7, "conv1", strides=(2, 2), padding=(3, 3),
                  dtype=dtype)
        c = 96
        plan = ["pool", (16, 64, 64), (16, 64, 64), (32, 128, 128), "pool", (32, 128, 128),
                (48, 192, 192), (48, 192, 192), (64, 256, 256), "pool", (64, 256, 256)]
    else:
        x = _conv(x, image_shape[0], 64, 3, "conv1", strides=(2, 2), padding=(1, 1),
                  dtype=dtype)
        c = 64
        plan = ["pool", (16, 64, 64), (16, 64, 64), "pool", (32, 128, 128), (32, 128, 128),
                "pool", (48, 192, 192), (48, 192, 192), (64, 256, 256), (64, 256, 256)]
    fire = 0
    for step in plan:
        if step == "pool":
            x = nn.max_pool2d(x, (3, 3), (2, 2), ceil_mode=True)
        else:
            fire += 1
            x, c = _fire(x, c, *step, f"fire{fire + 1}", dtype)
    x = nn.dropout(x, 0.5)
    x = _conv(x, c, num_classes, 1, "conv_final", dtype=dtype)
    x = nn.softmax(nn.batch_flatten(nn.global_avg_pool2d(x)))
    return Function(free_vars(x), x)


def get_workload(batch_size: int = 1, num_classes: int = 1000, version: str = "1.0",
                 image_shape=(3, 224, 224), dtype: str = "float32"):
    """``(mod, params)`` of SqueezeNet ``version``."""
    return create_workload(get_net(batch_size, image_shape, num_classes, version, dtype))
