"""DenseOfTransposeToMatmul: ``nn.dense(x, transpose(w))`` with ``w`` computed at run time
becomes ``nn.matmul(x, w)``, which reads ``w`` as the ``[K, N]`` matrix it is.

The importers write ``a @ b`` for a 2-D ``b`` (ONNX MatMul, torch.matmul) as
``dense(a, transpose(b))``: for a weight, FoldConstant folds the transpose and the dense takes
the weight prepacked at build time. When ``b`` arrives at run time (a graph input, or an
activation) the transpose stays a kernel of its own that copies all of ``b`` on every call,
column-strided: a 768 x 768 ``b`` took 255 us of transpose before a 1-row product of 50-95 us
(one thread, AVX-512). The generated matmul reads ``b`` in place instead (gemm.py:
``_gen_matmul``, few rows) or packs it as it would the transpose.

Only float32 products of a 2-D ``x`` are rewritten (the generated GEMM's domain; other dtypes
keep dense's own paths), and only when ``w`` is not a constant: constants were folded by the
FoldConstant before this pass, and a dense of a constant keeps the passes and the build-time
packing written for dense. Needs types (InferType).
"""

from __future__ import annotations

from ...ir.op import Op
from ...ir.type import TensorType
from ...transform.stats import record_stat
from ..expr import Call, Constant
from ..expr_functor import ExprMutator, dataflow_post_order
from ..op.nn.nn import matmul
from ._pass_helpers import register
from .function_pass import function_pass

__all__ = ["DenseOfTransposeToMatmul", "dense_of_transpose_to_matmul"]


def _float32_matrix(e) -> bool:
    t = getattr(e, "_checked_type", None)
    return isinstance(t, TensorType) and len(t.shape) == 2 and t.dtype == "float32"


def _swapped_matrix(e):
    """``w`` when ``e`` is ``transpose(w)`` swapping the two axes of a non-constant float32
    matrix, else None."""
    if not (isinstance(e, Call) and e.op is Op.get("transpose")):
        return None
    w = e.args[0]
    axes = e.attrs.axes
    if axes is not None and [int(a) % 2 for a in axes] != [1, 0]:
        return None
    return w if _float32_matrix(w) and not isinstance(w, Constant) else None


class _Rewriter(ExprMutator):
    def __init__(self):
        super().__init__()
        self.dense = Op.get("nn.dense")
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        if call.op is not self.dense or not _float32_matrix(call.args[0]) or \
                not _float32_matrix(call):
            return new
        if _swapped_matrix(call.args[1]) is None:  # (checked on the typed original)
            return new
        self.count += 1
        attrs = new.attrs
        return matmul(new.args[0], new.args[1].args[0], units=attrs.units,
                      out_dtype=attrs.out_dtype)


def dense_of_transpose_to_matmul(func):
    """DenseOfTransposeToMatmul on one type-checked function: ``(function, rewrites)``."""
    dense = Op.get("nn.dense")
    if not any(type(e) is Call and e.op is dense for e in dataflow_post_order(func.body)):
        return func, 0  # (no dense: no rewrite walk)
    r = _Rewriter()
    out = r.visit(func)
    return (out, r.count) if r.count else (func, 0)


@register("DenseOfTransposeToMatmul")
def DenseOfTransposeToMatmul():  # noqa: N802 - the pass factory's name
    """Function pass (opt 3, requires InferType): ``dense(x, transpose(w))`` of a run-time
    float32 ``w`` as ``matmul(x, w)`` (minitvm's; TVM has no such pass)."""

    def transform(func, mod, ctx):
        out, count = dense_of_transpose_to_matmul(func)
        record_stat("dense of a run-time transpose made a matmul", count)
        return out

    return function_pass(transform, opt_level=3, name="DenseOfTransposeToMatmul",
                         required=["InferType"], needs=["typed"])
