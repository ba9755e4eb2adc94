"""ctypes bindings for the part of oneDNN's C API (v3.x) the "dnnl" external codegen uses.

``libdnnl.so`` comes from the ``onednn-cpu-gomp`` package (``pip install minitvm[dnnl]``) and
lives in the environment's ``lib/`` directory; ``MINITVM_DNNL_LIB`` may name another file.
Every call is checked: a failing status raises ``DnnlError`` naming the function.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

__all__ = ["DnnlError", "DnnlUnavailable", "available", "library_path", "lib", "engine",
           "stream", "MemoryDesc", "plain_md", "dims", "check", "EXTRA"]

EXTRA = "dnnl"  # pip install 'minitvm[dnnl]' installs onednn-cpu-gomp

# enums of dnnl_types.h (v3)
F32 = 3
FORMAT_ANY = 1
CPU = 1
FORWARD_INFERENCE = 96
CONVOLUTION_DIRECT = 0x1
ELTWISE = {"relu": 0x20, "tanh": 0x21, "elu": 0x22, "square": 0x23, "abs": 0x24,
           "sqrt": 0x25, "linear": 0x26, "soft_relu": 0x27, "hardsigmoid": 0x28,
           "logistic": 0x29, "exp": 0x2A, "gelu_tanh": 0x2B, "swish": 0x2C, "log": 0x2D,
           "clip": 0x2E, "clip_v2": 0x2F, "pow": 0x30, "gelu_erf": 0x31, "round": 0x32}
BINARY = {"add": 0x1FFF0, "mul": 0x1FFF1, "max": 0x1FFF2, "min": 0x1FFF3, "div": 0x1FFF4,
          "sub": 0x1FFF5}
POOL_MAX, POOL_AVG_INCLUDE, POOL_AVG_EXCLUDE = 0x1FF, 0x2FF, 0x3FF
SOFTMAX_ACCURATE = 0x30000
USE_SCALE, USE_SHIFT = 0x2, 0x4
QUERY_SRC_MD, QUERY_WEIGHTS_MD, QUERY_DST_MD = 129, 131, 133
ARG_SRC, ARG_SRC_1, ARG_DST, ARG_WEIGHTS, ARG_BIAS = 1, 2, 17, 33, 41
ARG_SCALE, ARG_SHIFT = 51, 52


def ARG_POST_OP_SRC1(index: int) -> int:  # noqa: N802 - oneDNN's macro
    """DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1."""
    return (16384 * (index + 1)) | ARG_SRC_1


class DnnlError(RuntimeError):
    """A oneDNN call failed."""


class DnnlUnavailable(ImportError):
    """libdnnl.so cannot be found or loaded."""


DIMS = ctypes.c_int64 * 12


class ExecArg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_int), ("memory", ctypes.c_void_p)]


def dims(values) -> DIMS:
    d = DIMS()
    for k, v in enumerate(values):
        d[k] = int(v)
    return d


def library_path() -> str | None:
    """Where libdnnl.so is (None when it is not installed)."""
    cand = [os.environ.get("MINITVM_DNNL_LIB", "")]
    for prefix in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(sys.executable))):
        for name in ("libdnnl.so.3", "libdnnl.so"):
            cand.append(os.path.join(prefix, "lib", name))
    for c in cand:
        if c and os.path.exists(c):
            return c
    return None


_LIB = None
_LOCK = threading.Lock()
_STATE: dict[str, object] = {}


def _declare(lib) -> None:
    vp, i, u, f, i64, sz = (ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_float,
                            ctypes.c_int64, ctypes.c_size_t)
    pvp = ctypes.POINTER(ctypes.c_void_p)
    sigs = {
        "dnnl_engine_create": [pvp, i, sz],
        "dnnl_stream_create": [pvp, vp, u],
        "dnnl_stream_wait": [vp],
        "dnnl_memory_desc_create_with_strides": [pvp, i, vp, i, vp],
        "dnnl_memory_desc_create_with_tag": [pvp, i, vp, i, i],
        "dnnl_memory_desc_clone": [pvp, vp],
        "dnnl_memory_desc_destroy": [vp],
        "dnnl_memory_create": [pvp, vp, vp, vp],
        "dnnl_memory_set_data_handle": [vp, vp],
        "dnnl_memory_destroy": [vp],
        "dnnl_primitive_attr_create": [pvp],
        "dnnl_primitive_attr_destroy": [vp],
        "dnnl_primitive_attr_set_post_ops": [vp, vp],
        "dnnl_post_ops_create": [pvp],
        "dnnl_post_ops_destroy": [vp],
        "dnnl_post_ops_append_sum": [vp, f, ctypes.c_int32, i],
        "dnnl_post_ops_append_eltwise": [vp, i, f, f],
        "dnnl_post_ops_append_binary": [vp, i, vp],
        "dnnl_primitive_create": [pvp, vp],
        "dnnl_primitive_destroy": [vp],
        "dnnl_primitive_desc_destroy": [vp],
        "dnnl_primitive_execute": [vp, vp, i, vp],
        "dnnl_reorder_primitive_desc_create": [pvp, vp, vp, vp, vp, vp],
        "dnnl_convolution_forward_primitive_desc_create":
            [pvp, vp, i, i, vp, vp, vp, vp, vp, vp, vp, vp, vp],
        "dnnl_inner_product_forward_primitive_desc_create": [pvp, vp, i, vp, vp, vp, vp, vp],
        "dnnl_matmul_primitive_desc_create": [pvp, vp, vp, vp, vp, vp, vp],
        "dnnl_eltwise_forward_primitive_desc_create": [pvp, vp, i, i, vp, vp, f, f, vp],
        "dnnl_binary_primitive_desc_create": [pvp, vp, i, vp, vp, vp, vp],
        "dnnl_softmax_forward_primitive_desc_create": [pvp, vp, i, i, vp, vp, i, vp],
        "dnnl_pooling_forward_primitive_desc_create":
            [pvp, vp, i, i, vp, vp, vp, vp, vp, vp, vp, vp],
        "dnnl_layer_normalization_forward_primitive_desc_create":
            [pvp, vp, i, vp, vp, vp, f, u, vp],
    }
    for name, argtypes in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes = argtypes
        fn.restype = ctypes.c_int
    lib.dnnl_primitive_desc_query_md.argtypes = [vp, i, i]
    lib.dnnl_primitive_desc_query_md.restype = vp
    lib.dnnl_memory_desc_equal.argtypes = [vp, vp]
    lib.dnnl_memory_desc_equal.restype = i
    lib.dnnl_memory_desc_get_size.argtypes = [vp]
    lib.dnnl_memory_desc_get_size.restype = sz
    _ = i64


def available() -> bool:
    """Whether oneDNN can be loaded."""
    try:
        lib()
        return True
    except DnnlUnavailable:
        return False


def lib():
    """The loaded library (DnnlUnavailable with the extra to install when it is missing)."""
    global _LIB
    if _LIB is not None:
        return _LIB
    with _LOCK:
        if _LIB is None:
            path = library_path()
            if path is None:
                raise DnnlUnavailable(
                    "the 'dnnl' external codegen needs oneDNN (libdnnl.so), which is not "
                    f"installed: pip install 'minitvm[{EXTRA}]' (the onednn-cpu-gomp package)")
            # GNU OpenMP's threads spin at barriers by default; on a machine shared with other
            # busy processes that turns each primitive into a wait for descheduled spinners
            # (x30 slower with 2 threads on a loaded 2-core box). Passive waiting, unless the
            # user chose otherwise; libgomp reads this when it is first loaded.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                handle = ctypes.CDLL(path)
                _declare(handle)
            except (OSError, AttributeError) as err:
                raise DnnlUnavailable(f"cannot load oneDNN from {path}: {err}") from err
            _LIB = handle
    return _LIB


def check(status: int, what: str) -> None:
    if status != 0:
        names = {1: "out of memory", 2: "invalid arguments", 3: "unimplemented",
                 5: "runtime error", 6: "not required"}
        raise DnnlError(f"oneDNN {what} failed: {names.get(status, f'status {status}')}")


def call(name: str, *args) -> None:
    check(getattr(lib(), name)(*args), name)


def out_ptr():
    return ctypes.c_void_p()


def engine():
    """The CPU engine (created once)."""
    eng = _STATE.get("engine")
    if eng is None:
        with _LOCK:
            eng = _STATE.get("engine")
            if eng is None:
                p = out_ptr()
                call("dnnl_engine_create", ctypes.byref(p), CPU, 0)
                eng = _STATE["engine"] = p
    return eng


def stream():
    """An in-order stream on the CPU engine, one per thread."""
    local = _STATE.setdefault("local", threading.local())
    s = getattr(local, "stream", None)
    if s is None:
        s = out_ptr()
        call("dnnl_stream_create", ctypes.byref(s), engine(), 1)
        local.stream = s
    return s


class MemoryDesc:
    """An owned ``dnnl_memory_desc_t`` (destroyed with the object)."""

    __slots__ = ("ptr", "shape")

    def __init__(self, ptr, shape):
        self.ptr = ptr
        self.shape = tuple(shape)

    @classmethod
    def clone(cls, raw, shape) -> MemoryDesc:
        p = out_ptr()
        call("dnnl_memory_desc_clone", ctypes.byref(p), raw)
        return cls(p, shape)

    @property
    def size(self) -> int:
        return int(lib().dnnl_memory_desc_get_size(self.ptr))

    def __eq__(self, other):
        return isinstance(other, MemoryDesc) and bool(
            lib().dnnl_memory_desc_equal(self.ptr, other.ptr))

    __hash__ = object.__hash__

    def __del__(self):
        if _LIB is not None and self.ptr:
            _LIB.dnnl_memory_desc_destroy(self.ptr)
            self.ptr = None


def plain_md(shape, strides=None) -> MemoryDesc:
    """A row-major (or explicitly strided) f32 memory descriptor of ``shape``."""
    shape = [int(s) for s in shape] or [1]
    if strides is None:
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= max(s, 1)
        strides.reverse()
    p = out_ptr()
    call("dnnl_memory_desc_create_with_strides", ctypes.byref(p), len(shape), dims(shape), F32,
         dims(strides))
    return MemoryDesc(p, shape)


def any_md(shape) -> MemoryDesc:
    """A descriptor letting the primitive choose its layout (format ``any``)."""
    p = out_ptr()
    call("dnnl_memory_desc_create_with_tag", ctypes.byref(p), len(shape), dims(shape), F32,
         FORMAT_ANY)
    return MemoryDesc(p, shape)
