"""``relay.nn``: neural-network operators; importing this registers them all."""

from . import _activation, _conv, _dense, _norm, _pool, _shape  # registrations
from . import attrs
from .nn import *
from . import _layout_hooks  # ConvertLayout hooks use the constructors above
from ._space_batch import batch_to_space_nd, space_to_batch_nd  # noqa: E402
from ._rearrange import depth_to_space, dilate, mirror_pad, space_to_depth  # noqa: E402
