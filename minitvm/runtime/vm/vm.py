"""The Relay virtual machine (``tvm.runtime.vm.VirtualMachine``): runs an ``Executable``.

One dispatch loop over the bytecode with explicit frames: ``Invoke`` / ``InvokeClosure`` push a
frame (code, pc, registers, destination) and ``Ret`` pops one, so recursion in the program never
recurses in Python — a recursion 100,000 deep needs 100,000 frames in a list, not Python stack.
Registers hold numpy arrays (tensors), ``ADT`` (tuples, constructor values), ``VMClosure`` and
``Storage``; arguments and results cross the API as ``tvm.nd.NDArray``.
"""

from __future__ import annotations

import ctypes
import math
import sys
from itertools import repeat
from operator import is_

import numpy as np

from .. import threadpool
from ..container import ADT
from ..gc_pause import paused
from ..module import ProfileResult, time_calls
from ..native_loop import gather as gather_registers
from ..ndarray import NDArray, contiguous, cpu
from ..py_layout import LAYOUT_OK
from ..row_site import row_site
from . import bytecode as B
from .executable import Executable, _type_text
from .liveness import dead_at_calls, fresh_tensor_storages, kill_points, read_after_update_row
from .native_entry import KILL, MISS, RECORD, native_function
from .straight_line import straight_line_function

__all__ = ["VirtualMachine", "VMClosure", "Storage", "call_native"]

# drop each register after its last use (``liveness.kill_points``): intermediate tensors are
# freed during the call, and later kernels reuse their memory while it is still in cache
KILL_DEAD_REGISTERS = True
_KILL = KILL  # the prepared code's pseudo-instruction (_KILL, registers)
_KERNEL = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
_TUPLE_ENTRY = ctypes.CFUNCTYPE(None, ctypes.py_object, ctypes.c_int32)  # (the GIL released)


def _tuple_entry(kernel):
    """The entry of a native kernel that reads its arrays from a tuple (no ctypes array a call):
    its compiled kernel's (made when its shapes are static); for a kernel loaded from a library
    (an exported or whole-executable-cached one keeps no compiled kernel, only its machine
    code) the ``_py`` symbol its code has exactly when it takes no size variables, called with
    the GIL released (its sizes, which chose that for the compiled one, are not kept)."""
    fast = getattr(getattr(kernel, "kernel", None), "_fast_call", None)
    if fast is not None or getattr(kernel, "kernel", None) is not None or not LAYOUT_OK:
        return fast
    address = getattr(getattr(kernel, "compiled", None), "py_address", 0)
    return _TUPLE_ENTRY(address) if address else None


class VMClosure:
    """A function value: the index of its VM function and the captured values."""

    __slots__ = ("func_index", "captured")

    def __init__(self, func_index: int, captured: list):
        self.func_index = func_index
        self.captured = captured

    def __repr__(self):
        return f"VMClosure(Function[{self.func_index}], {len(self.captured)} captured)"


class Storage:
    """A block of bytes (``AllocStorage``) that tensors are carved from (``AllocTensor``).
    Kernels need element alignment only, which numpy's allocator gives."""

    __slots__ = ("buffer",)

    def __init__(self, nbytes: int):
        self.buffer = np.empty(nbytes, dtype=np.uint8)

    def tensor(self, offset: int, shape: tuple, dtype) -> np.ndarray:
        dt = np.dtype(dtype)
        n = math.prod(shape) * dt.itemsize
        if offset + n > self.buffer.nbytes:
            raise RuntimeError(f"Relay VM: a tensor of {n} bytes at offset {offset} does not fit "
                               f"its storage of {self.buffer.nbytes} bytes")
        return self.buffer[offset:offset + n].view(dt).reshape(shape)


def call_native(kernel, inputs: list, outputs: list, workspace=None) -> list:
    """Run native ``kernel`` on contiguous ``inputs`` writing ``outputs`` (both numpy)."""
    arrays = list(inputs) + list(kernel.consts) + list(outputs)
    if kernel.ws_bytes:
        arrays.append(workspace if workspace is not None else
                      np.empty(kernel.ws_bytes, np.uint8))
    ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
    _KERNEL(kernel.address)(ptrs, None, threadpool.get_num_threads())
    return outputs


# ------------------------------------------------------------------------------ arguments


def _shape_str(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


_DTYPES: dict = {}  # a record's dtype name -> its numpy dtype (False: compared by name)


def _dtype_named(name: str):
    """The numpy dtype whose name is ``name`` (an array's dtype equals it exactly when its name
    is ``name``: a comparison without making the name), else False."""
    dt = _DTYPES.get(name)
    if dt is None:
        try:
            dt = np.dtype(name)
            if str(dt) != name:
                dt = False
        except TypeError:
            dt = False
        _DTYPES[name] = dt
    return dt


def _check_tensor(arg, rec, where: str) -> np.ndarray:
    _, dims, dtype = rec
    if isinstance(arg, NDArray):
        arr = contiguous(arg.numpy())
    elif isinstance(arg, np.ndarray | np.generic):
        arr = contiguous(np.asarray(arg))
    elif isinstance(arg, bool | int | float | list):
        arr = np.asarray(arg, dtype=dtype)
    else:
        raise ValueError(f"{where}: expected {_type_text(rec)}, got a {type(arg).__name__}")
    dt = _dtype_named(dtype)
    if arr.ndim != len(dims) or (arr.dtype != dt if dt is not False else
                                 str(arr.dtype) != dtype) or \
            any(d >= 0 and d != s for d, s in zip(dims, arr.shape)):
        raise ValueError(f"{where}: expected {_type_text(rec)}, got shape "
                         f"{_shape_str(arr.shape)} {arr.dtype}")
    return arr


def _check_arg(arg, rec, where: str):
    """Convert an argument to the VM's representation, checking it against its record
    (tuples nest shallowly in practice; nesting depth is the type's, not the program's)."""
    if rec[0] == "tensor":
        return _check_tensor(arg, rec, where)
    if rec[0] == "tuple":
        if not isinstance(arg, tuple | list | ADT):
            raise ValueError(f"{where}: expected a tuple {_type_text(rec)}, got a "
                             f"{type(arg).__name__}")
        if len(arg) != len(rec[1]):
            raise ValueError(f"{where}: expected a tuple of {len(rec[1])} fields, got "
                             f"{len(arg)}")
        return ADT(0, [_check_arg(a, r, f"{where}[{i}]")
                       for i, (a, r) in enumerate(zip(arg, rec[1]))])
    return _to_internal(arg)


def _convert(value, leaf):
    """Rebuild nested ADTs bottom-up with an explicit stack, applying ``leaf`` to the rest."""
    if not isinstance(value, ADT | tuple | list):
        return leaf(value)
    root: list = []
    stack = [(value, root, None)]
    while stack:
        v, sink, parts = stack.pop()
        if parts is not None:
            sink.append(ADT(getattr(v, "tag", 0), parts))
            continue
        if isinstance(v, ADT | tuple | list):
            parts = []
            stack.append((v, sink, parts))
            for f in reversed(list(v)):
                stack.append((f, parts, None))
        else:
            sink.append(leaf(v))
    return root[0]


def _to_internal(value):
    return _convert(value, lambda v: v.numpy() if isinstance(v, NDArray) else
                    (np.asarray(v) if isinstance(v, np.generic) else v))


def _to_external(value, foreign: tuple[set, ...]):
    """``value`` as the caller gets it: arrays as NDArrays, copied where they are views of
    memory the VM does not hand out (ids in the sets ``foreign``: arguments, constants,
    workspaces) or of a storage they share."""
    return _convert(value, lambda v: NDArray(_returned(v, foreign))
                    if isinstance(v, np.ndarray) else v)


def _returned(v: np.ndarray, foreign: tuple[set, ...]) -> np.ndarray:
    """``v`` itself when it owns its memory or fills a storage of its own that this call
    allocated (an output written in place by its kernel: ALLOC_STORAGE's byte array, fresh
    each call), else a copy."""
    b = v.base
    if b is None:
        return v
    if type(b) is np.ndarray and b.base is None and b.dtype == np.uint8 and b.ndim == 1 \
            and b.nbytes == v.nbytes and v.flags.c_contiguous and \
            not any(id(b) in ids for ids in foreign):
        return v
    return v.copy()


def _leaves(values, out: set) -> set:
    """``out`` with the ids of the arrays in ``values`` (nested tuples and ADTs) added."""
    stack = list(values)
    while stack:
        v = stack.pop()
        if isinstance(v, np.ndarray):
            out.add(id(v))
            if v.base is not None:
                out.add(id(v.base))
        elif isinstance(v, ADT | tuple | list):
            stack.extend(v.fields if isinstance(v, ADT) else v)
    return out


def _scalar(v):
    if isinstance(v, np.ndarray):
        return v.item()
    return v


# ------------------------------------------------------------------------------ the VM
def _row_index(data: np.ndarray, index) -> int:
    """``UpdateRow``'s index as an int in range (``row_site``'s conversion)."""
    k = int(index)
    if not 0 <= k < data.shape[0]:
        raise RuntimeError(f"Relay VM: update_row writes row {k} of a tensor of "
                           f"{data.shape[0]} rows")
    return k


def _refcount_passed_down(x) -> int:
    return _held_refs(x)


def _held_refs(x) -> int:
    return sys.getrefcount(x)


# references a tensor gets from being passed down two calls to a ``getrefcount`` (two
# parameters and its argument, as the interpreter counts them): ``_update_row`` then
# ``_held_elsewhere``, measured once the same way
_PROBE = [np.empty(0)]
_CALL_REFS = _refcount_passed_down(_PROBE[0]) - 1
del _PROBE


def _holds(value, data: np.ndarray) -> bool:
    """Whether VM value ``value`` is, contains (tuples, closures) or views ``data``."""
    stack = [value]
    while stack:
        v = stack.pop()
        if v is data:
            return True
        if isinstance(v, np.ndarray):
            if v.base is not None and (v.base is data or getattr(v.base, "base", None) is data):
                return True
        elif isinstance(v, ADT):
            stack.extend(v.fields)
        elif isinstance(v, VMClosure):
            stack.extend(v.captured)
    return False


def _held_elsewhere(data: np.ndarray, regs: list, site: tuple, frames: list) -> bool:
    """Whether a value of the program besides ``site``'s data and destination registers holds
    ``data``: another register of this call or of a caller's frame, a tuple, a closure or a
    view in one. Its reference count answers most calls (nothing beyond the registers holding
    it); where it counts more, the registers are searched (the extra references may be no
    program value's: a profiler's, a debugger's)."""
    mine = sum(map(is_, regs, repeat(data)))  # (the registers that are it, scanned in C)
    if mine - (regs[site[1]] is data) - (site[4] != site[1] and regs[site[4]] is data):
        return True
    if sys.getrefcount(data) - _CALL_REFS - mine <= 0:
        return False
    skip = {site[1], site[4]}
    if any(k not in skip and r is not data and _holds(r, data) for k, r in enumerate(regs)):
        return True
    return any(_holds(r, data) for frame in frames for r in frame[2])


class VirtualMachine:
    """``VirtualMachine(exe, device)``: ``invoke(name, *args)``, ``run(*args)``,
    ``set_input``, ``invoke_stateful`` / ``get_outputs``, ``benchmark``."""

    def __init__(self, exe: Executable, device=None, memory_cfg=None):
        if not isinstance(exe, Executable):
            raise TypeError(f"VirtualMachine expects a Relay VM Executable, got "
                            f"{type(exe).__name__}")
        if isinstance(device, list | tuple):
            device = device[0] if device else None
        self.exe = exe
        self.device = device if device is not None else cpu(0)
        self.memory_cfg = memory_cfg
        self._inputs: dict[str, list] = {}
        self._outputs: list | None = None
        self._nthreads = threadpool.get_num_threads()
        self._entries = [_KERNEL(k.address) if k.kind == "native" else None
                         for k in exe.kernels]
        # shapes and dtypes are the compiler's (typed) and arguments are checked on entry, so
        # kernels are called without per-call checks: by their tuple-reading entry when present
        self._fast = [_tuple_entry(k) if k.kind == "native" else None for k in exe.kernels]
        self._workspaces: dict[int, np.ndarray] = {}
        # arrays a result must not alias (it is copied instead): the constants and what they
        # are views of
        self._const_ids = _leaves(exe.constants, set())
        for k in exe.kernels:
            _leaves(getattr(k, "consts", ()) or (), self._const_ids)
        self._code = self._prepare()
        # straight-line functions get a native entry (native_entry.py): one native call per
        # run at a call shape seen before; False runs every call in the dispatch loop
        self.native_entry = True
        self._native = [native_function(self, k) for k in range(len(exe.functions))]
        # loop functions without calls as generated Python (straight_line.py); False runs them
        # in the dispatch loop
        self.straight_line = True
        # their loops run natively from the second step where the loop qualifies
        # (loop_ops.py, runtime/native_loop.py); False keeps every step in Python
        self.native_loops = True
        self._straight = [straight_line_function(self, k, _KILL)
                          for k in range(len(exe.functions))]
        # then the functions whose calls all go to those (each call one Python frame)
        leaves = list(self._straight)
        self._straight = [f if f is not None else
                          straight_line_function(self, k, _KILL, leaves, VMClosure)
                          for k, f in enumerate(leaves)]
        self.module = self

    # ------------------------------------------------------------------ API
    def _func(self, func_name: str):
        return self.exe._function(func_name)

    def _check(self, func_name: str, args, kwargs) -> list:
        f = self._func(func_name)
        args = list(args)
        if kwargs:
            unknown = [k for k in kwargs if k not in f.params]
            if unknown:
                raise ValueError(f"{func_name}() got an unexpected keyword argument "
                                 f"{unknown[0]!r}; parameters are {f.params}")
            for name in f.params[len(args):]:
                if name not in kwargs:
                    raise ValueError(f"{func_name}() missing argument {name!r}")
                args.append(kwargs[name])
        if len(args) != len(f.params):
            raise ValueError(f"{func_name}() takes {len(f.params)} argument(s) "
                             f"({', '.join(f.params)}), got {len(args)}")
        return [_check_arg(a, rec, f"{func_name}() argument '{n}'")
                for a, rec, n in zip(args, f.param_types, f.params)]

    def set_input(self, func_name: str, *args, **kwargs) -> None:
        """Store the arguments of ``func_name`` for a later ``invoke`` without arguments."""
        self._inputs[func_name] = self._check(func_name, args, kwargs)

    def get_input_index(self, input_name: str, func_name: str = "main") -> int:
        params = self._func(func_name).params
        return params.index(input_name) if input_name in params else -1

    def invoke(self, func_name: str, *args, **kwargs):
        """Run ``func_name``; results are NDArrays, tuples and ADT values ``ADT``s."""
        if args or kwargs:
            values = self._check(func_name, args, kwargs)
        elif func_name in self._inputs:
            values = self._inputs[func_name]
        else:
            values = self._check(func_name, (), {})
        done = threadpool.keep_warm()
        try:
            result = self._execute(self.exe.global_map[func_name], values)
            # (the constants' ids are kept, not copied per call: a model holds thousands)
            call_ids = _leaves(values, set(map(id, self._workspaces.values())))
            return _to_external(result, (call_ids, self._const_ids))
        finally:
            if done is not None:
                done()

    def run(self, *args, **kwargs):
        return self.invoke("main", *args, **kwargs)

    def invoke_stateful(self, func_name: str, *args, **kwargs) -> None:
        """Run ``func_name`` and keep its outputs for ``get_outputs``."""
        self._outputs = [self.invoke(func_name, *args, **kwargs)]

    def get_outputs(self) -> list:
        """The outputs of the last ``invoke_stateful``: a tuple result's fields, else [result]."""
        if self._outputs is None:
            raise ValueError("get_outputs: call invoke_stateful first")
        res = self._outputs[0]
        return list(res.fields) if isinstance(res, ADT) and res.tag == 0 else [res]

    def get_num_outputs(self) -> int:
        return len(self.get_outputs())

    def benchmark(self, device=None, *args, func_name: str = "main", repeat: int = 5,
                  number: int = 5, min_repeat_ms: int | None = None, end_to_end: bool = False,
                  **kwargs) -> ProfileResult:
        """Seconds per call of ``func_name`` over ``repeat`` rounds of ``number`` calls."""
        if args or kwargs:
            self.set_input(func_name, *args, **kwargs)
        values = self._inputs.get(func_name) or self._check(func_name, (), {})
        index = self.exe.global_map[func_name]
        self._execute(index, values)
        return time_calls(lambda: self._execute(index, values), number, repeat, min_repeat_ms)

    # ------------------------------------------------------------------ kernels
    def _invoke_packed(self, idx: int, inputs: list, outputs: list | None) -> list:
        k = self.exe.kernels[idx]
        if outputs is not None and k.kind == "native":
            arrays = [contiguous(a) for a in inputs]
            arrays += k.consts
            arrays += outputs
            if k.ws_bytes:
                ws = self._workspaces.get(idx)
                if ws is None:
                    ws = self._workspaces[idx] = np.empty(k.ws_bytes, np.uint8)
                arrays.append(ws)
            fast = self._fast[idx]
            if fast is not None:  # the entry that reads the arrays' data pointers itself
                fast(tuple(arrays), self._nthreads)
            else:
                ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
                self._entries[idx](ptrs, None, self._nthreads)
            return outputs
        if k.run is None:
            raise RuntimeError(f"Relay VM: kernel {k.name!r} cannot run (no code loaded)")
        try:
            res = k.run([np.asarray(a) for a in inputs] + list(k.consts))
        except Exception as err:
            raise RuntimeError(f"Relay VM: kernel {k.name!r} failed: {type(err).__name__}: "
                               f"{err}") from err
        res = [contiguous(np.asarray(r)) for r in res]
        if outputs is None:
            return res
        if len(res) != len(outputs):
            raise RuntimeError(f"Relay VM: kernel {k.name!r} returned {len(res)} outputs, "
                               f"expected {len(outputs)}")
        for o, r in zip(outputs, res):
            if o.shape != r.shape:
                raise RuntimeError(f"Relay VM: kernel {k.name!r} returned shape "
                                   f"{_shape_str(r.shape)}, expected {_shape_str(o.shape)}")
            np.copyto(o, r, casting="unsafe")
        return outputs

    def _update_row(self, data: np.ndarray, row: np.ndarray, index, args: list,
                    site: tuple, regs: list | None = None, frames: list = ()) -> np.ndarray:
        """``UpdateRow`` (prepared instruction ``site``): ``data[index] = row``, in place only
        where no other value of the program is that tensor, else into a copy. ``vm.update_row``'s
        contract (``data`` is not used after) holds for the program as written, but passes of a
        pure IR may make the initial buffer a value that is also used elsewhere
        (EliminateCommonSubexpr merging two ``copy(x)``, a ``copy`` removed, a loop's result fed
        to the next loop's buffer and read as its source), and a loop may pass the buffer on as
        another loop variable too (its old value then still read): a write in place would
        change those. So a write goes in place only into a buffer the instruction's row site
        (``runtime.row_site``, shared with Relax) made, whose register is not read after this
        instruction (``site[5]``, ``liveness.read_after_update_row``) and which nothing else
        holds (no argument, no other register of this call or of a caller, no tuple, closure
        or view: its reference count); one copy per loop run, O(row) per step after. Memory
        the VM does not own is never written."""
        # (found before the call: its arguments on the stack would count as references)
        copy = site[5] or any(map(is_, args, repeat(data))) or \
            (regs is not None and _held_elsewhere(data, regs, site, frames))
        return site[6][0](data, row, index, copy)

    def _row_view(self, data: np.ndarray, index, shape: tuple, dtype, args: list,
                  site: tuple, regs: list, frames: list):
        """A view of row ``index`` of ``data`` for the kernel making the row ``UpdateRow``
        ``site`` writes next (generated code, where ``straight_line`` proved that nothing
        between reads the data or changes it or the index), when that write would go in place
        (``_update_row``'s conditions hold now) and the row site hands it out; else None."""
        if site[5] or any(map(is_, args, repeat(data))) or _held_elsewhere(data, regs, site,
                                                                             frames):
            return None
        return site[6][2](data, index, shape, dtype)

    def _invoke_dynamic(self, ins: tuple, inputs: list) -> list:
        """A dynamic-shape kernel's call at call site ``ins``: through the site's binding
        (``BoundCall``: the lookups by shape done once) while the inputs match it, binding them
        anew when they do not; kernels that do not bind run as before."""
        site = ins[7]
        if site is not None:
            args = [*inputs, *ins[6]] if ins[6] else inputs
            bound = site[0]
            outs = bound.run(args) if bound is not None else None
            if outs is not None:
                return outs
            if all(type(a) is np.ndarray for a in args):
                bound = site[0] = self.exe.kernels[ins[1]].run.bind(args)
                if bound is not None and site[1]:  # (its own: other sites may share a binding)
                    bound = site[0] = bound.copy()
                    bound.keep_outputs()
            outs = bound.run(args) if bound is not None else None
            if outs is not None:
                return outs
        return self._invoke_packed(ins[1], inputs, None)

    # ------------------------------------------------------------------ dispatch loop
    def _execute(self, func_index: int, args: list):
        """Run function ``func_index``: through its native entry's plan for this call shape when
        it has one (recording it at a new shape), else in the dispatch loop."""
        nf = self._native[func_index] if self.native_entry else None
        if nf is not None:
            got = nf.try_call(args)
            if got is RECORD:
                return nf.record(args)
            if got is not MISS:
                return got
        return self._execute_loop(func_index, args)

    def _execute_loop(self, func_index: int, args: list):
        """Run function ``func_index`` in the dispatch loop; Python's cyclic collector is paused
        meanwhile (VM values are acyclic, and a deep recursion would otherwise rescan its frames
        again and again)."""
        with paused():
            return self._loop(func_index, args)

    def _prepare(self) -> list[tuple]:
        """Per function: (instructions with kernel entries and dtypes resolved, register file
        size, parameter count). ``InvokePacked`` becomes ``(op, idx, inputs, outputs, dyn, fast
        entry, constants)``; ``AllocTensor`` gets its numpy dtype and byte size."""
        prepared = []
        for f in self.exe.functions:
            code = []
            # a loop (a tail call became a jump back): its dynamic kernels' call sites reuse
            # their outputs of two steps before (BoundCall.keep_outputs)
            loop = any((ins[0] == B.GOTO and ins[1] <= 0) or
                       (ins[0] == B.IF and min(ins[3], ins[4]) <= 0) for ins in f.instructions)
            kills = kill_points(f.instructions) if KILL_DEAD_REGISTERS else None
            # a function that branches: registers dropped at its calls of VM functions instead
            dead = dead_at_calls(f.instructions, f.register_file_size) \
                if KILL_DEAD_REGISTERS and kills is None else None
            read_after = read_after_update_row(f.instructions)
            # a loop's storages of one tensor: that tensor made fresh (one allocation a step)
            fresh = fresh_tensor_storages(f.instructions) if loop else frozenset()
            for pc, ins in enumerate(f.instructions):
                if kills is not None and pc and kills[pc - 1]:
                    code.append((_KILL, kills[pc - 1]))
                op = ins[0]
                if op == B.INVOKE_PACKED:
                    _, idx, arity, nout, args, dyn = ins
                    k = self.exe.kernels[idx]
                    fast = self._fast[idx] if not k.ws_bytes else None
                    # a dynamic-shape kernel's call site keeps its last binding (``_bind``)
                    site = [None, loop] if dyn and callable(getattr(k.run, "bind", None)) \
                        else None
                    ins_regs, out_regs = tuple(args[:arity - nout]), tuple(args[arity - nout:])
                    # the registers a call reads, gathered into its argument tuple in C (no
                    # constants between: the static entry's inputs and outputs, a binding's
                    # inputs)
                    gather = (gather_registers(ins_regs + out_regs) if fast is not None else
                              gather_registers(ins_regs) if site is not None else None) \
                        if not k.consts else None
                    code.append((op, idx, ins_regs, out_regs, bool(dyn), fast, tuple(k.consts),
                                 site, gather))
                elif op == B.ALLOC_STORAGE:  # (the tensor made next, when it is fresh)
                    # (nothing dropped between the two: the tensor's instruction comes next)
                    nxt = f.instructions[pc + 1] if pc in fresh and \
                        (kills is None or not kills[pc]) else None
                    made = None
                    if nxt is not None:
                        dt = np.dtype(nxt[4])
                        shape = tuple(nxt[3])
                        if math.prod(shape) * dt.itemsize <= ins[1]:
                            made = (nxt[5], shape, dt)
                    code.append((*ins[:5], made))
                elif op == B.ALLOC_TENSOR:
                    dt = np.dtype(ins[4])
                    shape = tuple(ins[3])
                    code.append((op, ins[1], ins[2], shape, dt, ins[5],
                                 math.prod(shape) * dt.itemsize))
                elif op in (B.INVOKE, B.INVOKE_CLOSURE):
                    code.append((*ins[:4], dead.get(pc, ()) if dead else ()))
                elif op == B.UPDATE_ROW:  # (whether the old tensor may be read after; its site)
                    code.append((*ins, pc in read_after, row_site(_row_index)))
                else:
                    code.append(ins)
            prepared.append((code, f.register_file_size, len(f.params), f.name))
        return prepared

    def _loop(self, func_index: int, args: list):
        straight = self._straight if self.straight_line else [None] * len(self._code)
        if straight[func_index] is not None:
            return straight[func_index](args, [], args)
        prepared = self._code
        consts = self.exe.constants
        nthreads = self._nthreads
        code, nreg, _, _ = prepared[func_index]
        regs = [None] * nreg
        regs[:len(args)] = args
        pc = 0
        frames: list = []
        # (the branches below test the instructions of a loop's step first)
        INVOKE_PACKED, ALLOC_STORAGE, ALLOC_TENSOR, MOVE = \
            B.INVOKE_PACKED, B.ALLOC_STORAGE, B.ALLOC_TENSOR, B.MOVE
        GOTO, LOAD_CONST, UPDATE_ROW, LOAD_CONSTI, IF = \
            B.GOTO, B.LOAD_CONST, B.UPDATE_ROW, B.LOAD_CONSTI, B.IF
        empty, uint8 = np.empty, np.uint8
        while True:
            ins = code[pc]
            op = ins[0]
            if op == INVOKE_PACKED:
                fast = ins[5]
                if fast is not None:
                    if ins[8] is not None:
                        fast(ins[8](regs), nthreads)
                    else:
                        outs = [regs[r] for r in ins[3]]
                        fast((*[regs[r] for r in ins[2]], *ins[6], *outs), nthreads)
                elif ins[4]:
                    site = ins[7]  # (its binding first, here: a loop's step makes this call)
                    bound = site[0] if site is not None else None
                    outs = None
                    if bound is not None:
                        outs = bound.run(ins[8](regs) if ins[8] is not None else
                                         [*[regs[r] for r in ins[2]], *ins[6]])
                    if outs is None:
                        outs = self._invoke_dynamic(ins, [regs[r] for r in ins[2]])
                    for r, v in zip(ins[3], outs):
                        regs[r] = v
                else:
                    self._invoke_packed(ins[1], [regs[r] for r in ins[2]],
                                        [regs[r] for r in ins[3]])
                pc += 1
            elif op == ALLOC_STORAGE:
                made = ins[5]
                if made is None:
                    regs[ins[4]] = empty(ins[1], uint8)
                    pc += 1
                else:  # its one tensor, fresh (liveness.fresh_tensor_storages): both done
                    regs[made[0]] = empty(made[1], made[2])
                    pc += 2
            elif op == _KILL:
                for r in ins[1]:
                    regs[r] = None
                pc += 1
            elif op == ALLOC_TENSOR:
                off = ins[2]
                regs[ins[5]] = regs[ins[1]][off:off + ins[6]].view(ins[4]).reshape(ins[3])
                pc += 1
            elif op == MOVE:
                regs[ins[2]] = regs[ins[1]]
                pc += 1
            elif op == GOTO:
                pc += ins[1]
            elif op == LOAD_CONST:
                regs[ins[2]] = consts[ins[1]]
                pc += 1
            elif op == UPDATE_ROW:
                regs[ins[4]] = self._update_row(regs[ins[1]], regs[ins[2]], regs[ins[3]], args,
                                                ins, regs, frames)
                pc += 1
            elif op == LOAD_CONSTI:
                regs[ins[2]] = ins[1]
                pc += 1
            elif op == IF:
                a, b = regs[ins[1]], regs[ins[2]]
                if type(a) is np.ndarray:
                    a = a.item()
                if type(b) is np.ndarray:
                    b = b.item()
                pc += ins[3] if a == b else ins[4]
            elif op == B.GET_FIELD:
                regs[ins[3]] = regs[ins[1]].fields[ins[2]]
                pc += 1
            elif op == B.GET_TAG:
                regs[ins[2]] = regs[ins[1]].tag
                pc += 1
            elif op == B.INVOKE or op == B.INVOKE_CLOSURE:
                if op == B.INVOKE:
                    target = ins[1]
                    values = [regs[r] for r in ins[2]]
                else:
                    clo = regs[ins[1]]
                    if type(clo) is not VMClosure:
                        raise RuntimeError(f"Relay VM: invoke_closure on a "
                                           f"{type(clo).__name__}, not a closure")
                    target = clo.func_index
                    values = clo.captured + [regs[r] for r in ins[2]]
                callee, cnreg, nparams, cname = prepared[target]
                if len(values) != nparams:
                    raise RuntimeError(f"Relay VM: {cname} takes {nparams} arguments, got "
                                       f"{len(values)}")
                for r in ins[4]:  # (read on no path after the call)
                    regs[r] = None
                frames.append((code, pc + 1, regs, ins[3]))
                if straight[target] is not None:  # (it calls no VM function: no frame of its own)
                    value = straight[target](values, frames, args)
                    frames.pop()
                    regs[ins[3]] = value
                    pc += 1
                    continue
                regs = [None] * cnreg
                regs[:nparams] = values
                code = callee
                pc = 0
            elif op == B.RET:
                value = regs[ins[1]]
                if not frames:
                    return value
                code, pc, regs, dst = frames.pop()
                regs[dst] = value
            elif op == B.ALLOC_ADT:
                regs[ins[3]] = ADT(ins[1], [regs[r] for r in ins[2]])
                pc += 1
            elif op == B.ALLOC_CLOSURE:
                regs[ins[3]] = VMClosure(ins[1], [regs[r] for r in ins[2]])
                pc += 1
            elif op == B.SHAPE_OF:
                regs[ins[2]] = np.asarray(regs[ins[1]].shape, dtype="int64")
                pc += 1
            elif op == B.RESHAPE_TENSOR:
                shape = tuple(int(d) for d in np.asarray(regs[ins[2]]).reshape(-1))
                regs[ins[3]] = np.reshape(regs[ins[1]], shape)
                pc += 1
            elif op == B.ALLOC_TENSOR_REG:
                shape = tuple(int(d) for d in np.asarray(regs[ins[3]]).reshape(-1))
                dt = np.dtype(ins[4])
                n = math.prod(shape) * dt.itemsize
                regs[ins[5]] = regs[ins[1]][ins[2]:ins[2] + n].view(dt).reshape(shape)
                pc += 1
            elif op == B.FATAL:
                raise RuntimeError("Relay VM: reached a fatal instruction (no match clause "
                                   "applies)")
            else:
                raise RuntimeError(f"Relay VM: unknown opcode {op!r} at pc {pc}")
