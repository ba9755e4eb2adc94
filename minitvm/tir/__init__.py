"""tvm.tir: the loop-level IR."""

from .expr import (  # noqa: F401
    EQ, GE, GT, LE, LT, NE, Add, And, Any, BinaryOp, Div, FloatImm, FloorDiv, FloorMod, IntImm,
    Max, Min, Mod, Mul, Or, PrimExpr, SizeVar, StringImm, Sub, Var, const,
    Broadcast, BufferLoad, Call, Cast, CommReducer, IterVar, Let, Not, ProducerLoad, Ramp, Range,
    Reduce, Select,
)
from .buffer import Buffer, decl_buffer
from .stmt import (
    Allocate, AssertStmt, AttrStmt, Block, BlockRealize, BufferRegion, BufferStore, DeclBuffer,
    Evaluate, For, ForKind, IfThenElse, LetStmt, MatchBufferRegion, SeqStmt, Stmt, stmt_seq,
)
from .function import PrimFunc
from .index_map import IndexMap
from .op import *

from . import stmt_functor, analysis
from . import transform
