"""type_solver.is_ground: leaves answer without a walk, composite types are walked."""

from minitvm import relay
from minitvm.ir.type import IncompleteType
from minitvm.relay.type_solver import is_ground


def test_leaf_types():
    assert is_ground(relay.TensorType((2, 3), "float32"))
    assert is_ground(relay.TypeVar("t"))
    assert not is_ground(IncompleteType())


def test_composite_types_are_walked():
    t = relay.TensorType((4,), "int32")
    assert is_ground(relay.TupleType([t, relay.TupleType([t])]))
    assert not is_ground(relay.TupleType([t, relay.TupleType([IncompleteType()])]))
    assert not is_ground(relay.FuncType([t], IncompleteType()))
    assert is_ground(relay.FuncType([t], t))
