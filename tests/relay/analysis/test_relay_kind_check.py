"""check_kind: kinds of types, and clear errors for ill-kinded ones."""

from __future__ import annotations

import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.type import TypeKind
from minitvm.relay.analysis import check_kind
from minitvm.relay.prelude import Prelude

T = relay.TensorType((2, 3), "float32")


def test_kinds():
    assert check_kind(T) == TypeKind.Type
    assert check_kind(relay.TupleType([T, relay.TupleType([])])) == TypeKind.Type
    assert check_kind(relay.FuncType([T], T)) == TypeKind.Type
    assert check_kind(relay.RefType(T)) == TypeKind.Type
    assert check_kind(relay.TypeVar("s", TypeKind.ShapeVar)) == TypeKind.ShapeVar
    p = Prelude(tvm.IRModule())
    assert check_kind(p.l, p.mod) == TypeKind.AdtHandle
    assert check_kind(relay.TypeCall(p.l, [T]), p.mod) == TypeKind.Type


def test_ill_kinded():
    shape_var = relay.TypeVar("s", TypeKind.ShapeVar)
    with pytest.raises(TypeError, match="field 1 of the tuple type .* has kind ShapeVar"):
        check_kind(relay.TupleType([T, shape_var]))
    with pytest.raises(TypeError, match="argument 0 of the function type"):
        check_kind(relay.FuncType([shape_var], T))
    with pytest.raises(TypeError, match="content of the reference type"):
        check_kind(relay.RefType(shape_var))
    p = Prelude(tvm.IRModule())
    with pytest.raises(TypeError, match="List takes 1 type arguments, got 2"):
        check_kind(relay.TypeCall(p.l, [T, T]), p.mod)
    with pytest.raises(TypeError, match="is not an ADT"):
        check_kind(relay.TypeCall(relay.TypeVar("a"), [T]))
    with pytest.raises(TypeError, match="is not a type"):
        check_kind(3)
