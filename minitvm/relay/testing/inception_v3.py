"""Inception v3 (TVM's ``relay.testing.inception_v3``): conv stem, then inception blocks A-E
of parallel conv towers concatenated on channels."""

from __future__ import annotations

from ..analysis import free_vars
from ..expr import Function, var
from ..op import nn
from ..op import transform as _t
from . import layers
from .init import create_workload

__all__ = ["get_net", "get_workload"]


class _Net:
    def __init__(self, dtype: str):
        self.dtype = dtype
        self.count = 0

    def conv(self, x, in_c, out_c, kernel=(1, 1), strides=(1, 1), padding=(0, 0)):
        """conv + batch_norm (epsilon 2e-5) + relu; returns (output, channels)."""
        self.count += 1
        name = f"conv{self.count}"
        x = layers.conv2d(x, in_c, out_c, kernel, name, strides=strides, padding=padding,
                          dtype=self.dtype)
        x = layers.batch_norm_infer(x, out_c, f"{name}_bn", epsilon=2e-5, dtype=self.dtype)
        return nn.relu(x)

    def tower(self, x, in_c, specs):
        """A chain of convs given as (out_c, kernel, strides, padding)."""
        for out_c, k, s, p in specs:
            x = self.conv(x, in_c, out_c, k, s, p)
            in_c = out_c
        return x, in_c


def _block_a(n, x, c, pool_c):
    a, ca = n.tower(x, c, [(64, (1, 1), (1, 1), (0, 0))])
    b, cb = n.tower(x, c, [(48, (1, 1), (1, 1), (0, 0)), (64, (5, 5), (1, 1), (2, 2))])
    d, cd = n.tower(x, c, [(64, (1, 1), (1, 1), (0, 0)), (96, (3, 3), (1, 1), (1, 1)),
                           (96, (3, 3), (1, 1), (1, 1))])
    p = nn.avg_pool2d(x, (3, 3), (1, 1), padding=(1, 1))
    p, cp = n.tower(p, c, [(pool_c, (1, 1), (1, 1), (0, 0))])
    return _t.concatenate([a, b, d, p], axis=1), ca + cb + cd + cp


def _block_b(n, x, c):
    a, ca = n.tower(x, c, [(384, (3, 3), (2, 2), (0, 0))])
    d, cd = n.tower(x, c, [(64, (1, 1), (1, 1), (0, 0)), (96, (3, 3), (1, 1), (1, 1)),
                           (96, (3, 3), (2, 2), (0, 0))])
    p = nn.max_pool2d(x, (3, 3), (2, 2))
    return _t.concatenate([a, d, p], axis=1), ca + cd + c


def _block_c(n, x, c, mid):
    a, ca = n.tower(x, c, [(192, (1, 1), (1, 1), (0, 0))])
    b, cb = n.tower(x, c, [(mid, (1, 1), (1, 1), (0, 0)), (mid, (1, 7), (1, 1), (0, 3)),
                           (192, (7, 1), (1, 1), (3, 0))])
    d, cd = n.tower(x, c, [(mid, (1, 1), (1, 1), (0, 0)), (mid, (7, 1), (1, 1), (3, 0)),
                           (mid, (1, 7), (1, 1), (0, 3)), (mid, (7, 1), (1, 1), (3, 0)),
                           (192, (1, 7), (1, 1), (0, 3))])
    p = nn.avg_pool2d(x, (3, 3), (1, 1), padding=(1, 1))
    p, cp = n.tower(p, c, [(192, (1, 1), (1, 1), (0, 0))])
    return _t.concatenate([a, b, d, p], axis=1), ca + cb + cd + cp


def _block_d(n, x, c):
    a, ca = n.tower(x, c, [(192, (1, 1), (1, 1), (0, 0)), (320, (3, 3), (2, 2), (0, 0))])
    b, cb = n.tower(x, c, [(192, (1, 1), (1, 1), (0, 0)), (192, (1, 7), (1, 1), (0, 3)),
                           (192, (7, 1), (1, 1), (3, 0)), (192, (3, 3), (2, 2), (0, 0))])
    p = nn.max_pool2d(x, (3, 3), (2, 2))
    return _t.concatenate([a, b, p], axis=1), ca + cb + c


def _block_e(n, x, c, pool):
    a, ca = n.tower(x, c, [(320, (1, 1), (1, 1), (0, 0))])
    b, cb = n.tower(x, c, [(384, (1, 1), (1, 1), (0, 0))])
    b1, _ = n.tower(b, cb, [(384, (1, 3), (1, 1), (0, 1))])
    b2, _ = n.tower(b, cb, [(384, (3, 1), (1, 1), (1, 0))])
    d, cd = n.tower(x, c, [(448, (1, 1), (1, 1), (0, 0)), (384, (3, 3), (1, 1), (1, 1))])
    d1, _ = n.tower(d, cd, [(384, (1, 3), (1, 1), (0, 1))])
    d2, _ = n.tower(d, cd, [(384, (3, 1), (1, 1), (1, 0))])
    p = pool(x, (3, 3), (1, 1), padding=(1, 1))
    p, cp = n.tower(p, c, [(192, (1, 1), (1, 1), (0, 0))])
    return _t.concatenate([a, b1, b2, d1, d2, p], axis=1), ca + 4 * 384 + cp


def get_net(batch_size: int, num_classes: int, image_shape, dtype: str) -> Function:
    n = _Net(dtype)
    x = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    x, c = n.tower(x, image_shape[0], [(32, (3, 3), (2, 2), (0, 0)),
                                       (32, (3, 3), (1, 1), (0, 0)),
                                       (64, (3, 3), (1, 1), (1, 1))])
    x = nn.max_pool2d(x, (3, 3), (2, 2))
    x, c = n.tower(x, c, [(80, (1, 1), (1, 1), (0, 0)), (192, (3, 3), (1, 1), (0, 0))])
    x = nn.max_pool2d(x, (3, 3), (2, 2))
    for pool_c in (32, 64, 64):
        x, c = _block_a(n, x, c, pool_c)
    x, c = _block_b(n, x, c)
    for mid in (128, 160, 160, 192):
        x, c = _block_c(n, x, c, mid)
    x, c = _block_d(n, x, c)
    x, c = _block_e(n, x, c, nn.avg_pool2d)
    x, c = _block_e(n, x, c, nn.max_pool2d)
    x = nn.batch_flatten(nn.global_avg_pool2d(x))
    x = nn.softmax(layers.dense_add_bias(x, c, num_classes, "fc1", dtype))
    return Function(free_vars(x), x)


def get_workload(batch_size: int = 1, num_classes: int = 1000, image_shape=(3, 299, 299),
                 dtype: str = "float32"):
    """``(mod, params)`` of Inception v3."""
    return create_workload(get_net(batch_size, num_classes, image_shape, dtype))
