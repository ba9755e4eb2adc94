"""CombineParallelDense(min_num_branches=3, to_batch=True): dense ops reading the same input
become one ``nn.batch_matmul`` over stacked weights (to_batch, equal weight shapes) or one wider
dense over concatenated weights; each branch takes its slice of the result."""

from __future__ import annotations

from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call, TupleGetItem
from ..op.nn.nn import batch_matmul, dense
from ..op.transform import (
    concatenate,
    expand_dims,
    repeat,
    split,
    squeeze,
    stack,
    strided_slice,
)
from .function_pass import function_pass
from .parallel_op_combiner import ParallelOpCombiner, same_shape


class DenseCombiner(ParallelOpCombiner):
    op_name = "nn.dense"

    def __init__(self, min_num_branches: int, to_batch: bool):
        super().__init__(min_num_branches)
        self.to_batch = to_batch

    def key(self, call):
        w = call.args[1]._checked_type
        shape = tuple(w.shape) if self.to_batch else tuple(w.shape[1:])
        if self.to_batch:  # every argument of every branch must have one shape
            shape = (shape, tuple(call.args[0]._checked_type.shape))
        return shape, w.dtype, call.attrs.out_dtype

    # ---- to_batch: stack into one batch_matmul, split on the batch axis
    def combine_root(self, calls, visit):
        x = visit(calls[0].args[0])
        weights = [visit(c.args[1]) for c in calls]
        if self.to_batch:
            return batch_matmul(stack([x] * len(calls), axis=0), stack(weights, axis=0))
        units = sum(int(c.args[1]._checked_type.shape[0]) for c in calls)
        return dense(x, concatenate(weights, axis=0), units=units,
                     out_dtype=calls[0].attrs.out_dtype)

    def is_arg_compatible(self, a, b, index):
        if self.to_batch:
            # bias_add wants a 1-D bias; stacking gives (branches, 1, units): TVM builds that
            # ill-typed program, we stop the branch before it
            return a.op.name != "nn.bias_add" and same_shape(a.args[index], b.args[index])
        ta, tb = a.args[index]._checked_type, b.args[index]._checked_type
        if ta.dtype != tb.dtype or len(ta.shape) != len(tb.shape):
            return False
        if len(a._checked_type.shape) < len(ta.shape) or \
                len(b._checked_type.shape) < len(tb.shape):
            return False  # not broadcast/elemwise
        return not ta.shape or same_shape(a.args[index], b.args[index], skip=len(ta.shape) - 1)

    def combine_following(self, data, branches, depth, parent_index, visit):
        call = branches[0][depth]
        args = []
        for i, arg in enumerate(call.args):
            if i == parent_index:
                args.append(data)
                continue
            parts = []
            for br in branches:
                a = visit(br[depth].args[i])
                if self.to_batch:
                    if len(br[depth].args[i]._checked_type.shape) == 1:
                        a = expand_dims(a, 0, 1)  # (j,) -> (1, j) to broadcast per batch
                else:
                    a = self._widen(br, depth, parent_index, i, a)
                parts.append(a)
            if self.to_batch:
                args.append(stack(parts, axis=0))
            else:
                ndim = len(arg._checked_type.shape)
                args.append(concatenate(parts, axis=max(ndim - 1, 0)))
        return Call(call.op, args, call.attrs)

    @staticmethod
    def _widen(br, depth, parent_index, i, a):
        """A scalar or size-1 last dim repeated to the branch's width, so that concatenating
        the branches' arguments keeps the broadcast valid."""
        out_dim = int(br[depth].args[parent_index]._checked_type.shape[-1])
        shape = br[depth].args[i]._checked_type.shape
        ndim = len(shape)
        if ndim == 0:
            return repeat(expand_dims(a, -1, 1), out_dim, 0)
        if out_dim > 1 and int(shape[-1]) == 1:
            return repeat(a, out_dim, ndim - 1)
        return a

    def split(self, data, branches, depth):
        if self.to_batch:
            parts = split(data, len(branches), axis=0)
            return [squeeze(TupleGetItem(parts.astuple(), k), axis=[0])
                    for k in range(len(branches))]
        outs, index = [], 0
        for br in branches:
            shape = br[depth]._checked_type.shape
            width = int(shape[-1])
            lead = len(shape) - 1
            outs.append(strided_slice(data, begin=[0] * lead + [index],
                                      end=[-1] * lead + [width], strides=[1] * (lead + 1),
                                      slice_mode="size"))
            index += width
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
