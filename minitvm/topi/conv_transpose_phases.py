"""The output phases of a strided transposed convolution, each an ordinary stride-1 convolution.

Output row ``y = s*q + r`` of a transposed conv with stride ``s`` (no dilation) gathers only the
filter rows ``ky`` with ``(r + pad_before - ky) % s == 0``, from input rows
``q + (r + pad_before - ky) / s``. So for each phase ``r`` it is a stride-1 convolution over the
input with those filter rows, in descending order (flipped), over ``size_out / s`` rows, with
padding of its own. Relay's Legalize and Relax's LegalizeOps of ``nn.conv2d_transpose`` both
build their per-phase ``conv2d`` calls from this."""

from __future__ import annotations


def phases(stride: int, pad_before: int, kernel: int, size_in: int, size_out: int):
    """Per output phase ``r`` along one axis: (the filter taps the stride-1 conv reads, in its
    order; its padding before; after), or None when the phases are of unequal size, one has no
    filter tap, or one would read past a cropped input."""
    if kernel < stride or size_out % stride:
        return None
    q = size_out // stride
    out = []
    for r in range(stride):
        taps = [k for k in range(kernel - 1, -1, -1) if (r + pad_before - k) % stride == 0]
        first = (r + pad_before - taps[0]) // stride  # the input row tap 0 reads, at q = 0
        before, after = -first, q + first + len(taps) - 1 - size_in
        if before < 0 or after < 0:
            return None
        out.append((taps, before, after))
    return out
