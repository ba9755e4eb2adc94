"""Parameter initializers and ``create_workload``, with TVM's ``(desc, arr)`` protocol.

An initializer is called as ``init(name, arr)`` and fills the numpy array ``arr`` in place,
choosing the rule by the name's suffix (MXNet's convention, which TVM's model zoo keeps).
``create_workload`` seeds numpy's global generator and fills zero arrays in parameter order, as
TVM does, so the same network and seed give TVM's parameter values.
"""

from __future__ import annotations

import numpy as np

from ...ir.module import IRModule
from ...runtime.ndarray import NDArray, cpu

__all__ = ["Constant", "Initializer", "Xavier", "create_workload"]


class Initializer:
    """Base initializer: fills ``arr`` in place by the suffix of ``desc``.

    ``*weight`` -> ``_init_weight`` (subclasses define it); ``*bias``, ``*beta``, ``*mean`` ->
    0; ``*gamma``, ``*var`` -> 1; any other name is an error.
    """

    def __init__(self, **kwargs):
        self._kwargs = kwargs

    def __call__(self, desc: str, arr: np.ndarray) -> None:
        """Initialize ``arr`` (a numpy array, written in place) for the parameter ``desc``."""
        rules = (("weight", self._init_weight), ("bias", self._init_bias),
                 ("gamma", self._init_gamma), ("beta", self._init_beta),
                 ("mean", self._init_mean), ("var", self._init_var))
        for suffix, rule in rules:
            if desc.endswith(suffix):
                rule(desc, arr)
                return
        self._init_default(desc, arr)

    def _init_bias(self, _, arr):
        arr[...] = 0.0

    def _init_gamma(self, _, arr):
        arr[...] = 1.0

    def _init_beta(self, _, arr):
        arr[...] = 0.0

    def _init_mean(self, _, arr):
        arr[...] = 0.0

    def _init_var(self, _, arr):
        arr[...] = 1.0

    def _init_weight(self, name, arr):
        raise NotImplementedError(f"{type(self).__name__} does not define _init_weight "
                                  f"(needed for {name!r})")

    def _init_default(self, name, _):
        raise ValueError(f"no initialization rule for parameter {name!r}: names must end with "
                         "'weight', 'bias', 'gamma' (1.0), 'beta' (0.0), 'mean' (0.0) or "
                         "'var' (1.0)")


class Xavier(Initializer):
    """Xavier initialization of weights: uniform (or normal) with ``scale = sqrt(magnitude /
    factor)``, ``factor`` the average fan (``"avg"``), fan-in (``"in"``) or fan-out (``"out"``).

    Parameters
    ----------
    rnd_type : str
        ``"uniform"`` (in ``[-scale, scale]``) or ``"gaussian"`` (standard deviation ``scale``).
    factor_type : str
        ``"avg"``, ``"in"`` or ``"out"``.
    magnitude : float
        Scale of the random numbers.
    """

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg",
                 magnitude: float = 3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in ("uniform", "gaussian"):
            raise ValueError(f"Xavier: unknown rnd_type {rnd_type!r} (uniform or gaussian)")
        if factor_type not in ("avg", "in", "out"):
            raise ValueError(f"Xavier: unknown factor_type {factor_type!r} (avg, in or out)")
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise ValueError(f"Xavier initializer cannot be applied to the vector {name!r}: "
                             "it needs at least 2 dimensions")
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        if "depthwise" in name:  # as TVM: depthwise kernels have less connectivity
            factor = hw_scale
        scale = np.sqrt(self.magnitude / factor)
        if self.rnd_type == "uniform":
            _fill_drawn(arr, lambda n: np.random.uniform(-scale, scale, size=n))
        else:
            _fill_drawn(arr, lambda n: np.random.normal(0.0, scale, size=n))


# Values drawn at a time: numpy's generator makes float64, and VGG's 133 M weights drawn at once
# were a 1 GB temporary whose page zeroing was most of get_workload's time (2.4 of 3.0 s)
_DRAW_CHUNK = 1 << 20


def _fill_drawn(arr: np.ndarray, draw) -> None:
    """Fill ``arr`` in C order with ``draw(n)``'s values, ``_DRAW_CHUNK`` at a time: the global
    generator's stream is sequential, so the values are those of one draw of ``arr.size``."""
    if arr.size <= _DRAW_CHUNK or not arr.flags.c_contiguous:
        arr[...] = draw(arr.shape)
        return
    flat = arr.reshape(-1)
    for start in range(0, flat.size, _DRAW_CHUNK):
        stop = min(start + _DRAW_CHUNK, flat.size)
        flat[start:stop] = draw(stop - start)


class Constant(Initializer):
    """Every weight element is ``1 / size``, so each weight sums to 1."""

    def _init_weight(self, name, arr):
        arr[...] = 1.0 / max(1, arr.size)


def create_workload(net, initializer: Initializer | None = None, seed: int = 0):
    """Type-check ``net`` (a Function or IRModule) and make params for its inputs.

    Seeds numpy's global generator with ``seed``; every parameter except ``data`` gets a zero
    array of its type that ``initializer`` (default ``Xavier()``) fills in place. Returns
    ``(mod, params)``, ``params`` mapping names to ``tvm.nd.NDArray``.
    """
    from ..transform import InferType

    mod = net if isinstance(net, IRModule) else IRModule.from_expr(net)
    mod = InferType()(mod)
    np.random.seed(seed)
    init = initializer if initializer is not None else Xavier()
    params = {}
    for p in mod["main"].params:
        if p.name_hint == "data":
            continue
        t = p.checked_type
        # (made in its dtype and handed to the NDArray uncopied: it is this loop's own; VGG's
        # 0.5 GB of weights were made in float64, cast, then copied again)
        value = np.zeros(t.concrete_shape, dtype=t.dtype)
        init(p.name_hint, value)
        params[p.name_hint] = NDArray(value, cpu(0))
    return mod, params
