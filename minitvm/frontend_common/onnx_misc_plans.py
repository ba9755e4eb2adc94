"""What the Relay and Relax ONNX importers share of ``LpPool``, ``CenterCropPad``, ``Det``,
``Compress`` and ``MaxUnpool``: the output sizes, crop and pad amounts, index tables and
constant counts each lowers to (plain numpy, no IR).

- LpPool is ``(sum over the window of |x|^p)^(1/p)``: an average pool over the zero-padded
  input (pads as data, so the average divides by the taps inside it) times the constant
  count of those taps.
- Det of an n x n matrix is Leibniz's sum over the n! permutations of the signed products
  ``prod_i a[i, perm(i)]``: one gather with a constant index, a product and a signed sum,
  for the small n where n! stays small."""

from __future__ import annotations

import itertools
import math

import numpy as np

__all__ = ["lp_pool_geometry", "center_crop_pad_plan", "leibniz_plan", "compress_indices",
           "unpool_output_shape", "MAX_DET_SIZE"]

MAX_DET_SIZE = 6  # 720 permutations of 6 terms


def _pads(auto_pad: str, sizes, kernel, strides, dilations, pads):
    n = len(kernel)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for i in range(n):
            eff = (kernel[i] - 1) * dilations[i] + 1
            total = max((-(-sizes[i] // strides[i]) - 1) * strides[i] + eff - sizes[i], 0)
            small = total // 2
            out.append((total - small, small) if auto_pad == "SAME_LOWER" else
                       (small, total - small))
        return [b for b, _ in out], [e for _, e in out]
    if auto_pad == "VALID":
        return [0] * n, [0] * n
    pads = list(pads or [0] * (2 * n))
    return pads[:n], pads[n:]


def lp_pool_geometry(sizes, attrs: dict, fail):
    """(kernel, strides, dilations, pads begin, pads end, output sizes, counts) of an LpPool
    over spatial ``sizes``: ``counts`` [*out] is how many taps of each window fall inside the
    zero-padded input (ONNX's output size: floor, or ceil dropping a window that would start
    in the end padding)."""
    kernel = [int(k) for k in attrs["kernel_shape"]]
    n = len(kernel)
    if len(sizes) != n or not all(isinstance(s, int | np.integer) for s in sizes):
        raise fail(f"the spatial dims {list(sizes)} must be static and match kernel_shape "
                   f"{kernel}")
    strides = [int(s) for s in attrs.get("strides", [1] * n)]
    dil = [int(d) for d in attrs.get("dilations", [1] * n)]
    auto = attrs.get("auto_pad", "NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    begin, end = _pads(auto, sizes, kernel, strides, dil, attrs.get("pads"))
    ceil = bool(attrs.get("ceil_mode", 0))
    outs, per_axis = [], []
    for i in range(n):
        padded = sizes[i] + begin[i] + end[i]
        eff = (kernel[i] - 1) * dil[i] + 1
        span = padded - eff
        if span < 0:
            raise fail(f"the window ({eff}) is larger than the padded input ({padded})")
        o = (-(-span // strides[i]) if ceil else span // strides[i]) + 1
        if ceil and (o - 1) * strides[i] >= sizes[i] + begin[i]:
            o -= 1
        taps = np.arange(o)[:, None] * strides[i] + np.arange(kernel[i])[None, :] * dil[i]
        per_axis.append((taps < padded).sum(axis=1))
        outs.append(int(o))
    counts = per_axis[0]
    for c in per_axis[1:]:
        counts = np.multiply.outer(counts, c)
    return kernel, strides, dil, begin, end, outs, counts.astype("float64")


def center_crop_pad_plan(shape, target, axes, fail):
    """Per axis (crop begin, crop end, pad begin, pad end) of CenterCropPad to ``target`` on
    ``axes`` (all when None): the larger share of an odd difference goes to the end."""
    rank = len(shape)
    axes = list(range(rank)) if axes is None else [int(a) % rank for a in axes]
    target = [int(t) for t in target]
    if len(target) != len(axes):
        raise fail(f"shape has {len(target)} values for {len(axes)} axes")
    plan = [(0, 0, 0, 0)] * rank
    for a, t in zip(axes, target, strict=True):
        d = shape[a]
        if not isinstance(d, int | np.integer):
            raise fail(f"axis {a} must be static, got {d}")
        if t < 0:
            raise fail(f"the target size must be non-negative, got {t}")
        if t < d:
            lo = (d - t) // 2
            plan[a] = (lo, d - t - lo, 0, 0)
        elif t > d:
            lo = (t - d) // 2
            plan[a] = (0, 0, lo, t - d - lo)
    return plan


def leibniz_plan(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(index [n!, n] into the row-major flattened matrix, signs [n!]) of Leibniz's formula."""
    perms = list(itertools.permutations(range(n)))
    index = np.array([[i * n + p[i] for i in range(n)] for p in perms], "int64").reshape(
        math.factorial(n), n)
    signs = np.array([_parity(p) for p in perms], "float64")
    return index, signs


def _parity(perm) -> float:
    """+1 for an even permutation, -1 for an odd one (by counting cycles)."""
    seen, sign = set(), 1.0
    for start in range(len(perm)):
        length, j = 0, start
        while j not in seen:
            seen.add(j)
            j, length = perm[j], length + 1
        if length and length % 2 == 0:
            sign = -sign
    return sign


def compress_indices(condition: np.ndarray, length: int) -> np.ndarray:
    """The positions Compress keeps along an axis of ``length``: the true entries of the
    condition (a condition longer than the axis is cut; a shorter one keeps no more)."""
    cond = np.asarray(condition).reshape(-1).astype(bool)[:length]
    return np.nonzero(cond)[0].astype("int64")


def max_unpool_output_shape(ctx, ins, attrs, in_shape) -> list[int]:
    """The MaxUnpool node's output shape: its ``output_shape`` input (an import-time value,
    through ``ctx.value``) when given, else ``unpool_output_shape`` of its attributes."""
    kernel = [int(k) for k in attrs["kernel_shape"]]
    n = len(kernel)
    strides = [int(s) for s in attrs.get("strides", [1] * n)]
    pads = [int(p) for p in attrs.get("pads", [0] * (2 * n))]
    if len(ins) > 2 and ins[2] is not None:
        return [int(v) for v in ctx.value(ins[2], "MaxUnpool's output_shape").reshape(-1)]
    return unpool_output_shape(in_shape, kernel, strides, pads)


def unpool_output_shape(in_shape, kernel, strides, pads) -> list[int]:
    """MaxUnpool's default output shape: ``(in - 1) * stride + kernel - pads`` per spatial
    axis, batch and channels kept."""
    n = len(kernel)
    return [int(in_shape[0]), int(in_shape[1])] + [
        (int(in_shape[2 + i]) - 1) * strides[i] + kernel[i] - pads[i] - pads[n + i]
        for i in range(n)]
