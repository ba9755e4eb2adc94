"""Relay operators, one module per family; importing this registers them all."""

from .op import *  # registration API
from . import tensor, transform, reduce, nn, annotation  # noqa: E402
from .tensor import *
from .transform import *
from .reduce import *
from .annotation import *
from . import _topi  # noqa: E402,F401  (attaches the shared computes as FTECompute)
