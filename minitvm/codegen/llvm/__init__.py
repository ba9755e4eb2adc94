"""The llvmlite back end: types, expression/statement emission, and the JIT driver."""

from .codegen import CodeGenLLVM, KernelSignature
