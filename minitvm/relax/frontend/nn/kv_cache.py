"""``nn.KVCache`` (TVM's): an effect holding a growing cache of ``unit_shape`` rows, threaded
through the exported functions as an ``R.Object``. ``append`` adds rows in place
(``vm.builtin.attention_kv_cache_append``), ``view(seq_len)`` reads the first ``seq_len`` rows
as a tensor; ``_initialize_effect`` creates it with ``init_seq_len`` rows reserved. The run-time
builtins are registered here (a numpy buffer that doubles when full)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ....ir.prim_expr import IntImm, PrimExpr
from ....runtime import registry
from ... import expr as rx
from ...block_builder import BlockBuilder
from ...op.base import call_pure_packed
from ...op.call_inplace import call_inplace_packed
from ...op.create import zeros
from ...struct_info import ObjectStructInfo, TensorStructInfo
from .core import Effect, Tensor, get_default_dtype

__all__ = ["KVCache"]


class KVCache(Effect):
    """A cache of rows of shape ``unit_shape`` (``dtype``), ``init_seq_len`` reserved."""

    init_seq_len: int
    unit_shape: list[int]
    dtype: str
    cache: rx.Var | None

    def __init__(self, init_seq_len: int, unit_shape: Sequence[int], dtype: str | None = None):
        self.init_seq_len = int(init_seq_len)
        self.unit_shape = [int(i) for i in unit_shape]
        self.dtype = dtype if dtype is not None else get_default_dtype()
        self.cache = None

    def emit_init(self, name_hint: str, builder: BlockBuilder) -> list:
        shape = rx.ShapeExpr([self.init_seq_len, *self.unit_shape])
        init = builder.emit(zeros(shape, self.dtype))
        return [builder.emit(call_pure_packed(
            "vm.builtin.attention_kv_cache_create", init, shape,
            rx.PrimValue(IntImm("int64", 0)), sinfo_args=ObjectStructInfo()),
            name_hint=name_hint)]

    def create(self, name_hint: str) -> list:
        if self.cache is not None:
            raise RuntimeError("KVCache.create: the cache is already live (call finalize first)")
        self.cache = rx.Var(name_hint, ObjectStructInfo())
        return [self.cache]

    def set_state(self, state_vars: list) -> None:
        (self.cache,) = state_vars

    def finalize(self) -> list:
        result, self.cache = self.cache, None
        return [result]

    def to(self, dtype: str | None = None) -> None:
        if dtype is not None:
            self.dtype = dtype

    def _live(self, what: str) -> rx.Var:
        if self.cache is None:
            raise RuntimeError(f"KVCache.{what}: the cache is not live (use it inside a method "
                               "exported with export_tvm)")
        return self.cache

    def view(self, seq_len: int | PrimExpr) -> Tensor:
        """The first ``seq_len`` rows, as a tensor of shape ``(seq_len, *unit_shape)``."""
        cache = self._live("view")
        shape = rx.ShapeExpr([seq_len, *self.unit_shape])
        return Tensor(_expr=BlockBuilder.current().emit(call_pure_packed(
            "vm.builtin.attention_kv_cache_view", cache, shape,
            sinfo_args=TensorStructInfo(shape, self.dtype))))

    def append(self, new_element: Tensor) -> None:
        """Append the rows of ``new_element`` (shape ``(k, *unit_shape)``)."""
        cache = self._live("append")
        if new_element.dtype != self.dtype:
            raise TypeError(f"KVCache.append: the cache holds {self.dtype}, but the new element "
                            f"is {new_element.dtype}")
        unit = [int(d) if isinstance(d, IntImm) else d for d in new_element.shape[1:]]
        if len(unit) != len(self.unit_shape) or any(
                isinstance(a, int) and a != b for a, b in zip(unit, self.unit_shape)):
            raise ValueError(f"KVCache.append: rows of shape {self.unit_shape} expected, got a "
                             f"tensor of shape {list(new_element.shape)}")
        self.cache = BlockBuilder.current().emit(call_inplace_packed(
            "vm.builtin.attention_kv_cache_append", cache, new_element._expr,
            inplace_indices=[0], sinfo_args=ObjectStructInfo()))


# ------------------------------------------------------------------ run-time builtins
class AttentionKVCache:
    """The run-time cache: ``data[:fill_count]`` holds the appended rows."""

    __slots__ = ("data", "fill_count")

    def __init__(self, data: np.ndarray, fill_count: int):
        self.data = data
        self.fill_count = fill_count

    def append(self, value: np.ndarray) -> AttentionKVCache:
        value = np.asarray(value)
        if value.shape[1:] != self.data.shape[1:]:
            raise ValueError(f"attention_kv_cache_append: rows of shape {self.data.shape[1:]} "
                             f"expected, got {value.shape}")
        need = self.fill_count + value.shape[0]
        if need > self.data.shape[0]:
            cap = max(need, 2 * self.data.shape[0])
            grown = np.zeros((cap, *self.data.shape[1:]), self.data.dtype)
            grown[:self.fill_count] = self.data[:self.fill_count]
            self.data = grown
        self.data[self.fill_count:need] = value
        self.fill_count = need
        return self

    def view(self, shape) -> np.ndarray:
        shape = tuple(int(d) for d in shape)
        if shape[0] > self.fill_count or shape[1:] != self.data.shape[1:]:
            raise ValueError(f"attention_kv_cache_view: cannot view {shape} of a cache holding "
                             f"{self.fill_count} rows of {self.data.shape[1:]}")
        return self.data[:shape[0]].copy()


def _arr(x) -> np.ndarray:
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def _create(init_data, reserve_shape, init_fill_count) -> AttentionKVCache:
    data = np.zeros(tuple(int(d) for d in reserve_shape), _arr(init_data).dtype)
    fill = int(init_fill_count)
    data[:fill] = _arr(init_data)[:fill]
    return AttentionKVCache(data, fill)


for _name, _fn in (("vm.builtin.attention_kv_cache_create", _create),
                   ("vm.builtin.attention_kv_cache_append",
                    lambda cache, value: cache.append(_arr(value))),
                   ("vm.builtin.attention_kv_cache_view", lambda cache, shape: cache.view(shape))):
    if registry.get_global_func(_name, allow_missing=True) is None:
        registry.register_func(_name, _fn)
del _name, _fn
