"""``tvm.relay.type_functor``: TypeFunctor / TypeVisitor / TypeMutator over Relay types.

``visit(t)`` dispatches on the type's class to ``visit_tensor_type``, ``visit_func_type``, ...
(TVM's hook names), memoized per functor. Types nest shallowly (their depth is the nesting of
tuple/function types in the source, not the program size), so the hooks recurse as in TVM.
"""

from __future__ import annotations

from ..ir.type import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RelayRefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeRelation,
    TypeVar,
)
from .adt import Constructor, TypeData

__all__ = ["TypeFunctor", "TypeMutator", "TypeVisitor"]

# the most derived class first: GlobalTypeVar is a TypeVar
_HOOKS = ((GlobalTypeVar, "visit_global_type_var"), (TypeVar, "visit_type_var"),
          (IncompleteType, "visit_incomplete_type"), (TensorType, "visit_tensor_type"),
          (FuncType, "visit_func_type"), (TupleType, "visit_tuple_type"),
          (TypeRelation, "visit_type_relation"), (RelayRefType, "visit_ref_type"),
          (TypeCall, "visit_type_call"), (TypeData, "visit_type_data"))


class TypeFunctor:
    """Dispatch on the kind of a type; subclasses define the ``visit_*`` hooks."""

    def __init__(self):
        self.memo_map: dict = {}

    def visit(self, typ):
        """The result of the hook for ``typ``'s class (memoized)."""
        key = id(typ)
        if key in self.memo_map:
            return self.memo_map[key][1]
        for cls, name in _HOOKS:
            if isinstance(typ, cls):
                res = getattr(self, name)(typ)
                break
        else:
            raise TypeError(f"{type(self).__name__}: {type(typ).__name__} is not a Relay type")
        self.memo_map[key] = (typ, res)  # keep typ alive so its id stays unique
        return res

    def _missing(self, name):
        raise NotImplementedError(f"{type(self).__name__} does not define {name}")

    def visit_type_var(self, _):
        self._missing("visit_type_var")

    def visit_incomplete_type(self, _):
        self._missing("visit_incomplete_type")

    def visit_tensor_type(self, _):
        self._missing("visit_tensor_type")

    def visit_func_type(self, _):
        self._missing("visit_func_type")

    def visit_tuple_type(self, _):
        self._missing("visit_tuple_type")

    def visit_type_relation(self, _):
        self._missing("visit_type_relation")

    def visit_ref_type(self, _):
        self._missing("visit_ref_type")

    def visit_global_type_var(self, _):
        self._missing("visit_global_type_var")

    def visit_type_call(self, _):
        self._missing("visit_type_call")

    def visit_type_data(self, _):
        self._missing("visit_type_data")


class TypeVisitor(TypeFunctor):
    """Visit every type inside a type; override hooks to act on some kinds."""

    def visit_type_var(self, tv):
        pass

    def visit_incomplete_type(self, it):
        pass

    def visit_tensor_type(self, tt):
        pass

    def visit_func_type(self, ft):
        for t in (*ft.arg_types, ft.ret_type, *ft.type_params, *ft.type_constraints):
            self.visit(t)

    def visit_tuple_type(self, tt):
        for f in tt.fields:
            self.visit(f)

    def visit_type_relation(self, tr):
        for a in tr.args:
            self.visit(a)

    def visit_ref_type(self, rt):
        self.visit(rt.value)

    def visit_global_type_var(self, gtv):
        pass

    def visit_type_call(self, tc):
        self.visit(tc.func)
        for a in tc.args:
            self.visit(a)

    def visit_type_data(self, td):
        self.visit(td.header)
        for v in td.type_vars:
            self.visit(v)
        for c in td.constructors:
            for t in c.inputs:
                self.visit(t)


class TypeMutator(TypeFunctor):
    """Rebuild a type from its visited parts; override hooks to replace some kinds."""

    def visit_type_var(self, tv):
        return TypeVar(tv.name_hint, tv.kind)

    def visit_incomplete_type(self, it):
        return IncompleteType(it.kind)

    def visit_tensor_type(self, tt):
        return TensorType(tt.shape, tt.dtype)

    def visit_func_type(self, ft):
        return FuncType([self.visit(t) for t in ft.arg_types], self.visit(ft.ret_type),
                        [self.visit(t) for t in ft.type_params],
                        [self.visit(t) for t in ft.type_constraints])

    def visit_tuple_type(self, tt):
        return TupleType([self.visit(f) for f in tt.fields])

    def visit_type_relation(self, tr):
        return TypeRelation(tr.func, [self.visit(a) for a in tr.args], tr.num_inputs, tr.attrs)

    def visit_ref_type(self, rt):
        return RelayRefType(self.visit(rt.value))

    def visit_global_type_var(self, gtv):
        return GlobalTypeVar(gtv.name_hint, gtv.kind)

    def visit_type_call(self, tc):
        return TypeCall(self.visit(tc.func), [self.visit(a) for a in tc.args])

    def visit_type_data(self, td):
        header = self.visit(td.header)
        type_vars = [self.visit(v) for v in td.type_vars]
        ctors = [Constructor(c.name_hint, [self.visit(t) for t in c.inputs], header)
                 for c in td.constructors]
        return TypeData(header, type_vars, ctors)
