"""Build-time packing of constant GEMM operands and conv weights for the Relax VM.

A kernel whose matmul reads a bound weight (a VM constant at every call site) would pack that
weight into the GEMM's panel layout on every call — for a BERT layer's 3072x768 projection
that copy costs more than the product at short sequence lengths. ONNX Runtime prepacks its
initializers; here the kernel is compiled with that parameter in the packed layout
(``schedule.optimize_prim_func_prepacked``) and the constant is packed once, at build time.
"""

from __future__ import annotations

import numpy as np

from ...runtime.ndarray import aligned
from ...runtime.relax_vm.executable import ARG_CONST, ARG_FUNC, CALL, MOVE

__all__ = ["constant_params", "apply_packs", "compact_constants", "kernels_as_values"]


def _sites(funcs, func_table) -> tuple[dict, set]:
    """{kernel name: [argument lists of its call instructions]}, and the kernels referenced
    as values (their arguments are not known here)."""
    sites: dict[str, list] = {}
    as_value: set = set()
    for f in funcs:
        for ins in f.code:
            if ins[0] == CALL:
                kind, name = func_table[ins[2]]
                if kind == "kernel":
                    sites.setdefault(name, []).append(ins[3])
                args = ins[3]
            elif ins[0] == MOVE:
                args = [ins[2]]
            else:
                continue
            for a in args:
                if a[0] == ARG_FUNC and func_table[a[1]][0] == "kernel":
                    as_value.add(func_table[a[1]][1])
    return sites, as_value


def kernels_as_values(funcs, func_table) -> set:
    """The kernels referenced as values (not only called): their call sites are not all known."""
    return _sites(funcs, func_table)[1]


def constant_params(funcs, func_table, constants, prims) -> tuple[dict, dict]:
    """({kernel: parameter positions every call site feeds with a float32 constant matrix or
    4-d conv weight, or an int8 4-d conv weight (a quantized model's, which the conv schedules
    read as int8: ``schedule.common.int8_weight_conv``) or int8 matrix (an integer matmul's
    weight: ``schedule.gemm_vnni``)}, {kernel: its call sites' argument lists})."""
    sites, as_value = _sites(funcs, func_table)
    out = {}
    for name, prim in prims.items():
        calls = sites.get(name)
        if not calls or name in as_value:
            continue
        pos = []
        for k in range(len(prim.params)):
            vals = [args[k] for args in calls if len(args) > k]
            if len(vals) == len(calls) and all(
                    a[0] == ARG_CONST and _packable(constants[a[1]]) for a in vals):
                pos.append(k)
        if pos:
            out[name] = pos
    return out, sites


def _packable(c) -> bool:
    return isinstance(c, np.ndarray) and (c.dtype == np.float32 and c.ndim in (2, 4) or
                                          c.dtype == np.int8 and c.ndim in (2, 4))


def apply_packs(name: str, transforms: dict, sites: dict, constants: list) -> None:
    """Point kernel ``name``'s call sites at packed copies of their constants (``transforms``:
    parameter position -> numpy transform), appended to ``constants``."""
    done: dict = {}
    for args in sites.get(name, ()):
        for k, fn in transforms.items():
            idx = args[k][1]
            if idx not in done:
                done[idx] = len(constants)
                packed = fn(constants[idx])  # (float32, or int8 for an int8 conv weight)
                # written once, 64-byte aligned (the executable keeps an aligned array as
                # it is: a packed view was copied twice, to be contiguous, then aligned)
                constants.append(aligned(np.asarray(
                    packed, dtype=np.int8 if packed.dtype == np.int8 else np.float32)))
            args[k][1] = done[idx]


def compact_constants(funcs, constants: list) -> list:
    """``constants`` without the entries no instruction refers to any more (their arguments
    renumbered in place)."""
    used: set = set()
    refs = {}
    for f in funcs:
        for ins in f.code:
            args = ins[3] if ins[0] == CALL else [ins[2]] if ins[0] == MOVE else ()
            for a in args:
                if a[0] == ARG_CONST:
                    used.add(a[1])
                    refs[id(a)] = a
    if len(used) == len(constants):
        return constants
    index, kept = {}, []
    for k, c in enumerate(constants):
        if k in used:
            index[k] = len(kept)
            kept.append(c)
    for a in refs.values():
        a[1] = index[a[1]]
    return kept
