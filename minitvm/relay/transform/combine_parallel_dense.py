"""CombineParallelDense(min_num_branches=3, to_batch=True): dense ops reading the same input
become one ``nn.batch_matmul`` over stacked weights (to_batch, equal weight shapes) or one wider
dense over concatenated weights; each branch takes its slice of the result."""

from __future__ import annotations

from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..op.nn.nn import batch_matmul, dense
from ..op.transform import concatenate, squeeze, stack, strided_slice
from .function_pass import function_pass
from .parallel_op_combiner import ParallelOpCombiner


class DenseCombiner(ParallelOpCombiner):
    op_name = "nn.dense"

    def __init__(self, min_num_branches: int, to_batch: bool):
        super().__init__(min_num_branches)
        self.to_batch = to_batch

    def is_supported(self, call):
        return len(call.args[0]._checked_type.shape) == 2 or not self.to_batch

    def key(self, call):
        w = call.args[1]._checked_type
        shape = tuple(w.shape) if self.to_batch else tuple(w.shape[1:])
        return shape, w.dtype, call.attrs.out_dtype

    def combine(self, calls, visit):
        x = visit(calls[0].args[0])
        weights = [visit(c.args[1]) for c in calls]
        if self.to_batch:
            y = batch_matmul(stack([x] * len(calls), axis=0), stack(weights, axis=0),
                             out_dtype=calls[0].attrs.out_dtype)
            return [squeeze(strided_slice(y, begin=[i], end=[i + 1], axes=[0]), axis=[0])
                    for i in range(len(calls))]
        widths = [int(c.args[1]._checked_type.shape[0]) for c in calls]
        y = dense(x, concatenate(weights, axis=0), units=sum(widths),
                  out_dtype=calls[0].attrs.out_dtype)
        last = len(calls[0]._checked_type.shape) - 1
        outs, offset = [], 0
        for w in widths:
            outs.append(strided_slice(y, begin=[offset], end=[offset + w], axes=[last]))
            offset += w
        return outs


@register_pass("CombineParallelDense")
def CombineParallelDense(min_num_branches: int = 3, to_batch: bool = True):
    """Combine parallel dense ops (function pass, opt_level 4, requires InferType)."""

    def transform(func, mod, ctx):
        c = DenseCombiner(min_num_branches, to_batch)
        out = c.run(func)
        record_stat("combined groups", c.combined)
        return out

    return function_pass(transform, opt_level=4, name="CombineParallelDense",
                         required=["InferType"], needs=["typed"])
