"""A multi-layer perceptron (TVM's ``relay.testing.mlp``): flatten, 128, 64, classes, softmax."""

from __future__ import annotations

import numpy as np

from ..analysis import free_vars
from ..expr import Function, var
from ..op import nn
from . import layers
from .init import create_workload

__all__ = ["get_net", "get_workload"]


def get_net(batch_size: int, num_classes: int = 10, image_shape=(1, 28, 28),
            dtype: str = "float32") -> Function:
    """dense(128) + relu, dense(64) + relu, dense(num_classes), softmax; bias_add after each."""
    data = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    body = nn.batch_flatten(data)
    units = int(np.prod(image_shape))
    for i, width in enumerate((128, 64), start=1):
        body = nn.relu(layers.dense_add_bias(body, units, width, f"fc{i}", dtype=dtype))
        units = width
    body = layers.dense_add_bias(body, units, num_classes, "fc3", dtype=dtype)
    body = nn.softmax(body)
    return Function(free_vars(body), body)


def get_workload(batch_size: int = 1, num_classes: int = 10, image_shape=(1, 28, 28),
                 dtype: str = "float32", seed: int = 0):
    """``(mod, params)`` of the MLP."""
    return create_workload(get_net(batch_size, num_classes, tuple(image_shape), dtype), seed=seed)
