"""Dataflow aliases inlined before fusion (minitvm's, FuseOps' first step): a binding ``y = x``
of a DataflowVar ``y`` to a variable ``x`` of the same struct info goes, ``y``'s uses reading
``x``.

FuseOps' graph has one node per binding and an alias binding is no call it can fuse, so it was
an opaque node: a barrier no group crossed. A legalization that emits several bindings and
returns the last one's variable leaves such an alias behind (a 2x2 stride-2 conv2d_transpose
is four convs interleaved by stack and reshape, ``lv35 = lv8_1``), and so can a frontend (an
ONNX ``Identity``). Relay has no variable there, so its FuseOps grouped UNet's up-path
``stack, reshape, add (bias), concatenate`` as one kernel where Relax's ran the interleave and
the bias-add+concatenate as two, writing and reading the upsampled map once more.

A block output (a non-dataflow ``y``) keeps its binding: it is used after the block by name.
"""

from __future__ import annotations

from ...ir.structural import structural_equal
from ..expr import DataflowVar, Function, Var, VarBinding
from .normalize import NormalizingMutator
from .utils import iter_bindings

__all__ = ["inline_dataflow_aliases", "is_dataflow_alias"]


def is_dataflow_alias(binding) -> bool:
    """Whether ``binding`` is ``y = x`` with ``y`` a DataflowVar of ``x``'s struct info (an
    alias that can go, its uses reading ``x``)."""
    if type(binding) is not VarBinding:
        return False
    var, value = binding.var, binding.value
    if not isinstance(var, DataflowVar) or not isinstance(value, Var):
        return False
    a, b = var._struct_info, value._struct_info
    return a is b or (a is not None and b is not None and structural_equal(a, b))


class _AliasInliner(NormalizingMutator):
    def __init__(self, mod=None):
        super().__init__(mod)
        self.removed = 0

    def visit_var_binding_(self, binding: VarBinding) -> None:
        if not is_dataflow_alias(binding):
            super().visit_var_binding_(binding)
            return
        self.removed += 1
        self.set_var_remap(binding.var, self.visit_expr(binding.value))


def inline_dataflow_aliases(func: Function, mod=None) -> tuple[Function, int]:
    """``func`` without its dataflow alias bindings; and how many there were."""
    if not any(is_dataflow_alias(b) for b in iter_bindings(func)):
        return func, 0  # none: a scan, not a rebuild of every binding
    m = _AliasInliner(mod)
    out = m.visit_expr(func)
    return (out if m.removed else func), m.removed
