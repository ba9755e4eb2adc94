"""A small synthetic network exercising many op kinds at once (TVM's
``relay.testing.synthetic``): dense, conv, bias, elementwise, reshape, softmax."""

from __future__ import annotations

from ..analysis import free_vars
from ..expr import Function, var
from ..op import nn
from ..op import tensor as _t
from ..op import transform as _tr
from . import layers
from .init import create_workload

__all__ = ["get_net", "get_workload"]


def get_net(input_shape=(1, 3, 24, 12), dtype: str = "float32", wtype=None) -> Function:
    wtype = wtype or dtype
    data = var("data", shape=input_shape, dtype=dtype)
    dense_shape = [input_shape[0], int(input_shape[1] * input_shape[2] * input_shape[3])]
    dense = nn.relu(nn.dense(_tr.reshape(data, dense_shape),
                             layers.weight("dense_weight", (dense_shape[1], dense_shape[1]),
                                           wtype)))
    dense = _tr.reshape_like(dense, data)
    conv = layers.conv2d(dense, input_shape[1], input_shape[1], (3, 3), "conv", padding=(1, 1),
                         dtype=wtype)
    conv = nn.bias_add(conv, layers.weight("bias", (input_shape[1],), wtype))
    out = _t.add(conv, data)
    out = _t.multiply(out, _t.sigmoid(out))
    out = nn.softmax(_tr.reshape(out, dense_shape), axis=-1)
    return Function(free_vars(out), out)


def get_workload(batch_size: int = 1, input_shape=(3, 24, 12), dtype: str = "float32"):
    """``(mod, params)`` of the synthetic network."""
    return create_workload(get_net((batch_size, *input_shape), dtype))
