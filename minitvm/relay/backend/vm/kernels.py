"""Primitive (fused) functions of a Relay VM program to kernels.

A function whose tensors all have static shapes is lowered once by the te_compiler (native code,
or its numpy fallback). One with ``Any`` dimensions becomes a *shape-specializing* kernel: at each
call it binds the concrete input shapes, re-infers types and lowers that specialization natively,
cached per shape signature (falling back to the ops' numpy references when that fails).
Structurally equal functions share one kernel.
"""

from __future__ import annotations

import numpy as np

from ....ir.attrs import DictAttrs
from ....ir.module import IRModule
from ....ir.structural import structural_equal
from ....ir.type import TensorType, TupleType
from ....runtime.module import Kernel
from ....runtime.vm.vm import call_native
from ....schedule import LoweringOptions
from ...expr import Function, Var, bind
from ..te_compiler import func_ops, lower_function, run_fallback, tensor_types

__all__ = ["KernelTable", "is_static_type"]


def is_static_type(t) -> bool:
    """Are all dimensions of every tensor in ``t`` known integers?"""
    try:
        for tt in tensor_types(t):
            for d in tt.shape:
                int(getattr(d, "value", d))
    except (TypeError, ValueError, AttributeError, Exception):  # noqa: BLE001  Any, symbolic
        return False
    return True


def _flat_types(params) -> list[TensorType]:
    return [t for p in params for t in tensor_types(p.checked_type)]


def _rebuild_type(t, shapes: list, pos: int):
    """The type ``t`` with its tensors' shapes taken from ``shapes`` (in flattened order)."""
    if isinstance(t, TupleType):
        fields = []
        for f in t.fields:
            nt, pos = _rebuild_type(f, shapes, pos)
            fields.append(nt)
        return TupleType(fields), pos
    return TensorType(shapes[pos], t.dtype), pos + 1


class ShapeSpecializer:
    """``run(args)`` for a primitive function with dynamic shapes: compile per input shapes."""

    def __init__(self, func: Function, name: str, options: LoweringOptions):
        self.func = func
        self.name = name
        self.options = options
        self.cache: dict[tuple, tuple] = {}

    def _specialize(self, shapes: list) -> tuple:
        pos, params = 0, []
        for p in self.func.params:
            t, pos = _rebuild_type(p.checked_type, shapes, pos)
            params.append(Var(p.name_hint, t))
        body = bind(self.func.body, dict(zip(self.func.params, params)))
        from ...transform import InferType

        spec = InferType()(IRModule.from_expr(Function(params, body)))["main"]
        spec = Function(spec.params, spec.body, spec.ret_type,
                        attrs=DictAttrs({"Primitive": 1}))
        spec._checked_type = None
        spec = InferType()(IRModule.from_expr(spec))["main"]
        kernel = lower_function(spec, f"{self.name}_{len(self.cache)}", self.options)
        outs = tensor_types(spec.body.checked_type)
        return kernel, [(tuple(int(getattr(d, "value", d)) for d in t.shape), t.dtype)
                        for t in outs]

    def __call__(self, args: list) -> list:
        key = tuple((a.shape, str(a.dtype)) for a in args)
        entry = self.cache.get(key)
        if entry is None:
            try:
                entry = self._specialize([a.shape for a in args])
            except (ValueError, TypeError, NotImplementedError, KeyError):
                entry = (None, None)  # the ops' numpy references run it
            self.cache[key] = entry
        kernel, outs = entry
        if kernel is None:
            return run_fallback(self.func, args)
        if kernel.kind != "native":
            return kernel.run(list(args) + list(kernel.consts))
        outputs = [np.empty(s, dtype=d) for s, d in outs]
        return call_native(kernel, [np.ascontiguousarray(a) for a in args], outputs)


class KernelTable:
    """The kernels of one executable, indexed as ``InvokePacked`` refers to them."""

    def __init__(self, options: LoweringOptions):
        self.options = options
        self.kernels: list[Kernel] = []
        self._buckets: dict[tuple, list] = {}
        self._names: dict[str, int] = {}

    def index(self, func: Function) -> int:
        """The kernel index of primitive function ``func`` (lowering it the first time)."""
        # a cheap key narrows the search; structural equality decides (hashing every fused
        # function of a long program costs more than comparing it with its bucket's members)
        h = (tuple(func_ops(func)), tuple(str(p.checked_type) for p in func.params),
             str(func.body.checked_type))
        bucket = self._buckets.setdefault(h, [])
        for f, k in bucket:
            if f is func or structural_equal(f, func):
                return k
        name = self._fresh_name(func)
        static = all(is_static_type(p.checked_type) for p in func.params) and \
            is_static_type(func.body.checked_type)
        if static:
            kernel = lower_function(func, name, self.options)
        else:
            kernel = Kernel(name, "fallback", reason="dynamic shapes: compiled per input shape",
                            source=func, source_format="relay",
                            run=ShapeSpecializer(func, name, self.options))
        self.kernels.append(kernel)
        bucket.append((func, len(self.kernels) - 1))
        return len(self.kernels) - 1

    def _fresh_name(self, func: Function) -> str:
        ops = func_ops(func)
        base = "vm_mod_fused_" + "_".join(o.replace(".", "_") for o in ops[:6])
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        return base if n == 0 else f"{base}_{n}"


_ = _flat_types
