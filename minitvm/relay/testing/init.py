"""Parameter initializers and ``create_workload``: a network function plus seeded random params."""

from __future__ import annotations

import numpy as np

from ...ir.module import IRModule
from ...runtime.ndarray import array, cpu

__all__ = ["Initializer", "Xavier", "create_workload"]


class Initializer:
    """Fills a parameter by the suffix of its name, as TVM's (MXNet-style) initializers do.

    ``*weight`` gets the weight rule; ``*bias``, ``*beta``, ``*moving_mean`` zeros; ``*gamma``,
    ``*moving_var`` ones; anything else the weight rule.
    """

    def __init__(self, seed: int = 0):
        self.rng = np.random.RandomState(seed)

    def __call__(self, name: str, shape: tuple, dtype: str) -> np.ndarray:
        if name.endswith(("bias", "beta", "moving_mean")):
            return np.zeros(shape, dtype)
        if name.endswith(("gamma", "moving_var")):
            return np.ones(shape, dtype)
        return self.init_weight(name, shape, dtype)

    def init_weight(self, name: str, shape: tuple, dtype: str) -> np.ndarray:
        return self.rng.uniform(-0.07, 0.07, size=shape).astype(dtype)


class Xavier(Initializer):
    """Uniform in ``[-s, s]`` with ``s = sqrt(magnitude / ((fan_in + fan_out) / 2))``."""

    def __init__(self, magnitude: float = 3.0, seed: int = 0):
        super().__init__(seed)
        self.magnitude = magnitude

    def init_weight(self, name, shape, dtype):
        if len(shape) < 2:
            return self.rng.uniform(-0.07, 0.07, size=shape).astype(dtype)
        receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
        fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
        scale = np.sqrt(self.magnitude / ((fan_in + fan_out) / 2.0))
        return self.rng.uniform(-scale, scale, size=shape).astype(dtype)


def create_workload(net, initializer: Initializer | None = None, seed: int = 0):
    """Type-check ``net`` (a Function or IRModule) and make random params for its inputs.

    Every parameter except ``data`` gets a value; returns ``(mod, params)`` where ``params`` maps
    names to ``tvm.nd.NDArray``.
    """
    from ..transform import InferType

    mod = net if isinstance(net, IRModule) else IRModule.from_expr(net)
    mod = InferType()(mod)
    init = initializer if initializer is not None else Xavier(seed=seed)
    params = {}
    for p in mod["main"].params:
        if p.name_hint == "data":
            continue
        t = p.checked_type
        params[p.name_hint] = array(init(p.name_hint, t.concrete_shape, t.dtype), cpu(0))
    return mod, params
