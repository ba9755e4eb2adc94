"""The core of ``relax.frontend.nn`` (TVM's ``nn/core.py``).

- ``Tensor``: wraps a Relax expression whose struct info is a ``TensorStructInfo`` of known rank
  and shape; gives ``.shape``, ``.dtype``, ``.ndim`` and arithmetic. Always symbolic.
- ``Parameter``: a tensor that is a weight of a layer; may be bound to concrete data (``.data``).
- ``Module``: a tree of sub-modules and parameters registered by plain attribute assignment
  (their order is the attributes' order); ``export_tvm`` turns it into a Relax ``IRModule``.
- ``Effect``: state threaded through the exported functions (the IO effect of ``debug=True``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ....ir.prim_expr import IntImm, PrimExpr
from ....runtime.ndarray import NDArray
from ....runtime.ndarray import array as _nd_array
from ....tir.expr import Var as TirVar
from ... import expr as rx
from ...block_builder import BlockBuilder
from ...struct_info import ObjectStructInfo, ShapeStructInfo, TensorStructInfo, TupleStructInfo
from ._tensor_op import _TensorOp

__all__ = [
    "Tensor", "Parameter", "Object", "Effect", "Module", "ModuleList", "ModuleDict",
    "get_default_dtype", "set_default_dtype", "wrap_nested",
]

_DEFAULT_DTYPE = "float32"


def get_default_dtype() -> str:
    """The dtype of parameters created without one (``"float32"`` unless changed)."""
    return _DEFAULT_DTYPE


def set_default_dtype(dtype: str) -> None:
    """Set the dtype of parameters created without one."""
    global _DEFAULT_DTYPE
    if not isinstance(dtype, str):
        raise TypeError(f"set_default_dtype: dtype must be a str, got {type(dtype).__name__}")
    _DEFAULT_DTYPE = dtype


def _legal_name(name: str) -> str:
    """A Relax variable name from a dotted path (``layers.0.weight`` -> ``layers_0_weight``)."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def _shape_dim(dim, shape):
    """One dimension of a placeholder: a Python int (>= 0) or an int64 tir expression; a string
    becomes a new ``tir.Var(name, "int64")``."""
    if isinstance(dim, bool):
        raise TypeError(f"invalid shape {list(shape)}: a dimension cannot be a bool")
    if isinstance(dim, int | IntImm | np.integer):
        dim = int(dim.value if isinstance(dim, IntImm) else dim)
        if dim < 0:
            raise ValueError(f"invalid shape {list(shape)}: dimensions must be >= 0, got {dim}")
        return dim
    if isinstance(dim, str):
        return TirVar(dim, "int64")
    if not isinstance(dim, PrimExpr):
        raise TypeError(f"invalid shape {list(shape)}: a dimension must be an int, a str (a "
                        f"symbolic dimension) or a tir PrimExpr, got {type(dim).__name__} "
                        f"{dim!r}")
    if dim.dtype != "int64":
        raise TypeError(f"invalid shape {list(shape)}: symbolic dimension {dim!r} must be int64, "
                        f"got {dim.dtype}")
    return dim


def _tensor_placeholder(name: str, shape: Sequence, dtype: str) -> Tensor:
    """A Relax Var named ``name`` with struct info ``R.Tensor(shape, dtype)``."""
    if isinstance(shape, int | str | PrimExpr):
        raise TypeError(f"shape must be a sequence of dimensions, got {type(shape).__name__} "
                        f"{shape!r}")
    if not isinstance(dtype, str):
        raise TypeError(f"dtype must be a str, got {type(dtype).__name__} {dtype!r}")
    new_shape = [_shape_dim(d, shape) for d in shape]
    return Tensor(_expr=rx.Var(name, TensorStructInfo(new_shape, dtype)))


class Tensor(_TensorOp):
    """A symbolic tensor: a Relax expression whose struct info is a ``TensorStructInfo`` with a
    known shape. Made by ``nn.op`` functions, parameters and exported inputs, never directly."""

    _expr: rx.Expr

    def __init__(self, *, _expr: rx.Expr) -> None:
        if not isinstance(_expr, rx.Expr):
            raise TypeError(f"nn.Tensor wraps a relax.Expr, got {type(_expr).__name__}")
        sinfo = _expr.struct_info_
        if not isinstance(sinfo, TensorStructInfo):
            raise TypeError(f"nn.Tensor needs an expression of TensorStructInfo, got "
                            f"{sinfo if sinfo is not None else 'no struct info'}")
        if sinfo.ndim == -1 or sinfo.shape is None:
            raise ValueError(f"nn.Tensor needs a tensor of known rank and shape, got {sinfo}")
        shape_sinfo = sinfo.shape.struct_info_
        if not isinstance(shape_sinfo, ShapeStructInfo) or shape_sinfo.values is None:
            raise ValueError(f"nn.Tensor needs a tensor whose shape values are known, got {sinfo}")
        self._expr = _expr

    @staticmethod
    def from_const(data) -> Tensor:
        """A constant tensor from a numpy array (or anything ``relax.const`` takes)."""
        return Tensor(_expr=rx.const(data))

    @staticmethod
    def from_scalar(data: int | float, dtype: str) -> Tensor:
        """A 0-d constant tensor of ``dtype``."""
        return Tensor(_expr=rx.const(data, dtype=dtype))

    @staticmethod
    def from_struct_info(struct_info: TensorStructInfo, name: str = "tensor") -> Tensor:
        """A tensor that is a fresh Relax Var of ``struct_info``."""
        return Tensor(_expr=rx.Var(name, struct_info))

    @staticmethod
    def placeholder(shape: Sequence, dtype: str, name: str = "tensor") -> Tensor:
        """A tensor that is a fresh Relax Var of shape ``shape`` (strings: symbolic dims)."""
        return _tensor_placeholder(name, shape, dtype)

    @property
    def shape(self) -> list:
        """The shape: Python ints for static dimensions, tir expressions for symbolic ones."""
        values = self._expr.struct_info.shape.struct_info.values
        return [v.value if isinstance(v, IntImm) else v for v in values]

    @property
    def ndim(self) -> int:
        return self._expr.struct_info.ndim

    @property
    def dtype(self) -> str:
        return self._expr.struct_info.dtype

    def __repr__(self) -> str:
        return f'Tensor({self.shape}, "{self.dtype}")'


class Parameter(Tensor):
    """A weight: a tensor of a given shape and dtype, bound to concrete data (``.data``) or not.
    In an exported function every parameter becomes a function parameter."""

    _data: NDArray | None

    def __init__(self, shape: Sequence, dtype: str | None = None) -> None:
        if dtype is None:
            dtype = get_default_dtype()
        super().__init__(_expr=_tensor_placeholder("param", shape, dtype)._expr)
        self._data = None
        self.attrs: dict[str, Any] = OrderedDict()

    @property
    def data(self) -> NDArray | None:
        """The concrete value (a ``tvm.nd.NDArray``), or None when unbound."""
        return self._data

    @data.setter
    def data(self, data) -> None:
        if data is None:
            self._data = None
            return
        if isinstance(data, Parameter):
            data = data.data
            if data is None:
                raise ValueError("cannot bind a Parameter to another Parameter that has no data")
        if isinstance(data, NDArray):
            pass
        elif isinstance(data, np.ndarray | np.generic):
            data = _nd_array(np.asarray(data))
        else:
            raise TypeError(f"Parameter data must be a numpy array or a tvm.nd.NDArray, got "
                            f"{type(data).__name__}")
        if any(not isinstance(d, int) for d in self.shape):
            raise ValueError(f"cannot bind data to a parameter of symbolic shape {self.shape}")
        if tuple(data.shape) != tuple(self.shape):
            raise ValueError(f"Shape mismatch: expected {tuple(self.shape)}, got "
                             f"{tuple(data.shape)}")
        if data.dtype != self.dtype:
            raise ValueError(f"Dtype mismatch: expected {self.dtype}, got {data.dtype}")
        self._data = data

    def to(self, dtype: str | None = None) -> None:
        """Change the dtype of an unbound parameter (bound ones refuse: precision could be
        lost)."""
        if dtype is None:
            return
        if self._data is not None:
            raise ValueError("Changing the dtype of a Parameter that has been bound to concrete "
                             "data is not recommended. It might lead to potential precision loss "
                             "or other unexpected behaviors")
        self._expr = _tensor_placeholder("param", self.shape, dtype)._expr

    def __repr__(self) -> str:
        return f'Parameter({self.shape}, "{self.dtype}")'


class Object:
    """A value of ``R.Object`` struct info (an opaque runtime object)."""

    _expr: rx.Var

    def __init__(self, *, _expr: rx.Expr, _name: str) -> None:
        self._expr = _expr
        self._name = _name


class Effect:
    """State with side effects threaded through the exported functions as extra inputs and
    outputs (IO in debug mode, caches)."""

    def emit_init(self, name_hint: str, builder: BlockBuilder) -> list:
        """Emit the initial state (in ``_initialize_effect``)."""
        raise NotImplementedError

    def create(self, name_hint: str) -> list:
        """The implicit function inputs that hold the state."""
        raise NotImplementedError

    def set_state(self, state_vars: list) -> None:
        """Set the variables that hold the state."""
        raise NotImplementedError

    def finalize(self) -> list:
        """The state as implicit function outputs."""
        raise NotImplementedError

    def to(self, dtype: str | None = None) -> None:
        """Change dtype (no-op for most effects)."""


class Module:
    """Base of neural-network components. Sub-modules, parameters and effects are registered by
    assigning them to attributes; ``named_parameters`` lists them in assignment order with
    dotted names (``fc1.weight``, ``layers.0.bias``)."""

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        """``(name, parameter)`` pairs, depth first in attribute order."""
        yield from _attribute_finder(self, prefix, lambda x: isinstance(x, Parameter))

    def parameters(self) -> Iterator[Parameter]:
        for _, param in self.named_parameters():
            yield param

    def state_dict(self, *, prefix: str = "", destination: dict | None = None) -> dict:
        """``{name: Parameter}`` for every parameter (the parameters themselves, as in TVM; their
        values are ``param.data``)."""
        if destination is None:
            destination = OrderedDict()
        for name, param in _attribute_finder(self, prefix, lambda x: isinstance(x, Parameter)):
            destination[name] = param
        return destination

    def load_state_dict(self, state_dict: dict, strict: bool = True) -> tuple[list, list]:
        """Bind parameters to the values of ``state_dict`` (Parameters with data, NDArrays or
        numpy arrays, keyed by the names of ``state_dict()``). Returns ``(missing_keys,
        unexpected_keys)``; with ``strict`` either being non-empty raises ``KeyError``."""
        own = self.state_dict()
        unexpected_keys: list[str] = []
        updates = []
        for key, value in state_dict.items():
            if key not in own:
                unexpected_keys.append(key)
                continue
            data = value.data if isinstance(value, Parameter) else value
            if data is None:
                raise ValueError(f"Parameter {key} is not set to any concrete tensor")
            updates.append((key, own.pop(key), data))
        missing_keys = list(own.keys())
        if strict and (missing_keys or unexpected_keys):
            raise KeyError(f"Missing keys: {missing_keys}, Unexpected keys: {unexpected_keys}")
        for key, param, data in updates:
            try:
                param.data = data
            except (TypeError, ValueError) as err:
                raise type(err)(f"load_state_dict: parameter {key!r}: {err}") from None
        return missing_keys, unexpected_keys

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        forward = getattr(self, "forward", None)
        if forward is None:
            raise NotImplementedError(f"Module {type(self).__name__} does not have a `forward` "
                                      "method")
        return forward(*args, **kwargs)

    def to(self, dtype: str | None = None) -> None:
        """Convert every parameter (recursively) to ``dtype``; a module's ``dtype`` attribute
        follows."""
        for item in list(self.__dict__.values()):
            if isinstance(item, Module | Parameter | Effect):
                item.to(dtype=dtype)
            elif not isinstance(item, type) and callable(getattr(item, "to", None)):
                item.to(dtype=dtype)
        if dtype is not None and isinstance(getattr(self, "dtype", None), str):
            self.dtype = dtype

    def export_tvm(self, spec, debug: bool = False, allow_extern: bool = False):
        """Export to a Relax IRModule: one function per method named in ``spec``
        (``{"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}}``). Each function takes the
        spec's inputs, then (with ``debug``) the IO effect, then every parameter; returns
        ``(IRModule, [(name, Parameter), ...])``."""
        from . import spec as _spec
        from .exporter import Exporter

        spec = _spec.ModuleSpec.from_raw(spec, self)
        mod, params, ext_mods = Exporter(debug=debug).build(spec)
        if allow_extern:
            return mod, params, ext_mods
        if ext_mods:
            raise ValueError("the module uses external modules; pass allow_extern=True")
        return mod, params

    def jit(self, *args, **kwargs):
        raise NotImplementedError("nn.Module.jit is not supported in minitvm (no Relax VM build "
                                  "yet); use export_tvm")


class ModuleList(Module):
    """Sub-modules in a list; parameter names carry the index (``layers.0.weight``)."""

    def __init__(self, modules: Sequence[Module] = ()):
        self.modules = list(modules)

    def __iter__(self):
        return iter(self.modules)

    def __getitem__(self, idx):
        return self.modules[idx]

    def __setitem__(self, idx, module):
        self.modules[idx] = module

    def __len__(self):
        return len(self.modules)

    def append(self, module: Module) -> None:
        self.modules.append(module)

    def to(self, dtype: str | None = None) -> None:
        for module in self.modules:
            module.to(dtype=dtype)

    def forward(self, x):
        for module in self.modules:
            x = module(x)
        return x


class ModuleDict(Module):
    """Sub-modules by name; parameter names carry the key (``blocks.attn.weight``)."""

    def __init__(self, modules: dict | None = None):
        self.modules = OrderedDict(modules or {})

    def __iter__(self):
        return iter(self.modules)

    def __getitem__(self, key):
        return self.modules[key]

    def __setitem__(self, key, module):
        self.modules[key] = module

    def __len__(self):
        return len(self.modules)

    def keys(self):
        return self.modules.keys()

    def values(self):
        return self.modules.values()

    def items(self):
        return self.modules.items()

    def to(self, dtype: str | None = None) -> None:
        for module in self.modules.values():
            module.to(dtype=dtype)


def _attribute_finder(root, prefix: str, condition_yield: Callable[[Any], bool]):
    """Attributes of ``root`` (recursively through sub-modules) that satisfy the condition, with
    their dotted names."""
    if isinstance(root, ModuleList):
        for i, sub in enumerate(root.modules):
            if condition_yield(sub):
                yield f"{prefix}{i}", sub
            elif isinstance(sub, Module):
                yield from _attribute_finder(sub, f"{prefix}{i}.", condition_yield)
        return
    if isinstance(root, ModuleDict):
        for key, sub in root.modules.items():
            if condition_yield(sub):
                yield f"{prefix}{key}", sub
            elif isinstance(sub, Module):
                yield from _attribute_finder(sub, f"{prefix}{key}.", condition_yield)
        return
    for name, item in root.__dict__.items():
        if condition_yield(item):
            yield prefix + name, item
        elif isinstance(item, Module):
            yield from _attribute_finder(item, prefix + name + ".", condition_yield)


def wrap_nested(expr: rx.Expr, name: str):
    """Emit ``expr`` in the function being exported, named ``name``; a tensor result becomes an
    ``nn.Tensor``, a tuple result a tuple of them (fields named ``name.0``...)."""
    builder = BlockBuilder.current()
    if builder is None:
        raise RuntimeError(f"nn.op {name!r}: operators can only be applied while a module is "
                           "being exported (inside nn.Module.export_tvm)")
    expr = builder.emit(expr, _legal_name(name))
    sinfo = expr.struct_info_
    if isinstance(sinfo, TensorStructInfo):
        return Tensor(_expr=expr)
    if isinstance(sinfo, TupleStructInfo):
        return tuple(wrap_nested(rx.TupleGetItem(expr, i), name=f"{name}.{i}")
                     for i in range(len(sinfo.fields)))
    if isinstance(sinfo, ObjectStructInfo):
        return Object(_expr=expr, _name=name)
    raise TypeError(f"Unsupported return type: {sinfo}")
