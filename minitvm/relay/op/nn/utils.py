"""``relay.op.nn.utils``: padding helpers of the nn op constructors — a padding given as one
int, one value per spatial axis, or both sides per axis, as the explicit per-side tuple."""

from __future__ import annotations

__all__ = ["get_pad_tuple1d", "get_pad_tuple2d", "get_pad_tuple3d"]


def _as_list(padding, nd: int, fn: str) -> list[int]:
    if isinstance(padding, int):
        return [padding * 2] * nd
    if isinstance(padding, list | tuple):
        vals = [int(getattr(p, "value", p)) for p in padding]
        if len(vals) == nd:
            return [v * 2 for v in vals]
        raise ValueError(f"{fn}: padding {list(padding)} must have {nd} or {2 * nd} values")
    raise ValueError(f"{fn}: unknown padding option {padding!r} (an int or a tuple of ints)")


def _split(totals: list[int]) -> tuple[int, ...]:
    """Total padding per axis -> (befores..., afters...), the odd pixel going before."""
    before = [(t + 1) // 2 for t in totals]
    return tuple(before) + tuple(t - b for t, b in zip(totals, before))


def get_pad_tuple1d(padding) -> tuple[int, int]:
    """``(pad_left, pad_right)``."""
    if isinstance(padding, list | tuple) and len(padding) == 2:
        return tuple(int(getattr(p, "value", p)) for p in padding)
    return _split(_as_list(padding, 1, "get_pad_tuple1d"))


def get_pad_tuple2d(padding) -> tuple[int, int, int, int]:
    """``(pad_top, pad_left, pad_bottom, pad_right)``."""
    if isinstance(padding, list | tuple) and len(padding) == 4:
        return tuple(int(getattr(p, "value", p)) for p in padding)
    return _split(_as_list(padding, 2, "get_pad_tuple2d"))


def get_pad_tuple3d(padding) -> tuple[int, int, int, int, int, int]:
    """``(pad_front, pad_top, pad_left, pad_back, pad_bottom, pad_right)``."""
    if isinstance(padding, list | tuple) and len(padding) == 6:
        return tuple(int(getattr(p, "value", p)) for p in padding)
    return _split(_as_list(padding, 3, "get_pad_tuple3d"))
