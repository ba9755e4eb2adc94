"""Legalization of ``shape_to_tensor`` / ``tensor_to_shape`` as TVM does it: pure calls of the
VM builtins ``vm.builtin.shape_to_tensor`` / ``vm.builtin.tensor_to_shape``, whose run-time
implementations (shape tuple <-> int64 array) this module registers."""

from __future__ import annotations

import numpy as np

from ....runtime import registry
from ....runtime.relax_vm.builtins import ShapeTuple
from ...op.base import call_pure_packed
from .common import register_legalize

__all__: list[str] = []


@register_legalize("relax.shape_to_tensor")
def _shape_to_tensor(bb, call):
    return call_pure_packed("vm.builtin.shape_to_tensor", call.args[0],
                            sinfo_args=call.struct_info)


@register_legalize("relax.tensor_to_shape")
def _tensor_to_shape(bb, call):
    return call_pure_packed("vm.builtin.tensor_to_shape", call.args[0],
                            sinfo_args=call.struct_info)


def _run_shape_to_tensor(shape) -> np.ndarray:
    return np.asarray([int(d) for d in shape], dtype="int64")


def _run_tensor_to_shape(t) -> ShapeTuple:
    arr = t.numpy() if hasattr(t, "numpy") else np.asarray(t)
    if arr.ndim != 1:
        raise ValueError(f"vm.builtin.tensor_to_shape: expects a 1-D tensor, got shape "
                         f"{arr.shape}")
    return ShapeTuple([int(v) for v in arr])


for _name, _fn in (("vm.builtin.shape_to_tensor", _run_shape_to_tensor),
                   ("vm.builtin.tensor_to_shape", _run_tensor_to_shape)):
    if registry.get_global_func(_name, allow_missing=True) is None:
        registry.register_func(_name, _fn)
del _name, _fn
