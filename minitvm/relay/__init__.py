"""tvm.relay: the Relay IR, its operators, passes and executors."""

from ..ir import (
    FuncType, GlobalTypeVar, IncompleteType, RelayRefType, TensorType, TupleType, Type,
    TypeCall, TypeKind, TypeVar, GlobalVar, IRModule,
)
from ..ir.type import RefType
from ..tir.expr import Any
from .expr import (
    Call, Constant, Expr, Function, If, Let, RefCreate, RefRead, RefWrite, Tuple, TupleGetItem,
    TupleWrapper, Var, bind, const, var,
)
from .adt import (
    Clause, Constructor, Match, Pattern, PatternConstructor, PatternTuple, PatternVar,
    PatternWildcard, TypeData,
)
from .expr_functor import ExprFunctor, ExprMutator, ExprVisitor

from . import op
from .op import *
from .op import nn, annotation
from .op.reduce import *
from .op.tensor import *
from .op.transform import *

from . import analysis, transform
transform = __import__('importlib').import_module('.transform', __name__)  # op.transform shadows it
op = __import__('importlib').import_module('.op', __name__)  # relay.op.op shadows it
from .build_module import create_executor
from .build_module import build, optimize  # noqa: E402
from . import testing

ScopeBuilder = None  # set by relay.scope_builder when available
scalar_type = lambda dtype: TensorType((), dtype)  # noqa: E731
from .printer import pretty_print, astext
from .parser import parse, fromtext, parse_expr, SpanCheck
from .transform.pipeline import optimize  # noqa: E402
