"""Dynamic-shape operators (``dyn.*``): shape parameters are run-time tensors.

DynamicToStatic turns them back into the static ops once those tensors are constants.
"""

from . import nn  # noqa: F401
from ._tensor import full, ones, zeros  # noqa: F401
from ._transform import (  # noqa: F401
    broadcast_to,
    expand_dims,
    one_hot,
    reshape,
    strided_slice,
    tile,
)
from ._more import resize2d, sparse_to_dense, squeeze, topk  # noqa: E402,F401
from . import image  # noqa: E402,F401  (dyn.image.resize2d)
