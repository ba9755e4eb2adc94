"""Where CPython keeps a tuple's items and numpy an array's data pointer, for the generated
entries that read them straight from a Python tuple of arrays (the graph executor's fast call,
the Relax VM's kernel trampoline and native plans), and whether those offsets hold here."""

from __future__ import annotations

import ctypes

import numpy as np

TUPLE_ITEMS_OFFSET = 24  # PyTupleObject.ob_item (after refcnt, type, size)
ARRAY_DATA_OFFSET = 16  # PyArrayObject.data (right after PyObject_HEAD)
OB_TYPE_OFFSET = 8  # PyObject.ob_type
TUPLE_SIZE_OFFSET = 16  # PyVarObject.ob_size
# numpy's PyArrayObject_fields after ``data``: nd, dimensions, strides, base, descr, flags
ARRAY_ND_OFFSET = 24
ARRAY_DIMS_OFFSET = 32
ARRAY_DESCR_OFFSET = 56
ARRAY_FLAGS_OFFSET = 64
ARRAY_C_CONTIGUOUS = 0x0001  # NPY_ARRAY_C_CONTIGUOUS


def _layout_ok() -> bool:
    try:
        a = np.zeros(3, "float32")
        tup = (a, a)
        item = ctypes.c_void_p.from_address(id(tup) + TUPLE_ITEMS_OFFSET + 8).value
        data = ctypes.c_void_p.from_address(id(a) + ARRAY_DATA_OFFSET).value
        return ctypes.sizeof(ctypes.c_void_p) == 8 and item == id(a) and data == a.ctypes.data
    except (ValueError, OverflowError):  # pragma: no cover - exotic interpreters
        return False


def _fields_ok() -> bool:
    """Whether an array's type, rank, dimensions, dtype and contiguity flag lie where the
    ``ARRAY_*`` offsets say (checked on arrays whose values differ field by field)."""
    try:
        def word(obj, off: int, kind=ctypes.c_int64) -> int:
            return kind.from_address(id(obj) + off).value

        a = np.zeros((3, 5, 7), "float32")
        b = np.zeros((4, 6), "int64")[:, ::2]  # (not C-contiguous)
        dims = ctypes.cast(word(a, ARRAY_DIMS_OFFSET), ctypes.POINTER(ctypes.c_int64))
        return (word(a, OB_TYPE_OFFSET) == id(np.ndarray) and
                word((1, 2, 3), TUPLE_SIZE_OFFSET) == 3 and
                word(a, ARRAY_ND_OFFSET, ctypes.c_int32) == 3 and
                word(b, ARRAY_ND_OFFSET, ctypes.c_int32) == 2 and
                [dims[i] for i in range(3)] == [3, 5, 7] and
                word(a, ARRAY_DESCR_OFFSET) == id(a.dtype) and
                word(b, ARRAY_DESCR_OFFSET) == id(b.dtype) and
                word(a, ARRAY_FLAGS_OFFSET, ctypes.c_int32) & ARRAY_C_CONTIGUOUS and
                not word(b, ARRAY_FLAGS_OFFSET, ctypes.c_int32) & ARRAY_C_CONTIGUOUS)
    except (ValueError, OverflowError):  # pragma: no cover - exotic interpreters
        return False


LAYOUT_OK = _layout_ok()  # the offsets above hold in this interpreter
FIELDS_OK = LAYOUT_OK and _fields_ok()  # and so do the array fields' (native argument checks)
