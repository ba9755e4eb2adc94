"""The VM's builtins (``vm.builtin.*``): allocation, shape-heap matching and construction,
struct-info checks, tuples, reshape views, closures. Builtins marked *with context* receive the
VirtualMachine first (``R.call_builtin_with_ctx``)."""

from __future__ import annotations

import math
import sys

import numpy as np

from ..bounded_cache import BoundedCache
from ..row_site import ALIGN, row_site


class ShapeTuple(tuple):
    """A shape value (``R.Shape``): a tuple of ints (``tvm.runtime.ShapeTuple``)."""

    __slots__ = ()

    def __repr__(self):
        return f"ShapeTuple({list(self)})"


class Storage:
    """A byte buffer tensors are placed in (``R.vm.alloc_storage``)."""

    __slots__ = ("buf", "nbytes")

    def __init__(self, buf: np.ndarray, nbytes: int):
        self.buf = buf
        self.nbytes = nbytes


class VMClosure:
    """A Relax function value with captured arguments."""

    __slots__ = ("func", "captured")

    def __init__(self, func, captured):
        self.func = func
        self.captured = tuple(captured)

    def __repr__(self):
        return f"VMClosure({self.func!r}, {len(self.captured)} captured)"


def _kind(x) -> str:
    if isinstance(x, np.ndarray):
        return f"a tensor of shape {x.shape} and dtype {x.dtype}"
    if isinstance(x, ShapeTuple):
        return f"a shape {list(x)}"
    if isinstance(x, tuple):
        return f"a tuple of {len(x)} fields"
    return f"a {type(x).__name__}"


def _ctx(err: str) -> str:
    return err if err else "argument"


# --------------------------------------------------------------------------- allocation
_DTYPES: dict = {}


def _dt(dtype) -> np.dtype:
    d = _DTYPES.get(dtype)
    if d is None:
        d = _DTYPES[dtype] = np.dtype(dtype)
    return d


def alloc_storage(vm, size, device_index, dtype, site):
    """A storage of ``size[0]`` bytes. Each allocation site keeps its last two buffers and
    reuses one once nothing else refers to it (no storage, tensor or view of it is alive: numpy
    views all point at the owning array), so repeated calls do not touch fresh pages. Two: in a
    loop (a tail call's jump back) a step's output is the next step's input, alive while the
    next step allocates its own at the same site; the one of the step before is free by then."""
    nbytes = max(int(size[0]), 1)
    return Storage(_site_bytes(vm, nbytes, site), nbytes)


def _site_bytes(vm, nbytes: int, site) -> np.ndarray:
    """``nbytes`` aligned bytes of allocation site ``site``'s buffers (``alloc_storage``)."""
    cache = vm._storage_cache
    owner = cache.get(site)
    # references to a free owner: the cache entry, ``owner`` here, getrefcount's argument
    if owner is not None and owner.nbytes >= nbytes + ALIGN and sys.getrefcount(owner) <= 3:
        off = vm._storage_offset[site]
        return owner[off:off + nbytes]
    spares = vm._storage_spare
    spare = spares.get(site)
    if spare is not None and spare.nbytes >= nbytes + ALIGN and sys.getrefcount(spare) <= 3:
        new, off = spare, vm._storage_spare_offset[site]
    else:
        new = np.empty(nbytes + ALIGN, np.uint8)
        off = (-new.ctypes.data) % ALIGN
    if owner is not None:  # (the last buffer becomes the spare, free or not)
        spares[site], vm._storage_spare_offset[site] = owner, vm._storage_offset[site]
    cache[site], vm._storage_offset[site] = new, off
    return new[off:off + nbytes]


def alloc_tensor_from_storage(storage, offset, shape, dtype):
    return np.ndarray(shape, _dt(dtype), storage.buf, offset)


def storage_tensor(vm, size, device_index, dtype, site, offset, shape, tensor_dtype):
    """``alloc_tensor_from_storage(alloc_storage(vm, size, ...), offset, shape, tensor_dtype)``
    when nothing else uses the storage (the generated code of a function whose storage is
    killed right after its one tensor is made): the same buffer, without the Storage."""
    return np.ndarray(shape, _dt(tensor_dtype), _site_bytes(vm, max(int(size[0]), 1), site),
                      offset)


def site_tensor(offset: int, tensor_dtype: str):
    """``storage_tensor`` for one allocation site of generated code (a storage holding one
    tensor): ``alloc(size, shape)``. It keeps the site's last two tensors and hands one back
    itself once nothing else refers to it or to its memory (the tensor's count of references,
    and its owning buffer's: numpy's views of it point at that buffer), so a loop's step makes
    no array, not even a view: the tensor of two steps before is free by then (a loop-carried
    output is alive while the next step allocates). Otherwise a new 64-byte aligned buffer of
    ``size[0]`` bytes (numpy's error when the tensor does not fit), which replaces the older.
    A reuse that a program could observe would be a bug: these counts see every reference."""
    dt = _dt(tensor_dtype)
    refs = sys.getrefcount
    # the site's tensors, newest first, each with the size value it was made for and the
    # bytes it needs (a later call with a smaller storage is checked as a new one would be)
    new_t = new_size = new_need = old_t = old_size = old_need = None

    def alloc(size, shape):
        nonlocal new_t, new_size, new_need, old_t, old_size, old_need
        t = new_t
        # references to a free tensor: ``new_t``, ``t``, getrefcount's argument; to its
        # buffer: the tensor's base, the argument
        if t is not None and refs(t) == 3 and refs(t.base) == 2 and t.shape == shape and \
                (size is new_size or size[0] >= new_need):
            return t
        t = old_t
        if t is not None and refs(t) == 3 and refs(t.base) == 2 and t.shape == shape and \
                (size is old_size or size[0] >= old_need):
            old_t, old_size, old_need, new_t, new_size, new_need = \
                new_t, new_size, new_need, t, old_size, old_need
            return t
        t = None
        nbytes = max(int(size[0]), 1)
        owner = np.empty(nbytes + ALIGN, np.uint8)
        start = (-owner.ctypes.data) % ALIGN
        made = np.ndarray(shape, dt, owner[start:start + nbytes], offset)  # (numpy's bound)
        made = np.ndarray(made.shape, dt, owner, start + offset)  # (its base: the owner)
        old_t, old_size, old_need = new_t, new_size, new_need
        new_t, new_size, new_need = made, size, offset + made.nbytes
        alloc.buffers += 1
        return made

    alloc.builtin = storage_tensor
    alloc.dtype = dt  # (update_row_site's ``row`` hands out rows of this dtype only)
    alloc.buffers = 0  # how many buffers it made (tests: a loop's steps reuse them)
    return alloc


def alloc_tensor(vm, shape, dtype, device_index=0):
    return np.empty(tuple(int(d) for d in shape), _dt(dtype))


def alloc_shape_heap(vm, size):
    return np.zeros(int(size), np.int64)


# --------------------------------------------------------------------------- checks
def check_tensor_info(x, ndim, dtype, err=""):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{_ctx(err)}: expected a tensor, got {_kind(x)}")
    if ndim != -1 and x.ndim != ndim:
        raise ValueError(f"{_ctx(err)}: expected a tensor of rank {ndim}, got rank {x.ndim} "
                         f"(shape {x.shape})")
    if dtype and dtype != "void" and x.dtype != _dt(dtype):
        raise ValueError(f"{_ctx(err)}: expected dtype {dtype}, got {x.dtype}")


def check_shape_info(x, ndim, err=""):
    if not isinstance(x, ShapeTuple):
        raise TypeError(f"{_ctx(err)}: expected a shape, got {_kind(x)}")
    if ndim != -1 and len(x) != ndim:
        raise ValueError(f"{_ctx(err)}: expected a shape of {ndim} dimensions, got {list(x)}")


def check_prim_value_info(x, dtype, err=""):
    if isinstance(x, np.ndarray) and x.ndim == 0:
        x = x.item()
    if dtype.startswith(("int", "uint")) and not isinstance(x, int | np.integer | bool):
        raise TypeError(f"{_ctx(err)}: expected an integer ({dtype}), got {_kind(x)}")
    if dtype.startswith("float") and not isinstance(x, int | float | np.number):
        raise TypeError(f"{_ctx(err)}: expected a number ({dtype}), got {_kind(x)}")
    if dtype == "bool" and not isinstance(x, bool | int | np.bool_):
        raise TypeError(f"{_ctx(err)}: expected a bool, got {_kind(x)}")


def check_tuple_info(x, size, err=""):
    if not isinstance(x, tuple) or isinstance(x, ShapeTuple):
        raise TypeError(f"{_ctx(err)}: expected a tuple of {size} fields, got {_kind(x)}")
    if len(x) != size:
        raise ValueError(f"{_ctx(err)}: expected a tuple of {size} fields, got {len(x)}")


_STORE, _ASSERT_IMM, _NOOP, _ASSERT_LOAD = 1, 0, 2, 3


def match_shape(x, heap, ndim, *args):
    """Match the dims of tensor / shape ``x``: ``(code, value)`` pairs then an error context."""
    err = args[-1]
    shape = x.shape if isinstance(x, np.ndarray) else x
    for d in range(ndim):
        code, v = args[2 * d], args[2 * d + 1]
        actual = int(shape[d])
        if code == _STORE:
            heap[v] = actual
        elif code == _ASSERT_IMM:
            if actual != v:
                raise ValueError(f"{_ctx(err)}: dimension {d} must be {v}, got {actual} "
                                 f"(shape {tuple(shape)})")
        elif code == _ASSERT_LOAD:
            if actual != heap[v]:
                raise ValueError(f"{_ctx(err)}: dimension {d} is {actual} but the annotation "
                                 f"requires {int(heap[v])} (a symbolic size bound earlier; "
                                 f"shape {tuple(shape)})")


def match_prim_value(x, heap, code, v, err=""):
    x = int(x.item() if isinstance(x, np.ndarray) else x)
    if code == _STORE:
        heap[v] = x
    elif code == _ASSERT_IMM and x != v:
        raise ValueError(f"{_ctx(err)}: expected {v}, got {x}")
    elif code == _ASSERT_LOAD and x != heap[v]:
        raise ValueError(f"{_ctx(err)}: expected {int(heap[v])} (bound earlier), got {x}")


def make_shape(heap, ndim, *args):
    out = []
    for d in range(ndim):
        code, v = args[2 * d], args[2 * d + 1]
        out.append(int(heap[v]) if code == 1 else int(v))
    return ShapeTuple(out)


def make_prim_value(heap, code, v):
    return int(heap[v]) if code == 1 else int(v)


# --------------------------------------------------------------------------- values
def reshape(x, shape):
    shape = tuple(int(d) for d in shape)
    if math.prod(shape) != x.size:
        raise ValueError(f"vm.builtin.reshape: cannot reshape {x.shape} into {shape}")
    return x.reshape(shape)


def check_reshape(x, shape):
    """``x`` itself once its element count equals that of ``shape`` (a reshape whose sizes
    were not provably equal at build time: its kernel would otherwise read out of bounds)."""
    shape = tuple(int(d) for d in shape)
    want = math.prod(shape)
    if want != x.size:
        raise ValueError(f"reshape: cannot reshape a tensor of shape {tuple(x.shape)} "
                         f"({x.size} elements) into shape {shape} ({want} elements)")
    return x


def shape_of(x):
    return ShapeTuple(x.shape)


def shape_to_tensor(shape) -> np.ndarray:
    """A shape value as a 1-D int64 tensor (``R.shape_to_tensor``)."""
    return np.asarray([int(d) for d in shape], dtype="int64")


def tensor_to_shape(t) -> ShapeTuple:
    """A 1-D integer tensor's values as a shape value (``R.tensor_to_shape``): where a kernel's
    result (a count, a length) becomes a symbolic size of what follows."""
    arr = t if isinstance(t, np.ndarray) else np.asarray(t.numpy() if hasattr(t, "numpy") else t)
    if arr.ndim != 1:
        raise ValueError(f"vm.builtin.tensor_to_shape: expects a 1-D tensor, got shape "
                         f"{arr.shape}")
    vals = arr.tolist()
    return ShapeTuple(vals if arr.dtype.kind in "iu" else [int(v) for v in vals])


def to_device(x, device_type, device_id):
    """``x`` copied to the device (``R.to_vdevice``); only the CPU (device type 1) exists."""
    if int(device_type) != 1:
        raise RuntimeError(f"vm.builtin.to_device: device type {int(device_type)} (device "
                           f"{int(device_id)}) is not available; minitvm runs on the CPU only")
    return np.array(x, copy=True)


def null_value():
    return None


def make_tuple(*fields):
    return tuple(fields)


def tuple_getitem(t, index):
    return t[index]


def make_closure(vm, func, *captured):
    return VMClosure(func, captured)


def invoke_closure(vm, closure, *args):
    """Call ``closure``: its function takes the call's arguments, then the captured values (as
    LambdaLift appends them to the lifted function's parameters, and TVM's VMClosure binds its
    last arguments)."""
    if isinstance(closure, VMClosure):
        return vm._call_value(closure.func, list(args) + list(closure.captured))
    return vm._call_value(closure, list(args))


# --------------------------------------------------------------------------- call sites
# Most builtin calls have every argument but one or two registers fixed at build time (a
# make_shape's codes and constant dims, a tensor's dtype and offset). The VM links each such
# call to a function made for that site, which skips decoding the fixed arguments per call.
# Sites are keyed by their fixed arguments (shapes, offsets): the most recent
# ``SITE_CODE_SIZE`` functions are kept, not one per shape a process ever ran.
SITE_CODE_SIZE = 1024
_SITE_CODE = BoundedCache("relax_vm.site_functions", SITE_CODE_SIZE)


def _site_function(key, src: str, env: dict):
    fn = _SITE_CODE.get(key)
    if fn is None:
        scope = dict(env)
        exec(compile(src, f"<vm builtin site {key[0]}>", "exec"), scope)  # noqa: S102
        fn = scope["site"]
        fn.builtin = BUILTINS[key[0]][0]
        _SITE_CODE[key] = fn
    return fn


def _fixed(tmpl, slots, positions) -> bool:
    """Are exactly ``positions`` register slots, all other template entries immediates?"""
    regs = {k for k, _ in slots}
    return regs == set(positions) and all(
        isinstance(v, int | str) for k, v in enumerate(tmpl) if k not in regs)


def specialize(name: str, tmpl: list, slots: list):
    """A function for one call site of builtin ``name`` (with ``tmpl`` and register ``slots``
    as linked by the VM) taking only the register arguments, in order; None to keep the
    generic builtin. The function's ``builtin`` attribute names the builtin it stands for."""
    if name == "vm.builtin.make_shape" and len(tmpl) >= 2 and _fixed(tmpl, slots, [0]):
        ndim, codes = tmpl[1], tmpl[2:]
        if not isinstance(ndim, int) or len(codes) != 2 * ndim:
            return None
        dims = []
        for d in range(ndim):
            code, v = codes[2 * d], codes[2 * d + 1]
            if not isinstance(code, int) or not isinstance(v, int):
                return None
            dims.append(f"heap.item({v})" if code == 1 else str(v))
        if len(dims) == 1:
            dims.append("")
        key = (name, tuple(codes))
        return _site_function(key, f"def site(heap):\n    return ST(({', '.join(dims)}))\n",
                              {"ST": ShapeTuple})
    if name == "vm.builtin.alloc_tensor_from_storage" and len(tmpl) == 4 and \
            _fixed(tmpl, slots, [0, 2]) and isinstance(tmpl[1], int):
        key = (name, tmpl[1], tmpl[3])
        return _site_function(key, f"def site(storage, shape):\n"
                                   f"    return ND(shape, dt, storage.buf, {tmpl[1]})\n",
                              {"ND": np.ndarray, "dt": _dt(tmpl[3])})
    if name == "vm.builtin.update_row" and len(tmpl) == 3:
        return update_row_site(tmpl, [k for k, _ in slots])
    return None


def _row_index(data, index) -> int:
    k = int(np.asarray(index))
    if not 0 <= k < data.shape[0]:
        raise IndexError(f"vm.builtin.update_row: row {k} of a tensor of {data.shape[0]} rows")
    return k


def update_row(data, row, index):
    """``data[index] = row``, in place (``R.call_inplace_packed``: the program does not use
    ``data`` after): a loop's step writing its row of a result made before the loop, O(row).
    A read-only ``data`` (a constant's) is copied first. The VM calls ``update_row_site``."""
    k = _row_index(data, index)
    if not data.flags.writeable:
        data = data.copy()
    data[k] = row
    return data


def update_row_site(tmpl: list, positions: list):
    """``vm.builtin.update_row`` for one call site (``tmpl``: its linked arguments, registers
    at ``positions``, passed in order): in place only into a buffer this site made, its first
    write into any other buffer copying it (``runtime.row_site``: the one site mechanism both
    VMs use). ``R.call_inplace_packed`` promises that the program does not use ``data`` after,
    but passes of a pure IR break that: EliminateCommonSubexpr made two loops' ``R.zeros``
    buffers one tensor, and each loop wrote its rows into the other's result (found by the
    Relax loop fuzzer); a loop's result given to another loop, a constant, an argument are not
    this site's either.

    ``site.row`` hands the kernel producing the row a view of its row of the buffer this site
    wrote last as the kernel's output (generated code, where ``row_outputs`` proved nothing
    else can tell the difference); ``site.handed[0]`` holds the view handed last, and the
    generated code skips the call when its row is that view. ``site.detach`` copies the live
    views in a returned value (what the caller gets shares no memory with the stacked
    buffer)."""
    write, row, _, detach, handed = row_site(_row_index)

    if list(positions) == [0, 1, 2]:  # (every argument a register: the loops' sites)
        site = write
    else:
        def site(*regs):
            args = list(tmpl)
            for p, v in zip(positions, regs, strict=True):
                args[p] = v
            return write(*args)

    site.builtin = update_row
    site.row = row
    site.handed = handed
    site.detach = detach
    return site


def check_nonempty(result, shape, name, *axes):
    """``result`` of reduction ``name`` (max, min, argmax, argmin) of a tensor of ``shape``,
    unless an axis of ``axes`` is empty: those have no identity value, so the reduction has no
    result there (numpy raises; the kernel gave -inf / +inf / -1). Legalization calls this where
    an axis's size is only known at run time."""
    dims = tuple(int(d) for d in shape)
    for a in axes:
        a = int(a)
        if dims[a] == 0:
            raise ValueError(f"{name}: cannot reduce over axis {a} of a tensor of shape "
                             f"{dims}, of size 0 ({name} has no identity value)")
    # a copy (the reduced result: small): the memory planner frees ``result``'s storage after
    # its last use, this call, and may hand it to a later tensor while the value lives on
    return np.array(result, copy=True)


def check_pad_source(x, mode, *axes):
    """``x`` itself unless an axis of ``axes`` (padded in ``mode``: reflect or edge, whose pads
    copy values of the axis) is empty: there is no value to copy (numpy raises; the kernel read
    element 0 of an empty axis). Legalization calls this before the pad where such an axis's
    size is only known at run time."""
    dims = tuple(int(d) for d in x.shape)
    for a in axes:
        a = int(a)
        if dims[a] == 0:
            raise ValueError(f"pad: cannot {mode}-pad axis {a} of a tensor of shape {dims}: "
                             f"the axis is empty, and {mode} padding copies its values "
                             "(numpy raises too); pad an empty axis with pad_mode='constant'")
    return x


BUILTINS = {
    "vm.builtin.alloc_storage": (alloc_storage, True),
    "vm.builtin.alloc_tensor_from_storage": (alloc_tensor_from_storage, False),
    "vm.builtin.alloc_tensor": (alloc_tensor, True),
    "vm.builtin.alloc_shape_heap": (alloc_shape_heap, True),
    "vm.builtin.check_tensor_info": (check_tensor_info, False),
    "vm.builtin.check_shape_info": (check_shape_info, False),
    "vm.builtin.check_prim_value_info": (check_prim_value_info, False),
    "vm.builtin.check_tuple_info": (check_tuple_info, False),
    "vm.builtin.match_shape": (match_shape, False),
    "vm.builtin.match_prim_value": (match_prim_value, False),
    "vm.builtin.make_shape": (make_shape, False),
    "vm.builtin.make_prim_value": (make_prim_value, False),
    "vm.builtin.reshape": (reshape, False),
    "vm.builtin.shape_of": (shape_of, False),
    "vm.builtin.shape_to_tensor": (shape_to_tensor, False),
    "vm.builtin.tensor_to_shape": (tensor_to_shape, False),
    "vm.builtin.check_reshape": (check_reshape, False),
    "vm.builtin.null_value": (null_value, False),
    "vm.builtin.to_device": (to_device, False),
    "vm.builtin.make_tuple": (make_tuple, False),
    "vm.builtin.tuple_getitem": (tuple_getitem, False),
    "vm.builtin.make_closure": (make_closure, True),
    "vm.builtin.invoke_closure": (invoke_closure, True),
    "vm.builtin.update_row": (update_row, False),
    "vm.builtin.check_nonempty": (check_nonempty, False),
    "vm.builtin.check_pad_source": (check_pad_source, False),
}
