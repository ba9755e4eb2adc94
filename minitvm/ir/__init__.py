"""tvm.ir: the core shared by every IR: nodes, types, attrs, ops, modules, structural equality."""

from .node import Node, SequentialSpan, SourceName, Span
from .type import (
    FuncType, GlobalTypeVar, IncompleteType, PointerType, PrimType, RelayRefType, TensorType,
    TupleType, Type, TypeCall, TypeConstraint, TypeKind, TypeRelation, TypeVar,
)
from .attrs import Attrs, DictAttrs, make_node
from .expr import BaseExpr, BaseFunc, GlobalVar, RelayExpr
from .op import Op, OpPattern, register_intrin_lowering, register_op_attr
from .module import IRModule
from .structural import assert_structural_equal, structural_equal, structural_hash
from .prim_expr import PrimExpr, IntImm, FloatImm
from .convert import convert
from .node import node_fields, node_children
from . import dialect
from .affine_type import AffineType, TensorAffineType, TupleAffineType  # noqa: F401
from .virtual_device import VirtualDevice  # noqa: F401  (TVM's tvm.ir.VirtualDevice)
from .global_info import DummyGlobalInfo, GlobalInfo, VDevice  # noqa: E402,F401

from .serialization import load_json, save_json  # noqa: E402
from . import base, container, type_relation  # noqa: E402,F401  (TVM's module paths)
from .container import Array, Map  # noqa: E402,F401
from .base import EnvFunc, get_first_structural_mismatch  # noqa: E402,F401
