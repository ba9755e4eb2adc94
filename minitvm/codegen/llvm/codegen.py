"""CodeGenLLVM: one PrimFunc to one LLVM module (entry wrapper, kernel body, outlined loops).

Native ABI of the entry symbol: ``void f(ptr args, ptr vars, i32 num_threads)`` where ``args``
holds one data pointer per buffer parameter and ``vars`` one i64 per scalar parameter and per
symbolic shape variable (floats are passed as their double bit pattern).

Kernels without scalar or shape variables also get ``void f_py(ptr args_tuple, i32 nthreads)``:
it reads each numpy array's data pointer straight out of a Python tuple of ndarrays, so the
Python side calls native code once with no ctypes argument arrays to build (see module.py,
which checks these CPython/numpy struct offsets at import before using this entry).
"""

from __future__ import annotations

from llvmlite import ir

from ...runtime.py_layout import ARRAY_DATA_OFFSET, TUPLE_ITEMS_OFFSET
from ...tir import expr as E
from ...tir import stmt as S
from ...tir.stmt_functor import post_order, walk_stmts
from . import textir
from . import types as T
from .expr import ExprEmitter
from .stmt import StmtEmitter


class KernelSignature:
    """What the caller must pass: buffers (in order) and scalar vars (params, then shape vars)."""

    __slots__ = ("name", "params", "buffers", "scalar_params", "shape_vars", "written")

    def __init__(self, func, name: str):
        self.name = name
        self.params = list(func.params)
        self.buffers = [(p, func.buffer_map[p]) for p in func.params if p in func.buffer_map]
        self.scalar_params = [p for p in func.params if p not in func.buffer_map]
        seen = {id(p) for p in self.scalar_params}
        self.shape_vars = []
        for _, b in self.buffers:
            for d in (*b.shape, *b.strides, b.elem_offset):
                for n in post_order(d):
                    if isinstance(n, E.Var) and id(n) not in seen:
                        seen.add(id(n))
                        self.shape_vars.append(n)
        stored = {id(s.buffer.data) for s in walk_stmts(func.body)
                  if isinstance(s, S.BufferStore)}
        self.written = {id(b) for _, b in self.buffers if id(b.data) in stored}

    @property
    def vars(self) -> list:
        return self.scalar_params + self.shape_vars


class CodeGenLLVM(ExprEmitter, StmtEmitter):
    """Emit LLVM IR for one PrimFunc under the symbol ``symbol``."""

    def __init__(self, func, symbol: str, fast_math: bool = False, gomp: bool = True):
        self.func = func
        self.symbol = symbol
        self.fmf = ("fast",) if fast_math else ("contract",)
        self.gomp = gomp
        self.module = textir.Module(symbol)
        self.env: dict = {}
        self.lanes = 1
        self.parallel_depth = 0
        self.par_count = 0
        self.nontemporal: dict = {}  # id(buffer data var) -> open NONTEMPORAL_STORE scopes
        self.noalias = False
        self._int_consts: dict = {}  # (dtype, type, value) -> shared ir.Constant
        self.signature = KernelSignature(func, symbol)

    def generate(self) -> str:
        """The textual LLVM IR of the module."""
        sig = self.signature
        noalias = bool(self.func.attrs.get("tir.noalias", False)) if self.func.attrs else False
        self.noalias = noalias
        var_types = [T.llvm_type(v.dtype) if v.dtype != "handle" else T.PTR for v in sig.vars]
        impl_ty = ir.FunctionType(T.VOID, [T.PTR] * len(sig.buffers) + var_types + [T.I32])
        impl = textir.Function(self.module, impl_ty, name=f"{self.symbol}_impl")
        impl.linkage = "internal"
        for k, (_, buf) in enumerate(sig.buffers):
            arg = impl.args[k]
            arg.name = buf.name
            if noalias:
                arg.add_attribute("noalias")
            self.env[id(buf.data)] = arg
        nb = len(sig.buffers)
        for k, (p, _) in enumerate(sig.buffers):
            self.env[id(p)] = impl.args[k]
        for k, v in enumerate(sig.vars):
            impl.args[nb + k].name = v.name
            self.env[id(v)] = impl.args[nb + k]
        # a buffer's size is never negative (the caller binds it from an array's shape, or
        # checks it against one): floor division of index arithmetic over it by a positive
        # constant is one unsigned division, not seven instructions (``_provably_nonneg``)
        self.nonneg_vars().update(id(d) for _, b in sig.buffers for d in b.shape
                                  if isinstance(d, E.Var))
        self.num_threads = impl.args[-1]
        self.function = impl
        self.entry_block = impl.append_basic_block("entry")
        body_bb = impl.append_basic_block("body")
        self.builder = textir.IRBuilder(body_bb)
        self.emit_stmt(self.func.body)
        self.builder.ret_void()
        textir.IRBuilder(self.entry_block).branch(body_bb)
        self._entry(impl, var_types)
        if not sig.vars:
            self._py_entry()
        return str(self.module)

    def _entry(self, impl, var_types) -> None:
        """``void symbol(ptr args, ptr vars, i32 nthreads)`` unpacking into the kernel body."""
        sig = self.signature
        fn = textir.Function(self.module, ir.FunctionType(T.VOID, [T.PTR, T.PTR, T.I32]),
                             name=self.symbol)
        b = textir.IRBuilder(fn.append_basic_block("entry"))
        args, vars_, nth = fn.args
        vals = []
        for k in range(len(sig.buffers)):
            vals.append(b.load(b.gep(args, [T.I64(k)], source_etype=T.PTR), typ=T.PTR))
        for k, (v, ty) in enumerate(zip(sig.vars, var_types)):
            raw = b.load(b.gep(vars_, [T.I64(k)], source_etype=T.I64), typ=T.I64)
            if T.is_float(v.dtype):
                d = b.bitcast(raw, ir.DoubleType())
                vals.append(d if isinstance(ty, ir.DoubleType) else b.fptrunc(d, ty))
            elif isinstance(ty, ir.IntType) and ty.width < 64:
                vals.append(b.trunc(raw, ty))
            else:
                vals.append(raw)
        b.call(impl, [*vals, nth])
        b.ret_void()

    def _py_entry(self) -> None:
        """``void symbol_py(ptr tuple_of_ndarrays, i32 nthreads)``: no ctypes arrays needed."""
        n = len(self.signature.buffers)
        fn = textir.Function(self.module, ir.FunctionType(T.VOID, [T.PTR, T.I32]),
                             name=self.symbol + "_py")
        b = textir.IRBuilder(fn.append_basic_block("entry"))
        tup, nth = fn.args
        arr_ty = ir.ArrayType(T.PTR, max(1, n))
        arr = b.alloca(arr_ty, name="ptrs")
        arr.type = T.PTR  # opaque pointers throughout
        i8 = ir.IntType(8)
        for k in range(n):
            item_p = b.gep(tup, [T.I64(TUPLE_ITEMS_OFFSET + 8 * k)], source_etype=i8)
            item = b.load(item_p, typ=T.PTR)
            data = b.load(b.gep(item, [T.I64(ARRAY_DATA_OFFSET)], source_etype=i8), typ=T.PTR)
            b.store(data, b.gep(arr, [T.I32(0), T.I32(k)], source_etype=arr_ty))
        entry = self.module.globals[self.symbol]
        b.call(entry, [arr, ir.Constant(T.PTR, None), nth])
        b.ret_void()
