"""tvm.relax: the Relax dialect on the shared core (IR, struct info, ops, BlockBuilder, passes)."""

from .struct_info import (
    StructInfo, ObjectStructInfo, PrimStructInfo, ShapeStructInfo, TensorStructInfo,
    TupleStructInfo, FuncStructInfo,
)
from .expr import (
    Expr, Var, DataflowVar, Constant, PrimValue, ShapeExpr, StringImm, DataTypeImm, Tuple,
    TupleGetItem, Call, If, SeqExpr, Binding, VarBinding, MatchCast, BindingBlock, DataflowBlock,
    Function, ExternFunc, GlobalVar, const, get_shape_of,
)
from . import op
from . import analysis
from . import dialect as _dialect  # noqa: F401  (registers the core hooks)
from .block_builder import BlockBuilder
from . import expr_functor
from .expr_functor import ExprMutator, ExprVisitor, PyExprMutator, PyExprVisitor
from . import transform, frontend
from . import dpl  # noqa: F401
from .op import make_closure, invoke_closure, invoke_pure_closure  # noqa: F401
from .op import call_tir, call_tir_inplace, call_pure_packed, call_dps_packed  # noqa: F401
from .expr import extern  # noqa: F401
from . import pipeline, vm  # noqa: E402,F401
from .pipeline import get_pipeline, register_pipeline  # noqa: E402,F401
from .pipeline import default_build_pipeline as get_default_pipeline  # noqa: E402,F401
from .vm import build, Executable, VirtualMachine  # noqa: E402,F401
from .vm import Executable as VMExecutable  # noqa: E402,F401
from . import utils  # noqa: E402,F401
from .utils import convert_to_expr  # noqa: E402,F401
