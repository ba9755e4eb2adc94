"""Where ``x[:, :, idx] = v`` (an index put whose index tensors do not start at axis 0) moves its
axes, for both PyTorch importers.

The Relay and Relax ``index_put`` kernels take index tensors on the leading axes only. PyTorch
also writes through sliced leading axes: Hugging Face's static KV cache does
``v_cache[:, :, cache_position] = v``, and ``index_copy_(dim, index, src)`` is the same put
with ``dim`` sliced axes in front. Such a put is the leading-axes put on ``x`` transposed so the
indexed axes come first, with the values transposed to match, transposed back afterwards.

PyTorch lays the values out as the indexed result would be: when the indexed axes are adjacent
their broadcast index shape stands where they were (``x[:, :, i]`` of a rank-4 ``x`` with a 1-D
``i`` is ``(d0, d1, len(i), d3)``); when they are not, it comes first, the sliced axes after.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SlicedPut", "plan_sliced_put"]


@dataclass(frozen=True)
class SlicedPut:
    """The transposes around a leading-axes put.

    ``axes``: the indexed axes of ``x`` in index order; ``perm``: ``x``'s axes with those first
    (the others after, in order); ``inverse``: the permutation undoing ``perm``;
    ``value_shape``: the values' full shape in PyTorch's layout (broadcast them to it first);
    ``value_perm``: the permutation taking that layout to ``perm``'s (index dims first)."""

    axes: tuple[int, ...]
    perm: tuple[int, ...]
    inverse: tuple[int, ...]
    value_shape: tuple
    value_perm: tuple[int, ...]


def plan_sliced_put(shape, present, index_shape) -> SlicedPut | None:
    """The plan for a put on ``x`` of ``shape`` whose index list has a tensor where
    ``present[k]`` is true and a full slice (``None``) elsewhere (axes past the list are
    sliced too); ``index_shape`` is the index tensors' broadcast shape. None when the indexed
    axes already lead (the kernels' own form)."""
    rank = len(shape)
    if len(present) > rank:
        raise ValueError(f"{len(present)} indices for a rank-{rank} tensor")
    axes = tuple(k for k, p in enumerate(present) if p)
    if not axes:
        raise ValueError("an index put needs at least one index tensor")
    if axes == tuple(range(len(axes))):
        return None
    others = [k for k in range(rank) if k not in axes]
    perm = axes + tuple(others)
    inverse = tuple(perm.index(k) for k in range(rank))
    nb = len(index_shape)
    adjacent = axes == tuple(range(axes[0], axes[-1] + 1))
    if adjacent:
        before = [k for k in others if k < axes[0]]
        after = [k for k in others if k > axes[0]]
        value_shape = (tuple(shape[k] for k in before) + tuple(index_shape)
                       + tuple(shape[k] for k in after))
        nbefore = len(before)
        value_perm = (tuple(range(nbefore, nbefore + nb)) + tuple(range(nbefore))
                      + tuple(range(nbefore + nb, nbefore + nb + len(after))))
    else:
        value_shape = tuple(index_shape) + tuple(shape[k] for k in others)
        value_perm = tuple(range(nb + len(others)))
    return SlicedPut(axes, perm, inverse, value_shape, value_perm)
