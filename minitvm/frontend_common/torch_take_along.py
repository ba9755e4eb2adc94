"""``torch.take_along_dim``'s shapes, for the TorchScript and torch.export importers of both
dialects: torch broadcasts the input and the indices against each other on every axis but
``dim`` before the gather (a Mixture-of-Depths router's ``take_along_dim(x, top_i[..., None],
1)`` picks whole rows this way), which ``gather`` itself does not."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

__all__ = ["TakeAlongPlan", "take_along_plan"]


class TakeAlongPlan(NamedTuple):
    axis: int
    input_to: list[int] | None  # broadcast the input to this shape (None: it has it)
    index_to: list[int] | None  # and the indices to this one


def take_along_plan(x_shape: Sequence[int], idx_shape: Sequence[int], dim: int,
                    fail: Callable[[str], Exception]) -> TakeAlongPlan:
    """The gather axis and the shapes the two operands broadcast to (static shapes)."""
    xs, js = [int(d) for d in x_shape], [int(d) for d in idx_shape]
    if len(xs) != len(js):
        raise fail(f"input {xs} and indices {js} must have the same rank")
    if not -len(xs) <= dim < len(xs):
        raise fail(f"dim {dim} is out of range for rank {len(xs)}")
    axis = dim % len(xs)
    joint = []
    for d, (a, b) in enumerate(zip(xs, js, strict=True)):
        if d != axis and a != b and 1 not in (a, b):
            raise fail(f"input {xs} and indices {js} do not broadcast off dim {axis}")
        joint.append(max(a, b))
    x_to = [a if d == axis else joint[d] for d, a in enumerate(xs)]
    j_to = [b if d == axis else joint[d] for d, b in enumerate(js)]
    return TakeAlongPlan(axis, None if x_to == xs else x_to, None if j_to == js else j_to)
