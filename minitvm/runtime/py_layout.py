"""Where CPython keeps a tuple's items and numpy an array's data pointer, for the generated
entries that read them straight from a Python tuple of arrays (the graph executor's fast call,
the Relax VM's kernel trampoline and native plans), and whether those offsets hold here."""

from __future__ import annotations

import ctypes

import numpy as np

TUPLE_ITEMS_OFFSET = 24  # PyTupleObject.ob_item (after refcnt, type, size)
ARRAY_DATA_OFFSET = 16  # PyArrayObject.data (right after PyObject_HEAD)


def _layout_ok() -> bool:
    try:
        a = np.zeros(3, "float32")
        tup = (a, a)
        item = ctypes.c_void_p.from_address(id(tup) + TUPLE_ITEMS_OFFSET + 8).value
        data = ctypes.c_void_p.from_address(id(a) + ARRAY_DATA_OFFSET).value
        return ctypes.sizeof(ctypes.c_void_p) == 8 and item == id(a) and data == a.ctypes.data
    except (ValueError, OverflowError):  # pragma: no cover - exotic interpreters
        return False


LAYOUT_OK = _layout_ok()  # the offsets above hold in this interpreter
