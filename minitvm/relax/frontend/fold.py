"""col2im for the Relax importers (ONNX ``Col2Im``, torch.export's ``col2im``): the columns
rearranged to [N, C, kh*oh, kw*ow], a zero row and column appended, the image's rows and
columns gathered by the constant tables of ``frontend_common.fold_plan`` and the taps summed.
The columns, the padded rearranged columns and the image are materialized (``R.stop_fusion``,
where Relay's importer places ``annotation.stop_fusion``): an elementwise producer fused into
the gathers is recomputed for every tap that reads it, the rearrangement's index arithmetic for
every tap, and the image fused into a gathering consumer for every window that reads it.
``ctx`` is the importer's context (``emit``, ``shape``, ``fail``); the batch may be symbolic."""

from __future__ import annotations

from ...frontend_common.fold_plan import fold_plan
from .. import op as _op
from ..expr import const

__all__ = ["col2im"]


def col2im(ctx, x, size, kernel, dilation, pads_begin, pads_end, stride):
    """Fold ``x`` [N, C*kh*kw, L] into [N, C, H, W]."""
    shape = ctx.shape(x)
    if len(shape) != 3 or not all(isinstance(d, int) for d in shape[1:]):
        raise ctx.fail(f"col2im needs a 3-D input with static rows and windows (the batch may "
                       f"be symbolic), got {shape}")
    n, ck, blocks = shape
    kh, kw = kernel
    plan = fold_plan(size, kernel, dilation, pads_begin, pads_end, stride, ck, blocks,
                     ctx.fail)
    c, (oh, ow) = plan.channels, plan.windows
    y = ctx.emit(_op.reshape(_op.stop_fusion(x), [n, c, kh, kw, oh, ow]))
    y = ctx.emit(_op.permute_dims(y, [0, 1, 2, 4, 3, 5]))
    y = ctx.emit(_op.reshape(y, [n, c, kh * oh, kw * ow]))
    y = ctx.emit(_op.stop_fusion(_op.nn.pad(y, [0, 0, 0, 0, 0, 1, 0, 1])))
    y = ctx.emit(_op.take(y, const(plan.rows), 2))  # n c H Th kw*ow+1
    y = ctx.emit(_op.take(y, const(plan.cols), 4))  # n c H Th W Tw
    return ctx.emit(_op.stop_fusion(_op.sum(y, [3, 5])))
