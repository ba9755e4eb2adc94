"""Specifications of the inputs of exported methods (TVM's ``nn/spec.py``).

``{"forward": {"x": nn.spec.Tensor(("n", 784), "float32"), "k": nn.spec.Int()}}``: per method,
per argument, a ``Tensor`` (static rank and dtype; a string dimension is symbolic, one
``tir.Var(name, "int64")`` per name per function), an ``Int`` (a symbolic int64 scalar), or a
tuple/list of specs. ``"$": {"param_mode": ..., "effect_mode": ...}`` configures how parameters
and effects are passed ("plain": one function parameter each, "packed": one tuple, "none").
"""

from __future__ import annotations

import inspect
import typing

from ....ir.prim_expr import PrimExpr
from . import core

__all__ = ["Int", "Tensor", "Object", "Tuple", "ConstInt", "ConstFloat", "ConstString",
           "MethodSpec", "ModuleSpec"]

_MODES = ("plain", "packed", "none")


class Int:
    """A symbolic integer input (``tir.Var(name, "int64")``)."""

    def __init__(self) -> None:
        pass

    def __repr__(self) -> str:
        return "int"


class Tensor:
    """A tensor input with static rank and dtype; dimensions are ints, strings (symbolic, shared
    by name within a function) or int64 ``tir`` expressions."""

    shape: list
    dtype: str

    def __init__(self, shape: typing.Sequence, dtype: str) -> None:
        if isinstance(shape, str | int | PrimExpr) or not isinstance(shape, typing.Sequence):
            raise TypeError(f"nn.spec.Tensor: shape must be a list or tuple of dimensions, got "
                            f"{type(shape).__name__} {shape!r}")
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, int | str | PrimExpr):
                raise TypeError(f"nn.spec.Tensor: invalid dimension {d!r} "
                                f"({type(d).__name__}) in shape {list(shape)}; a dimension is an "
                                "int, a str naming a symbolic dimension, or a tir PrimExpr")
            if isinstance(d, int) and d < 0:
                raise ValueError(f"nn.spec.Tensor: dimensions must be >= 0, got {d} in shape "
                                 f"{list(shape)}")
            if isinstance(d, str) and not d.isidentifier():
                raise ValueError(f"nn.spec.Tensor: symbolic dimension {d!r} must be a Python "
                                 "identifier")
            if isinstance(d, PrimExpr) and d.dtype != "int64":
                raise TypeError(f"nn.spec.Tensor: symbolic dimension {d!r} must be int64, got "
                                f"{d.dtype}")
        if not isinstance(dtype, str):
            raise TypeError(f"nn.spec.Tensor: dtype must be a str such as 'float32', got "
                            f"{type(dtype).__name__} {dtype!r}")
        self.shape = list(shape)
        self.dtype = dtype

    def __repr__(self) -> str:
        shape = ", ".join(str(i) for i in self.shape)
        return f"Tensor([{shape}], '{self.dtype}')"


class Object:
    """An opaque object input (``R.Object``), wrapped as ``object_type`` (an ``nn.Object``
    subclass)."""

    def __init__(self, object_type: type = core.Object) -> None:
        self.object_type = object_type

    def __repr__(self) -> str:
        return "object"


class Tuple:
    """A tuple (or list) of inputs."""

    name: str
    elements: list | tuple

    def __init__(self, name: str, elements) -> None:
        if not isinstance(elements, tuple | list):
            raise TypeError(f"nn.spec.Tuple: elements must be a tuple or list, got "
                            f"{type(elements).__name__}")
        self.name = name
        self.elements = elements

    def __repr__(self) -> str:
        return self.elements.__repr__()


class ConstInt:
    """An integer constant (arguments of external functions)."""

    def __init__(self, dtype: str | None = None) -> None:
        self.dtype = dtype

    def __repr__(self) -> str:
        return "const.int"


class ConstFloat:
    """A float constant (arguments of external functions)."""

    def __init__(self, dtype: str | None = None) -> None:
        self.dtype = dtype

    def __repr__(self) -> str:
        return "const.float"


class ConstString:
    """A string constant (arguments of external functions)."""

    def __repr__(self) -> str:
        return "const.string"


_EXPECTED = ("expected nn.spec.Tensor(shape, dtype), nn.spec.Int() (or int / \"int\"), "
             "nn.spec.Object, or a tuple/list of those")


class MethodSpec:
    """The spec of one exported method: its arguments' names and specs, in the method's
    signature order, and the parameter/effect passing modes."""

    def __init__(self, method: typing.Callable, arg_names: list, arg_specs: list,
                 param_mode: str = "plain", effect_mode: str = "plain"):
        if param_mode not in _MODES:
            raise ValueError(f"Invalid param_mode: {param_mode!r}; expected one of {_MODES}")
        if effect_mode not in _MODES:
            raise ValueError(f"Invalid effect_mode: {effect_mode!r}; expected one of {_MODES}")
        self.method = method
        self.arg_names = list(arg_names)
        self.arg_specs = list(arg_specs)
        self.param_mode = param_mode
        self.effect_mode = effect_mode

    def _repr(self, name: str) -> str:
        args = ", ".join(f"{n}: {s}" for n, s in zip(self.arg_names, self.arg_specs))
        return f"{name}({args})"

    def __repr__(self) -> str:
        return self._repr("MethodSpec")

    @staticmethod
    def from_raw(spec, method: typing.Callable, method_name: str | None = None) -> MethodSpec:
        """A MethodSpec from ``{arg_name: arg_spec, "$": {...}}`` for ``method``.

        Every key must name a parameter of ``method``, every parameter without a default must
        have a spec, and every spec must be one of the accepted kinds."""
        if isinstance(spec, MethodSpec):
            return spec
        method_name = method_name or getattr(method, "__name__", "method")
        if not isinstance(spec, dict):
            raise TypeError(f"export_tvm: the spec of method {method_name!r} must be a dict "
                            f"{{argument name: spec}}, got {type(spec).__name__} {spec!r}")
        spec = dict(spec)
        config = spec.pop("$", {})
        if not isinstance(config, dict):
            raise TypeError(f"export_tvm: the '$' config of method {method_name!r} must be a "
                            f"dict, got {type(config).__name__}")
        unknown_cfg = sorted(set(config) - {"param_mode", "effect_mode"})
        if unknown_cfg:
            raise ValueError(f"export_tvm: unknown '$' config keys {unknown_cfg} for method "
                             f"{method_name!r}; expected 'param_mode' and/or 'effect_mode'")
        param_mode = config.get("param_mode", "plain")
        effect_mode = config.get("effect_mode", "plain")

        params = inspect.signature(method).parameters
        positional = [p for p in params.values()
                      if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        names = [p.name for p in positional]
        unknown = [k for k in spec if k not in names]
        if unknown:
            raise ValueError(f"export_tvm: method {method_name!r} has no argument(s) "
                             f"{unknown}; its arguments are {names}")
        missing = [p.name for p in positional
                   if p.name not in spec and p.default is inspect.Parameter.empty]
        if missing:
            raise ValueError(f"export_tvm: no spec for argument(s) {missing} of method "
                             f"{method_name!r} (arguments without a default need one)")

        def _convert(arg_spec, arg_name):
            if arg_spec is Int or arg_spec is int:
                return Int()
            if isinstance(arg_spec, str) and arg_spec == "int":
                return Int()
            if isinstance(arg_spec, Int | Tensor | Object):
                return arg_spec
            if isinstance(arg_spec, Tuple):
                return Tuple(arg_name, type(arg_spec.elements)(
                    _convert(e, f"{arg_name}_{i}") for i, e in enumerate(arg_spec.elements)))
            if isinstance(arg_spec, tuple | list):
                return Tuple(arg_name, type(arg_spec)(
                    _convert(e, f"{arg_name}_{i}") for i, e in enumerate(arg_spec)))
            if arg_spec is Tensor or arg_spec is Object:
                raise TypeError(f"Invalid spec for argument {arg_name!r} of method "
                                f"{method_name!r}: got the class nn.spec.{arg_spec.__name__}; "
                                "instantiate it (nn.spec.Tensor(shape, dtype))")
            raise TypeError(f"Invalid spec for argument {arg_name!r} of method {method_name!r}: "
                            f"got {type(arg_spec).__name__} {arg_spec!r}; {_EXPECTED}")

        arg_names, arg_specs = [], []
        for name in names:
            if name in spec:
                arg_names.append(name)
                arg_specs.append(_convert(spec[name], name))
        return MethodSpec(method, arg_names, arg_specs, param_mode=param_mode,
                          effect_mode=effect_mode)


class ModuleSpec:
    """The spec of an exported module: one MethodSpec per method, in the spec's order."""

    def __init__(self, module: core.Module, method_names: list, method_specs: list) -> None:
        self.module = module
        self.method_names = list(method_names)
        self.method_specs = list(method_specs)

    @staticmethod
    def from_raw(spec, module: core.Module) -> ModuleSpec:
        """A ModuleSpec from ``{method_name: {arg_name: arg_spec}}``."""
        if isinstance(spec, ModuleSpec):
            return spec
        if not isinstance(spec, dict):
            raise TypeError(f"export_tvm: spec must be a dict {{method name: {{argument name: "
                            f"spec}}}}, got {type(spec).__name__} {spec!r}")
        if not spec:
            raise ValueError("export_tvm: spec names no method to export")
        method_names = list(spec.keys())
        method_specs = []
        for name in method_names:
            if not isinstance(name, str):
                raise TypeError(f"export_tvm: method names must be str, got "
                                f"{type(name).__name__} {name!r}")
            method = getattr(module, name, None)
            if method is None or not callable(method):
                raise ValueError(f"export_tvm: {type(module).__name__} has no method {name!r} "
                                 "to export")
            method_spec = spec[name]
            if not isinstance(method_spec, MethodSpec):
                method_spec = MethodSpec.from_raw(method_spec, method, name)
            method_specs.append(method_spec)
        return ModuleSpec(module, method_names, method_specs)

    def __repr__(self) -> str:
        return "ModuleSpec:\n" + "\n".join(
            "  " + s._repr(n) for n, s in zip(self.method_names, self.method_specs))
