"""torch's ceil-mode pool sizes, for both PyTorch importers: torch drops a last window that
would start past the input and its begin padding (``(o - 1) * stride >= size + pad``), which
the pool ops' ceil mode (TVM's rule, ``ceil((size + 2 pad - window) / stride) + 1``) keeps;
the importers slice that window off."""

from __future__ import annotations

__all__ = ["ceil_mode_sizes"]


def ceil_mode_sizes(sizes, kernel, stride, pad, dilation) -> list[int] | None:
    """torch's ceil-mode output sizes of the spatial ``sizes`` when one is a window shorter than
    the ceil-mode op's; None when they agree (or a size is not a known int)."""
    out, shorter = [], False
    for s, k, st, p, d in zip(sizes, kernel, stride, pad, dilation, strict=True):
        if not isinstance(s, int):
            return None
        window = (k - 1) * d + 1
        o = -(-(s + 2 * p - window) // st) + 1
        if (o - 1) * st >= s + p:
            o -= 1
            shorter = True
        out.append(o)
    return out if shorter else None
