"""Relay operators, one module per family; importing this registers them all."""

from .op import *  # registration API
from . import tensor, transform, reduce, nn, annotation  # noqa: E402
from .tensor import *
from .transform import *
from .reduce import *
from .annotation import *
from . import algorithm, scan_scatter, matrix, indexing, image  # noqa: E402
from .algorithm import *
from .scan_scatter import *
from .matrix import *
from .indexing import *
from . import transform_extra  # noqa: E402
from .transform_extra import *  # noqa: E402,F403
from . import sparse_ops  # noqa: E402
from .sparse_ops import *  # noqa: E402,F403
from . import random  # noqa: E402,F401  (relay.random: Threefry generator ops)
from . import vision  # noqa: E402,F401  (relay.vision: detection ops)
from . import unique_native  # noqa: E402,F401  (unique's native compute)
from . import linalg  # noqa: E402,F401  (relay.op.linalg: Cholesky / LU loop kernels)
from . import signal  # noqa: E402
from .signal import device_copy, dft, stft  # noqa: E402,F401
from . import vm  # noqa: E402,F401  (relay.op.vm: Relay VM tensor helpers)
from . import _topi  # noqa: E402,F401  (attaches the shared computes as FTECompute)
from . import arg_type_hints  # noqa: E402,F401  (FInferArgTypes: weights typed from attrs)
from . import _tensor_grad  # noqa: E402,F401  (FPrimalGradient of the ops)
from . import dyn  # noqa: E402,F401  (dyn.* ops with run-time shape arguments)
from . import contrib  # noqa: E402,F401  (BYOC pattern tables: relay.op.contrib)
from . import memory  # noqa: E402,F401  (memory.alloc_storage / alloc_tensor / kill)
from . import debug as _debug_module  # noqa: E402,F401  (registers the debug op)
from .debug import debug  # noqa: E402,F401  (relay.op.debug is the op constructor, as in TVM)
from .run_time_check import run_time_check  # noqa: E402,F401  (a run-time assert on sizes)
from .op_strategy import OpImplementation, OpSpecialization, OpStrategy  # noqa: E402,F401
from . import strategy, _make, _tensor  # noqa: E402,F401  (TVM's module paths)
from .nn import utils as _nn_utils, _nn, _make as _nn_make  # noqa: E402,F401
