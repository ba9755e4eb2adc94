"""col2im (PyTorch's ``F.fold`` / ``nn.Fold``, ONNX's ``Col2Im``) as gathers: the constant index
tables both dialects' importers build it from.

Columns [N, C*kh*kw, L] hold, for each of the L = oh*ow sliding windows, every kernel tap of
every channel; folding sums each tap into the image position it was read from. Rearranged to
[N, C, kh*oh, kw*ow] (row i*oh + y is tap row i of window row y) with one zero row and column
appended, output row Y (of the unpadded image) is the sum over the taps with i*dh + y*sh = Y +
pad_top; ``rows[Y, t]`` lists them, the zero row where Y has fewer than the most. So the fold is
two takes and a sum over the two tap axes: injective work and one reduction, no scatter."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FoldPlan", "fold_plan", "onnx_col2im_geometry"]


@dataclass
class FoldPlan:
    channels: int  # C: the column rows over the kernel's kh*kw taps
    windows: tuple[int, int]  # (oh, ow)
    rows: np.ndarray  # int64 [H, Th]: row i*oh + y of each contributing tap, kh*oh if none
    cols: np.ndarray  # int64 [W, Tw]


def _taps(size: int, k: int, d: int, pad: int, s: int, o: int) -> np.ndarray:
    per = [[] for _ in range(size)]
    for i in range(k):
        for y in range(o):
            pos = i * d + y * s - pad
            if 0 <= pos < size:
                per[pos].append(i * o + y)
    width = max(1, max(len(p) for p in per))
    out = np.full((size, width), k * o, dtype="int64")
    for pos, p in enumerate(per):
        out[pos, :len(p)] = p
    return out


def fold_plan(size, kernel, dilation, pads_begin, pads_end, stride, column_rows: int,
              blocks: int, fail) -> FoldPlan:
    """The plan of folding columns [N, ``column_rows``, ``blocks``] into an image of ``size``
    (H, W); each of ``kernel``, ``dilation``, the pads and ``stride`` is a pair. ``fail(msg)``
    builds the error for column rows or a window count that do not match."""
    (h, w), (kh, kw), (dh, dw), (sh, sw) = size, kernel, dilation, stride
    (pt, pl), (pb, pr) = pads_begin, pads_end
    if min(kh, kw, dh, dw, sh, sw) < 1:
        raise fail(f"kernel {kernel}, dilation {dilation} and stride {stride} must be positive")
    if column_rows % (kh * kw):
        raise fail(f"{column_rows} column rows are not a multiple of the kernel's {kh}x{kw} "
                   "taps")
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    if oh <= 0 or ow <= 0 or oh * ow != blocks:
        raise fail(f"{blocks} windows given, an output of {h}x{w} with kernel {kernel}, "
                   f"dilation {dilation}, padding {pads_begin}/{pads_end} and stride {stride} "
                   f"has {max(oh, 0)}x{max(ow, 0)}")
    return FoldPlan(column_rows // (kh * kw), (oh, ow), _taps(h, kh, dh, pt, sh, oh), _taps(w, kw, dw, pl, sw, ow))


def onnx_col2im_geometry(image_shape, block_shape, attrs: dict, fail) -> tuple:
    """ONNX Col2Im's (size, kernel, dilation, pads begin, pads end, stride) pairs from its
    constant ``image_shape`` and ``block_shape`` inputs and attributes; 2-D images only."""
    size = [int(v) for v in np.asarray(image_shape).reshape(-1)]
    block = [int(v) for v in np.asarray(block_shape).reshape(-1)]
    if len(size) != 2 or len(block) != 2:
        raise fail(f"only 2-D images are supported, got image_shape {size} and block_shape "
                   f"{block}")
    dil = [int(v) for v in attrs.get("dilations", [1, 1])]
    pads = [int(v) for v in attrs.get("pads", [0, 0, 0, 0])]
    strides = [int(v) for v in attrs.get("strides", [1, 1])]
    return tuple(size), tuple(block), tuple(dil), tuple(pads[:2]), tuple(pads[2:]), \
        tuple(strides)
