"""Numpy references of every operator, registered by op name so every dialect shares them."""

from ..utils import get_reference, reference, registered_references  # noqa: F401
from . import utils, tensor, transform, transform_index, reduce, nn, annotation, qnn  # noqa: F401
from . import algorithm, image  # noqa: F401
from . import dyn, nn_grad  # noqa: F401
from . import conv_nd, pool_nd, image_nd, transform_extra, loss, sparse_ops  # noqa: F401,E402
from . import dyn_more, random, vision, contrib_more, qnn_more, signal  # noqa: F401,E402
from . import winograd, bit_sparse, memory, linalg  # noqa: F401,E402
