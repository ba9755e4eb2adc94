"""CombineParallelOpBatch(op_name, batch_op_name, min_num_branches=3): calls of ``op_name`` that
read the same input and whose arguments all have equal shapes and dtypes become one call of
``batch_op_name`` on the stacked arguments (TVM's ParallelOpBatchCombiner, the generic form of
CombineParallelDense's batch mode).

Each argument position is stacked on a new axis 0 over the branches (the shared input too), the
batch op is called with its default attributes (TVM passes none, so a batch op with an
attribute type, such as ``nn.batch_matmul``, fails to type-check there), and the elementwise/broadcast ops that follow every
branch alike are combined level by level on stacked arguments (a 1-D argument first gets a unit
axis, ``(j,) -> (1, j)``, so it broadcasts per batch). Each branch then takes
``squeeze(split(result, branches)[k], axis=[0])``. Unlike TVM, a following level whose combined
call would not type-check (e.g. ``nn.bias_add`` wants a 1-D bias) ends the combination there
instead of producing an ill-typed program.
"""

from __future__ import annotations

from ...ir.op import Op
from ...ir.type import TensorType
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call, TupleGetItem
from ..op.transform import expand_dims, split, squeeze, stack
from .function_pass import function_pass
from .parallel_op_combiner import ParallelOpCombiner, same_shape

__all__ = ["CombineParallelOpBatch", "combine_parallel_op_batch"]


def _get_op(name, what: str) -> Op:
    if not isinstance(name, str):
        raise TypeError(f"CombineParallelOpBatch: {what} must be an operator name, got "
                        f"{type(name).__name__}")
    try:
        return Op.get(name)
    except (KeyError, ValueError) as err:
        raise ValueError(f"CombineParallelOpBatch: {what} {name!r} is not a registered "
                         "operator") from err


def _stacked(ty: TensorType, n: int) -> TensorType:
    """The type of ``stack`` of ``n`` tensors of type ``ty`` (1-D ones first get a unit axis)."""
    shape = (1, *ty.shape) if len(ty.shape) == 1 else tuple(ty.shape)
    return TensorType((n, *shape), ty.dtype)


class ParallelOpBatchCombiner(ParallelOpCombiner):
    """Stacks the arguments of parallel calls into one batch op call."""

    def __init__(self, op_name: str, batch_op_name: str, min_num_branches: int):
        super().__init__(min_num_branches)
        self.op_name = op_name
        self.batch_op = _get_op(batch_op_name, "batch_op_name")
        self._data_type = None

    def key(self, call):
        """Calls combine when every argument has the same shape and dtype."""
        return tuple((tuple(a._checked_type.shape), a._checked_type.dtype) for a in call.args)

    def combine_root(self, calls, visit):
        n = len(calls)
        args = [stack([visit(c.args[i]) for c in calls], axis=0)
                for i in range(len(calls[0].args))]
        attrs_type = getattr(self.batch_op, "attrs_type", None)
        attrs = attrs_type() if attrs_type is not None else None
        rel = self.batch_op.get_attr("FTypeRelation")
        arg_types = [TensorType((n, *a._checked_type.shape), a._checked_type.dtype)
                     for a in calls[0].args]
        try:
            self._data_type = rel(arg_types, attrs)
        except (TypeError, ValueError) as err:
            raise ValueError(f"CombineParallelOpBatch: {self.batch_op.name} cannot take the "
                             f"stacked arguments of {n} {self.op_name} calls: {err}") from err
        return Call(self.batch_op, args, attrs)

    def is_arg_compatible(self, a, b, index):
        return same_shape(a.args[index], b.args[index])

    def _check_level(self, branches, depth, parent_index):
        if not super()._check_level(branches, depth, parent_index):
            return False
        call = branches[0][depth]
        n = len(branches)
        types = [self._data_type if i == parent_index else _stacked(a._checked_type, n)
                 for i, a in enumerate(call.args)]
        try:
            self._next_type = call.op.get_attr("FTypeRelation")(types, call.attrs)
        except (TypeError, ValueError):
            return False  # TVM would build an ill-typed call here
        return True

    def combine_following(self, data, branches, depth, parent_index, visit):
        call = branches[0][depth]
        args = []
        for i in range(len(call.args)):
            if i == parent_index:
                args.append(data)
                continue
            parts = []
            for br in branches:
                arg = br[depth].args[i]
                a = visit(arg)
                if len(arg._checked_type.shape) == 1:
                    a = expand_dims(a, 0, 1)
                parts.append(a)
            args.append(stack(parts, axis=0))
        self._data_type = self._next_type
        return Call(call.op, args, call.attrs)

    def split(self, data, branches, depth):
        parts = split(data, len(branches), axis=0)
        return [squeeze(TupleGetItem(parts.astuple(), k), axis=[0])
                for k in range(len(branches))]


def combine_parallel_op_batch(func, op_name: str, batch_op_name: str,
                              min_num_branches: int = 3):
    """``func`` (typed) with its parallel ``op_name`` calls combined into ``batch_op_name``."""
    return ParallelOpBatchCombiner(op_name, batch_op_name, min_num_branches).run(func)


@register_pass("CombineParallelOpBatch")
def CombineParallelOpBatch(op_name: str, batch_op_name: str,  # noqa: N802 - TVM's name
                           min_num_branches: int = 3):
    """Combine parallel ops into one batch op (function pass, opt_level 4, requires InferType).

    Parameters
    ----------
    op_name : str
        The operator whose parallel calls are combined.
    batch_op_name : str
        The operator called on the stacked arguments.
    min_num_branches : int
        The fewest parallel calls worth combining.
    """
    _get_op(op_name, "op_name")
    _get_op(batch_op_name, "batch_op_name")
    if not isinstance(min_num_branches, int) or min_num_branches < 1:
        raise ValueError("CombineParallelOpBatch: min_num_branches must be a positive int, "
                         f"got {min_num_branches!r}")

    def transform(func, mod, ctx):
        c = ParallelOpBatchCombiner(op_name, batch_op_name, min_num_branches)
        out = c.run(func)
        record_stat("combined groups", c.combined)
        return out

    return function_pass(transform, opt_level=4, name="CombineParallelOpBatch",
                         required=["InferType"], needs=["typed"])
