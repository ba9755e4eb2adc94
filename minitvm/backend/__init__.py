"""Build machinery shared by every dialect: lowering options from the PassContext, the kernel
cache, TE -> native kernel compilation, static memory planning, the whole-graph (AOT) entry."""

from .options import lowering_options
from .kernel_cache import clear_cache
from . import disk_cache, parallel_compile
from .compile import compile_te
from .fallback import NativeFallbackError, NativeFallbackWarning
from . import aot, memory_plan
