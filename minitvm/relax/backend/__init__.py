"""tvm.relax.backend: what the Relax dialect knows about back ends — the registry of
library-dispatch patterns (``get_pattern``, ``get_patterns_with_prefix``), the pattern
builders they are written with (``patterns``), and per-library pattern tables (``cuda.cublas``:
the patterns register on import; running them needs the library's codegen, see
``relax.transform.RunCodegen``)."""

from . import patterns  # noqa: F401
from .pattern_registry import (  # noqa: F401
    get_pattern, get_patterns_with_prefix, register_patterns, unregister_patterns,
)
