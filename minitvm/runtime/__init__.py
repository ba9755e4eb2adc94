"""tvm.runtime: arrays, devices and (later) compiled modules."""

from .ndarray import NDArray, Device, array, cpu, cuda, device, empty, gpu  # noqa: F401
from . import container  # noqa: E402,F401
from .module import Module, load_module  # noqa: E402,F401
