"""The DQN Atari network (TVM's ``relay.testing.dqn``): three convs and two dense layers."""

from __future__ import annotations

from ..analysis import free_vars
from ..expr import Function, var
from ..op import nn
from . import layers
from .init import create_workload

__all__ = ["get_net", "get_workload"]


def get_net(batch_size: int, num_actions: int = 18, image_shape=(4, 84, 84),
            dtype: str = "float32", layout: str = "NCHW") -> Function:
    shape = (batch_size, *image_shape) if layout == "NCHW" else \
        (batch_size, image_shape[1], image_shape[2], image_shape[0])
    x = var("data", shape=shape, dtype=dtype)
    axis = layout.index("C")
    c, h = image_shape[0], image_shape[1]
    for i, (f, k, s) in enumerate([(32, 8, 4), (64, 4, 2), (64, 3, 1)]):
        x = layers.conv2d(x, c, f, (k, k), f"conv{i + 1}", strides=(s, s), data_layout=layout,
                          dtype=dtype)
        x = nn.relu(nn.bias_add(x, layers.weight(f"conv{i + 1}_bias", (f,), dtype), axis=axis))
        c, h = f, (h - k) // s + 1
    x = nn.batch_flatten(x)
    x = nn.relu(layers.dense_add_bias(x, c * h * h, 512, "dense1", dtype))
    x = layers.dense_add_bias(x, 512, num_actions, "dense2", dtype)
    return Function(free_vars(x), x)


def get_workload(batch_size: int = 1, num_actions: int = 18, image_shape=(4, 84, 84),
                 dtype: str = "float32", layout: str = "NCHW"):
    """``(mod, params)`` of the DQN network."""
    return create_workload(get_net(batch_size, num_actions, image_shape, dtype, layout))
