"""Native code generation: TIR PrimFuncs to machine code with llvmlite (target ``"llvm"``)."""

from .build import build, cache_info, clear_cache, compile_prim_func
from .module import KernelFunction, Module
