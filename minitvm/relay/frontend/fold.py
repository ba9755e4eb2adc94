"""col2im for the Relay importers (PyTorch ``aten::col2im``, ONNX ``Col2Im``): the columns
rearranged to [N, C, kh*oh, kw*ow], a zero row and column appended, the image's rows and
columns gathered by the constant tables of ``frontend_common.fold_plan`` and the taps summed.
All ops with a native compute; the takes fuse into the sum."""

from __future__ import annotations

from ...frontend_common.fold_plan import fold_plan
from .. import expr as _expr
from .. import op as _op
from ..op import nn as _nn

__all__ = ["col2im"]


def col2im(x, shape, size, kernel, dilation, pads_begin, pads_end, stride, fail):
    """Fold ``x`` [N, C*kh*kw, L] (``shape``, static) into [N, C, H, W]."""
    n, ck, blocks = shape
    kh, kw = kernel
    if ck % (kh * kw):
        raise fail(f"{ck} column rows are not a multiple of the kernel's {kh}x{kw} taps")
    c = ck // (kh * kw)
    plan = fold_plan(size, kernel, dilation, pads_begin, pads_end, stride, blocks, fail)
    oh, ow = plan.windows
    y = _op.reshape(x, (n, c, kh, kw, oh, ow))
    y = _op.reshape(_op.transpose(y, [0, 1, 2, 4, 3, 5]), (n, c, kh * oh, kw * ow))
    y = _nn.pad(y, ((0, 0), (0, 0), (0, 1), (0, 1)))
    y = _op.take(y, _expr.const(plan.rows), axis=2)  # n c H Th kw*ow+1
    y = _op.take(y, _expr.const(plan.cols), axis=4)  # n c H Th W Tw
    return _op.sum(y, axis=[3, 5])
