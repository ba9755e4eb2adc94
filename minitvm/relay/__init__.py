"""tvm.relay: the Relay IR, its operators, passes and executors."""

from ..ir import (
    FuncType, GlobalTypeVar, IncompleteType, RelayRefType, TensorType, TupleType, Type,
    TypeCall, TypeKind, TypeVar, GlobalVar, IRModule,
)
from ..ir.type import RefType
from ..ir.prim_expr import Any
from .expr import (
    Call, Constant, Expr, Function, If, Let, RefCreate, RefRead, RefWrite, Tuple, TupleGetItem,
    TupleWrapper, Var, bind, const, var,
)
from .adt import (
    Clause, Constructor, Match, Pattern, PatternConstructor, PatternTuple, PatternVar,
    PatternWildcard, TypeData,
)
from .expr_functor import ExprFunctor, ExprMutator, ExprVisitor

from .op import *  # noqa: F403  every operator constructor (relay.add, relay.reshape, ...)
from .op.reduce import *  # noqa: F403
from .op.tensor import *  # noqa: F403
from .op.transform import *  # noqa: F403
from .op import nn, annotation  # noqa: E402

# the star imports above bind `op` and `transform` to op-family modules: rebind the packages
import importlib as _importlib  # noqa: E402

op = _importlib.import_module(".op", __name__)
transform = _importlib.import_module(".transform", __name__)

from . import analysis, testing  # noqa: E402
from . import prelude  # noqa: E402,F401  (registers mod.import_from_std)
from . import frontend  # noqa: E402  model importers (framework packages load lazily)
from . import dialect  # noqa: E402,F401  Relay's printing/calling/evaluation hooks
from .analysis import properties as _properties  # noqa: E402,F401  typed/anf/gnf/fused
from .build_module import build, create_executor, optimize  # noqa: E402
# relay.vm: the Relay VM compiler (the star import of .op bound `vm` to relay.op.vm)
vm = _importlib.import_module(".vm", __name__)
from .transform import build_config  # noqa: E402,F401  TVM's old alias of PassContext
from . import dataflow_pattern  # noqa: E402,F401
from . import qnn  # noqa: E402,F401  quantized ops (relay.qnn.op.*)
from . import quantize  # noqa: E402,F401  post-training quantization (relay.quantize)
from . import data_dep_optimization  # noqa: E402,F401  (bsr_dense, simplify_fc_transpose)
from . import base, function, ty, type_functor  # noqa: E402,F401  (TVM's module paths)
from .ty import ShapeVar, TypeRelation  # noqa: E402,F401
from . import loops  # noqa: E402,F401
from .param_dict import load_param_dict, save_param_dict  # noqa: E402,F401
from .parser import SpanCheck, fromtext, parse, parse_expr  # noqa: E402
from .printer import astext, pretty_print  # noqa: E402


def scalar_type(dtype: str) -> TensorType:
    """The type of a 0-d tensor of ``dtype``."""
    return TensorType((), dtype)
from .scope_builder import ScopeBuilder  # noqa: E402
# TVM's names for source locations, the debug hooks and the constructor tables
from ..ir.node import SequentialSpan, SourceName, Span  # noqa: E402,F401
debug = _importlib.import_module(".debug", __name__)  # the module (relay.op's star bound the op)
from . import _ffi_api, _make  # noqa: E402,F401
