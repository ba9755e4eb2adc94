"""col2im for the Relay importers (PyTorch ``aten::col2im``, ONNX ``Col2Im``): the columns
rearranged to [N, C, kh*oh, kw*ow], a zero row and column appended, and each output pixel the
sum of its taps, gathered through the constant tables of ``frontend_common.fold_plan``: one
injective kernel (the gathers and the adds fuse), no scatter. The columns and the image are
materialized (stop_fusion on both sides): an elementwise producer fused into the gathers would
be recomputed for every tap that reads it (FuseFormer's GELU, up to nine times), and the image
fused into a gathering consumer (the next soft split's unfold) recomputed for every window
that reads it. So are the rearranged, padded columns: fused into the gathers, every tap
recomputed the transpose's and the pad's index arithmetic (FuseFormer's 7x7 stride-3 fold of
2x1568x121 columns: 1.80 ms as one kernel, 0.74 ms as a copy and the gathers)."""

from __future__ import annotations

from ...frontend_common.fold_plan import fold_plan
from .. import expr as _expr
from .. import op as _op
from ..op import annotation as _annotation
from ..op import nn as _nn

__all__ = ["col2im"]


def col2im(x, shape, size, kernel, dilation, pads_begin, pads_end, stride, fail):
    """Fold ``x`` [N, C*kh*kw, L] (``shape``: static but for N, which may be dynamic) into
    [N, C, H, W]. The reshapes copy N (Relay's 0) rather than write it, so a dynamic batch
    keeps its size."""
    _, ck, blocks = shape
    kh, kw = kernel
    plan = fold_plan(size, kernel, dilation, pads_begin, pads_end, stride, ck, blocks, fail)
    c, (oh, ow) = plan.channels, plan.windows
    y = _op.reshape(_annotation.stop_fusion(x), (0, c, kh, kw, oh, ow))
    y = _op.reshape(_op.transpose(y, [0, 1, 2, 4, 3, 5]), (0, c, kh * oh, kw * ow))
    y = _annotation.stop_fusion(_nn.pad(y, ((0, 0), (0, 0), (0, 1), (0, 1))))
    terms = []
    for t in range(plan.rows.shape[1]):
        r = _op.take(y, _expr.const(plan.rows[:, t].copy()), axis=2)  # n c H kw*ow+1
        terms += [_op.take(r, _expr.const(plan.cols[:, u].copy()), axis=3)  # n c H W
                  for u in range(plan.cols.shape[1])]
    while len(terms) > 1:  # a balanced tree of adds
        terms = [_op.add(terms[i], terms[i + 1]) if i + 1 < len(terms) else terms[i]
                 for i in range(0, len(terms), 2)]
    return _annotation.stop_fusion(terms[0])
