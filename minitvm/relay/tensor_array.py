"""Tensor arrays for the Prelude: TVM's ``TensorArrayOps`` and ``StaticTensorArrayOps``.

A tensor array is a ``List`` of a tensor ADT. The dynamic ADT ``tensor_{dtype}_t`` has one
constructor per rank (``tensor0_{dtype}`` .. ``tensor6_{dtype}``, every dimension ``?``) plus
``tensor_nil_{dtype}``; the static ADT ``static_tensor_{dtype}_{shape}_t`` has
``tensor_constructor_{dtype}_{shape}`` for one fixed shape and ``tensor_nil_{dtype}_{shape}``.
The operations (read, write, stack, unstack, concat, scatter, split, gather, ...) are ordinary
Relay functions added to the Prelude's module under TVM's names, so the interpreter and the VM
run them like any other program. Names and signatures follow TVM's ``relay/prelude.py``.
"""

from __future__ import annotations

from ..ir.prim_expr import Any
from ..ir.type import GlobalTypeVar, TensorType, scalar_type
from .adt import (
    Clause,
    Constructor,
    Match,
    PatternConstructor,
    PatternVar,
    PatternWildcard,
    TypeData,
)
from .expr import Function, GlobalVar, If, Var, const
from .op.tensor import add, equal, subtract
from .op.transform import concatenate, expand_dims
from .op.transform_index import arange, shape_of, take

__all__ = ["TensorArrayOps", "StaticTensorArrayOps", "static_tensor_name",
           "get_tensor_array_shape"]

_MAX_RANK = 6


def _i32(name: str) -> Var:
    return Var(name, scalar_type("int32"))


def _dim_str(shape) -> str:
    return "_".join("any" if isinstance(d, Any) else str(int(d)) for d in shape)


def static_tensor_name(canonical: str, dtype: str, shape, batch_dim=None,
                       extra_shapes: dict | None = None) -> str:
    """TVM's name of a static tensor-array definition: ``{canonical}_{dtype}_{dims}``
    (``static_tensor_{dtype}_{dims}_t`` for the ADT, ``scalar`` for rank 0)."""
    dims = _dim_str(shape)
    for key, extra in (extra_shapes or {}).items():
        dims += f"_{key}_{_dim_str(extra)}"
    dims = dims or "scalar"
    if canonical == "tensor_t":
        return f"static_tensor_{dtype}_{dims}_t"
    if batch_dim == 1 and canonical not in ("tensor_constructor", "tensor_nil"):
        return f"{canonical}_{dtype}_batch1_{dims}"
    return f"{canonical}_{dtype}_{dims}"


class _Ops:
    """What both kinds share: the module, the List ADT, and definition helpers."""

    def __init__(self, prelude, dtype: str):
        self.prelude = prelude
        self.dtype = dtype
        self.list, self.cons, self.nil = prelude.mod.get_type("List")

    def get_global_var(self, canonical: str) -> GlobalVar:
        """The registered function ``canonical`` of this kind (``get_name`` picks the name)."""
        return self.prelude.mod.get_global_var(self.get_name(canonical))

    def get_type(self, canonical: str) -> GlobalTypeVar:
        """The registered ADT ``canonical`` (``tensor_t``) of this kind."""
        return self.prelude.mod.get_global_type_var(self.get_name(canonical))

    def _gvar(self, canonical: str) -> GlobalVar:
        """The module's GlobalVar called ``get_name(canonical)`` (a new one when absent)."""
        name = self.get_name(canonical)
        mod = self.prelude.mod
        return mod.get_global_var(name) if name in mod else GlobalVar(name)

    def is_cached(self, name: str) -> bool:
        """Whether the module already defines the function ``name``."""
        return name in self.prelude.mod

    def _define(self, name, params, body, ret_type) -> GlobalVar:
        """Add ``fn (params) -> ret_type { body }`` as ``name`` (a canonical name, or the
        GlobalVar a recursive body already calls)."""
        gv = name if isinstance(name, GlobalVar) else self._gvar(name)
        self.prelude.mod[gv] = Function(params, body, ret_type, [])
        return gv

    def _std(self, name: str) -> GlobalVar:
        return self.prelude.mod.get_global_var(name)

    def _ta_type(self):
        return self.list(self.tensor_type_var())

    def define_tensor_adt(self) -> None:
        """Define this kind's tensor ADT (``_tensor_ctors``) once, and bind
        ``tensor_type_var`` to it."""
        name = self.get_name("tensor_t")
        mod = self.prelude.mod
        if name in mod._tvars:
            self.tensor_type_var = mod.get_global_type_var(name)
            return
        gtv = self.tensor_type_var = GlobalTypeVar(name)
        mod[gtv] = TypeData(gtv, [], self._tensor_ctors(gtv))

    # ---------------------------------------------------------------- shared operations
    def _define_concat(self, out: _Ops, cat: GlobalVar) -> None:
        """``tensor_array_concat(ta)`` over a list of ``out``'s tensors: every element joined
        by ``cat`` (``out``'s ``tensor_concatenate``), ``tensor_nil`` when empty."""
        gv = self._gvar("tensor_array_concat")
        ta = Var("tensor_array", self.list(out.tensor_type_var()))
        first, rest = Var("hd"), Var("tl")
        tail = Match(rest, [Clause(PatternConstructor(self.nil), first),
                            Clause(PatternWildcard(), cat(first, gv(rest)))], False)
        body = Match(ta, [Clause(PatternConstructor(self.nil), out.get_ctor("tensor_nil")()),
                          Clause(PatternConstructor(self.cons, [PatternVar(first),
                                                                PatternVar(rest)]), tail)],
                     False)
        self._define(gv, [ta], body, out.tensor_type_var())

    def define_tensor_array_gather(self) -> None:
        """``tensor_array_gather(ta, indices)``: ``ta[indices[0]], ...`` stacked on axis 0
        (typed by ``_stacked``'s ADT)."""
        out = self._stacked()
        helper = self._gvar("tensor_array_gather_helper")
        stack, read = self.get_global_var("tensor_array_stack"), self.get_global_var(
            "tensor_array_read")
        ta, acc = Var("ta", self._ta_type()), Var("accu", self._ta_type())
        k, n, idx = _i32("current"), _i32("limit"), Var("indices_", TensorType([Any()], "int32"))
        prev = subtract(k, const(1))
        body = If(equal(k, const(0)), stack(acc),
                  helper(ta, self.cons(read(ta, take(idx, prev)), acc), prev, n, idx))
        self._define(helper, [ta, acc, k, n, idx], body, out.tensor_type_var())
        ta2 = Var("tensor_array", self._ta_type())
        idx2 = Var("indices", TensorType([Any()], "int32"))
        count = take(shape_of(idx2), const(0))
        self._define("tensor_array_gather", [ta2, idx2],
                     helper(ta2, self.nil(), count, count, idx2), out.tensor_type_var())

    def define_tensor_array(self) -> None:
        """``tensor_array(n)``: a list of ``n`` empty tensors."""
        gv = self._gvar("tensor_array")
        n = _i32("x")
        empty = self.get_ctor("tensor_nil")
        body = If(equal(n, const(0)), self.nil(),
                  self.cons(empty(), gv(subtract(n, const(1)))))
        self._define(gv, [n], body, self._ta_type())

    def define_tensor_array_read(self) -> None:
        """``tensor_array_read(ta, i)``: element ``i``."""
        ta, i = Var("tensor_array", self._ta_type()), _i32("x")
        self._define("tensor_array_read", [ta, i], self._std("nth")(ta, i),
                     self.tensor_type_var())

    def define_tensor_array_write(self) -> None:
        """``tensor_array_write(ta, i, v)``: ``ta`` with element ``i`` replaced by ``v``."""
        ta, i, v = Var("tensor_array", self._ta_type()), _i32("x"), Var("v",
                                                                        self.tensor_type_var())
        self._define("tensor_array_write", [ta, i, v], self._std("update")(ta, i, v),
                     self._ta_type())

    def _name(self, canonical: str, extra_shapes=None) -> str:
        return self.get_name(canonical) if extra_shapes is None else self.get_name(
            canonical, extra_shapes)

    def define_tensor_array_scatter(self, indices_shape=None, force_update: bool = False) -> None:
        """``tensor_array_scatter(ta, indices, values)``: ``ta[indices[k]] = values[k]``.

        With a static ``indices_shape`` (static tensor arrays) the function is defined under a
        name carrying ``_indices_{dims}``, with that indices type; ``force_update`` redefines
        a function already in the module.
        """
        extra = {"indices": indices_shape} if indices_shape is not None else None
        name = self._name("tensor_array_scatter", extra)
        if self.is_cached(name) and not force_update:
            return
        mod = self.prelude.mod
        helper_name = self._name("tensor_array_scatter_helper", extra)
        helper = mod.get_global_var(helper_name) if helper_name in mod else GlobalVar(helper_name)
        write, read = self.get_global_var("tensor_array_write"), self.get_global_var(
            "tensor_array_read")
        idx_type = TensorType(list(indices_shape) if indices_shape is not None else [Any()],
                              "int32")
        ta, k, n = Var("ta", self._ta_type()), _i32("current"), _i32("limit")
        idx, vals = Var("indices_", idx_type), Var("values_", self._ta_type())
        step = helper(write(ta, take(idx, k), read(vals, k)), add(k, const(1)), n, idx, vals)
        self._define(helper, [ta, k, n, idx, vals], If(equal(k, n), ta, step), self._ta_type())
        ta2 = Var("tensor_array", self._ta_type())
        idx2, vals2 = Var("indices", idx_type), Var("values", self._ta_type())
        count = (const(int(indices_shape[0])) if indices_shape is not None
                 and not isinstance(indices_shape[0], Any) else take(shape_of(idx2), const(0)))
        gv = mod.get_global_var(name) if name in mod else GlobalVar(name)
        self._define(gv, [ta2, idx2, vals2], helper(ta2, const(0), count, idx2, vals2),
                     self._ta_type())


class TensorArrayOps(_Ops):
    """Tensor arrays of any rank up to 6 and unknown dims (TVM's ``TensorArrayOps``)."""

    def get_name(self, canonical: str) -> str:
        """The module name of ``canonical`` for this dtype (``tensor_array_float32``)."""
        return self.prelude.get_name(canonical, self.dtype)

    def get_ctor(self, canonical: str) -> Constructor:
        """A constructor of this dtype's tensor ADT (``tensor_nil``, ``tensor0``..)."""
        return self.prelude.get_ctor("tensor_t", canonical, self.dtype)

    def _rank_ctor(self, rank: int) -> Constructor:
        return self.get_ctor(f"tensor{rank}")

    def _tensor_ctors(self, gtv: GlobalTypeVar) -> list[Constructor]:
        """``tensor_{dtype}_t``: ``tensor_nil`` or ``tensorK`` holding a rank-K tensor."""
        ctors = [Constructor(self.get_name("tensor_nil"), [], gtv)]
        for rank in range(_MAX_RANK + 1):
            ctors.append(Constructor(self.get_name(f"tensor{rank}"),
                                     [TensorType([Any()] * rank, self.dtype)], gtv))
        return ctors

    def _per_rank(self, ranks, make) -> Match:
        """``match? (x) { tensorK(%t) => make(K, %t) ... }`` over ``ranks``."""
        x = Var("x", self.tensor_type_var())
        clauses = []
        for rank in ranks:
            t = Var("t")
            clauses.append(Clause(PatternConstructor(self._rank_ctor(rank), [PatternVar(t)]),
                                  make(rank, t)))
        return x, Match(x, clauses, False)

    def define_tensor_take(self) -> None:
        """``tensor_take(t, lower, upper)``: rows ``lower..upper`` (axis 0) of ``t``."""
        lo, up = _i32("lower"), _i32("upper")
        x, body = self._per_rank(range(1, _MAX_RANK + 1), lambda r, t: self._rank_ctor(r)(
            take(t, arange(lo, up, dtype="int32"), axis=0)))
        self._define("tensor_take", [x, lo, up], body, self.tensor_type_var())

    def define_tensor_expand_dims(self) -> None:
        """``tensor_expand_dims(t)``: ``t`` with a new leading axis of length 1."""
        x, body = self._per_rank(range(_MAX_RANK), lambda r, t: self._rank_ctor(r + 1)(
            expand_dims(t, 0, 1)))
        self._define("tensor_expand_dims", [x], body, self.tensor_type_var())

    def define_tensor_concat(self) -> None:
        """``tensor_concatenate(x, y)``: ``x`` and ``y`` (same rank >= 1) joined on axis 0."""
        y = Var("y", self.tensor_type_var())

        def inner(rank, t1):
            t2 = Var("t2")
            ctor = self._rank_ctor(rank)
            return Match(y, [Clause(PatternConstructor(ctor, [PatternVar(t2)]),
                                    ctor(concatenate([t1, t2], axis=0)))], False)

        x, body = self._per_rank(range(1, _MAX_RANK + 1), inner)
        self._define("tensor_concatenate", [x, y], body, self.tensor_type_var())

    def define_tensor_array_unstack_tensor(self, rank: int) -> None:
        """``tensor_array_unstack_tensor{rank}(t)``: the rows of ``t`` as a tensor array."""
        helper = self._gvar(f"tensor_array_unstack_tensor{rank}_helper")
        i, up = _i32("i"), _i32("up")
        t = Var("tensor", TensorType([Any()] * rank, self.dtype))
        row = self._rank_ctor(rank - 1)(take(t, i, axis=0))
        body = If(equal(i, up), self.nil(), self.cons(row, helper(add(i, const(1)), up, t)))
        self._define(helper, [i, up, t], body,
                     self._ta_type())
        t2 = Var("tensor", TensorType([Any()] * rank, self.dtype))
        self._define(f"tensor_array_unstack_tensor{rank}", [t2],
                     helper(const(0), take(shape_of(t2), const(0)), t2), self._ta_type())

    def define_tensor_array_split(self) -> None:
        """``tensor_array_split(ta, value, lengths)``: piece ``k`` of ``value`` (``lengths[k]``
        rows, axis 0) written to ``ta[k]``."""
        helper = self._gvar("ta_split_helper")
        write, take_rows = self.get_global_var("tensor_array_write"), self.get_global_var(
            "tensor_take")
        ta, value = Var("ta", self._ta_type()), Var("value", self.tensor_type_var())
        off, k, n = _i32("offset"), _i32("current"), _i32("limit")
        lengths = Var("lengths", TensorType([Any()], "int32"))
        length = take(lengths, k)
        rest = helper(ta, value, add(off, length), add(k, const(1)), n, lengths)
        body = If(equal(k, n), ta, write(rest, k, take_rows(value, off, add(off, length))))
        self._define(helper, [ta, value, off, k, n, lengths], body,
                     self._ta_type())
        ta2, value2 = Var("tensor_array", self._ta_type()), Var("value", self.tensor_type_var())
        lengths2 = Var("lengths", TensorType([Any()], "int32"))
        count = take(shape_of(lengths2), const(0))
        self._define("tensor_array_split", [ta2, value2, lengths2],
                     helper(ta2, value2, const(0), const(0), count, lengths2), self._ta_type())

    def define_tensor_array_concat(self) -> None:
        """``tensor_array_concat(ta)``: every element joined on axis 0 (``tensor_nil`` if
        empty)."""
        self._define_concat(self, self.get_global_var("tensor_concatenate"))

    def define_tensor_array_stack(self) -> None:
        """``tensor_array_stack(ta)``: the elements stacked on a new axis 0."""
        ta = Var("tensor_array", self._ta_type())
        grown = self._std("map")(self.get_global_var("tensor_expand_dims"), ta)
        body = self._std("foldl")(self.get_global_var("tensor_concatenate"),
                                  self._std("hd")(grown), self._std("tl")(grown))
        self._define("tensor_array_stack", [ta], body, self.tensor_type_var())

    def _stacked(self) -> _Ops:
        """The ops whose tensor ADT types a stack of the elements (same ADT here)."""
        return self

    def register(self) -> None:
        """Add the tensor ADT and every tensor-array function for this dtype to the module."""
        if self.get_name("tensor_array") in self.prelude.mod:
            self.define_tensor_adt()
            return
        self.define_tensor_adt()
        self.define_tensor_take()
        self.define_tensor_expand_dims()
        self.define_tensor_concat()
        self.define_tensor_array()
        self.define_tensor_array_read()
        self.define_tensor_array_write()
        for rank in range(1, _MAX_RANK + 1):
            self.define_tensor_array_unstack_tensor(rank)
        self.define_tensor_array_scatter()
        self.define_tensor_array_split()
        self.define_tensor_array_concat()
        self.define_tensor_array_stack()
        self.define_tensor_array_gather()


class StaticTensorArrayOps(_Ops):
    """Tensor arrays whose elements have one fixed shape (TVM's ``StaticTensorArrayOps``)."""

    def __init__(self, prelude, dtype: str, shape, batch_dim=None):
        super().__init__(prelude, dtype)
        self.shape = tuple(shape)
        self.batch_dim = batch_dim

    def get_name(self, canonical: str, extra_shapes: dict | None = None) -> str:
        """The module name of ``canonical`` for this dtype and shape."""
        return static_tensor_name(canonical, self.dtype, self.shape, self.batch_dim,
                                  extra_shapes)

    def get_ctor(self, canonical: str) -> Constructor:
        """``tensor_nil`` or ``tensor_constructor`` of this shape's ADT."""
        name = self.get_name(canonical)
        gtv = self.get_type("tensor_t")
        for ctor in self.prelude.mod.type_definitions[gtv].constructors:
            if ctor.name_hint == name:
                return ctor
        raise ValueError(f"{gtv.name_hint} has no constructor {name!r}")

    def _tensor_ctors(self, gtv: GlobalTypeVar) -> list[Constructor]:
        """``static_tensor_{dtype}_{dims}_t``: ``tensor_nil`` or ``tensor_constructor``."""
        return [Constructor(self.get_name("tensor_nil"), [], gtv),
                Constructor(self.get_name("tensor_constructor"),
                            [TensorType(self.shape, self.dtype)], gtv)]

    def _adt_of(self, shape) -> StaticTensorArrayOps:
        """The ops of the static ADT of ``shape`` (its ADT defined)."""
        ops = StaticTensorArrayOps(self.prelude, self.dtype, shape, self.batch_dim)
        ops.define_tensor_adt()
        return ops

    def _unwrap(self, make, x=None):
        """``match? (x) { tensor_constructor(%t) => make(%t) }``."""
        x = x if x is not None else Var("tensor", self.tensor_type_var())
        t = Var("t")
        ctor = self.get_ctor("tensor_constructor")
        return x, Match(x, [Clause(PatternConstructor(ctor, [PatternVar(t)]), make(t))], False)

    def _leading_any(self):
        return self._adt_of([Any()] + list(self.shape[1:]))

    def _new_axis(self):
        return self.batch_dim if self.batch_dim == 1 else Any()

    def define_tensor_take(self) -> None:
        """``tensor_take(t, lower, upper)``: rows ``lower..upper``; shape ``(?, *shape[1:])``."""
        if not self.shape or self.is_cached(self.get_name("tensor_take")):
            return
        out = self._leading_any()
        lo, up = _i32("lower"), _i32("upper")
        x, body = self._unwrap(lambda t: out.get_ctor("tensor_constructor")(
            take(t, arange(lo, up, dtype="int32"), axis=0)))
        self._define("tensor_take", [x, lo, up], body, out.tensor_type_var())

    def define_tensor_concatenate(self) -> None:
        """``tensor_concatenate(x, y)``: joined on axis 0; shape ``(?, *shape[1:])``."""
        if not self.shape or self.is_cached(self.get_name("tensor_concatenate")):
            return
        out = self._leading_any()
        y = Var("y", self.tensor_type_var())

        def both(t1):
            return self._unwrap(lambda t2: out.get_ctor("tensor_constructor")(
                concatenate([t1, t2], axis=0)), y)[1]

        x, body = self._unwrap(both, Var("x", self.tensor_type_var()))
        self._define("tensor_concatenate", [x, y], body, out.tensor_type_var())

    def define_tensor_expand_dims(self) -> None:
        """``tensor_expand_dims(t)``: a new leading axis (``?``, so stacking can grow it)."""
        if self.is_cached(self.get_name("tensor_expand_dims")):
            return
        out = self._adt_of([self._new_axis()] + list(self.shape))
        x, body = self._unwrap(lambda t: out.get_ctor("tensor_constructor")(
            expand_dims(t, 0, 1)))
        self._define("tensor_expand_dims", [x], body, out.tensor_type_var())

    def define_tensor_array_unstack(self) -> None:
        """``tensor_array_unstack(t)``: the rows of ``t`` as a tensor array of ``shape[1:]``."""
        if not self.shape:
            return
        row = self._adt_of(self.shape[1:])
        helper = self._gvar("tensor_array_unstack_helper")
        i, up = _i32("i"), _i32("up")
        t = Var("t", TensorType(self.shape, self.dtype))
        item = row.get_ctor("tensor_constructor")(take(t, i, axis=0))
        body = If(equal(i, up), self.nil(), self.cons(item, helper(add(i, const(1)), up, t)))
        out_type = self.list(row.tensor_type_var())
        self._define(helper, [i, up, t], body, out_type)
        t2 = Var("tensor", TensorType(self.shape, self.dtype))
        self._define("tensor_array_unstack", [t2],
                     helper(const(0), take(shape_of(t2), const(0)), t2), out_type)

    def define_tensor_array_split(self, value_shape=None, lengths_shape=None,
                                  force_update: bool = False) -> None:
        """``tensor_array_split(ta, value, lengths)``: pieces of ``value`` (this shape, or
        ``value_shape``) into a tensor array whose elements have shape ``(?, *shape[1:])``;
        ``force_update`` redefines it with the given static value and lengths shapes."""
        if not self.shape:
            return
        name = self.get_name("tensor_array_split")
        if self.is_cached(name) and not force_update:
            return
        out = self._leading_any()
        out.define_tensor_array_write()
        write = out.get_global_var("tensor_array_write")
        if value_shape is None:
            self.define_tensor_take()
            value_type, take_rows = self.tensor_type_var, self.get_global_var("tensor_take")
        else:
            value_ops = self._adt_of(value_shape)
            value_ops.define_tensor_take()
            value_type = value_ops.tensor_type_var
            take_rows = value_ops.get_global_var("tensor_take")
        len_type = TensorType(list(lengths_shape) if lengths_shape is not None else [Any()],
                              "int32")
        out_type = self.list(out.tensor_type_var())
        helper = self._gvar("ta_split_helper")
        ta, value = Var("tensor_array", out_type), Var("value1", value_type())
        off, k, n = _i32("offset1"), _i32("current1"), _i32("limit1")
        lengths = Var("lengths", len_type)
        length = take(lengths, k)
        rest = helper(ta, value, add(off, length), add(k, const(1)), n, lengths)
        body = If(equal(k, n), ta, write(rest, k, take_rows(value, off, add(length, off))))
        self._define(helper, [ta, value, off, k, n, lengths], body, out_type)
        ta2, value2 = Var("tensor_array", out_type), Var("value", value_type())
        lengths2 = Var("lengths", len_type)
        count = (const(int(lengths_shape[0])) if lengths_shape is not None
                 and not isinstance(lengths_shape[0], Any) else take(shape_of(lengths2),
                                                                     const(0)))
        self._define("tensor_array_split", [ta2, value2, lengths2],
                     helper(ta2, value2, const(0), const(0), count, lengths2), out_type)

    def define_tensor_array_concat(self) -> None:
        """``tensor_array_concat(ta)``: the elements of a ``(?, *shape[1:])`` tensor array
        joined on axis 0."""
        if not self.shape or self.is_cached(self.get_name("tensor_array_concat")):
            return
        out = self._leading_any()
        out.define_tensor_concatenate()
        self._define_concat(out, out.get_global_var("tensor_concatenate"))

    def define_tensor_array_stack(self) -> None:
        """``tensor_array_stack(ta)``: the elements stacked on a new axis 0."""
        out = self._stacked()
        out.define_tensor_concatenate()
        ta = Var("tensor_array", self._ta_type())
        grown = self._std("map")(self.get_global_var("tensor_expand_dims"), ta)
        if self.batch_dim == 1:
            body = self._std("hd")(grown)
        else:
            body = self._std("foldl")(out.get_global_var("tensor_concatenate"),
                                      self._std("hd")(grown), self._std("tl")(grown))
        self._define("tensor_array_stack", [ta], body, out.tensor_type_var())

    def _stacked(self) -> StaticTensorArrayOps:
        """The ops of the static ADT of a stack of the elements (a new leading axis)."""
        return self._adt_of([self._new_axis()] + list(self.shape))

    def define_tensor_get_data(self) -> None:
        """``tensor_get_data(t)``: the tensor inside ``t`` (typed with this shape)."""
        x, body = self._unwrap(lambda t: t)
        self._define("tensor_get_data", [x], body, TensorType(self.shape, self.dtype))

    def register(self) -> None:
        """Add the static ADT of this shape and its tensor-array functions to the module."""
        self.define_tensor_adt()
        if self.is_cached(self.get_name("tensor_array")):
            return
        self.define_tensor_take()
        self.define_tensor_concatenate()
        self.define_tensor_expand_dims()
        self.define_tensor_array()
        self.define_tensor_array_read()
        self.define_tensor_array_write()
        self.define_tensor_array_unstack()
        self.define_tensor_array_scatter()
        self.define_tensor_array_split()
        self.define_tensor_array_concat()
        self.define_tensor_array_stack()
        self.define_tensor_array_gather()
        self.define_tensor_get_data()


def get_tensor_array_shape(expr, dtype: str, prelude):
    """The element shape of a static tensor array ``expr`` (None when it is dynamic)."""
    from .analysis import free_vars
    from .transform.infer_type import InferType

    mod = prelude.mod
    mod["main"] = Function(free_vars(expr), expr)
    mod = InferType()(mod)
    t = mod["main"].body.checked_type
    args = getattr(t, "args", None)
    if not args or not isinstance(args[0].func, GlobalTypeVar):
        raise TypeError(f"get_tensor_array_shape: expected a tensor array (a List of a tensor "
                        f"ADT), got a value of type {t}")
    name = args[0].func.name_hint
    head = f"static_tensor_{dtype}_"
    if not name.startswith(head):
        return None
    dims = name[len(head):-len("_t")]
    if dims == "scalar":
        return ()
    return tuple(Any() if d in ("any", "?") else int(d) for d in dims.split("_"))
