"""How both dialects' SplitConvPool cut a large conv output into channel ranges: parts of at
most ``PART_BYTES`` (the map of one part stays in a core's 2 MB L2 until its pool reads it),
whole vectors of ``CHANNEL_MULTIPLE`` channels each, for outputs of ``MIN_BYTES`` or more."""

from __future__ import annotations

__all__ = ["MIN_BYTES", "PART_BYTES", "CHANNEL_MULTIPLE", "channel_parts"]

MIN_BYTES = 2 << 20  # conv outputs of at least this many bytes (an image's) are split
PART_BYTES = 1 << 20  # ... into parts of at most this many bytes (where channels allow)
CHANNEL_MULTIPLE = 16


def channel_parts(o: int, nbytes: int, min_bytes: int | None = None,
                  part_bytes: int | None = None) -> list[tuple[int, int]]:
    """The channel ranges of a conv output of ``o`` channels and ``nbytes`` bytes (one range:
    not split); the sizes default to this module's ``MIN_BYTES`` and ``PART_BYTES``."""
    min_bytes = MIN_BYTES if min_bytes is None else min_bytes
    part_bytes = PART_BYTES if part_bytes is None else part_bytes
    if nbytes < min_bytes:
        return [(0, o)]
    want = -(-nbytes // part_bytes)
    per = max(CHANNEL_MULTIPLE, -(-o // want) // CHANNEL_MULTIPLE * CHANNEL_MULTIPLE)
    if per >= o:
        return [(0, o)]
    return [(lo, min(lo + per, o)) for lo in range(0, o, per)]
