"""``relay.op.dyn.image``: image ops with run-time sizes (``dyn.image.resize2d``)."""

from ._more import resize2d  # noqa: F401
