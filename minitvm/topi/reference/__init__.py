"""Numpy references of every operator, registered by op name so every dialect shares them."""

from ..utils import get_reference, reference, registered_references  # noqa: F401
from . import utils, tensor, transform, transform_index, reduce, nn, annotation, qnn  # noqa: F401
from . import algorithm, image  # noqa: F401
from . import dyn, nn_grad  # noqa: F401
