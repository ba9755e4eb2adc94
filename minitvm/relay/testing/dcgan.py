"""The DCGAN generator (TVM's ``relay.testing.dcgan``): a dense projection of a random code,
then transposed convs doubling the resolution up to ``oshape``, ending in tanh."""

from __future__ import annotations

from ..analysis import free_vars
from ..expr import Function, var
from ..op import nn
from ..op import tensor as _t
from ..op import transform as _tr
from . import layers
from .init import create_workload

__all__ = ["get_net", "get_workload"]


def _deconv(x, in_c, out_c, name, dtype):
    w = layers.weight(f"{name}_weight", (in_c, out_c, 4, 4), dtype)
    return nn.conv2d_transpose(x, w, channels=out_c, kernel_size=(4, 4), strides=(2, 2),
                               padding=(1, 1))


def get_net(batch_size: int, random_len: int = 100, oshape=(3, 64, 64), ngf: int = 128,
            code=None, dtype: str = "float32") -> Function:
    if oshape[-1] != oshape[-2] or oshape[-1] < 16 or oshape[-1] & (oshape[-1] - 1):
        raise ValueError(f"dcgan: the output must be square, a power of two >= 16: {oshape}")
    code = code if code is not None else var("data", shape=(batch_size, random_len),
                                             dtype=dtype)
    ups = (oshape[-1] // 4).bit_length() - 1
    c = ngf * (2 ** (ups - 1))
    x = nn.dense(code, layers.weight("dense_weight", (4 * 4 * c, random_len), dtype),
                 units=4 * 4 * c)
    x = nn.relu(_tr.reshape(x, (batch_size, c, 4, 4)))
    for i in range(ups - 1):
        x = _deconv(x, c, c // 2, f"g{i + 2}", dtype)
        x = nn.relu(layers.batch_norm_infer(x, c // 2, f"gbn{i + 2}", dtype=dtype))
        c //= 2
    x = _t.tanh(_deconv(x, c, oshape[0], "g_out", dtype))
    return Function(free_vars(x), x)


def get_workload(batch_size: int = 1, oshape=(3, 64, 64), ngf: int = 128,
                 random_len: int = 100, dtype: str = "float32"):
    """``(mod, params)`` of the DCGAN generator."""
    return create_workload(get_net(batch_size, random_len, oshape, ngf, dtype=dtype))
