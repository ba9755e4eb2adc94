"""CombineParallelBatchMatmul(min_num_branches=3): batch_matmuls sharing their left operand
become one over the right operands concatenated along N; each branch slices its columns."""

from __future__ import annotations

from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call
from ..op.nn.nn import batch_matmul
from ..op.transform import concatenate, strided_slice
from .function_pass import function_pass
from .parallel_op_combiner import ParallelOpCombiner


class BatchMatmulCombiner(ParallelOpCombiner):
    op_name = "nn.batch_matmul"

    def is_supported(self, call):
        # TVM concatenates the right operands on axis 1: their (batch, N, K) layout
        return not call.attrs.transpose_a and call.attrs.transpose_b and \
            len(call.args[1]._checked_type.shape) == 3

    def key(self, call):
        b = call.args[1]._checked_type
        return b.dtype, call._checked_type.dtype, b.shape[0], call.attrs.out_dtype

    def combine_root(self, calls, visit):
        rhs = concatenate([visit(c.args[1]) for c in calls], axis=1)
        return batch_matmul(visit(calls[0].args[0]), rhs, out_dtype=calls[0].attrs.out_dtype)

    def is_arg_compatible(self, a, b, index):
        return True

    def combine_following(self, data, branches, depth, parent_index, visit):
        call = branches[0][depth]
        args = [data if i == parent_index else
                concatenate([visit(b[depth].args[i]) for b in branches], axis=-1)
                for i in range(len(call.args))]
        return Call(call.op, args, call.attrs)

    def split(self, data, branches, depth):
        outs, index = [], 0
        for br in branches:
            features = int(br[0].args[1]._checked_type.shape[1])
            outs.append(strided_slice(data, begin=[0, 0, index], end=[-1, -1, features],
                                      strides=[1, 1, 1], slice_mode="size"))
            index += features
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
