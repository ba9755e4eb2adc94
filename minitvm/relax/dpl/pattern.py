"""Relax dataflow patterns (TVM's ``relax.dpl``): pattern nodes and the constructors
``wildcard``, ``is_op``, ``is_const``, ``is_var``, ``is_tuple``, ``is_call_tir``...

Patterns compose like expressions: ``is_op("relax.nn.relu")(is_op("relax.nn.conv2d")(
wildcard(), is_const()))``, ``p1 | p2``, ``p1 & p2``, ``~p``, ``p.has_dtype("float16")``.
``p.match(expr, var2val)`` and ``p.extract_matched_expr(expr, var2val)`` run the matcher
(:mod:`.matcher`), which looks through variables to their bound values when ``var2val`` is
given.
"""

from __future__ import annotations

from ...ir.op import Op
from ..expr import ExternFunc

__all__ = [
    "DFPattern", "ExprPattern", "VarPattern", "DataflowVarPattern", "GlobalVarPattern",
    "ConstantPattern", "WildcardPattern", "CallPattern", "TuplePattern", "TupleGetItemPattern",
    "OrPattern", "AndPattern", "NotPattern", "DataTypePattern", "ShapePattern", "AttrPattern",
    "wildcard", "is_op", "is_const", "is_var", "is_dfvar", "is_dfv", "is_gv", "is_expr", "is_tuple",
    "is_tuple_get_item", "is_call_tir", "is_call_dps_packed", "is_call_packed", "has_dtype",
    "has_shape", "has_attr", "make_fused_bias_activation_pattern",
]


class DFPattern:
    """Base of dataflow patterns; identity is pattern equality (a reused node must match one
    expression)."""

    __slots__ = ()

    def __call__(self, *args, varg_default_wildcard: bool = False,
                 add_constraint: bool = True) -> CallPattern:
        return CallPattern(self, list(args), varg_default_wildcard, add_constraint)

    def __or__(self, other: DFPattern) -> OrPattern:
        return OrPattern(self, other)

    # arithmetic builds calls of the Relax operators, as TVM's patterns do (``mm + bias``)
    def __add__(self, other) -> CallPattern:
        return is_op("relax.add")(self, _as_pattern_operand(other))

    def __sub__(self, other) -> CallPattern:
        return is_op("relax.subtract")(self, _as_pattern_operand(other))

    def __mul__(self, other) -> CallPattern:
        return is_op("relax.multiply")(self, _as_pattern_operand(other))

    def __truediv__(self, other) -> CallPattern:
        return is_op("relax.divide")(self, _as_pattern_operand(other))

    def __and__(self, other: DFPattern) -> AndPattern:
        return AndPattern(self, other)

    def __invert__(self) -> NotPattern:
        return NotPattern(self)

    def has_dtype(self, dtype: str) -> DataTypePattern:
        return DataTypePattern(self, dtype)

    def has_shape(self, shape) -> ShapePattern:
        return ShapePattern(self, shape)

    def has_attr(self, attrs: dict) -> AttrPattern:
        return AttrPattern(self, attrs)

    def match(self, expr, var2val: dict | None = None) -> bool:
        """Whether ``expr`` matches (variables are looked through via ``var2val``)."""
        from .matcher import match_expr

        return match_expr(self, expr, var2val) is not None

    def extract_matched_expr(self, expr, var2val: dict | None = None) -> dict | None:
        """Pattern -> matched expression for every sub-pattern, or None when no match."""
        from .matcher import match_expr

        return match_expr(self, expr, var2val)

    # use constraints between the bindings two patterns match (see :mod:`.context`)
    def used_by(self, other, index: int = -1):
        """``self``'s value is used by ``other``'s (a ``PatternSeq``; recorded in the current
        ``PatternContext``)."""
        from .context import used_by

        return used_by(self, other, index)

    def only_used_by(self, other, index: int = -1):
        """``self``'s value is used by ``other``'s and nothing else."""
        from .context import only_used_by

        return only_used_by(self, other, index)

    def __xor__(self, other):
        return self.used_by(other)

    def __rshift__(self, other):
        return self.only_used_by(other)

    def fork_to(self, *others) -> None:
        """``self`` is used by each of ``others``."""
        for o in others:
            self.used_by(o)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{s}={getattr(self, s)!r}' for s in _slots(self))})"


def _slots(p) -> list:
    return [s for c in type(p).__mro__ for s in getattr(c, "__slots__", ())]


class ExprPattern(DFPattern):
    """Matches one given expression (an ``Op`` by identity, anything else structurally)."""

    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr


class VarPattern(DFPattern):
    """Matches a variable, by name when ``name`` is not empty."""

    __slots__ = ("name",)

    def __init__(self, name: str = ""):
        self.name = name


class DataflowVarPattern(VarPattern):
    """Matches a dataflow variable."""

    __slots__ = ()


class GlobalVarPattern(DFPattern):
    """Matches a GlobalVar, by name when ``name`` is not empty."""

    __slots__ = ("name",)

    def __init__(self, name: str = ""):
        self.name = name


class ConstantPattern(DFPattern):
    """Matches a constant."""

    __slots__ = ()


class WildcardPattern(DFPattern):
    """Matches anything."""

    __slots__ = ()


class CallPattern(DFPattern):
    """Matches a call whose callee and arguments match. ``args`` None: any arguments;
    ``varg_default_wildcard``: extra arguments beyond ``args`` are allowed."""

    __slots__ = ("op", "args", "varg_default_wildcard")

    def __init__(self, op: DFPattern, args=None, varg_default_wildcard: bool = False,
                 add_constraint: bool = True):
        self.op = op
        self.args = None if args is None else [_as_pattern(a) for a in args]
        self.varg_default_wildcard = varg_default_wildcard
        if add_constraint and self.args:
            from .context import PatternContext

            ctx = PatternContext.current()
            if ctx is not None:  # inside ``with PatternContext()``: each argument is used here
                for a in self.args:
                    ctx.add_use(a, self, -1, False)


class TuplePattern(DFPattern):
    """Matches a tuple of the same length whose fields match."""

    __slots__ = ("fields",)

    def __init__(self, fields):
        self.fields = [_as_pattern(f) for f in fields]

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, index: int | None) -> TupleGetItemPattern:
        """``tup[i]``: the tuple's ``i``-th item (``None``: any item), as is_tuple_get_item."""
        if index is None:
            return TupleGetItemPattern(self, -1)
        if not -len(self.fields) <= index < len(self.fields):
            raise IndexError(f"TuplePattern index {index} out of range for {len(self.fields)} fields")
        return TupleGetItemPattern(self, index % len(self.fields))


class TupleGetItemPattern(DFPattern):
    """Matches ``tuple[index]`` (any index when ``index`` is -1)."""

    __slots__ = ("tuple", "index")

    def __init__(self, tuple_pattern: DFPattern, index: int = -1):
        self.tuple = _as_pattern(tuple_pattern)
        self.index = -1 if index is None else index


class OrPattern(DFPattern):
    __slots__ = ("left", "right")

    def __init__(self, left: DFPattern, right: DFPattern):
        self.left, self.right = left, right


class AndPattern(DFPattern):
    __slots__ = ("left", "right")

    def __init__(self, left: DFPattern, right: DFPattern):
        self.left, self.right = left, right


class NotPattern(DFPattern):
    __slots__ = ("reject",)

    def __init__(self, reject: DFPattern):
        self.reject = reject


class DataTypePattern(DFPattern):
    """``pattern`` whose tensor struct info has ``dtype``."""

    __slots__ = ("pattern", "dtype")

    def __init__(self, pattern: DFPattern, dtype: str):
        self.pattern, self.dtype = pattern, str(dtype)


class ShapePattern(DFPattern):
    """``pattern`` whose tensor struct info has ``shape`` (ints or PrimExprs)."""

    __slots__ = ("pattern", "shape")

    def __init__(self, pattern: DFPattern, shape):
        self.pattern, self.shape = pattern, list(shape)


class AttrPattern(DFPattern):
    """``pattern`` whose call (or function) attributes include ``attrs``."""

    __slots__ = ("pattern", "attrs")

    def __init__(self, pattern: DFPattern, attrs: dict):
        self.pattern, self.attrs = pattern, dict(attrs)


def _as_pattern_operand(p) -> DFPattern:
    """An operand of pattern arithmetic: a pattern, else the expression itself."""
    return p if isinstance(p, DFPattern) else ExprPattern(p)


def _as_pattern(p) -> DFPattern:
    if isinstance(p, DFPattern):
        return p
    if isinstance(p, str):
        return is_op(p)
    return ExprPattern(p)


# ------------------------------------------------------------------------------ constructors
def wildcard() -> WildcardPattern:
    """A pattern matching anything."""
    return WildcardPattern()


def is_op(op_name: str) -> ExprPattern:
    """The operator named ``op_name`` (``is_op("relax.add")(x, y)`` is a call pattern)."""
    return ExprPattern(Op.get(op_name))


def is_const() -> ConstantPattern:
    return ConstantPattern()


def is_var(name: str = "") -> VarPattern:
    return VarPattern(name)


def is_dfvar(name: str = "") -> DataflowVarPattern:
    return DataflowVarPattern(name)


def is_dfv(name: str = "") -> DataflowVarPattern:
    """A DataflowVar (TVM's name for :func:`is_dfvar`)."""
    return DataflowVarPattern(name)


def is_gv(name: str = "") -> GlobalVarPattern:
    return GlobalVarPattern(name)


def is_expr(expr) -> ExprPattern:
    return ExprPattern(expr)


def is_tuple(fields, unordered: bool = False) -> TuplePattern:
    if unordered:
        raise NotImplementedError("unordered tuple patterns are not supported")
    return TuplePattern(fields)


def is_tuple_get_item(tuple_value: DFPattern, index: int | None = None) -> TupleGetItemPattern:
    return TupleGetItemPattern(tuple_value, -1 if index is None else index)


def is_call_tir(func_name: str, args=None, tir_vars=None) -> CallPattern:
    """``R.call_tir`` of the PrimFunc named ``func_name`` on ``args`` (a list of patterns or
    a tuple pattern; None: any arguments)."""
    if args is None:
        arg_pattern: DFPattern = wildcard()
    elif isinstance(args, DFPattern):
        arg_pattern = args
    else:
        arg_pattern = TuplePattern(list(args))
    pats = [GlobalVarPattern(func_name), arg_pattern]
    if tir_vars is not None:
        pats.append(_as_pattern(tir_vars))
    return CallPattern(is_op("relax.call_tir"), pats)


def _args_pattern(args) -> DFPattern:
    if args is None:
        return wildcard()
    return args if isinstance(args, DFPattern) else TuplePattern(list(args))


def is_call_dps_packed(func_name: str, args=None) -> CallPattern:
    """``R.call_dps_packed`` of the external function named ``func_name`` on ``args``."""
    return CallPattern(is_op("relax.call_dps_packed"),
                       [ExprPattern(ExternFunc(func_name)), _args_pattern(args)])


def is_call_packed(func_name: str, args=None) -> CallPattern:
    """``R.call_packed`` / ``R.call_pure_packed`` of ``func_name``: a call of the external
    function itself on ``args`` (a list of patterns; None: any arguments)."""
    callee = ExprPattern(ExternFunc(func_name))
    pure = CallPattern(is_op("relax.call_pure_packed"), None if args is None
                       else [callee, *args], add_constraint=False)
    if args is None:
        return CallPattern(callee, None) | pure
    return CallPattern(callee, list(args)) | pure


def make_fused_bias_activation_pattern(op_name: str, with_bias: bool = False,
                                       activation: str | None = None) -> DFPattern:
    """``activation(op(lhs, rhs) + bias)``, bias and activation optional (the root pattern;
    ``relax.backend.patterns`` has the variant that also returns the named parts)."""
    out = is_op(op_name)(wildcard(), wildcard())
    if with_bias:
        out = is_op("relax.add")(out, wildcard())
    if activation:
        out = is_op(activation)(out)
    return out


def has_dtype(dtype: str, pattern: DFPattern | None = None) -> DataTypePattern:
    return DataTypePattern(pattern or wildcard(), dtype)


def has_shape(shape, pattern: DFPattern | None = None) -> ShapePattern:
    return ShapePattern(pattern or wildcard(), shape)


def has_attr(attrs: dict, pattern: DFPattern | None = None) -> AttrPattern:
    return AttrPattern(pattern or wildcard(), attrs)
