"""tvm.runtime: arrays, devices, compiled modules, the JIT loader and the graph executor.

Nothing here imports the compiler: an exported library loads and runs with this package alone
(plus the dialect that wrote it when it holds numpy-fallback kernels)."""

from .ndarray import NDArray, Device, array, cpu, cuda, device, empty, gpu  # noqa: F401

# TVM >= 0.22 names them tvm.runtime.tensor / tvm.runtime.Tensor (NDArray before)
tensor = array
Tensor = NDArray
from . import container  # noqa: E402,F401
from .module import Module, load_module  # noqa: E402,F401
from .registry import get_global_func, register_func  # noqa: E402,F401
from .relax_vm.builtins import ShapeTuple  # noqa: E402,F401
from . import error, ffi  # noqa: E402,F401  (tvm.error, tvm._ffi)
from .params import (  # noqa: E402,F401
    load_param_dict, load_param_dict_from_file, save_param_dict, save_param_dict_to_file)
from .object import Object, ObjectGeneric  # noqa: E402,F401
from .object_path import ObjectPath, ObjectPathPair  # noqa: E402,F401
from .script_printer import Scriptable  # noqa: E402,F401
from . import object_generic, object_path, script_printer  # noqa: E402,F401
from .object_generic import const, convert_to_object  # noqa: E402,F401
from .container import String  # noqa: E402,F401
from . import object as _object  # noqa: E402

ObjectTypes = _object.ObjectTypes = (Object, NDArray, Module)
from . import profiling, profiler_vm, support  # noqa: E402,F401
from .profiling import Report  # noqa: E402,F401
from .data_type import DataType, DataTypeCode  # noqa: E402,F401
from .support import enabled  # noqa: E402,F401
from .threadpool import get_num_threads as num_threads  # noqa: E402,F401
container.ShapeTuple = ShapeTuple
