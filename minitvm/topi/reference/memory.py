"""Numpy references of the explicit memory ops and the ``debug`` op.

A storage is a byte array; ``memory.alloc_tensor`` views ``shape`` x ``dtype`` at a byte offset
of it; ``memory.kill`` returns the empty tuple. ``debug`` calls its ``debug_func`` on the value
(or stops in the Python debugger when it has none) and passes the value through;
``run_time_check`` passes its value through once its condition holds, else raises."""

from __future__ import annotations

import numpy as np

from ..utils import reference


@reference("memory.alloc_storage")
def alloc_storage(attrs, args, out_type):
    size = int(np.asarray(args[0]))
    if size < 0:
        raise ValueError(f"memory.alloc_storage: negative size {size}")
    return np.zeros(size, np.uint8)


@reference("memory.alloc_tensor")
def alloc_tensor(attrs, args, out_type):
    storage, offset = np.asarray(args[0]), int(np.asarray(args[1]))
    shape = tuple(int(d) for d in np.asarray(args[2]).reshape(-1))
    dtype = np.dtype(attrs.dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if storage.dtype != np.uint8 or offset < 0 or offset + nbytes > storage.size:
        raise ValueError(f"memory.alloc_tensor: {shape} x {dtype} at offset {offset} does not fit "
                         f"in a storage of {storage.size} bytes")
    return storage[offset:offset + nbytes].view(dtype).reshape(shape)


@reference("memory.kill")
def kill(attrs, args, out_type):
    return ()


def enter_debugger(value) -> None:
    """The ``debug`` op's default action: stop in ``pdb`` with the value in ``value``."""
    import pdb

    print("debug op: the value is in `value`")
    pdb.set_trace()


@reference("debug")
def debug(attrs, args, out_type):
    func = getattr(attrs, "debug_func", None) if attrs is not None else None
    (func or enter_debugger)(*args)
    return args[0]


def _shown(v) -> str:
    """A run-time value in a check's message: a scalar as itself, a tensor as a list."""
    a = np.asarray(v)
    return str(a.item()) if a.ndim == 0 else str(a.tolist())


@reference("run_time_check")
def run_time_check(attrs, args, out_type):
    if not bool(np.asarray(args[1])):
        raise ValueError(attrs.message.format(*(_shown(v) for v in args[2:])))
    return args[0]
