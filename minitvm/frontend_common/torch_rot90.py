"""``torch.rot90(x, k, dims)`` as flips and one axis swap, for the TorchScript and
torch.export importers of both dialects (test-time augmentation that averages a segmentation
net over rotated inputs rotates back with it): k = 1 flips ``dims[1]`` then swaps the two
axes, k = 2 flips both, k = 3 flips ``dims[0]`` then swaps; k is taken modulo 4."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

__all__ = ["Rot90Plan", "rot90_plan"]


class Rot90Plan(NamedTuple):
    flips: list[int]          # axes to reverse first, in order
    perm: list[int] | None    # then this transpose (None: no swap)


def rot90_plan(rank: int, k: int, dims: Sequence[int],
               fail: Callable[[str], Exception]) -> Rot90Plan:
    """The flips and the transpose that rotate a rank-``rank`` tensor by ``k`` quarter turns
    from ``dims[0]`` towards ``dims[1]``."""
    dims = list(dims)
    if len(dims) != 2:
        raise fail(f"dims must name two axes, got {dims}")
    if rank < 2:
        raise fail(f"needs a tensor of rank 2 or more, got rank {rank}")
    if any(not -rank <= d < rank for d in dims):
        raise fail(f"dims {dims} are out of range for rank {rank}")
    a, b = (d % rank for d in dims)
    if a == b:
        raise fail(f"dims {dims} name the same axis twice")
    k %= 4
    perm = list(range(rank))
    perm[a], perm[b] = b, a
    if k == 0:
        return Rot90Plan([], None)
    if k == 2:
        return Rot90Plan([a, b], None)
    return Rot90Plan([b] if k == 1 else [a], perm)
