"""FakeQuantizationToInteger: rewrite ``dequantize -> float ops -> quantize`` regions into
integer (qnn) programs, as TVM v0.19 does.

For every ``qnn.quantize`` (the region's end), the region is what its input reaches through
calls, tuples, projections and constants, stopping at ``qnn.dequantize`` calls; a variable,
let, if or function inside ends the search and leaves that quantize alone. When every op of the
region has an ``FTVMFakeQuantizationToInteger`` rule (or an ``FTVMOptionalFakeQuantizationToInteger``
one and its name is in ``optional_qnn_ops``), the region is rebuilt bottom-up: each rule gets
the call with its already-rewritten (integer) arguments and the map of affine types
(:class:`~minitvm.ir.TensorAffineType`: scale, zero point, dtype, axis) and returns the new
expression with its affine type. Ops between dequantize and quantize see the final quantize's
type as their own output type. A rule that raises skips the region (``hard_fail=True``: the
error propagates). ``use_qat=True`` then converts, one at a time, listed ops whose inputs are
all dequantize calls, ending each with a dequantize (TVM's QAT mode). The rules are in
``fake_quantization_to_integer_rules``.

Differences from TVM: the walks are iterative (no recursion limit); a call of a function (not
an op) inside a region ends the search instead of crashing; a region where one tensor is
dequantized with two different parameter sets is left alone (TVM's type map, keyed by
expression, gives both uses one type and computes a wrong result).
"""

from __future__ import annotations

from ...ir.affine_type import TensorAffineType, TupleAffineType
from ...ir.op import Op
from ...ir.structural import structural_equal
from ...transform.stats import record_stat
from ..expr import Call, Constant, Tuple, TupleGetItem
from ..expr_functor import ExprMutator
from ._pass_helpers import register
from .function_pass import function_pass

__all__ = ["FakeQuantizationToInteger", "fake_quantization_to_integer"]

RULE = "FTVMFakeQuantizationToInteger"
OPTIONAL_RULE = "FTVMOptionalFakeQuantizationToInteger"

# ops the QAT step may convert on their own (TVM's is_op_enabled_for_optional_fq2i)
QAT_OPS = frozenset({
    "broadcast_to", "clip", "expand_dims", "max", "maximum", "min", "minimum", "nn.avg_pool2d",
    "nn.batch_flatten", "nn.batch_matmul", "nn.bias_add", "nn.conv2d", "nn.conv2d_transpose",
    "nn.dense", "nn.depth_to_space", "nn.global_avg_pool2d", "nn.max_pool2d", "nn.pad",
    "nn.relu", "reshape", "split", "squeeze", "strided_slice", "transpose",
})


def _ensure_rules() -> None:
    from . import fake_quantization_to_integer_rules  # noqa: F401  (registers the rules)


def _ops():
    return Op.get("qnn.quantize"), Op.get("qnn.dequantize")


def _rule_for(op, optional: frozenset):
    """The rewrite rule of ``op`` (None when it has none usable here)."""
    if not isinstance(op, Op):
        return None
    rule = op.get_attr(RULE)
    if rule is None and op.name in optional:
        rule = op.get_attr(OPTIONAL_RULE)
    return rule


def _dtype_of(expr) -> str:
    t = expr._checked_type
    if t is None:
        from .infer_type import InferTypeLocal

        t = InferTypeLocal(expr)
    return t.dtype


def extract_region(quantize):
    """The calls of ``quantize``'s region (quantize calls left out) and the affine types of its
    quantize/dequantize calls; ``(None, types)`` when the region is not pure dataflow."""
    q_op, dq_op = _ops()
    types: dict = {}
    region: list = []
    seen: set = set()
    stack = [quantize]
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        t = type(e)
        if t is Call:
            if e.op == q_op:
                types[e] = TensorAffineType(e.args[1], e.args[2], e.attrs.out_dtype, e.attrs.axis)
                stack.append(e.args[0])
            elif e.op == dq_op:
                types[e] = TensorAffineType(e.args[1], e.args[2], _dtype_of(e.args[0]),
                                            e.attrs.axis)
                region.append(e)
            elif isinstance(e.op, Op):
                region.append(e)
                stack.extend(reversed(e.args))
            else:
                return None, types
        elif t is Tuple:
            stack.extend(reversed(e.fields))
        elif t is TupleGetItem:
            stack.append(e.tuple_value)
        elif t is not Constant:
            return None, types
    return region, types


def _region_children(e, dq_op):
    t = type(e)
    if t is Call:
        return () if e.op == dq_op else tuple(e.args)
    if t is Tuple:
        return tuple(e.fields)
    if t is TupleGetItem:
        return (e.tuple_value,)
    return ()


class _RegionRewriter:
    """Rebuilds one region bottom-up through the rules (TVM's SubgraphMutator)."""

    def __init__(self, types: dict, optional: frozenset, out_type=None, qat_root=None):
        self.types = types
        self.optional = optional
        self.out_type = out_type
        self.qat_root = qat_root
        self.dequantized: dict = {}

    def rewrite(self, root):
        _, dq_op = _ops()
        new: dict = {}
        stack = [(root, False)]
        while stack:
            e, ready = stack.pop()
            if e in new:
                continue
            if not ready:
                stack.append((e, True))
                stack.extend((c, False) for c in reversed(_region_children(e, dq_op))
                             if c not in new)
                continue
            new[e] = self._rewrite_node(e, new, dq_op)
        return new[root]

    def _rewrite_node(self, e, new, dq_op):
        t = type(e)
        types = self.types
        if t is Call:
            rule = _rule_for(e.op, self.optional)
            if rule is None:
                raise ValueError(f"FakeQuantizationToInteger: no rewrite rule for {e.op.name} "
                                 "inside a fake-quantized region")
            if e.op == dq_op:
                expr = e
            else:
                args = [new[a] for a in e.args]
                expr = e if all(a is b for a, b in zip(args, e.args, strict=True)) else Call(
                    e.op, args, e.attrs, e.type_args, e.span)
                if self.qat_root is None:
                    types[expr] = self.out_type
            vals = rule(expr, types)
            if vals is None or len(vals) != 2:
                raise ValueError(f"the {RULE} rule of {e.op.name} must return "
                                 "[expression, affine type]")
            out, out_t = vals
            if e.op == dq_op:
                # one integer tensor dequantized twice with different parameters: the types
                # map (keyed by expression, as TVM's) cannot tell the uses apart — TVM then
                # silently uses one type for both; refuse the region instead
                seen = self.dequantized.get(out)
                if seen is not None and not structural_equal(seen, out_t):
                    raise ValueError("FakeQuantizationToInteger: one tensor is dequantized "
                                     "with different parameters inside a region")
                self.dequantized[out] = out_t
            types[out] = out_t
            if e is self.qat_root:
                from ..qnn.op import dequantize

                if not isinstance(out_t, TensorAffineType):
                    raise TypeError(f"{e.op.name}: a QAT conversion needs a tensor result")
                out = dequantize(out, out_t.scale, out_t.zero_point, axis=out_t.axis)
            return out
        if t is Tuple:
            fields = [new[f] for f in e.fields]
            expr = e.with_fields(fields)
            ftypes = []
            for f in fields:
                ft = types.get(f)
                if not isinstance(ft, TensorAffineType):
                    raise ValueError("FakeQuantizationToInteger: a tuple field has no affine type")
                ftypes.append(ft)
            types[expr] = TupleAffineType(ftypes)
            return expr
        if t is TupleGetItem:
            expr = e.with_fields(new[e.tuple_value])
            tt = types.get(expr.tuple_value)
            if not isinstance(tt, TupleAffineType):
                raise ValueError("FakeQuantizationToInteger: a projection of a tuple without "
                                 "affine types")
            types[expr] = tt.types[e.index]
            return expr
        return e


class _FakeQuantizationRewriter(ExprMutator):
    """Rewrites every quantize-ended region (TVM's FakeQuantizationRewriter)."""

    def __init__(self, hard_fail: bool, optional: frozenset):
        super().__init__()
        self.hard_fail = hard_fail
        self.optional = optional
        self.q_op = Op.get("qnn.quantize")
        self.count = 0

    def visit_call(self, call):
        post = super().visit_call(call)
        if post.op != self.q_op:
            return post
        region, types = extract_region(call)
        if not region:
            return post
        memo = self.memo_map
        post_types = {}
        for k, v in types.items():
            post_types[post if k is call else memo[k]] = v
        for node in region:
            if _rule_for(node.op, self.optional) is None:
                if self.hard_fail:
                    raise ValueError(f"FakeQuantizationToInteger: found no rewrite rule for "
                                     f"{node.op.name}")
                return post
        try:
            out = _RegionRewriter(post_types, self.optional, post_types[post]).rewrite(post)
        except Exception:
            if self.hard_fail:
                raise
            return post
        self.count += 1
        return out


class _QATRewriter(ExprMutator):
    """Converts single listed ops whose inputs are all dequantize calls (TVM's QATRewriter)."""

    def __init__(self, hard_fail: bool, optional: frozenset):
        super().__init__()
        self.hard_fail = hard_fail
        self.optional = optional
        self.dq_op = Op.get("qnn.dequantize")
        self.count = 0

    def _inputs(self, call):
        """Affine types of the dequantize inputs of ``call``; None if another input feeds it."""
        types: dict = {}
        stack = list(call.args)
        while stack:
            e = stack.pop()
            t = type(e)
            if t is Call and e.op == self.dq_op:
                types[e] = TensorAffineType(e.args[1], e.args[2], _dtype_of(e.args[0]),
                                            e.attrs.axis)
            elif t is Tuple:
                stack.extend(e.fields)
            elif t is TupleGetItem:
                stack.append(e.tuple_value)
            elif t is not Constant:
                return None
        return types

    def visit_call(self, call):
        post = super().visit_call(call)
        op = post.op
        if not (isinstance(op, Op) and op.name in QAT_OPS and op.get_attr(RULE) is not None):
            return post
        types = self._inputs(post)
        if not types:
            return post
        try:
            out = _RegionRewriter(types, self.optional, qat_root=post).rewrite(post)
        except Exception:
            if self.hard_fail:
                raise
            return post
        self.count += 1
        return out


def fake_quantization_to_integer(func, hard_fail: bool = False, use_qat: bool = False,
                                 optional_qnn_ops=None):
    """FakeQuantizationToInteger on one type-checked function or expression."""
    _ensure_rules()
    optional = frozenset(optional_qnn_ops or ())
    out = _FakeQuantizationRewriter(hard_fail, optional).visit(func)
    if use_qat:
        from .infer_type import InferTypeLocal

        InferTypeLocal(out)
        out = _QATRewriter(hard_fail, optional).visit(out)
    return out


@register("FakeQuantizationToInteger")
def FakeQuantizationToInteger(hard_fail: bool = False, use_qat: bool = False,  # noqa: N802
                              optional_qnn_ops=None):
    """Function pass (opt 0, requires InferType and DivToMul): fake-quantized regions to qnn.

    Parameters
    ----------
    hard_fail : bool
        Raise when a region cannot be converted instead of leaving it as it is.
    use_qat : bool
        Also convert single ops whose inputs are all dequantized (quantization-aware mode).
    optional_qnn_ops : list of str
        Ops whose ``FTVMOptionalFakeQuantizationToInteger`` rule may be used (e.g. nn.softmax).
    """
    _ensure_rules()
    optional = frozenset(optional_qnn_ops or ())

    def transform(func, mod, ctx):
        m = _FakeQuantizationRewriter(hard_fail, optional)
        out = m.visit(func)
        count = m.count
        if use_qat:
            from .infer_type import InferTypeLocal

            InferTypeLocal(out, mod)
            q = _QATRewriter(hard_fail, optional)
            out = q.visit(out)
            count += q.count
        record_stat("fake quantized regions converted", count)
        return out

    return function_pass(transform, opt_level=0, name="FakeQuantizationToInteger",
                         required=["InferType", "DivToMul"], needs=["typed"])



# TVM keeps the rules in this module's namespace (python/tvm/relay/transform/
# fake_quantization_to_integer.py); code registering its own rules imports the helpers from
# here. Loaded on first use: the rules need the qnn ops, registered after relay.transform.
_RULE_HELPERS = frozenset({
    "approx_equal", "fold_constant", "get_binary_types", "get_zeros", "infer_shape",
    "register_binary_identity", "register_binary_qnn", "register_unary_identity",
    "register_unary_qnn", "dequantize", "quantize",
})


def __getattr__(name: str):
    if name in _RULE_HELPERS:
        from . import fake_quantization_to_integer_rules as rules

        return getattr(rules, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
