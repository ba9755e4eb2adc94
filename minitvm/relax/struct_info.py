"""Relax struct info: what is statically known about a value (TVM's ``relax.StructInfo``).

Struct info is Relax's type system plus shapes: a tensor's dtype, rank and shape (symbolic
``tir`` expressions such as ``n`` or ``n * 128``), a shape value's dimensions, tuples,
functions and primitive values. Every Relax expression carries one once normalized.
"""

from __future__ import annotations

from ..ir.dialect import find_hook
from ..ir.node import Node
from ..ir.prim_expr import IntImm, PrimExpr
from ..ir.type import check_dtype
from ..runtime.script_printer import Scriptable

__all__ = [
    "StructInfo", "ObjectStructInfo", "PrimStructInfo", "ShapeStructInfo", "TensorStructInfo",
    "TupleStructInfo", "FuncStructInfo", "as_dim",
]


def as_dim(d) -> PrimExpr:
    """A shape dimension as an int64 PrimExpr (Python ints become ``T.int64`` immediates)."""
    if isinstance(d, bool):
        raise TypeError(f"a shape dimension cannot be a bool, got {d!r}")
    if isinstance(d, int):
        return IntImm("int64", d)
    if isinstance(d, IntImm) and d.dtype in ("int32", "int16", "int8"):
        return IntImm("int64", d.value)  # as TVM's ShapeExpr: constant dims are int64
    if isinstance(d, PrimExpr):
        return d
    if hasattr(d, "__index__"):
        return IntImm("int64", int(d))
    raise TypeError(f"a shape dimension must be an int or a tir PrimExpr, got "
                    f"{type(d).__name__} {d!r}")


class StructInfo(Node, Scriptable):
    """Base of struct infos; printed as TVMScript (``R.Tensor((n, 4), dtype="float32")``)."""

    __slots__ = ("span",)

    def __str__(self):
        printer = find_hook("str", type(self))
        return printer(self) if printer is not None else f"{type(self).__name__}(...)"

    __repr__ = __str__

    def same_as(self, other) -> bool:
        return self is other

    def is_base_of(self, derived: StructInfo) -> bool:
        """Whether every value described by ``derived`` is also described by ``self``."""
        from .analysis.struct_info_analysis import struct_info_base_check

        return struct_info_base_check(self, derived)


class ObjectStructInfo(StructInfo):
    """Any value (``R.Object``)."""

    __slots__ = ()

    def __init__(self, span=None):
        self.span = span


class PrimStructInfo(StructInfo):
    """A scalar of ``dtype`` (``R.Prim("int64")``), with its ``value`` when known."""

    __slots__ = ("dtype", "value")

    def __init__(self, dtype: str | None = None, value=None, span=None):
        if value is not None:
            if isinstance(value, bool | int | float):
                from ..tir.expr import const

                value = const(value, dtype) if dtype else const(value)
            dtype = dtype or value.dtype
        if dtype is None:
            raise ValueError("PrimStructInfo needs a dtype or a value")
        self.dtype = check_dtype(dtype)
        self.value = value
        self.span = span


class ShapeStructInfo(StructInfo):
    """A shape value (``R.Shape([n, 4])``): its dimensions when known, else only its rank
    (``ndim=-1``: unknown)."""

    __slots__ = ("values", "ndim")

    def __init__(self, values=None, ndim: int = -1, span=None):
        if values is not None:
            values = tuple(as_dim(v) for v in values)
            if ndim not in (-1, len(values)):
                raise ValueError(f"ShapeStructInfo: ndim {ndim} does not match the "
                                 f"{len(values)} values given")
            ndim = len(values)
        if ndim < -1:
            raise ValueError(f"ShapeStructInfo: ndim must be -1 (unknown) or >= 0, got {ndim}")
        self.values = values
        self.ndim = int(ndim)
        self.span = span


_EXPR_CLASSES: list = []


def _expr_classes() -> tuple:
    """(relax ``Expr``, ``ShapeExpr``), imported once: ``relax.expr`` imports this module, so
    the import waits for the first tensor struct info; an import statement in
    ``TensorStructInfo.__init__`` cost about a microsecond on every construction (a 100,000-
    binding function builds several per binding in each pass)."""
    if not _EXPR_CLASSES:
        from .expr import Expr, ShapeExpr

        _EXPR_CLASSES.extend((Expr, ShapeExpr))
    return _EXPR_CLASSES[0], _EXPR_CLASSES[1]


class TensorStructInfo(StructInfo):
    """A tensor (``R.Tensor((n, 784), dtype="float32")``): ``shape`` is a ``ShapeExpr`` (or a
    Var holding a shape) when known, ``dtype`` ``"void"`` when unknown, ``ndim`` -1 when the
    rank is unknown."""

    __slots__ = ("shape", "dtype", "ndim", "vdevice")

    def __init__(self, shape=None, dtype: str = "float32", vdevice=None, ndim: int = -1,
                 span=None):
        Expr, ShapeExpr = _expr_classes()
        if shape is not None and not isinstance(shape, Expr):
            shape = ShapeExpr(shape)
        if shape is not None:
            sinfo = shape._struct_info
            known = len(shape.values) if isinstance(shape, ShapeExpr) else (
                sinfo.ndim if isinstance(sinfo, ShapeStructInfo) else -1)
            if ndim not in (-1, known) and known != -1:
                raise ValueError(f"TensorStructInfo: ndim {ndim} does not match the shape's "
                                 f"{known} dimensions")
            ndim = known if known != -1 else ndim
        if ndim < -1:
            raise ValueError(f"TensorStructInfo: ndim must be -1 (unknown) or >= 0, got {ndim}")
        self.shape = shape
        self.dtype = "void" if dtype is None else check_dtype(dtype)
        self.ndim = int(ndim)
        self.vdevice = vdevice
        self.span = span

    @property
    def is_unknown_ndim(self) -> bool:
        return self.ndim == -1

    @property
    def is_unknown_dtype(self) -> bool:
        return self.dtype == "void"

    def dims(self) -> tuple | None:
        """The dimensions when the shape is a literal ``ShapeExpr``, else None."""
        ShapeExpr = _expr_classes()[1]  # noqa: N806 (the class, imported once)
        return tuple(self.shape.values) if isinstance(self.shape, ShapeExpr) else None


class TupleStructInfo(StructInfo):
    """A tuple of values (``R.Tuple(...)``)."""

    __slots__ = ("fields",)

    def __init__(self, fields, span=None):
        fields = tuple(fields)
        for f in fields:
            if not isinstance(f, StructInfo):
                raise TypeError(f"TupleStructInfo fields must be StructInfo, got "
                                f"{type(f).__name__}")
        self.fields = fields
        self.span = span


class FuncStructInfo(StructInfo):
    """A function (``R.Callable``): parameter and return struct info; ``params`` None for an
    opaque function whose return is given by ``derive_func``. ``purity``: no side effects."""

    __slots__ = ("params", "ret", "derive_func", "purity")
    _node_fields = ("params", "ret", "purity")

    def __init__(self, params, ret: StructInfo, purity: bool = True, span=None):
        self.params = tuple(params) if params is not None else None
        self.ret = ret
        self.derive_func = None
        self.purity = bool(purity)
        self.span = span

    @staticmethod
    def opaque_func(*, ret: StructInfo | None = None, derive_func=None, purity: bool = False,
                    span=None) -> FuncStructInfo:
        f = FuncStructInfo(None, ret if ret is not None else ObjectStructInfo(), purity, span)
        f.derive_func = derive_func
        return f

    def is_opaque(self) -> bool:
        return self.params is None
