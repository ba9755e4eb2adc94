"""A dynamic-shape kernel bound to one call site's input shapes (``BoundCall``).

A Relay VM ``InvokePacked`` of a kernel with ``Any`` dimensions (``SymbolicKernel`` or
``ShapeSpecializer``) looks up, at every call, the specialization or the size variables of its
inputs' shapes, the packed copies of its weights and the output shapes. In a loop (an RNN over a
run-time length) the same call site sees the same shapes and the same weights at every step, so
the VM keeps the result of that lookup per call site: ``kernel.bind(inputs)`` returns a
``BoundCall`` that reruns exactly the same native call (same kernel, same size variables, same
packed weights, fresh outputs) while the inputs keep their shapes, dtypes and identities of the
packed weights, and returns None otherwise (the VM then binds again).
"""

from __future__ import annotations

import ctypes

import numpy as np

from ....runtime import threadpool

__all__ = ["BoundCall"]

_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)


class BoundCall:
    """``call(inputs) -> outputs | None``: the native call of one kernel at the input shapes it
    was bound to; None when ``inputs`` differ from them (shape, dtype, layout, or a packed
    weight's identity)."""

    __slots__ = ("shapes", "dtypes", "packs", "consts", "outs", "fast", "entry", "kvars")

    def __init__(self, inputs: list, packs: list, consts: tuple, outs: list, fast=None,
                 address: int | None = None, kvars=None):
        self.shapes = tuple(a.shape for a in inputs)
        self.dtypes = tuple(a.dtype for a in inputs)
        # (position, the argument, its packed copy the kernel reads instead)
        self.packs = tuple(packs)
        self.consts = tuple(consts)
        self.outs = tuple(outs)  # (shape, dtype) of each output, allocated per call
        self.fast = fast  # the kernel's tuple-reading entry, when it has one
        self.entry = _ENTRY(address) if fast is None else None
        self.kvars = kvars  # the kernel's int64 size arguments (a symbolic kernel's)

    def __call__(self, inputs: list) -> list | None:
        if len(inputs) != len(self.shapes):
            return None
        for a, s, d in zip(inputs, self.shapes, self.dtypes):
            if type(a) is not np.ndarray or a.shape != s or a.dtype != d or \
                    not a.flags.c_contiguous:
                return None
        arrays = list(inputs)
        for pos, src, packed in self.packs:
            if arrays[pos] is not src:
                return None
            arrays[pos] = packed
        outs = [np.empty(s, dtype=d) for s, d in self.outs]
        nthreads = threadpool.get_num_threads()
        if self.fast is not None:
            self.fast((*arrays, *self.consts, *outs), nthreads)
        else:
            arrays += self.consts
            arrays += outs
            ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
            self.entry(ptrs, self.kvars, nthreads)
        return outs
