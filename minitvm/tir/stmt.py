"""Statements of the loop-level IR: loops, stores, blocks, allocation, control flow."""

from __future__ import annotations

from enum import IntEnum

from ..ir.node import Node
from ..runtime.script_printer import Scriptable
from .buffer import Buffer
from .expr import IntImm, PrimExpr, Range, StringImm, Var, _to_expr


class Stmt(Node, Scriptable):
    """Base of all statements."""

    __slots__ = ("span",)

    def __repr__(self):
        from .printer import stmt_to_str

        return stmt_to_str(self)

    __str__ = __repr__


class ForKind(IntEnum):
    """How a loop runs: in order, over threads, as one vector, or unrolled."""

    SERIAL = 0
    PARALLEL = 1
    VECTORIZED = 2
    UNROLLED = 3
    THREAD_BINDING = 4


class For(Stmt):
    """``for loop_var in [min, min + extent)`` of the given ``kind``."""

    __slots__ = ("loop_var", "min", "extent", "kind", "body", "thread_binding", "annotations")
    _node_fields = ("loop_var", "min", "extent", "kind", "body", "thread_binding", "annotations")
    _node_binders = frozenset({"loop_var"})

    def __init__(self, loop_var: Var, min, extent, kind=ForKind.SERIAL, body=None,
                 thread_binding=None, annotations=None, span=None):
        self.loop_var = loop_var
        self.min = _to_expr(min, loop_var.dtype)
        self.extent = _to_expr(extent, loop_var.dtype)
        self.kind = ForKind(int(kind))
        self.body = body
        self.thread_binding = thread_binding
        self.annotations = dict(annotations or {})
        self.span = span


class BufferStore(Stmt):
    """``buffer[indices] = value``."""

    __slots__ = ("buffer", "value", "indices", "predicate")

    def __init__(self, buffer: Buffer, value, indices, predicate=None, span=None):
        self.buffer = buffer
        self.value = _to_expr(value, buffer.dtype)
        self.indices = tuple(_to_expr(i) for i in indices)
        self.predicate = predicate
        self.span = span


class IfThenElse(Stmt):
    __slots__ = ("condition", "then_case", "else_case")

    def __init__(self, condition, then_case: Stmt, else_case: Stmt | None = None, span=None):
        self.condition = _to_expr(condition)
        self.then_case = then_case
        self.else_case = else_case
        self.span = span


class SeqStmt(Stmt):
    """Statements run in order; nested SeqStmts are flattened on construction."""

    __slots__ = ("seq",)

    def __init__(self, seq, span=None):
        flat: list[Stmt] = []
        stack = [iter(seq)]
        while stack:
            for s in stack[-1]:
                if isinstance(s, SeqStmt):
                    stack.append(iter(s.seq))
                    break
                if s is not None:
                    flat.append(s)
            else:
                stack.pop()
        self.seq = tuple(flat)
        self.span = span

    def __len__(self):
        return len(self.seq)

    def __getitem__(self, i):
        return self.seq[i]


def stmt_seq(*stmts) -> Stmt:
    """A SeqStmt of ``stmts`` (or the single statement itself)."""
    out = SeqStmt(stmts)
    return out.seq[0] if len(out.seq) == 1 else out


class LetStmt(Stmt):
    __slots__ = ("var", "value", "body")
    _node_fields = ("var", "value", "body")
    _node_binders = frozenset({"var"})

    def __init__(self, var: Var, value, body: Stmt, span=None):
        self.var = var
        self.value = _to_expr(value, var.dtype)
        self.body = body
        self.span = span


class Evaluate(Stmt):
    __slots__ = ("value",)

    def __init__(self, value, span=None):
        self.value = _to_expr(value)
        self.span = span


class AssertStmt(Stmt):
    __slots__ = ("condition", "message", "body")

    def __init__(self, condition, message, body: Stmt, span=None):
        self.condition = _to_expr(condition)
        self.message = message if isinstance(message, StringImm) else StringImm(str(message))
        self.body = body
        self.span = span


class AttrStmt(Stmt):
    __slots__ = ("node", "attr_key", "value", "body")

    def __init__(self, node, attr_key: str, value, body: Stmt, span=None):
        self.node = node
        self.attr_key = attr_key
        self.value = _to_expr(value)
        self.body = body
        self.span = span


class Allocate(Stmt):
    """Allocate ``extents`` elements of ``dtype`` bound to the pointer var ``buffer_var``."""

    __slots__ = ("buffer_var", "dtype", "extents", "condition", "body", "annotations")
    _node_binders = frozenset({"buffer_var"})

    def __init__(self, buffer_var: Var, dtype: str, extents, condition, body: Stmt,
                 annotations=None, span=None):
        self.buffer_var = buffer_var
        self.dtype = str(dtype)
        self.extents = tuple(_to_expr(e) for e in extents)
        self.condition = _to_expr(True if condition is None else condition)
        self.body = body
        self.annotations = dict(annotations or {})
        self.span = span


class DeclBuffer(Stmt):
    __slots__ = ("buffer", "body")
    _node_binders = frozenset({"buffer"})

    def __init__(self, buffer: Buffer, body: Stmt, span=None):
        self.buffer = buffer
        self.body = body
        self.span = span


class BufferRegion(Node):
    """A rectangular region of a buffer (a list of Ranges), as in ``T.reads(A[i, 0:16])``."""

    __slots__ = ("buffer", "region")

    def __init__(self, buffer: Buffer, region):
        self.buffer = buffer
        self.region = tuple(r if isinstance(r, Range) else Range.from_min_extent(r, 1)
                            for r in region)

    @staticmethod
    def full_region(buffer: Buffer) -> BufferRegion:
        return BufferRegion(buffer, [Range.from_min_extent(0, s) for s in buffer.shape])

    def __repr__(self):
        return f"BufferRegion({self.buffer.name}, {list(self.region)})"


class MatchBufferRegion(Node):
    __slots__ = ("buffer", "source")

    def __init__(self, buffer: Buffer, source: BufferRegion):
        self.buffer = buffer
        self.source = source


class Block(Stmt):
    """A unit of computation with its own iteration variables and declared reads/writes."""

    __slots__ = ("iter_vars", "reads", "writes", "name_hint", "body", "init", "alloc_buffers",
                 "match_buffers", "annotations")
    # definitions (iteration variables, buffers it allocates or matches) before their uses
    _node_fields = ("iter_vars", "alloc_buffers", "match_buffers", "reads", "writes", "init",
                    "body", "annotations")
    _node_binders = frozenset({"iter_vars", "alloc_buffers", "match_buffers"})

    def __init__(self, iter_vars, reads, writes, name_hint: str, body: Stmt, init=None,
                 alloc_buffers=None, match_buffers=None, annotations=None, span=None):
        self.iter_vars = tuple(iter_vars)
        self.reads = tuple(reads)
        self.writes = tuple(writes)
        self.name_hint = name_hint
        self.body = body
        self.init = init
        self.alloc_buffers = tuple(alloc_buffers or ())
        self.match_buffers = tuple(match_buffers or ())
        self.annotations = dict(annotations or {})
        self.span = span


class BlockRealize(Stmt):
    """Run ``block`` with its iter vars bound to ``iter_values`` when ``predicate`` holds."""

    __slots__ = ("iter_values", "predicate", "block")

    def __init__(self, iter_values, predicate, block: Block, span=None):
        self.iter_values = tuple(_to_expr(v) for v in iter_values)
        self.predicate = _to_expr(True if predicate is None else predicate)
        self.block = block
        self.span = span
        if len(self.iter_values) != len(block.iter_vars):
            raise ValueError(f"block {block.name_hint!r} has {len(block.iter_vars)} iter vars "
                             f"but {len(self.iter_values)} values")


def is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value != 0
