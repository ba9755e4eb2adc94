"""``relax.VirtualMachine``: runs an Executable's functions — a loop over instructions with a
stack of frames (a Relax function calling another, even recursively, costs no Python recursion),
registers holding numpy arrays, shapes, tuples, closures and storages."""

from __future__ import annotations

import time

import numpy as np

from .. import threadpool
from ..gc_pause import paused
from ..module import time_calls
from ..ndarray import NDArray, contiguous, cpu
from ..registry import get_global_func
from .builtins import BUILTINS, ShapeTuple, VMClosure, specialize
from .executable import (
    ARG_CONST,
    ARG_CTX,
    ARG_FUNC,
    ARG_IMM,
    ARG_REG,
    CALL,
    GOTO,
    IF,
    KILL,
    MOVE,
    RET,
    Executable,
    VMFunction,
)
from .liveness import dead_at_vm_calls
from .native_entry import MISS, RECORD, native_function
from .straight_line import straight_line_function

_VM, _KERNEL, _PACKED = range(3)
_CPU = cpu(0)


class _Missing:
    """A packed function not registered when the VM was made; looked up again when called."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, *args):
        fn = get_global_func(self.name, allow_missing=True)
        if fn is None:
            raise ValueError(f"the program calls packed function {self.name!r}, which is not "
                             "registered (tvm.register_func)")
        return fn(*args)


class _PackedArray(NDArray, np.lib.mixins.NDArrayOperatorsMixin):
    """A register's array as a registered packed function sees it: an NDArray sharing the
    register's memory (``numpy()``, ``copyfrom`` write through, as TVM's DPS functions expect),
    which also takes numpy's operators and indexing for functions written against numpy."""

    __slots__ = ()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(i._data if isinstance(i, NDArray) else i for i in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(o._data if isinstance(o, NDArray) else o
                                  for o in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __getitem__(self, key):
        return self._data[key]

    def __setitem__(self, key, value):
        self._data[key] = np.asarray(value)

    def __len__(self):
        return len(self._data)

    def __getattr__(self, name):  # numpy's methods (reshape, astype, sum...) on the data
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._data, name)


def _to_packed(x):
    """A VM value as a registered function's argument (arrays become NDArrays)."""
    if isinstance(x, np.ndarray):
        view = object.__new__(_PackedArray)
        view._data, view.device, view._content_hash = x, _CPU, None
        return view
    if isinstance(x, tuple) and not isinstance(x, ShapeTuple):
        return tuple(_to_packed(f) for f in x)
    return x


class _UserPacked:
    """A registered (non-builtin) packed function called from the VM: arguments as NDArrays,
    the result back to VM values."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        out = self.fn(*[_to_packed(a) for a in args])
        return out if out is None else _to_vm(out, "a packed function's result")


def _to_vm(x, where: str):
    if isinstance(x, NDArray):
        return x._data
    if isinstance(x, np.ndarray):
        return contiguous(x)
    if isinstance(x, ShapeTuple | VMClosure) or x is None:
        return x
    if isinstance(x, bool | int | float | str | np.number):
        return x
    if isinstance(x, list | tuple):
        return tuple(_to_vm(f, where) for f in x)
    if hasattr(x, "fields"):  # runtime ADT tuple
        return tuple(_to_vm(f, where) for f in x.fields)
    if hasattr(x, "__array__"):
        return contiguous(x)
    if isinstance(x, dict | set):
        raise TypeError(f"{where}: cannot pass a {type(x).__name__} to a Relax function")
    # an opaque run-time object (an nn.KVCache's cache...): an R.Object parameter takes it as
    # is; a parameter of another kind rejects it in its entry check (vm.builtin.check_*_info)
    return x


def _from_vm(x):
    if isinstance(x, np.ndarray):
        return NDArray(x)
    if isinstance(x, tuple) and not isinstance(x, ShapeTuple):
        return tuple(_from_vm(f) for f in x)
    return x


class ProfileReport:
    """Per-kernel and per-builtin times of one profiled call (``vm.profile(...)``)."""

    def __init__(self, rows: dict, total: float, native: bool = False):
        self.rows = rows  # name -> [calls, seconds]
        self.total = total
        self.native = native  # the call ran through the native entry (no builtins per run)

    def table(self) -> str:
        lines = [f"{'Name':40s} {'Calls':>6s} {'Time (us)':>12s} {'Percent':>8s}"]
        for name, (calls, secs) in sorted(self.rows.items(), key=lambda kv: -kv[1][1]):
            pct = 100.0 * secs / self.total if self.total else 0.0
            lines.append(f"{name:40s} {calls:6d} {secs * 1e6:12.2f} {pct:8.2f}")
        lines.append(f"{'Total':40s} {'':6s} {self.total * 1e6:12.2f}")
        if self.native:
            lines.append("(ran through the native entry: one native call per run at this call "
                         "shape, kernels timed one by one; the shape checks and allocations "
                         "ran once, when the shape was first seen. vm.native_entry = False "
                         "profiles the interpreter)")
        return "\n".join(lines)

    __str__ = table

    def __repr__(self):
        return f"ProfileReport({len(self.rows)} entries, total={self.total * 1e6:.1f} us)"


class VirtualMachine:
    """Run a Relax executable: ``vm = relax.VirtualMachine(ex, tvm.cpu()); vm["main"](x)``."""

    def __init__(self, rt_mod, device=None, memory_cfg=None, profile: bool = False):
        exe = getattr(rt_mod, "executable", rt_mod)
        if not isinstance(exe, Executable):
            raise TypeError(f"VirtualMachine expects a relax Executable (relax.build's result "
                            f"or tvm.runtime.load_module of one), got {type(rt_mod).__name__}")
        self._exec = exe
        self.device = device
        self._storage_cache: dict = {}
        self._storage_offset: dict = {}
        self._storage_spare: dict = {}  # each site's buffer before its last (alloc_storage)
        self._storage_spare_offset: dict = {}
        self._inputs: dict = {}
        self._outputs: dict = {}
        self._saved: dict = {}  # save_function's closures by name
        self._profile = None
        table = []
        for kind, name in exe.func_table:
            if kind == "vm":
                if name not in exe.functions:
                    raise ValueError(f"executable: function table names {name!r}, which it "
                                     "does not define")
                table.append((_VM, exe.functions[name], name))
            elif kind == "kernel":
                table.append((_KERNEL, exe.native_kernel(name), name))
            else:
                entry = BUILTINS.get(name)
                if entry is not None:
                    table.append((_PACKED, entry[0], name))
                else:
                    fn = exe.external_function(name)
                    if fn is None:
                        fn = get_global_func(name, allow_missing=True)
                    fn = _UserPacked(fn if fn is not None else _Missing(name))
                    table.append((_PACKED, fn, name))
        self._table = table
        self._consts = exe.constants
        # linking allocates a few acyclic tuples per instruction: the cyclic collector's full
        # collections meanwhile rescanned the whole heap (the program's IR included) for nothing
        # (100,000 calls: most of the VM's setup time)
        with paused():
            self._linked = {id(f): self._link(f) for f in exe.functions.values()}
            # per function, {pc of a call of a VM function: registers dead after it}: dropped
            # before the caller's frame is pushed (liveness.py)
            table = self._table
            self._dead = {id(f): dead_at_vm_calls(f.code, len(f.params),
                                                  lambda ins: table[ins[2]][0] == _VM)
                          for f in exe.functions.values()}
            # straight-line functions get a native entry (native_entry.py); False turns it off
            self.native_entry = True
            # the other functions that call no Relax function (loops and branches too) run as
            # generated Python (straight_line.py), made at their first call, also when called
            # from an interpreted function; False interprets them instruction by instruction
            self.straight_line = True
            # their loops run natively where they qualify (loop_ops.py, runtime/native_loop.py):
            # False, set before a function's first call, keeps every step in Python
            self.native_loops = True
            self._straight: dict = {}
            self._native = {}
            for f in exe.functions.values():
                nf = native_function(f, self._linked[id(f)], self._consts)
                if nf is not None:
                    self._native[f.name] = nf

    def _link(self, func: VMFunction) -> list:
        """Instructions with constants, immediates, functions and the VM resolved in advance:
        a call becomes ``(CALL, dst, kind, target, name, template, [(position, register)])``."""
        out = []
        for ins in func.code:
            if ins[0] != CALL:
                out.append(ins)
                continue
            kind, target, name = self._table[ins[2]]
            tmpl, slots = [], []
            for k, v in ins[3]:
                if k == ARG_REG:
                    slots.append((len(tmpl), v))
                    tmpl.append(None)
                elif k == ARG_CONST:
                    tmpl.append(self._consts[v])
                elif k == ARG_IMM:
                    tmpl.append(v)
                elif k == ARG_CTX:
                    tmpl.append(self)
                else:
                    tmpl.append(self._table[v][1])
            site = specialize(name, tmpl, slots) if kind == _PACKED and \
                BUILTINS.get(name, (None,))[0] is target else None
            if site is not None:  # a function made for this call site takes the registers
                target, tmpl = site, [None] * len(slots)
                slots = [(k, r) for k, (_, r) in enumerate(slots)]
            regs_only = [r for _, r in slots] if len(slots) == len(tmpl) else None
            out.append((CALL, ins[1], kind, target, name, tmpl, slots, regs_only))
        return out

    # ------------------------------------------------------------------ calling
    def __getitem__(self, name: str):
        if name in self._saved:
            return self._saved[name]
        func = self._function(name)
        nf = self._native.get(func.name)

        def call(*args):
            if nf is not None and self.native_entry:  # the native entry's fast path first
                got = nf.try_call(args)
                if got is not MISS and got is not RECORD:
                    return got
                return self._interpret(func, args, nf if got is RECORD else None)
            return self._interpret(func, args, None)

        call.__name__ = name
        return call

    def _function(self, name: str) -> VMFunction:
        f = self._exec.functions.get(name)
        if f is None:
            raise AttributeError(f"the executable has no Relax function {name!r}; it has "
                                 f"{sorted(self._exec.functions)}")
        return f

    def invoke(self, name: str, *args):
        done = threadpool.keep_warm()
        try:
            nf = self._native.get(name) if self.native_entry else None
            got = MISS if nf is None else nf.try_call(args)
            if got is not MISS and got is not RECORD:
                return got
            return self._interpret(self._function(name), args, nf if got is RECORD else None)
        finally:
            if done is not None:
                done()

    def _interpret(self, func: VMFunction, args, recorder):
        """Run ``func`` in the interpreter; ``recorder`` (a NativeFunction) records a plan of
        this call shape for the native entry."""
        name = func.name
        if len(args) != len(func.params):
            raise TypeError(f"{name}() takes {len(func.params)} arguments "
                            f"({', '.join(func.params)}), got {len(args)}")
        vals = [_to_vm(a, f"{name}() argument {p!r}") for a, p in zip(args, func.params,
                                                                        strict=True)]
        if recorder is not None:
            return _from_vm(recorder.record(vals))
        return _from_vm(self._run(func, vals))

    def _call_value(self, f, args):
        """Call a function value (a VM function reference, or a Python callable)."""
        if isinstance(f, VMFunction):
            return self._run(f, list(args))
        if isinstance(f, VMClosure):  # (the captured values last: ``builtins.invoke_closure``)
            return self._call_value(f.func, list(args) + list(f.captured))
        return f(*args)

    def _move_value(self, kind: int, v):
        """A MOVE's operand other than a register: a constant, immediate, function or the VM."""
        return self._consts[v] if kind == ARG_CONST else v if kind == ARG_IMM else \
            self._table[v][1] if kind == ARG_FUNC else self

    def _leaf(self, func: VMFunction):
        """The generated function of ``func`` when it calls no Relax function (else None): a
        generated caller calls it directly, one Python frame deep."""
        code = self._linked[id(func)]
        if any(ins[0] == CALL and isinstance(ins[3], VMFunction) for ins in code):
            return None
        fast = self._straight.get(id(func), MISS)
        if fast is MISS:
            fast = self._straight[id(func)] = straight_line_function(
                func, code, self._move_value, self.native_loops)
        return fast

    def _run(self, func: VMFunction, args: list):
        if len(args) != len(func.params):
            raise TypeError(f"{func.name}() takes {len(func.params)} arguments, got "
                            f"{len(args)}")
        consts, prof, linked, dead_at = self._consts, self._profile, self._linked, self._dead
        generated, straight = prof is None and self.straight_line, self._straight
        if generated:
            fast = straight.get(id(func), MISS)
            if fast is MISS:
                fast = self._straight[id(func)] = straight_line_function(
                    func, linked[id(func)], self._move_value,
                    self.native_loops, self._leaf, dead_at[id(func)])
            if fast is not None:
                return fast(args)
        regs = [None] * func.num_regs
        regs[:len(args)] = args
        code = linked[id(func)]
        pc = 0
        frames = []
        while True:
            ins = code[pc]
            op = ins[0]
            if op == CALL:
                _, dst, kind, target, tname, tmpl, slots, regs_only = ins
                if regs_only is not None:  # (call_argv, inlined: a call a step less)
                    argv = [regs[r] for r in regs_only]
                else:
                    argv = tmpl.copy()
                    for k, r in slots:
                        argv[k] = regs[r]
                if kind == _VM:
                    if len(argv) != len(target.params):
                        raise TypeError(f"{target.name}() takes {len(target.params)} "
                                        f"arguments, got {len(argv)}")
                    dead = dead_at[id(func)].get(pc)
                    if dead is not None:  # (read on no path after the call)
                        for r in dead:
                            regs[r] = None
                    fast = straight.get(id(target), MISS) if generated else None
                    if fast is MISS:
                        fast = straight[id(target)] = straight_line_function(
                            target, linked[id(target)], self._move_value,
                            self.native_loops, self._leaf, dead_at[id(target)])
                    if fast is not None:  # (calls no Relax function: no deeper than this)
                        regs[dst] = fast(argv)
                        pc += 1
                        continue
                    frames.append((func, regs, code, pc, dst))
                    func, code, pc = target, linked[id(target)], 0
                    regs = [None] * target.num_regs
                    regs[:len(argv)] = argv
                    continue
                if prof is None:
                    regs[dst] = target(*argv)
                else:
                    t0 = time.perf_counter()
                    regs[dst] = target(*argv)
                    row = prof.setdefault(tname, [0, 0.0])
                    row[0] += 1
                    row[1] += time.perf_counter() - t0
            elif op == MOVE:
                k, v = ins[2]
                regs[ins[1]] = regs[v] if k == ARG_REG else consts[v] if k == ARG_CONST else \
                    v if k == ARG_IMM else self._table[v][1] if k == ARG_FUNC else self
            elif op == KILL:
                regs[ins[1]] = None
            elif op == RET:
                val = regs[ins[1]]
                if not frames:
                    return val
                func, regs, code, pc, dst = frames.pop()
                regs[dst] = val
            elif op == GOTO:
                pc += ins[1]
                continue
            elif op == IF:
                c = regs[ins[1]]
                if isinstance(c, np.ndarray):
                    if c.size != 1:
                        raise ValueError(f"{func.name}: the condition of an if must be a "
                                         f"scalar (a 0-d bool tensor), got a tensor of shape "
                                         f"{c.shape}")
                    c = c.item()
                if not c:
                    pc += ins[2]
                    continue
            pc += 1

    # ------------------------------------------------------------------ introspection
    def get_function_arity(self, func_name: str) -> int:
        """The number of parameters of Relax function ``func_name`` (TVM's VM API)."""
        return len(self._function(func_name).params)

    def get_function_param_name(self, func_name: str, index: int) -> str:
        """The name of parameter ``index`` of Relax function ``func_name``."""
        params = self._function(func_name).params
        if not 0 <= index < len(params):
            raise IndexError(f"get_function_param_name({func_name!r}, {index}): the function "
                             f"has {len(params)} parameters ({', '.join(params)})")
        return params[index]

    def save_function(self, func_name: str, saved_name: str, *args,
                      include_return: bool = True, **kwargs) -> None:
        """Make ``vm[saved_name]()`` call ``func_name`` on these arguments (converted once, so
        timing the saved function leaves the conversion out), as TVM's ``save_function``;
        with ``include_return=False`` the saved function returns None."""
        func = self._function(func_name)
        vals = list(args)
        for p in func.params[len(args):]:
            if p not in kwargs:
                raise TypeError(f"save_function({func_name!r}): missing argument {p!r}")
            vals.append(kwargs.pop(p))
        if kwargs:
            raise TypeError(f"save_function({func_name!r}): unknown arguments "
                            f"{sorted(kwargs)}")
        if len(vals) != len(func.params):
            raise TypeError(f"save_function({func_name!r}): takes {len(func.params)} "
                            f"arguments ({', '.join(func.params)}), got {len(vals)}")
        vals = [v if isinstance(v, NDArray) or not isinstance(v, np.ndarray) else NDArray(v)
                for v in vals]
        run = self[func_name]

        def saved():
            out = run(*vals)
            return out if include_return else None

        saved.__name__ = saved_name
        self._saved[saved_name] = saved

    # ------------------------------------------------------------------ stateful API
    def set_input(self, func_name: str, *args, **kwargs) -> None:
        """Arguments for a later ``invoke_stateful(func_name)`` (positional or by name)."""
        func = self._function(func_name)
        vals = list(args)
        for p in func.params[len(args):]:
            if p not in kwargs:
                raise TypeError(f"set_input({func_name!r}): missing argument {p!r}")
            vals.append(kwargs.pop(p))
        if kwargs:
            raise TypeError(f"set_input({func_name!r}): unknown arguments {sorted(kwargs)}")
        if len(vals) != len(func.params):
            raise TypeError(f"set_input({func_name!r}): takes {len(func.params)} arguments "
                            f"({', '.join(func.params)}), got {len(vals)}")
        self._inputs[func_name] = vals

    def invoke_stateful(self, func_name: str) -> None:
        if func_name not in self._inputs:
            raise ValueError(f"invoke_stateful({func_name!r}): call set_input first")
        self._outputs[func_name] = self.invoke(func_name, *self._inputs[func_name])

    def get_outputs(self, func_name: str):
        if func_name not in self._outputs:
            raise ValueError(f"get_outputs({func_name!r}): call invoke_stateful first")
        return self._outputs[func_name]

    # ------------------------------------------------------------------ timing, profiling
    def time_evaluator(self, func_name: str, dev=None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: int = 0, cooldown_interval_ms: int = 0,
                       repeats_to_cooldown: int = 1, f_preproc: str = ""):
        """A function of the arguments (or none: those of ``set_input``) returning the seconds
        per call, as a ProfileResult (``.mean``, ``.median``, ``.results``)."""
        if func_name == "invoke_stateful":  # TVM: times invoke_stateful(name) of set inputs
            return self._time_stateful(number, repeat, min_repeat_ms)
        saved = func_name in self._saved  # save_function's: called without arguments
        if not saved:
            self._function(func_name)

        def evaluate(*args):
            if not args and not saved:
                if func_name not in self._inputs:
                    raise ValueError(f"time_evaluator({func_name!r}): pass arguments or call "
                                     "set_input first")
                args = self._inputs[func_name]
            run = self[func_name]  # the native entry when the function has one
            run(*args)
            return time_calls(lambda: run(*args), number, repeat, min_repeat_ms)

        return evaluate

    def _time_stateful(self, number: int, repeat: int, min_repeat_ms: int):
        """``time_evaluator("invoke_stateful")``: a function of a Relax function's name timing
        ``invoke_stateful`` on the inputs ``set_input`` gave it."""

        def evaluate(name: str):
            self.invoke_stateful(name)
            return time_calls(lambda: self.invoke_stateful(name), number, repeat,
                              min_repeat_ms)

        return evaluate

    def profile(self, func_name: str, *args) -> ProfileReport:
        """Run ``func_name`` once, timing every kernel and builtin call. A function with a
        native entry is profiled as it runs: at a call shape seen before (or, after one
        untimed call that records it, a new one) its kernels are timed one by one."""
        func = self._function(func_name)
        nf = self._native.get(func.name) if self.native_entry else None
        if nf is not None:
            got = nf.profile(args)
            if got is RECORD:
                self.invoke(func_name, *args)
                got = nf.profile(args)
            if got is not MISS and got is not RECORD:
                return ProfileReport(got[0], got[1], native=True)
        vals = [_to_vm(a, f"{func_name}() argument {p!r}")
                for a, p in zip(args, func.params, strict=True)]
        self._profile = {}
        try:
            t0 = time.perf_counter()
            self._run(func, vals)
            total = time.perf_counter() - t0
            rows = self._profile
        finally:
            self._profile = None
        return ProfileReport(rows, total)
