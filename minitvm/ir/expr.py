"""Expression bases shared by Relay and Relax: RelayExpr (with the cached type slot), GlobalVar."""

from __future__ import annotations

from .node import Node


class BaseExpr(Node):
    __slots__ = ("span",)


class PrimExprBase(BaseExpr):
    __slots__ = ()


class RelayExpr(BaseExpr):
    """Base of Relay expressions. ``checked_type`` is the one mutable slot, filled by InferType."""

    __slots__ = ("_checked_type",)

    def __init__(self, span=None):
        self.span = span
        self._checked_type = None

    @property
    def checked_type(self):
        t = self._checked_type
        if t is None:
            raise ValueError(
                "The type checker has not populated the checked_type for this node; "
                "run relay.transform.InferType() first"
            )
        return t

    @property
    def struct_info(self):
        return self._checked_type

    def _has_type(self) -> bool:
        return self._checked_type is not None

    # ------------------------------------------------------------------ operators
    def _lift(self, other):
        from ..relay.expr import const

        if isinstance(other, RelayExpr):
            return other
        if isinstance(other, bool | int | float):
            dtype = None
            t = self._checked_type
            if t is not None and hasattr(t, "dtype"):
                dtype = t.dtype
            elif isinstance(other, float):
                dtype = "float32"
            return const(other, dtype)
        raise TypeError(f"cannot combine a Relay expression with {type(other).__name__}")

    def _binop(self, name, other, swap=False):
        from ..relay.op import tensor as _t

        other = self._lift(other)
        f = getattr(_t, name)
        return f(other, self) if swap else f(self, other)

    def __add__(self, o):
        return self._binop("add", o)

    def __radd__(self, o):
        return self._binop("add", o, True)

    def __sub__(self, o):
        return self._binop("subtract", o)

    def __rsub__(self, o):
        return self._binop("subtract", o, True)

    def __mul__(self, o):
        return self._binop("multiply", o)

    def __rmul__(self, o):
        return self._binop("multiply", o, True)

    def __truediv__(self, o):
        return self._binop("divide", o)

    def __rtruediv__(self, o):
        return self._binop("divide", o, True)

    def __neg__(self):
        from ..relay.op import tensor as _t

        return _t.negative(self)

    def __lt__(self, o):
        return self._binop("less", o)

    def __gt__(self, o):
        return self._binop("greater", o)

    def __le__(self, o):
        return self._binop("less_equal", o)

    def __ge__(self, o):
        return self._binop("greater_equal", o)

    __hash__ = Node.__hash__

    def astype(self, dtype: str):
        from ..relay.op import tensor as _t

        return _t.cast(self, dtype)

    def __call__(self, *args):
        from ..relay.expr import Call

        return Call(self, list(args))

    def astext(self, show_meta_data: bool = True, annotate=None) -> str:
        from ..relay.printer import astext

        return astext(self, show_meta_data, annotate)

    def __str__(self):
        from ..relay.printer import pretty_print

        return pretty_print(self)

    def __repr__(self):
        return self.__str__()


class BaseFunc(RelayExpr):
    __slots__ = ("attrs",)


class GlobalVar(RelayExpr):
    """The name of a function in an IRModule (``@main``)."""

    __slots__ = ("name_hint", "type_annotation")

    def __init__(self, name_hint: str, type_annot=None, span=None):
        super().__init__(span)
        self.name_hint = name_hint
        self.type_annotation = type_annot

    def __call__(self, *args):
        from ..relay.expr import Call

        return Call(self, list(args))

    def __repr__(self):
        return f"GlobalVar({self.name_hint})"

    def __str__(self):
        return f"@{self.name_hint}"
