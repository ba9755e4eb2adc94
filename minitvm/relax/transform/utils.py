"""Helpers shared by the Relax passes: leaves, purity, struct-info expression fields, symbolic
variable substitution, use counts. Nothing here recurses with the size of a program."""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.node import Node, node_operands
from ...ir.op import Op
from ...ir.prim_expr import FloatImm, IntImm, PrimExpr
from ...tir import expr as T
from ...tir.stmt_functor import post_order, transform_expr
from ...transform.registry import register_pass
from ..expr import (
    Call,
    Constant,
    DataflowVar,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    If,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from ..struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)

__all__ = [
    "register", "is_leaf", "is_leaf_or_tuple", "is_impure_call", "contains_impure_call",
    "binding_use_counts",
    "sinfo_prim_fields", "substitute_prim", "substitute_sinfo", "simplify_prim",
    "bound_value", "tir_vars_in",
]

LEAVES = (Var, Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc, GlobalVar,
          Op)
# the exact types of the common leaves (a set lookup where a hot loop tests one node's type;
# another subclass of ``LEAVES`` is still a leaf, found by ``is_leaf``)
LEAF_TYPES = frozenset((*LEAVES, DataflowVar))


#: Relax passes whose TVM name Relay's pass of the same name already holds in the registry:
#: registered as ``relax.transform.<Name>`` (their ``info.name`` stays TVM's bare name).
SHARED_NAMES = frozenset({"DeadCodeElimination", "EliminateCommonSubexpr", "FoldConstant",
                          "LambdaLift", "SinkUnitSqueeze", "SplitConvPool", "ToMixedPrecision"})


def registry_key(name: str) -> str:
    """The registry key of Relax pass ``name``: the name itself, or ``relax.transform.<name>``
    when Relay registers a pass of that name."""
    return f"relax.transform.{name}" if name in SHARED_NAMES else name


def register(name: str):
    """Register a Relax pass factory under ``registry_key(name)``."""
    return lambda factory: register_pass(registry_key(name), factory)


def has_relax_function(mod) -> bool:
    """Whether ``mod`` holds a Relax function (Relax module passes leave other modules, Relay's
    for instance, exactly as they are)."""
    return any(isinstance(f, Function) for f in mod.functions.values())


def is_leaf(e) -> bool:
    """TVM's leaf expressions: never bound to a variable by normalization."""
    return isinstance(e, LEAVES)


def is_leaf_or_tuple(e) -> bool:
    return isinstance(e, LEAVES) or isinstance(e, Tuple)


def bound_value(binding) -> Expr:
    return binding.value


# ------------------------------------------------------------------------------------ purity
def is_impure_call(call: Call) -> bool:
    """TVM's IsImpureCall: an op's ``FPurity`` is False, or the callee's FuncStructInfo is
    impure."""
    op = call.op
    if isinstance(op, Op):
        pure = op.get_attr("FPurity")
        return pure is not None and not pure
    sinfo = op._checked_type
    if isinstance(sinfo, FuncStructInfo):
        return not sinfo.purity
    return True


_CALL_FREE = (Var, Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc, GlobalVar)


def is_flat_operand(a) -> bool:
    """A leaf, or a tuple of leaves: an operand holding no call, branch or function."""
    return isinstance(a, _CALL_FREE) or (
        isinstance(a, Tuple) and all(isinstance(f, _CALL_FREE) for f in a.fields))


_CALLEE = (Op, GlobalVar, ExternFunc, Var)  # a flat call's callee


def is_flat_value(v) -> bool:
    """A binding value with no function, branch or nested call in it (a call of flat operands
    by an operator, global, extern or variable; an item of a variable; a flat operand): a
    mutator that rewrites only such nestings would give it back as it is."""
    if isinstance(v, Call):
        return isinstance(v.op, _CALLEE) and \
            all(is_flat_operand(a) for a in v.args)
    if isinstance(v, TupleGetItem):
        return isinstance(v.tuple_value, Var)
    return is_flat_operand(v)


def flat_value_kept(v, remap: dict) -> bool:
    """Whether binding value ``v`` is flat (``is_flat_value``), normalized, and reads no
    variable of ``remap`` (a mutator's ``var_remap_``): a mutator rewriting only calls of
    other callees gives it back as it is, so its binding can be emitted without the visit."""
    if v._checked_type is None or not is_flat_value(v):
        return False
    if not remap:
        return True
    if isinstance(v, Call):
        if isinstance(v.op, Var) and v.op in remap:
            return False
        kids = v.args
    elif isinstance(v, TupleGetItem):
        return v.tuple_value not in remap
    else:
        kids = (v,)
    for a in kids:
        for f in (a.fields if isinstance(a, Tuple) else (a,)):
            if isinstance(f, Var) and f in remap:
                return False
    return True


def contains_impure_call(expr, own_name=None) -> bool:
    """TVM's ContainsImpureCall: an impure call anywhere in ``expr`` except inside nested
    function literals (their bodies run only when called). ``own_name`` (a Var) is a recursive
    reference whose calls count as pure."""
    if isinstance(expr, Function):
        return contains_impure_call(expr.body, own_name)
    if isinstance(expr, Call) and all(is_flat_operand(a) for a in expr.args):
        # (a call of leaves or tuples of leaves, most bindings - a call_tir's argument tuple
        # included: the call is the only one there is)
        return not (own_name is not None and expr.op is own_name) and is_impure_call(expr)
    stack = [expr]
    seen = set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, Call) and not (own_name is not None and e.op is own_name) and \
                is_impure_call(e):
            return True
        if isinstance(e, Function) or not isinstance(e, Node):
            continue  # a nested function literal runs only when called
        stack.extend(node_operands(e))
    return False


# ------------------------------------------------------------------------ symbolic variables
def _shape_values(shape):
    if isinstance(shape, ShapeExpr):
        return shape.values
    return ()


def sinfo_prim_fields(sinfo) -> list:
    """The PrimExprs struct info ``sinfo`` holds (TVM's VisitStructInfoExprField): tensor and
    shape dimensions, prim values, recursively through tuples and function signatures."""
    out = []
    stack = [sinfo]
    while stack:
        s = stack.pop()
        if isinstance(s, TensorStructInfo):
            out.extend(_shape_values(s.shape))
        elif isinstance(s, ShapeStructInfo):
            out.extend(s.values or ())
        elif isinstance(s, PrimStructInfo):
            if s.value is not None:
                out.append(s.value)
        elif isinstance(s, TupleStructInfo):
            stack.extend(reversed(s.fields))
        elif isinstance(s, FuncStructInfo):
            stack.append(s.ret)
            stack.extend(reversed(s.params or ()))
    return out


def tir_vars_in(prims) -> list:
    """The tir Vars used in the PrimExprs ``prims``, in order of first appearance."""
    seen, out = set(), []
    for p in prims:
        if isinstance(p, IntImm) or not isinstance(p, PrimExpr):
            continue  # (a static dimension: nothing to walk)
        for node in post_order(p):
            if isinstance(node, T.Var) and id(node) not in seen:
                seen.add(id(node))
                out.append(node)
    return out


def _int_value(e):
    return e.value if isinstance(e, IntImm) else None


def _fold(e):
    """Fold integer arithmetic on immediates (what the analyzer's Simplify does first)."""
    if not isinstance(e, T.BinaryOp):
        return None
    a, b = _int_value(e.a), _int_value(e.b)
    if a is None or b is None:
        return None
    dt = e.dtype
    t = type(e)
    if t is T.Add:
        return IntImm(dt, a + b)
    if t is T.Sub:
        return IntImm(dt, a - b)
    if t is T.Mul:
        return IntImm(dt, a * b)
    if t is T.FloorDiv and b != 0:
        return IntImm(dt, a // b)
    if t is T.FloorMod and b != 0:
        return IntImm(dt, a % b)
    if t is T.Div and b != 0:
        return IntImm(dt, int(a / b))
    if t is T.Min:
        return IntImm(dt, min(a, b))
    if t is T.Max:
        return IntImm(dt, max(a, b))
    if isinstance(e, T.CmpOp) and t not in (T.And, T.Or):
        ops = {T.EQ: a == b, T.NE: a != b, T.LT: a < b, T.LE: a <= b, T.GT: a > b,
               T.GE: a >= b}
        if t in ops:
            return IntImm("bool", int(ops[t]))
    return None


def simplify_prim(e):
    """Simplify a PrimExpr: ``minitvm.arith``'s analyzer when present, else constant folding."""
    if not isinstance(e, PrimExpr) or isinstance(e, IntImm | FloatImm | T.Var):
        return e
    try:
        from ...arith import Analyzer
    except ImportError:
        Analyzer = None
    if Analyzer is not None:
        try:
            return Analyzer().simplify(e)
        except Exception:  # an analyzer that cannot handle the expression: fold locally
            pass
    return transform_expr(e, _fold)


def substitute_prim(e, fmap):
    """``e`` with tir Vars replaced by ``fmap(var)`` (None: keep), simplified if changed."""
    if not isinstance(e, PrimExpr):
        return e
    changed = [False]

    def fpost(node):
        if isinstance(node, T.Var):
            rep = fmap(node)
            if rep is not None and rep is not node:
                changed[0] = True
                return rep if isinstance(rep, PrimExpr) else T._to_expr(rep, node.dtype)
        return None

    out = transform_expr(e, fpost)
    if not changed[0] and out is e:
        return e
    return simplify_prim(out)


def _subst_values(values, fmap):
    new = [substitute_prim(v, fmap) for v in values]
    return None if all(a is b for a, b in zip(new, values)) else new


def substitute_sinfo(sinfo, fmap, fvar=None):
    """``sinfo`` with its symbolic variables replaced by ``fmap(tir_var)``; ``fvar(relax_var)``
    may replace a Relax variable used as a tensor's shape. Returns ``sinfo`` itself when
    nothing changed."""
    if sinfo is None:
        return None
    if isinstance(sinfo, TensorStructInfo):
        shape = sinfo.shape
        if isinstance(shape, ShapeExpr):
            new = _subst_values(shape.values, fmap)
            if new is None:
                return sinfo
            return TensorStructInfo(new, sinfo.dtype, sinfo.vdevice, span=sinfo.span)
        if isinstance(shape, Var) and fvar is not None:
            rep = fvar(shape)
            if rep is not None and rep is not shape:
                return TensorStructInfo(rep, sinfo.dtype, sinfo.vdevice, sinfo.ndim,
                                        span=sinfo.span)
        return sinfo
    if isinstance(sinfo, ShapeStructInfo):
        if sinfo.values is None:
            return sinfo
        new = _subst_values(sinfo.values, fmap)
        return sinfo if new is None else ShapeStructInfo(new, span=sinfo.span)
    if isinstance(sinfo, PrimStructInfo):
        if sinfo.value is None:
            return sinfo
        v = substitute_prim(sinfo.value, fmap)
        return sinfo if v is sinfo.value else PrimStructInfo(sinfo.dtype, v, span=sinfo.span)
    if isinstance(sinfo, TupleStructInfo):
        fields = [substitute_sinfo(f, fmap, fvar) for f in sinfo.fields]
        if all(a is b for a, b in zip(fields, sinfo.fields)):
            return sinfo
        return TupleStructInfo(fields, span=sinfo.span)
    if isinstance(sinfo, FuncStructInfo):
        if sinfo.params is None:
            ret = substitute_sinfo(sinfo.ret, fmap, fvar)
            if ret is sinfo.ret:
                return sinfo
            return FuncStructInfo.opaque_func(ret=ret, derive_func=sinfo.derive_func,
                                              purity=sinfo.purity, span=sinfo.span)
        params = [substitute_sinfo(p, fmap, fvar) for p in sinfo.params]
        ret = substitute_sinfo(sinfo.ret, fmap, fvar)
        if ret is sinfo.ret and all(a is b for a, b in zip(params, sinfo.params)):
            return sinfo
        return FuncStructInfo(params, ret, sinfo.purity, span=sinfo.span)
    if isinstance(sinfo, ObjectStructInfo | StructInfo):
        return sinfo
    return sinfo


def infer_symbolic_var_map(pairs) -> dict:
    """TVM's InferSymbolicVarMap: for each (relax var, replacement expression), the symbolic
    variables of the variable's struct info that the replacement's struct info pins down
    (dimension by dimension; later pairs override earlier ones)."""
    out: dict = {}

    def prim(a, b):
        if isinstance(a, T.Var) and b is not None:
            out[a] = b

    def values(a, b):
        if a is None or b is None or len(a) != len(b):
            return
        for x, y in zip(a, b):
            prim(x, y)

    stack = []
    for var, expr in pairs:
        stack.append((var._struct_info if isinstance(var, Expr) else var,
                      expr._struct_info if isinstance(expr, Expr) else expr))
    stack.reverse()
    while stack:
        a, b = stack.pop()
        if a is None or b is None:
            continue
        if isinstance(a, TensorStructInfo) and isinstance(b, TensorStructInfo):
            if a.shape is not None and b.shape is not None:
                av = _shape_of_sinfo(a.shape)
                bv = _shape_of_sinfo(b.shape)
                values(av, bv)
        elif isinstance(a, ShapeStructInfo) and isinstance(b, ShapeStructInfo):
            values(a.values, b.values)
        elif isinstance(a, PrimStructInfo) and isinstance(b, PrimStructInfo):
            if a.value is not None and b.value is not None:
                prim(a.value, b.value)
        elif isinstance(a, TupleStructInfo) and isinstance(b, TupleStructInfo):
            if len(a.fields) == len(b.fields):
                stack.extend(reversed(list(zip(a.fields, b.fields))))
    return out


def _shape_of_sinfo(shape):
    """The dimensions a tensor's shape expression carries (its ShapeExpr values or the values
    of its shape struct info)."""
    if isinstance(shape, ShapeExpr):
        return shape.values
    s = shape._struct_info
    if isinstance(s, ShapeStructInfo):
        return s.values
    return None


def defined_symbolic_vars(func) -> list:
    """TIR variables a function defines: those appearing as a whole dimension/value in a
    parameter's struct info or a match_cast's struct info (TVM's DefinedSymbolicVars), in
    order of definition."""
    seen, out = set(), []

    def add(sinfo):
        for e in sinfo_prim_fields(sinfo):
            if isinstance(e, T.Var) and id(e) not in seen:
                seen.add(id(e))
                out.append(e)

    for p in func.params:
        add(p._struct_info)
    for binding in iter_bindings(func.body):
        if binding.__class__.__name__ == "MatchCast":
            add(binding.struct_info)
    return out


class _Bindings:
    """The bindings of one SeqExpr's blocks, in order (an entry of ``iter_bindings``' stack)."""

    __slots__ = ("items",)

    def __init__(self, seq):
        self.items = iter([b for block in seq.blocks for b in block.bindings])


def iter_bindings(expr):
    """Every binding under ``expr`` (nested functions and branches too), in program order: a
    nested value's bindings right after its own. A sequence's bindings are taken in a plain
    loop (one step per binding, not a push and a pop; the lowering passes walk a 100,000-binding
    chain this way a dozen times)."""
    nested = Function | If | SeqExpr
    stack = [expr]
    while stack:
        e = stack[-1]
        if type(e) is _Bindings:
            for b in e.items:
                yield b
                if isinstance(b.value, nested):
                    stack.append(b.value)
                    break
            else:
                stack.pop()
            continue
        stack.pop()
        if isinstance(e, Function):
            stack.append(e.body)
        elif isinstance(e, SeqExpr):
            stack.append(e.body)
            stack.append(_Bindings(e))
        elif isinstance(e, If):
            stack.append(e.false_branch)
            stack.append(e.true_branch)


def used_symbolic_vars(func) -> list:
    """Every TIR variable a function mentions (struct info of its variables and expressions,
    shape and prim values, call struct-info arguments), in order of first appearance."""
    prims: list = []
    for p in func.params:
        prims.extend(sinfo_prim_fields(p._struct_info))
    if func.ret_struct_info is not None:
        prims.extend(sinfo_prim_fields(func.ret_struct_info))
    prims.extend(expr_prim_fields(func.body))
    return tir_vars_in(prims)


_NO_PRIM_FIELDS = (Var, Constant, Op, GlobalVar, StringImm, DataTypeImm, ExternFunc)


def expr_prim_fields(expr) -> list:
    """The PrimExprs an expression mentions: shape and prim values, call struct-info
    arguments, and inside its functions, branches and blocks their variables' struct info
    (one iterative walk)."""
    prims: list = []
    stack = [expr]
    seen = set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, ShapeExpr):
            prims.extend(e.values)
        elif isinstance(e, PrimValue):
            prims.append(e.value)
        elif isinstance(e, Call):
            for s in e.sinfo_args:
                prims.extend(sinfo_prim_fields(s))
            # (variables, constants and callees mention no PrimExpr: not pushed)
            if not isinstance(e.op, _NO_PRIM_FIELDS):
                stack.append(e.op)
            stack.extend(a for a in e.args if not isinstance(a, _NO_PRIM_FIELDS))
        elif isinstance(e, Tuple):
            stack.extend(e.fields)
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
        elif isinstance(e, If):
            stack.extend((e.cond, e.true_branch, e.false_branch))
        elif isinstance(e, SeqExpr):
            for block in e.blocks:
                for b in block.bindings:
                    prims.extend(sinfo_prim_fields(b.var._struct_info))
                    if hasattr(b, "struct_info"):
                        prims.extend(sinfo_prim_fields(b.struct_info))
                    stack.append(b.value)
            stack.append(e.body)
        elif isinstance(e, Function):
            for p in e.params:
                prims.extend(sinfo_prim_fields(p._struct_info))
            if e.ret_struct_info is not None:
                prims.extend(sinfo_prim_fields(e.ret_struct_info))
            stack.append(e.body)
    return prims


def free_symbolic_vars(func) -> list:
    """TIR variables a function uses but does not define (TVM's FreeSymbolicVars)."""
    defined = {id(v) for v in defined_symbolic_vars(func)}
    return [v for v in used_symbolic_vars(func) if id(v) not in defined]


def binding_use_counts(func: Function) -> dict:
    """Var -> how many binding values (and the function's result) name it, one level deep
    (calls' arguments, tuples' fields): what SinkUnitSqueeze and SplitConvPool ask about a
    bound value."""
    counts: dict = {}

    def count(e):
        stack = [e]
        while stack:
            e = stack.pop()
            if isinstance(e, Var):
                counts[e] = counts.get(e, 0) + 1
            elif isinstance(e, Call):
                stack.extend(e.args)
            elif hasattr(e, "fields"):
                stack.extend(e.fields)

    body = func.body
    for block in getattr(body, "blocks", ()):
        for b in block.bindings:
            count(b.value)
    count(getattr(body, "body", body))
    return counts
