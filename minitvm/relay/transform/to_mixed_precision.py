"""ToMixedPrecision: run a float32 program in float16 where it is safe and pays.

Each op has a conversion category (op attribute ``FTVMMixedPrecisionConversionType``, a function
``(call, mixed_type) -> [category, accumulation dtype, output dtype]``), with TVM's default lists:
ALWAYS ops (convolutions, dense, batch_matmul) take their float inputs cast to the mixed type;
FOLLOW ops (elementwise arithmetic, shape ops, pooling, relu...) run in the mixed type when all
their float inputs already are, else in the original type; NEVER ops (exp, softmax, sum, mean...)
get their inputs cast back to the original float type. Ops without a category follow
``missing_op_mode``: 0 error, 1 warn and treat as NEVER, 2 NEVER silently. A value cast once is
reused by every consumer. With PassContext config
``relay.ToMixedPrecision.keep_orig_output_dtype`` the function's result is cast back.
Variables and constants never keep a FOLLOW op in float32: they are cast (TVM's rule).

Control flow stays well typed: a let variable takes its value's new type (as TVM), the branches
of an ``if`` or the clauses of a ``match`` that end in different types are cast back to the
original type, closures (and global functions other than ``main``) keep their signatures (their
result is cast back), and the arguments of calls to anything but an operator (closures,
constructors, global functions) and the values stored in references keep their original types.
"""

from __future__ import annotations

import warnings

from ...ir.op import Op, register_op_attr
from ...ir.type import TensorType, TupleType
from ...transform.config import register_pass_config
from ...transform.context import PassContext
from ...transform.stats import record_stat
from ..adt import Clause
from ..expr import Call, Constant, Function, Let, Tuple, TupleGetItem, Var
from ..op import tensor as _t
from ..scoped_functor import ScopedMutator
from ._pass_helpers import register
from .function_pass import function_pass
from .infer_type import InferTypeLocal

__all__ = ["ToMixedPrecision", "MIXED_PRECISION_ALWAYS", "MIXED_PRECISION_FOLLOW",
           "MIXED_PRECISION_NEVER", "DEFAULT_ALWAYS_LIST", "DEFAULT_FOLLOW_LIST",
           "DEFAULT_NEVER_LIST", "register_mixed_precision_conversion"]

MIXED_PRECISION_ALWAYS = 0
MIXED_PRECISION_FOLLOW = 1
MIXED_PRECISION_NEVER = 2

DEFAULT_ALWAYS_LIST = [
    "nn.conv1d", "nn.conv2d", "nn.conv3d", "nn.conv1d_transpose", "nn.conv2d_transpose",
    "nn.conv3d_transpose", "nn.dense", "nn.batch_matmul",
]
DEFAULT_FOLLOW_LIST = [
    "nn.pad", "nn.batch_flatten", "concatenate", "zeros", "split", "squeeze", "transpose",
    "expand_dims", "reshape", "dyn.reshape", "broadcast_to_like", "dyn.broadcast_to",
    "strided_slice", "dyn.strided_slice", "take", "argwhere", "where", "tile", "dyn.tile",
    "scatter", "full", "dyn.full", "less", "greater", "less_equal", "greater_equal", "copy",
    "cast", "cast_like", "add", "subtract", "multiply", "divide", "nn.bias_add",
    "nn.batch_norm", "sqrt", "shape_of", "max", "min", "maximum", "minimum", "nn.relu",
    "nn.leaky_relu", "nn.prelu", "nn.dropout", "sigmoid", "tanh", "nn.max_pool1d",
    "nn.max_pool2d", "nn.max_pool3d", "nn.avg_pool1d", "nn.avg_pool2d", "nn.avg_pool3d",
    "nn.global_max_pool2d", "nn.adaptive_max_pool1d", "nn.adaptive_max_pool2d",
    "nn.adaptive_max_pool3d",
]
DEFAULT_NEVER_LIST = [
    "exp", "power", "nn.cross_entropy", "nn.cross_entropy_with_logits", "nn.softmax",
    "nn.l2_normalize", "erf", "arange", "nn.global_avg_pool2d", "nn.adaptive_avg_pool1d",
    "nn.adaptive_avg_pool2d", "nn.adaptive_avg_pool3d", "sum", "mean",
]

_KEEP_OUTPUT = "relay.ToMixedPrecision.keep_orig_output_dtype"
register_pass_config(_KEEP_OUTPUT, bool, False,
                     "ToMixedPrecision casts the function's result back to its original dtype")


def register_mixed_precision_conversion(op_name: str, func=None, level: int = 10):
    """Register ``func(call, mixed_type) -> [category, accumulation dtype, output dtype]``."""
    return register_op_attr(op_name, "FTVMMixedPrecisionConversionType", func, level)


def _generic(category):
    def rule(call, mixed_type):
        return [category, mixed_type, mixed_type]

    return rule


for _names, _cat in ((DEFAULT_ALWAYS_LIST, MIXED_PRECISION_ALWAYS),
                     (DEFAULT_FOLLOW_LIST, MIXED_PRECISION_FOLLOW),
                     (DEFAULT_NEVER_LIST, MIXED_PRECISION_NEVER)):
    for _name in _names:
        try:
            Op.get(_name)
        except (KeyError, ValueError):
            continue  # an op this build does not define
        register_mixed_precision_conversion(_name, _generic(_cat))


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


class _MixedPrecision(ScopedMutator):
    """The rewrite; scope hooks are generators (``scoped_functor``), so closures and lets
    nest to any depth without Python recursion."""

    def __init__(self, mixed_type: str, missing_op_mode: int, mod=None):
        super().__init__()
        self.mixed = mixed_type
        self.missing = missing_op_mode
        self.mod = mod
        self.casts: dict = {}
        self.converted = 0
        self.warned: set = set()

    def _typed(self, e):
        if e._checked_type is None:
            InferTypeLocal(e, self.mod)
        return e

    def cast(self, e, dtype: str):
        """``e`` with every float tensor in it as ``dtype`` (casts shared, constants folded)."""
        t = self._typed(e).checked_type
        if isinstance(t, TupleType):
            if isinstance(e, Tuple):
                return self._typed(Tuple([self.cast(f, dtype) for f in e.fields]))
            return self._typed(Tuple([self.cast(self._typed(TupleGetItem(e, i)), dtype)
                                      for i in range(len(t.fields))]))
        if not isinstance(t, TensorType) or not _is_float(t.dtype) or t.dtype == dtype:
            return e
        if isinstance(e, Call) and e.op is Op.get("cast"):
            inner = e.args[0]
            if self._typed(inner).checked_type.dtype == dtype:
                return inner  # cast(cast(x: dtype)) -> x
        key = (e, dtype)
        out = self.casts.get(key)
        if out is None:
            if isinstance(e, Constant):
                out = Constant(e.data.numpy().astype(dtype))
            else:
                out = _t.cast(e, dtype)
            out = self.casts[key] = self._typed(out)
        return out

    def cast_to(self, e, target):
        """``e`` with each float tensor cast to the dtype it has in type ``target`` (the
        expression's type before the pass): restores an original signature."""
        t = self._typed(e).checked_type
        if t == target:
            return e
        if isinstance(target, TensorType) and isinstance(t, TensorType):
            if _is_float(t.dtype) and _is_float(target.dtype) and t.dtype != target.dtype:
                return self.cast(e, target.dtype)
            return e
        if isinstance(target, TupleType) and isinstance(t, TupleType) and len(
                target.fields) == len(t.fields):
            fields = (e.fields if isinstance(e, Tuple) else
                      [self._typed(TupleGetItem(e, i)) for i in range(len(t.fields))])
            new = [self.cast_to(f, ft) for f, ft in zip(fields, target.fields, strict=True)]
            if isinstance(e, Tuple) and all(a is b for a, b in zip(new, e.fields, strict=True)):
                return e
            return self._typed(Tuple(new))
        return e

    def _all_float_mixed(self, args) -> bool:
        """FOLLOW's test: every argument is in the mixed type, not a float, or a variable or
        constant (those are cast as needed)."""
        stack = list(args)
        while stack:
            a = stack.pop()
            if isinstance(a, Var | Constant):
                continue
            t = self._typed(a).checked_type
            if isinstance(t, TupleType):
                stack.extend(a.fields if isinstance(a, Tuple) else
                             [self._typed(TupleGetItem(a, i)) for i in range(len(t.fields))])
            elif isinstance(t, TensorType) and _is_float(t.dtype) and t.dtype != self.mixed:
                return False
        return True

    def _category(self, call):
        op = call.op
        rule = op.get_attr("FTVMMixedPrecisionConversionType") if op.has_attr(
            "FTVMMixedPrecisionConversionType") else None
        if rule is not None:
            return rule(call, self.mixed)
        if self.missing == 0:
            raise ValueError(f"ToMixedPrecision: operator {op.name} has no mixed precision "
                             "conversion rule (FTVMMixedPrecisionConversionType); register one "
                             "or use missing_op_mode=1 or 2")
        if self.missing == 1 and op.name not in self.warned:
            self.warned.add(op.name)
            warnings.warn(f"ToMixedPrecision: operator {op.name} is not in any list; it stays "
                          "in its original precision", stacklevel=2)
        return [MIXED_PRECISION_NEVER, self.mixed, self.mixed]

    def visit_call(self, call):
        new = super().visit_call(call)
        if not isinstance(new, Call):
            return self._typed(new)
        if not isinstance(new.op, Op):  # closure, constructor or global: original signature
            args = [self.cast_to(a, old.checked_type)
                    for a, old in zip(new.args, call.args, strict=True)]
            if any(a is not b for a, b in zip(args, new.args, strict=True)):
                new = new.with_fields(args=args)
            return self._typed(new)
        category, accum, out_dtype = self._category(new)
        if category == MIXED_PRECISION_FOLLOW:
            category = (MIXED_PRECISION_ALWAYS if self._all_float_mixed(new.args)
                        else MIXED_PRECISION_NEVER)
        if category == MIXED_PRECISION_NEVER:
            args = [self.cast(a, "float32") for a in new.args]
            return self._typed(new.with_fields(args=args))
        args = [self.cast(a, self.mixed) for a in new.args]
        attrs = new.attrs
        if attrs is not None and "out_dtype" in attrs.keys():
            attrs = attrs.with_fields(out_dtype=accum)
        self.converted += 1
        out = self._typed(Call(new.op, args, attrs, new.type_args, new.span))
        if accum != out_dtype:
            out = self.cast(out, out_dtype)
        return out

    def gen_function(self, fn):
        if fn.attrs and fn.attrs.get("Primitive"):
            return fn
        new = yield from self.base_gen_function(fn)
        body = self.cast_to(new.body, fn.checked_type.ret_type)  # a closure keeps its type
        if body is not new.body:
            new = Function(new.params, body, new.ret_type, new.type_params, new.attrs, new.span)
        if new is not fn and new._checked_type is None:
            if self._typed(body).checked_type == fn.checked_type.ret_type and all(
                    a is b for a, b in zip(new.params, fn.params, strict=True)):
                new._checked_type = fn.checked_type  # same signature: no re-inference
        return self._typed(new)

    def gen_let(self, let):
        chain = self._let_chain(let)
        parts = []
        for node in chain:
            value = yield node.value
            var = node.var
            old_t, new_t = var.checked_type, self._typed(value).checked_type
            if new_t != old_t:
                if var in self.memo_map:  # used inside its own value (recursion): keep its type
                    value = self.cast_to(value, old_t)
                else:  # the variable takes its value's new type (as TVM)
                    new_var = Var(var.name_hint, new_t, var.span)
                    new_var._checked_type = new_t
                    self.memo_map[var] = var = new_var
            parts.append((var, value))
        body = yield chain[-1].body
        body_type = self._typed(body).checked_type
        for node, (var, value) in zip(reversed(chain), reversed(parts), strict=True):
            if var is node.var and value is node.value and body is node.body:
                body = node
            else:
                body = Let(var, value, body, node.span)
                body._checked_type = body_type  # a let has its body's type
            self.memo_map[node] = body
        return body

    def _join(self, branches, original):
        """Branches that must agree on a type: as they are when they do, else each cast back
        to the ``original`` type."""
        types = [self._typed(b).checked_type for b in branches]
        if all(t == types[0] for t in types):
            return branches
        return [self.cast_to(b, original) for b in branches]

    def visit_if(self, ite):
        cond = self.visit(ite.cond)
        t, f = self._join([self.visit(ite.true_branch), self.visit(ite.false_branch)],
                          ite.checked_type)
        return self._typed(ite.with_fields(cond, t, f))

    def gen_match(self, m):
        data = yield m.data
        clauses = []
        for c in m.clauses:
            lhs = self.visit_pattern(c.lhs)
            rhs = yield c.rhs
            clauses.append(c if (lhs is c.lhs and rhs is c.rhs) else Clause(lhs, rhs))
        rhs = self._join([c.rhs for c in clauses], m.checked_type)
        clauses = [c if r is c.rhs else Clause(c.lhs, r) for c, r in zip(clauses, rhs,
                                                                            strict=True)]
        return self._typed(m.with_fields(data, clauses))

    def visit_ref_create(self, r):
        return self._typed(r.with_fields(self.cast_to(self.visit(r.value),
                                                      r.value.checked_type)))

    def visit_ref_write(self, r):
        return self._typed(r.with_fields(self.visit(r.ref),
                                         self.cast_to(self.visit(r.value), r.value.checked_type)))


def to_mixed_precision(func: Function, mixed_type: str = "float16", missing_op_mode: int = 1,
                       mod=None, keep_output: bool = False):
    """ToMixedPrecision on one type-checked function (``keep_output``: its result keeps the
    original type)."""
    m = _MixedPrecision(mixed_type, missing_op_mode, mod)
    body = m.visit(func.body)
    if keep_output == "signature":
        body = m.cast_to(body, func.body.checked_type)
    elif keep_output:
        body = m.cast(body, _orig_float(func.body.checked_type))
    out = Function(func.params, body, None, func.type_params, func.attrs, func.span)
    return out, m.converted


def _is_main(func, mod) -> bool:
    if mod is None:
        return True
    for gv, f in mod.functions.items():
        if f is func:
            return gv.name_hint == "main"
    return True


def _orig_float(t) -> str:
    if isinstance(t, TensorType):
        return t.dtype
    if isinstance(t, TupleType) and t.fields:
        return _orig_float(t.fields[0])
    return "float32"


@register("ToMixedPrecision")
def ToMixedPrecision(mixed_precision_type: str = "float16", missing_op_mode: int = 1):  # noqa: N802
    """Automatic mixed precision rewriter: recasts ops to ``mixed_precision_type`` per the
    op lists.

    Parameters
    ----------
    mixed_precision_type : str
        The target datatype to transform operations in the graph to use.
    missing_op_mode : int
        0 - error on ops without a conversion rule, 1 - warn and keep them in full precision,
        2 - keep them in full precision silently.

    Returns
    -------
    ret : tvm.transform.Pass
        The registered pass.
    """
    if missing_op_mode not in (0, 1, 2):
        raise ValueError(f"ToMixedPrecision: missing_op_mode must be 0, 1 or 2, got "
                         f"{missing_op_mode}")
    if not _is_float(mixed_precision_type):
        raise ValueError(f"ToMixedPrecision: mixed_precision_type must be a float type, got "
                         f"{mixed_precision_type!r}")

    def transform(func, mod, ctx):
        keep = bool((ctx or PassContext.current()).get_config(_KEEP_OUTPUT, False))
        if not keep and not _is_main(func, mod):
            keep = "signature"  # callers of other global functions were typed with it
        out, n = to_mixed_precision(func, mixed_precision_type, missing_op_mode, mod, keep)
        record_stat("ops converted", n)
        return out

    return function_pass(transform, opt_level=0, name="ToMixedPrecision",
                         required=["InferType"], needs=["typed"])
