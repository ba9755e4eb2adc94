"""CombineParallelBatchMatmul(min_num_branches=3): batch_matmuls sharing their left operand
become one over the right operands concatenated along N; each branch slices its columns."""

from __future__ import annotations

from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..op.nn.nn import batch_matmul
from ..op.transform import concatenate, strided_slice
from .function_pass import function_pass
from .parallel_op_combiner import ParallelOpCombiner


class BatchMatmulCombiner(ParallelOpCombiner):
    op_name = "nn.batch_matmul"

    def is_supported(self, call):
        return not call.attrs.transpose_a

    def key(self, call):
        b = call.args[1]._checked_type
        n_axis = 1 if call.attrs.transpose_b else 2
        other = tuple(d for i, d in enumerate(b.shape) if i != n_axis)
        return other, b.dtype, call.attrs.transpose_b, call.attrs.out_dtype

    def combine(self, calls, visit):
        a = calls[0].attrs
        n_axis = 1 if a.transpose_b else 2
        widths = [int(c.args[1]._checked_type.shape[n_axis]) for c in calls]
        rhs = concatenate([visit(c.args[1]) for c in calls], axis=n_axis)
        y = batch_matmul(visit(calls[0].args[0]), rhs, out_dtype=a.out_dtype,
                         transpose_a=a.transpose_a, transpose_b=a.transpose_b)
        outs, offset = [], 0
        for w in widths:
            outs.append(strided_slice(y, begin=[offset], end=[offset + w], axes=[2]))
            offset += w
        return outs


@register_pass("CombineParallelBatchMatmul")
def CombineParallelBatchMatmul(min_num_branches: int = 3):
    """Combine parallel batch_matmuls (function pass, opt_level 4, requires InferType)."""

    def transform(func, mod, ctx):
        c = BatchMatmulCombiner(min_num_branches)
        out = c.run(func)
        record_stat("combined groups", c.combined)
        return out

    return function_pass(transform, opt_level=4, name="CombineParallelBatchMatmul",
                         required=["InferType"], needs=["typed"])
