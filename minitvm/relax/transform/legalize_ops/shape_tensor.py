"""Legalization of ``shape_to_tensor`` / ``tensor_to_shape`` as TVM does it: pure calls of the
VM builtins ``vm.builtin.shape_to_tensor`` / ``vm.builtin.tensor_to_shape``: the Relax VM's own
builtins (``runtime.relax_vm.builtins``), which this module also registers as global functions."""

from __future__ import annotations

from ....runtime import registry
from ....runtime.relax_vm.builtins import shape_to_tensor, tensor_to_shape
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


for _name, _fn in (("vm.builtin.shape_to_tensor", shape_to_tensor),
                   ("vm.builtin.tensor_to_shape", tensor_to_shape)):
    if registry.get_global_func(_name, allow_missing=True) is None:
        registry.register_func(_name, _fn)
del _name, _fn
