"""tvm.tir: the loop-level IR."""

from .expr import (  # noqa: F401
    EQ, GE, GT, LE, LT, NE, Add, And, Any, BinaryOp, Div, FloatImm, FloorDiv, FloorMod, IntImm,
    Max, Min, Mod, Mul, Or, PrimExpr, SizeVar, StringImm, Sub, Var, const,
)
