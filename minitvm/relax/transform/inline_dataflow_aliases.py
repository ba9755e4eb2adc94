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
Where FuseOps fuses block outputs the block reads (``fuse_read_outputs``, minitvm's build
pipeline) and ``y = x`` makes a block output of a DataflowVar ``x`` the block also reads (an LSTM step's
new cell state: the output, and read by the new hidden state), the alias is as much a barrier:
there ``x``'s binding defines ``y`` instead and ``x``'s uses read ``y`` (TVM's
CanonicalizeBindings does the same), so FuseOps sees one value used inside and after the block.
"""

from __future__ import annotations

from ...ir.structural import structural_equal
from ..analysis.leaf_reads import leaf_reads
from ..analysis.var_analysis import free_vars
from ..expr import DataflowVar, Function, Var, VarBinding
from .normalize import NormalizingMutator
from .utils import iter_bindings

__all__ = ["inline_dataflow_aliases", "is_dataflow_alias", "is_output_alias"]


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


def is_output_alias(binding) -> bool:
    """Whether ``binding`` is ``y = x`` with ``y`` a block output (not a DataflowVar) and ``x``
    a DataflowVar of the same struct info."""
    if type(binding) is not VarBinding:
        return False
    var, value = binding.var, binding.value
    if isinstance(var, DataflowVar) or not isinstance(value, DataflowVar):
        return False
    a, b = var._struct_info, value._struct_info
    return a is b or (a is not None and b is not None and structural_equal(a, b))


def _read_output_aliases(block) -> dict:
    """{DataflowVar ``x``: the binding ``y = x``} for the block's output aliases whose ``x`` a
    plain binding of the block defines and another binding of the block reads (the first
    alias of each ``x``)."""
    defined = {b.var for b in block.bindings if type(b) is VarBinding}
    aliases: dict = {}
    for b in block.bindings:
        if is_output_alias(b) and b.value in defined and b.value not in aliases:
            aliases[b.value] = b
    if not aliases:
        return {}
    read = set()
    for b in block.bindings:
        if b.value in aliases and aliases[b.value] is b:
            continue
        read.update(v for v in _reads(b.value) if v in aliases)
    return {x: b for x, b in aliases.items() if x in read}


def _reads(value) -> list:
    """The variables a binding's value reads (its operands without a walk when they are
    leaves, as nearly all are)."""
    if isinstance(value, Var):
        return [value]
    found = leaf_reads(value)  # (nearly every binding after legalization: no walk)
    return found if found is not None else free_vars(value)


def _has_read_output_alias(func: Function) -> bool:
    """Whether some output alias ``y = x`` has an ``x`` another binding reads (a cheap check
    over the whole function, so a function without one is not rebuilt: nearly every block
    ends in output aliases of values nothing else reads)."""
    bindings = list(iter_bindings(func))
    aliased = {b.value: b for b in bindings if is_output_alias(b)}
    if not aliased:
        return False
    return any(v in aliased and aliased[v] is not b for b in bindings for v in _reads(b.value))


class _AliasInliner(NormalizingMutator):
    def __init__(self, mod=None, output_aliases: bool = False):
        super().__init__(mod)
        self.output_aliases = output_aliases
        self.removed = 0
        self.renamed: dict = {}  # DataflowVar x -> the block output y of ``y = x`` it becomes
        self.dropped: set = set()  # ids of those ``y = x`` bindings

    def visit_dataflow_block_(self, block):
        for x, alias in (_read_output_aliases(block) if self.output_aliases else {}).items():
            self.renamed[x] = alias.var
            self.dropped.add(id(alias))
        return super().visit_dataflow_block_(block)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        if id(binding) in self.dropped:
            self.removed += 1  # (its variable is bound where its value was)
            return
        out = self.renamed.get(binding.var)
        if out is not None:
            self.builder_.emit_normalized(VarBinding(out, self.visit_expr(binding.value),
                                                     binding.span))
            self.set_var_remap(binding.var, out)
            return
        if not is_dataflow_alias(binding):
            super().visit_var_binding_(binding)
            return
        self.removed += 1
        self.set_var_remap(binding.var, self.visit_expr(binding.value))


def inline_dataflow_aliases(func: Function, mod=None,
                            output_aliases: bool = False) -> tuple[Function, int]:
    """``func`` without its dataflow alias bindings, and with ``output_aliases`` its output
    aliases of values the block reads (FuseOps' ``fuse_read_outputs``); and how many went."""
    if not any(is_dataflow_alias(b) for b in iter_bindings(func)) and \
            not (output_aliases and _has_read_output_alias(func)):
        return func, 0  # none: a scan, not a rebuild of every binding
    m = _AliasInliner(mod, output_aliases)
    out = m.visit_expr(func)
    return (out if m.removed else func), m.removed
