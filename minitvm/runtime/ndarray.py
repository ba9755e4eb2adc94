"""NDArray and devices: ``tvm.nd.array``, ``tvm.cpu()``; a thin wrapper over a numpy array."""

from __future__ import annotations

import numpy as np


class Device:
    """A device (only the CPU executes here); ``tvm.cpu(0)``."""

    __slots__ = ("device_type", "device_id")
    _NAMES = {1: "cpu", 2: "cuda", 4: "opencl", 8: "metal", 10: "rocm"}

    def __init__(self, device_type: int = 1, device_id: int = 0):
        self.device_type = device_type
        self.device_id = device_id

    def __eq__(self, other):
        return isinstance(other, Device) and (self.device_type, self.device_id) == (
            other.device_type, other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    @property
    def exist(self) -> bool:
        return self.device_type == 1

    def sync(self):
        pass

    def __repr__(self):
        return f"{self._NAMES.get(self.device_type, 'dev')}({self.device_id})"


def contiguous(a) -> np.ndarray:
    """``a`` as a C-contiguous numpy array of the same shape, copied only when it is not one
    already (``np.ascontiguousarray`` turns a 0-d array into shape (1,))."""
    a = np.asarray(a)
    return a if a.flags.c_contiguous else a.copy(order="C")


CONST_ALIGN = 64  # bytes: a cache line, one AVX-512 vector


def aligned(a: np.ndarray, align: int = CONST_ALIGN) -> np.ndarray:
    """``a`` as a C-contiguous array whose data starts on an ``align``-byte boundary: ``a``
    itself when it is one, else a copy (vector loads of a constant then never straddle two
    cache lines because of where the array happened to be read into). An empty array is only
    made contiguous: nothing of it is read."""
    a = np.asarray(a)
    if a.size == 0:
        return contiguous(a)
    if a.flags.c_contiguous and a.ctypes.data % align == 0:
        return a
    out = aligned_empty(a.shape, a.dtype, align)
    np.copyto(out, a)
    return out


def aligned_empty(shape, dtype, align: int = CONST_ALIGN) -> np.ndarray:
    """An uninitialized C-contiguous array whose data starts on an ``align``-byte boundary:
    what a build-time weight transform writes its result into, so ``aligned`` keeps it as it
    is (numpy's large arrays start 16 bytes into a page: each was copied a second time)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(n + align, np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + n].view(dtype).reshape(shape)


def cpu(dev_id: int = 0) -> Device:
    return Device(1, dev_id)


def cuda(dev_id: int = 0) -> Device:
    return Device(2, dev_id)


gpu = cuda


def device(dev_type, dev_id: int = 0) -> Device:
    if isinstance(dev_type, str):
        kind = dev_type.split()[0]
        dev_type = {"cpu": 1, "llvm": 1, "c": 1, "cuda": 2, "gpu": 2, "opencl": 4}.get(kind, 1)
    return Device(dev_type, dev_id)


# numpy dtype -> its name: ``str(np.dtype)`` runs Python code in numpy 2 (2 us), and the type
# checker and printers ask every constant's dtype
_DTYPE_NAMES: dict = {}


def dtype_name(dt: np.dtype) -> str:
    """``str(dt)``, remembered per dtype."""
    name = _DTYPE_NAMES.get(dt)
    if name is None:
        name = _DTYPE_NAMES[dt] = str(dt)
    return name


class NDArray:
    """An n-dimensional array on a device, backed by a C-contiguous numpy array."""

    __slots__ = ("_data", "device", "_content_hash", "__weakref__")

    def __init__(self, data: np.ndarray, dev: Device | None = None):
        self._content_hash = None  # cached by structural_hash; arrays are immutable by convention
        data = np.asarray(data)
        if data.dtype.kind not in "biuf":
            raise TypeError(f"NDArray: numpy dtype {data.dtype} is not a tensor data type "
                            f"(bool, int, uint or float)")
        self._data = contiguous(data)
        self.device = dev or cpu(0)

    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def dtype(self) -> str:
        return dtype_name(self._data.dtype)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def numpy(self) -> np.ndarray:
        return self._data

    asnumpy = numpy

    def copyfrom(self, source) -> NDArray:
        src = source.numpy() if isinstance(source, NDArray) else np.asarray(source)
        if src.shape != self._data.shape:
            raise ValueError(f"array shape mismatch: copying {src.shape} into {self._data.shape}")
        np.copyto(self._data, src.astype(self._data.dtype, copy=False))
        self._content_hash = None  # (new bytes: a digest kept for the old ones is stale)
        return self

    def copyto(self, target):
        if isinstance(target, NDArray):
            return target.copyfrom(self)
        return NDArray(self._data.copy(), target)

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype)

    def __repr__(self):
        return f"<tvm.nd.NDArray shape={self.shape}, {self.device}>\n{self._data!r}"

    def __str__(self):
        return str(self._data)


def array(arr, device: Device | None = None) -> NDArray:
    """Copy an array-like into a new NDArray."""
    if isinstance(arr, NDArray):
        arr = arr.numpy()
    return NDArray(np.array(arr, copy=True), device)


def empty(shape, dtype: str = "float32", device: Device | None = None) -> NDArray:
    return NDArray(np.empty(tuple(shape), dtype=dtype), device)
