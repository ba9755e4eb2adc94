"""tvm.te: tensor expressions, the way each operator's computation is written once."""

from .tensor import Tensor, Operation, PlaceholderOp, ComputeOp
from .operation import (
    placeholder, compute, reduce_axis, var, size_var, comm_reducer, sum, min, max,
)
from .create_prim_func import create_prim_func
from ..tir.op import (
    exp, log, sqrt, rsqrt, tanh, sigmoid, erf, power, fabs, floor, ceil, round, abs, if_then_else,
    max_value, min_value, likely, sin, cos, log2, log10, exp2, trunc, isnan,
)
from ..tir.expr import const
