"""Runtime side of compiled kernels: argument checking and the ctypes call into native code."""

from __future__ import annotations

import ctypes
import struct

import numpy as np

from ..runtime import threadpool
from ..runtime.module import time_calls
from ..runtime.py_layout import LAYOUT_OK
from ..tir import expr as E
from ..tir.stmt_functor import post_order

_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
# Fast entries take the argument tuple itself. Small kernels keep the GIL (PYFUNCTYPE saves the
# release/re-acquire, about half a microsecond); kernels over FAST_GIL_RELEASE_ELEMS release it.
_PY_ENTRY_GIL = ctypes.PYFUNCTYPE(None, ctypes.py_object, ctypes.c_int32)
_PY_ENTRY_NOGIL = ctypes.CFUNCTYPE(None, ctypes.py_object, ctypes.c_int32)
FAST_GIL_RELEASE_ELEMS = 1 << 16
_ND = np.ndarray
FAST_CALL = LAYOUT_OK  # (runtime.py_layout: the fast entry's offsets hold here)


_INT_OPS = {
    E.Add: lambda a, b: a + b, E.Sub: lambda a, b: a - b, E.Mul: lambda a, b: a * b,
    E.FloorDiv: lambda a, b: a // b, E.FloorMod: lambda a, b: a % b, E.Min: min, E.Max: max,
    E.Div: lambda a, b: int(a / b), E.Mod: lambda a, b: int(np.fmod(a, b)),
}


def _eval_int(e, env: dict) -> int:
    """Evaluate an integer shape expression given values of its Vars."""
    vals: dict[int, int] = {}
    for n in post_order(e):
        if isinstance(n, E.IntImm):
            vals[id(n)] = n.value
        elif isinstance(n, E.Var):
            if id(n) not in env:
                raise ValueError(f"cannot infer the value of {n.name!r} from the arguments")
            vals[id(n)] = env[id(n)]
        elif isinstance(n, E.BinaryOp) and type(n) in _INT_OPS:
            vals[id(n)] = _INT_OPS[type(n)](vals[id(n.a)], vals[id(n.b)])
        elif isinstance(n, E.Cast):
            vals[id(n)] = vals[id(n.value)]
        else:
            raise ValueError(f"cannot evaluate shape expression {e!r}")
    return vals[id(e)]


def _as_array(x, what: str) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    data = getattr(x, "_data", None)  # runtime.NDArray: write into its storage
    if isinstance(data, np.ndarray):
        return data
    if hasattr(x, "__array_interface__") or hasattr(x, "__array__"):
        return np.asarray(x)
    raise ValueError(f"{what} must be an array (numpy.ndarray or tvm.nd.NDArray), "
                     f"got {type(x).__name__}")


class KernelFunction:
    """A callable native kernel: ``f(*arrays_and_scalars)`` checks every argument first."""

    def __init__(self, name: str, signature, address: int, compiled):
        self.name = name
        self.sig = signature
        self._compiled = compiled  # keeps the JIT engine (and the code) alive
        self._cfunc = _ENTRY(address)
        self._var_index = {id(v): k for k, v in enumerate(signature.vars)}
        self._param_kind = []
        bufs = dict(signature.buffers)
        for p in signature.params:
            self._param_kind.append(("buffer", bufs[p]) if p in bufs else ("scalar", p))
        self._fast = None
        self._fast_call = None
        py_address = getattr(compiled, "py_address", 0)
        if FAST_CALL and py_address and not signature.vars:
            self._setup_fast(py_address)

    def _setup_fast(self, py_address: int) -> None:
        """A generated checker for the static-shape fast path (no per-call loop, no ctypes)."""
        conds, env, elems = [], {"ND": _ND}, 0
        for k, (kind, buf) in enumerate(self._param_kind):
            if kind != "buffer" or buf.strides or not all(isinstance(d, E.IntImm)
                                                          for d in buf.shape):
                return
            shape = tuple(d.value for d in buf.shape)
            elems += int(np.prod(shape, dtype=np.int64))
            env[f"d{k}"], env[f"s{k}"] = np.dtype(buf.dtype), shape
            cond = f"type(a{k}) is ND and a{k}.dtype is d{k} and a{k}.shape == s{k} and "
            if id(buf) in self.sig.written:
                cond += f"(f{k} := a{k}.flags).c_contiguous and f{k}.writeable"
            else:
                cond += f"a{k}.flags.c_contiguous"
            conds.append(cond)
        params = ", ".join(f"a{k}" for k in range(len(conds)))
        self._fast = eval(f"lambda {params}: {' and '.join(conds) or 'True'}", env)  # noqa: S307
        proto = _PY_ENTRY_NOGIL if elems > FAST_GIL_RELEASE_ELEMS else _PY_ENTRY_GIL
        self._fast_call = proto(py_address)
        self._nargs = len(conds)

    @property
    def num_args(self) -> int:
        return len(self.sig.params)

    def _arg_name(self, k: int) -> str:
        return self._param_kind[k][1].name

    def __call__(self, *args):
        fast = self._fast
        if fast is not None and len(args) == self._nargs and fast(*args):
            self._fast_call(args, threadpool.get_num_threads())
            return
        self._call_checked(args)

    def _call_checked(self, args) -> None:
        """The general path: full checks with clear errors, symbolic shapes, scalars."""
        sig = self.sig
        if len(args) != len(sig.params):
            names = ", ".join(self._arg_name(k) for k in range(len(sig.params)))
            raise ValueError(f"kernel {self.name!r} expects {len(sig.params)} arguments "
                             f"({names}), got {len(args)}")
        env: dict[int, int] = {}
        arrays = []
        pending = []
        for k, (arg, (kind, obj)) in enumerate(zip(args, self._param_kind)):
            what = f"argument {k} ({obj.name!r}) of kernel {self.name!r}"
            if kind == "scalar":
                if isinstance(arg, (np.ndarray,)) and arg.ndim == 0:
                    arg = arg.item()
                if not isinstance(arg, (int, float, np.integer, np.floating, bool)):
                    raise ValueError(f"{what} must be a scalar, got {type(arg).__name__}")
                env[id(obj)] = arg
                continue
            arr = _as_array(arg, what)
            buf = obj
            if arr.dtype != np.dtype(buf.dtype):
                raise ValueError(f"{what} must have dtype {buf.dtype}, got {arr.dtype}")
            if arr.ndim != len(buf.shape):
                raise ValueError(f"{what} must have {len(buf.shape)} dimensions, got shape "
                                 f"{arr.shape}")
            for d, (dim, actual) in enumerate(zip(buf.shape, arr.shape)):
                self._bind(dim, actual, env, pending, f"{what}: dimension {d}")
            if buf.strides:
                item = arr.itemsize
                for d, (st, actual) in enumerate(zip(buf.strides, arr.strides)):
                    if actual % item:
                        raise ValueError(f"{what}: stride {d} is not a multiple of the itemsize")
                    self._bind(st, actual // item, env, pending, f"{what}: stride {d}")
            elif not arr.flags.c_contiguous:
                raise ValueError(f"{what} must be C-contiguous (use numpy.ascontiguousarray)")
            if id(buf) in self.sig.written and not arr.flags.writeable:
                raise ValueError(f"{what} is written by the kernel but is read-only")
            arrays.append(arr)
        for dim, actual, where in pending:
            expected = _eval_int(dim, env)
            if expected != actual:
                raise ValueError(f"{where} must be {expected}, got {actual}")
        ptrs = (ctypes.c_void_p * max(1, len(arrays)))(*[a.ctypes.data for a in arrays])
        vals = []
        for v in sig.vars:
            if id(v) not in env:
                raise ValueError(f"kernel {self.name!r}: cannot infer {v.name!r} from the "
                                 "arguments")
            x = env[id(v)]
            if v.dtype.startswith("float"):
                vals.append(struct.unpack("<q", struct.pack("<d", float(x)))[0])
            else:
                vals.append(int(x))
        cvars = (ctypes.c_int64 * max(1, len(vals)))(*vals)
        self._cfunc(ptrs, cvars, threadpool.get_num_threads())

    @staticmethod
    def _bind(dim, actual: int, env: dict, pending: list, where: str) -> None:
        if isinstance(dim, E.IntImm):
            if dim.value != actual:
                raise ValueError(f"{where} must be {dim.value}, got {actual}")
        elif isinstance(dim, E.Var):
            if id(dim) in env and env[id(dim)] != actual:
                raise ValueError(f"{where} is {actual} but {dim.name!r} was bound to "
                                 f"{env[id(dim)]} by an earlier argument")
            env[id(dim)] = actual
        else:
            pending.append((dim, actual, where))


class _Timer:
    def __init__(self, f, number: int, repeat: int, min_repeat_ms: int):
        self.f, self.number, self.repeat, self.min_repeat_ms = f, number, repeat, min_repeat_ms

    def __call__(self, *args):
        self.f(*args)
        return time_calls(lambda: self.f(*args), self.number, self.repeat, self.min_repeat_ms)


class Module:
    """A compiled LLVM module: ``mod[name](*args)`` runs kernel ``name`` (``runtime.Module``)."""

    type_key = "llvm"

    def __init__(self, kernels: dict, sources: dict):
        self._kernels = dict(kernels)
        self._sources = dict(sources)
        self.imported_modules: list = []

    @property
    def entry_name(self) -> str:
        return "main" if "main" in self._kernels else next(iter(self._kernels), "")

    def get_function(self, name: str, query_imports: bool = False) -> KernelFunction:
        try:
            return self._kernels[name]
        except KeyError:
            raise AttributeError(f"module has no function {name!r}; it has "
                                 f"{sorted(self._kernels)}") from None

    __getitem__ = get_function

    def __contains__(self, name: str) -> bool:
        return name in self._kernels

    def __call__(self, *args):
        return self.get_function(self.entry_name)(*args)

    @property
    def function_names(self) -> list[str]:
        return list(self._kernels)

    def get_source(self, fmt: str = "ll") -> str:
        """The LLVM IR (``"ll"``) of every kernel, or host assembly (``"asm"``/``"s"``)."""
        if fmt in ("asm", "s"):
            from ..runtime.jit import assembly

            return "\n".join(assembly(src) for src in self._sources.values())
        return "\n".join(self._sources.values())

    def time_evaluator(self, func_name: str, dev=None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: int = 0, **kwargs) -> _Timer:
        """A callable that runs ``func_name`` and reports seconds per call."""
        return _Timer(self.get_function(func_name), number, repeat, min_repeat_ms)

    def __repr__(self):
        return f"Module(llvm, functions={sorted(self._kernels)})"
