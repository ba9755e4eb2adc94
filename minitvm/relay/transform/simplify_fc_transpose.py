"""SimplifyFCTranspose and DenseToSparse: rewrite ``nn.dense`` weights named by the caller.

* SimplifyFCTranspose(target_weight_name): ``nn.dense(x, transpose(%w, [1, 0]))`` with ``%w``
  listed becomes ``nn.dense(x, %w.T)`` where ``%w.T`` is a new parameter of the transposed shape
  (the caller binds the pre-transposed weight, see ``data_dep_optimization.simplify_fc_transpose``);
* DenseToSparse(weight_name, weight_shape): ``nn.dense(x, %w)`` with ``%w`` listed becomes
  ``nn.sparse_dense(x, %w.data, %w.indices, %w.indptr)``; ``weight_shape[i]`` is the 5-tuple
  (bsr data shape (3 dims), number of indices, number of indptr entries).

The new vars become parameters after the function's used original parameters (as TVM). One new
var per weight, even when it feeds several dense calls (TVM makes one per call).
"""

from __future__ import annotations

from ...ir.op import Op
from ...ir.type import TensorType
from ...transform.stats import record_stat
from ..analysis.free_vars import free_vars
from ..expr import Call, Var
from ..expr_functor import ExprMutator
from ..op.nn.attrs import SparseDenseAttrs
from ._pass_helpers import make_function_pass, register

__all__ = ["SimplifyFCTranspose", "DenseToSparse", "simplify_fc_transpose", "dense_to_sparse"]


class _DenseWeightRewriter(ExprMutator):
    def __init__(self, rewrite_weight):
        super().__init__()
        self.dense = Op.get("nn.dense")
        self.rewrite_weight = rewrite_weight
        self.new_vars: dict = {}
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        if call.op is not self.dense:
            return new
        out = self.rewrite_weight(self, new)
        if out is None:
            return new
        self.count += 1
        return out


def _fc_transpose_rule(names):
    transpose = Op.get("transpose")

    def rule(self, call):
        w = call.args[1]
        if not (isinstance(w, Call) and w.op is transpose and isinstance(w.args[0], Var)):
            return None
        var = w.args[0]
        if var.name_hint not in names:
            return None
        wt = self.new_vars.get(var)
        if wt is None:
            t = var._checked_type or var.type_annotation
            if not isinstance(t, TensorType) or len(t.shape) != 2:
                raise TypeError(f"SimplifyFCTranspose: %{var.name_hint} must be a 2-D tensor")
            wt = self.new_vars[var] = Var(var.name_hint + ".T",
                                          TensorType((t.shape[1], t.shape[0]), t.dtype))
        return Call(call.op, [call.args[0], wt], call.attrs, call.type_args, call.span)

    return rule


def _dense_to_sparse_rule(shapes: dict):
    sparse_dense = Op.get("nn.sparse_dense")

    def rule(self, call):
        w = call.args[1]
        if not isinstance(w, Var) or w.name_hint not in shapes:
            return None
        parts = self.new_vars.get(w)
        if parts is None:
            ws = [int(d) for d in shapes[w.name_hint]]
            if len(ws) != 5:
                raise ValueError(f"DenseToSparse: the shape entry of {w.name_hint!r} must have 5 "
                                 f"numbers (data shape, indices, indptr), got {ws}")
            prefix = w.name_hint
            parts = self.new_vars[w] = (
                Var(prefix + ".data", TensorType(ws[0:3], "float32")),
                Var(prefix + ".indices", TensorType((ws[3],), "int32")),
                Var(prefix + ".indptr", TensorType((ws[4],), "int32")))
        return Call(sparse_dense, [call.args[0], *parts], SparseDenseAttrs(sparse_lhs=False))

    return rule


def _rewrite(func, rule, stat: str | None = None):
    m = _DenseWeightRewriter(rule)
    body = m.visit(func.body)
    if stat is not None:
        record_stat(stat, m.count)
    if body is func.body:
        return func
    added = [v for vs in m.new_vars.values() for v in (vs if isinstance(vs, tuple) else (vs,))]
    added_set = set(added)
    kept = [v for v in free_vars(body) if v not in added_set]
    return func.with_fields(params=kept + added, body=body)


def simplify_fc_transpose(func, target_weight_name, stat: str | None = None):
    return _rewrite(func, _fc_transpose_rule(set(target_weight_name)), stat)


def dense_to_sparse(func, weight_name, weight_shape, stat: str | None = None):
    if len(weight_name) != len(weight_shape):
        raise ValueError("DenseToSparse: weight_name and weight_shape differ in length")
    return _rewrite(func, _dense_to_sparse_rule(dict(zip(weight_name, weight_shape))), stat)


@register("SimplifyFCTranspose")
def SimplifyFCTranspose(target_weight_name):  # noqa: N802 - TVM's name
    """Function pass (opt 4, requires DeadCodeElimination): drop transposes of dense weights."""
    names = list(target_weight_name)
    return make_function_pass(lambda f, mod, ctx: simplify_fc_transpose(f, names, "rewritten denses"), opt_level=4,
                              name="SimplifyFCTranspose", required=["DeadCodeElimination"])


@register("DenseToSparse")
def DenseToSparse(weight_name, weight_shape):  # noqa: N802 - TVM's name
    """Function pass (opt 4, requires DeadCodeElimination): nn.dense -> nn.sparse_dense (BSR)."""
    names, shapes = list(weight_name), [list(s) for s in weight_shape]
    return make_function_pass(lambda f, mod, ctx: dense_to_sparse(f, names, shapes, "sparsified denses"),
                              opt_level=4, name="DenseToSparse",
                              required=["DeadCodeElimination"])
