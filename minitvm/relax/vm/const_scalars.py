"""Build-time scalar constants of the Relax VM's kernels read as immediates.

A quantized model's scales and zero points reach a fused kernel as rank-0 constant tensors:
each a parameter the kernel loads beside its arithmetic (a QDQ MLP's GELU kernel took 29 of
them). Where every call site of a kernel passes one and the same scalar constant at a
position, the kernel reads its value as an immediate instead, as Relay's kernels (whose
scalars are literals) do: the code generator folds it into the arithmetic and the loop body
loses the loads. The parameter stays (the call sites are unchanged)."""

from __future__ import annotations

import numpy as np

from ...runtime.relax_vm.executable import ARG_CONST
from ...tir.transform.inline_scalars import inline_scalars

__all__ = ["scalar_params", "inline_scalars"]

_KINDS = "fiu"  # float, signed and unsigned integer scalars (not bool)


def scalar_params(sites: dict, constants: list, prims: dict, as_value=frozenset()) -> dict:
    """{kernel: {parameter position: numpy scalar}} where every call site of the kernel (its
    argument lists in ``sites``) passes the same rank-0 numeric constant there; kernels also
    referenced as values (``as_value``: calls not seen here) are left out."""
    out = {}
    for name, prim in prims.items():
        calls = sites.get(name)
        if not calls or name in as_value:
            continue
        found = {}
        for k in range(len(prim.params)):
            vals = [args[k] for args in calls if len(args) > k]
            if len(vals) != len(calls) or any(a[0] != ARG_CONST for a in vals):
                continue
            first = constants[vals[0][1]]
            if not (isinstance(first, np.ndarray) and first.ndim == 0 and
                    first.dtype.kind in _KINDS):
                continue
            if all(_same(constants[a[1]], first) for a in vals[1:]):
                found[k] = first[()]
        if found:
            out[name] = found
    return out


def _same(c, first) -> bool:
    return isinstance(c, np.ndarray) and c.ndim == 0 and c.dtype == first.dtype and \
        np.array_equal(c, first, equal_nan=first.dtype.kind == "f")
