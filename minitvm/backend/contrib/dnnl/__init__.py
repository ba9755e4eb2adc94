"""The "dnnl" external codegen's runtime: oneDNN (``onednn-cpu-gomp``) through ctypes.

``DnnlGraph`` runs the JSON graph a dialect's codegen emits; ``make_kernel`` wraps one as a
runtime kernel that ``export_library`` saves (format ``"dnnl_json"``) and ``load_module`` reads
back without the compiler.
"""

from .lib import DnnlError, DnnlUnavailable, available, library_path
from .graph import DnnlGraph
from .kernel import KERNEL_FORMAT, make_kernel

__all__ = ["DnnlError", "DnnlUnavailable", "available", "library_path", "DnnlGraph",
           "KERNEL_FORMAT", "make_kernel"]
