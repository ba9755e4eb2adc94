"""The graph executor (``tvm.contrib.graph_executor``): run a built graph over planned storage.

``GraphModule(lib["default"](dev))`` checks the graph against its kernels (graph_check) and
plans storage; ``set_input`` checks shape and dtype and copies into the input's storage; ``run``
executes the kernels — as a single call of the whole-graph native entry when every kernel is
native (of the shared native step loop, ``step_loop``, when the graph is too large to have an
entry), else a flat loop of prepared native calls and numpy fallbacks. ``get_output`` returns a
view of the output storage.

Threads: each thread that uses a GraphModule gets its own storage (allocated on its first call),
so ``set_input``/``run``/``get_output`` sequences in different threads never see each other's
values. Parameters (from the factory or ``load_params``) are shared by every thread and read in
place: one aligned, read-only copy of each (the factory's own, once aligned), no per-thread storage
(ResNet-50 kept 100 MB of weights twice, BERT-base 420 MB: ``benchmarks/bench_memory.py``);
``set_input`` of a parameter gives the calling thread a copy of its own. Inputs set in one thread
are not visible in another.
"""

from __future__ import annotations

import ctypes
import threading
import weakref

import numpy as np

from . import blas, threadpool
from .gc_pause import gc_paused, paused
from .graph_check import check_graph, parse_graph_json
from .module import GraphLib, Module, export_library, time_calls
from .ndarray import NDArray, cpu
from .step_loop import StepLoop

ALIGN = 64
_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32)
_KERNEL = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
_WHERE = "graph executor: graph.json"


def _aligned(nbytes: int) -> np.ndarray:
    raw = np.empty(nbytes + ALIGN, dtype=np.uint8)
    off = (-raw.ctypes.data) % ALIGN
    return raw[off:off + nbytes]


def _aligned_copy(value: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``value`` at an ``ALIGN``-byte boundary."""
    out = _aligned(value.nbytes).view(value.dtype).reshape(value.shape)
    np.copyto(out, value)
    return out


def _shareable(value: np.ndarray) -> np.ndarray:
    """``value`` itself when kernels can read it in place (C-contiguous, ``ALIGN``-aligned),
    else an aligned copy; read-only either way (every thread's kernels read it)."""
    if not (value.flags.c_contiguous and value.ctypes.data % ALIGN == 0):
        value = _aligned_copy(value)
    view = value.view()
    view.flags.writeable = False
    return view


def _aligned_param(value) -> NDArray:
    """``value`` as an NDArray whose data starts at an ``ALIGN`` boundary (copied if not)."""
    arr = value.numpy() if isinstance(value, NDArray) else np.asarray(value)
    if arr.flags.c_contiguous and arr.ctypes.data % ALIGN == 0:
        return value if isinstance(value, NDArray) else NDArray(arr)
    return NDArray(_aligned_copy(arr))


def _param_storage(plan: dict, params: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """storage id -> the parameter array (as bytes) its kernels read in place: the storages a
    parameter entry fills alone (itself and reshape views of it; not a graph output, which
    ``get_output`` hands out)."""
    entries, offsets = plan["entries"], plan["offsets"]
    users: dict[int, list[int]] = {}
    for a, (sid, _, _) in enumerate(entries):
        users.setdefault(sid, []).append(a)
    outs = {entries[o][0] for o in plan["outputs"]}
    shared = {}
    for e, value in params.items():
        sid = entries[e][0]
        if sid in outs or any(offsets[a] != 0 for a in users[sid]):
            continue
        if value.nbytes > plan["sizes"][sid] or not value.flags.c_contiguous:
            continue
        if any(np.dtype(entries[a][1]).itemsize * int(np.prod(entries[a][2], dtype=np.int64))
               > value.nbytes for a in users[sid]):
            continue
        raw = value.reshape(-1).view(np.uint8)
        shared[sid] = raw
    return shared


def _shape_str(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


_INDEX = (int, np.integer)  # an input or output index


class _BlasGuard:
    """BLAS on one thread while any run that uses it is in flight (runs in several threads
    share one switch: the user's setting comes back when the last of them finishes)."""

    lock = threading.Lock()
    active = 0
    saved = None

    def __enter__(self):
        with _BlasGuard.lock:
            if _BlasGuard.active == 0:
                _BlasGuard.saved = blas.single_threaded().__enter__()
            _BlasGuard.active += 1

    def __exit__(self, *exc):
        with _BlasGuard.lock:
            _BlasGuard.active -= 1
            if _BlasGuard.active == 0:
                _BlasGuard.saved.__exit__(None, None, None)
        return False


class _State:
    """One thread's storage: buffers, workspace, views, prepared calls and pointer table."""

    __slots__ = ("storage", "workspace", "views", "spans", "table", "entry", "keep", "unset",
                 "family", "slots", "planned", "outputs", "_steps", "_plan_steps", "shared",
                 "__weakref__")

    @property
    def steps(self) -> list:
        """The steps of a Python loop over kernels (no entry or step loop, a debug run): each
        ("native", function, its argument pointers: a slice of ``table``, node name) or
        ("fallback", kernel, input entries, output entries, node name). Made at the first use:
        a run through the entry or the step loop needs none (100k steps: 100k ctypes objects)."""
        if self._steps is None:
            steps = []
            size = ctypes.sizeof(ctypes.c_void_p)
            for (name, k, ins, outs), span in zip(self._plan_steps, self.spans, strict=True):
                if span is None:
                    steps.append(("fallback", k, ins, outs, name))
                    continue
                start, n = span
                cptrs = (ctypes.c_void_p * n).from_buffer(self.table, start * size)
                steps.append(("native", _KERNEL(k.address), cptrs, name))
            self._steps = steps
        return self._steps


class GraphModule:
    """The graph executor module (``tvm.contrib.graph_executor.GraphModule``)."""

    def __init__(self, module, dev=None):
        if isinstance(module, GraphModule):  # GraphModule(lib["default"](dev)): same storage
            self.__dict__.update(module.__dict__)
            return
        if isinstance(module, GraphExecutorFactoryModule):
            module = GraphModule.from_factory(module, dev)
            self.__dict__.update(module.__dict__)
            return
        raise TypeError(f"GraphModule expects lib['default'](dev) (a graph executor module), "
                        f"got {type(module).__name__}")

    @classmethod
    def from_factory(cls, factory, dev=None) -> GraphModule:
        self = object.__new__(cls)
        checked = factory.checked_graph() if isinstance(factory, GraphExecutorFactoryModule) \
            else None
        params = factory.aligned_params() if isinstance(factory, GraphExecutorFactoryModule) \
            else factory.get_params()
        self._setup(factory.get_graph_json(), factory.get_lib(), params, dev, checked=checked)
        return self

    # ------------------------------------------------------------------ setup
    @gc_paused
    def _setup(self, graph_json: str, lib, params: dict, dev, where: str = _WHERE,
               checked: tuple[dict, dict] | None = None) -> None:
        """``checked``: the graph JSON parsed and checked against ``lib`` already (the
        factory's ``checked_graph()``)."""
        self.device = dev or cpu(0)
        if checked is None:
            g = parse_graph_json(graph_json, where)
            checked = g, check_graph(g, lib.kernels, where)
        g, plan = checked
        self.graph = g
        self.lib = lib
        self._plan = plan
        self._input_index = plan["inputs"]
        self._outputs = plan["outputs"]
        self._params: dict[str, np.ndarray] = {}
        for name, value in params.items():
            if name in self._input_index:
                self._params[name] = _shareable(self._checked(name, value))
        self._param_names = set(self._params)
        self.input_names = [n for n in self._input_index if n not in self._param_names]
        self._native_steps = [(k.symbol, len(ins) + len(k.consts) + len(outs) +
                               (1 if k.ws_bytes else 0))
                              for _, k, ins, outs in plan["steps"] if k.kind == "native"]
        all_native = len(self._native_steps) == len(plan["steps"])
        self._entry_addr = lib.entry[2].address if all_native and lib.entry is not None else None
        if self._entry_addr is not None:
            from .graph_check import check_entry

            check_entry(lib.entry[0], self._native_steps, where)
        # no compiled entry (a graph over aot.MAX_ENTRY_STEPS): the shared native step loop
        self._step_loop = None
        if all_native and self._entry_addr is None and self._native_steps:
            self._step_loop = StepLoop([(k.address, nargs) for (_, nargs), (_, k, _, _) in
                                        zip(self._native_steps, plan["steps"], strict=True)])
        self._nthreads = threadpool.get_num_threads()
        # kernels that call BLAS split GEMMs over the thread pool themselves: BLAS runs on one
        # thread during run() only, the user's setting (numpy's) is restored afterwards
        self._uses_blas = any(k.kind == "native" and blas.SHIM_SYMBOL in (k.ir or "")
                              for k in lib.kernels.values())
        self._fresh_states()
        self._state()  # the creating thread's storage, so setup errors surface here

    def _fresh_states(self) -> None:
        self._local = threading.local()
        self._states_lock = threading.Lock()
        self._states = weakref.WeakSet()

    def _state(self) -> _State:
        st = getattr(self._local, "state", None)
        if st is None:
            st = self._new_state()
            self._local.state = st
            with self._states_lock:
                self._states.add(st)
        return st

    @gc_paused  # (100k-step graphs: a full collection rescans every view and step made here)
    def _new_state(self) -> _State:
        plan = self._plan
        st = _State()
        with self._states_lock:
            params = dict(self._params)
        # parameters are read in place (every thread's kernels read the one copy): no storage
        # of their own here, their entries (and reshape views) view the parameter's array
        shared = _param_storage(plan, {self._input_index[n]: v for n, v in params.items()})
        st.storage = [shared[sid] if sid in shared else _aligned(n)
                      for sid, n in enumerate(plan["sizes"])]
        st.workspace = _aligned(max(plan["ws_bytes"], 64))
        st.views = []
        base = [a.ctypes.data for a in st.storage]
        ptr_of = []  # entry -> its address (what a.ctypes.data of its view gives, computed)
        for (sid, dt, shape), off in zip(plan["entries"], plan["offsets"], strict=True):
            st.views.append(np.ndarray(shape, dt, st.storage[sid], off))
            ptr_of.append(base[sid] + off)
        st.shared = set(shared)
        for name, value in params.items():
            e = self._input_index[name]
            if plan["entries"][e][0] not in shared:
                np.copyto(st.views[e], value)
        st.unset = {n for n in self.input_names if n not in params}
        st.outputs = {}  # output index -> the NDArray get_output last returned
        # set_input_zero_copy rebinds an input and the reshape views of it (the entries in
        # its storage: the memory plan gives an input storage of its own): their views, and
        # the pointer table slots kernels read them through
        inputs = {self._input_index[n] for n in self.input_names}
        # (and the parameters read in place: a set_input / load_params of one rebinds them)
        inputs |= {self._input_index[n] for n in params
                   if plan["entries"][self._input_index[n]][0] in shared}
        sid_of = {plan["entries"][e][0]: e for e in inputs}
        st.family = {e: [] for e in inputs}
        for a, (sid, _, _) in enumerate(plan["entries"]):
            if sid in sid_of:
                st.family[sid_of[sid]].append(a)
        st.planned = {e: st.views[e] for e in inputs if plan["entries"][e][0] not in shared}
        st.slots = {a: [] for fam in st.family.values() for a in fam}
        ws_ptr = st.workspace.ctypes.data
        const_ptrs: dict[str, list[int]] = {}
        table, spans = [], []
        for _, k, ins, outs in plan["steps"]:
            if k.kind != "native":
                spans.append(None)
                continue
            cp = const_ptrs.get(k.name)
            if cp is None:
                cp = const_ptrs[k.name] = [c.ctypes.data for c in k.consts]
            start = len(table)
            for j, e in enumerate(ins):
                if e in st.slots:
                    st.slots[e].append(start + j)
            table.extend([ptr_of[e] for e in ins])
            table.extend(cp)
            table.extend([ptr_of[e] for e in outs])
            if k.ws_bytes:
                table.append(ws_ptr)
            spans.append((start, len(table) - start))
        st.keep = [c for k in {k.name: k for _, k, _, _ in plan["steps"]}.values()
                   for c in k.consts]
        st.table = (ctypes.c_void_p * max(1, len(table)))(*table)
        st.spans = spans
        st._steps, st._plan_steps = None, plan["steps"]  # (st.steps: made at the first use)
        st.entry = _ENTRY(self._entry_addr) if self._entry_addr is not None else None
        return st

    def _kernel_calls(self, st: _State) -> list:
        """``st.steps`` (made at their first use)."""
        return st.steps

    # ------------------------------------------------------------------ API
    def _input_entry(self, key, what: str) -> tuple[str, int]:
        e = self._input_index.get(key) if type(key) is str else None
        if e is not None:  # (the common case first: a run's inputs set by name)
            return key, e
        if isinstance(key, _INDEX) and not isinstance(key, bool):
            names = self.input_names
            if not 0 <= key < len(names):
                raise ValueError(f"{what}: input index {key} out of range; the graph has "
                                 f"{len(names)} inputs {names}")
            key = names[int(key)]
        if not isinstance(key, str):
            raise ValueError(f"{what}: an input is named by a string or an integer index, got "
                             f"{type(key).__name__} {key!r}")
        e = self._input_index.get(key)
        if e is None:
            raise ValueError(f"{what}: the graph has no input named {key!r}; inputs are "
                             f"{self.input_names}")
        return key, e

    def get_input_index(self, name: str) -> int:
        """Index of input ``name`` (-1 when the graph has no such input), as in TVM."""
        return self.input_names.index(name) if name in self.input_names else -1

    def _checked(self, key: str, value) -> np.ndarray:
        """``value`` as an array of input ``key``'s shape and dtype (a clear error if not)."""
        _, dt, shape = self._plan["entries"][self._input_index[key]]
        src = value.numpy() if isinstance(value, NDArray) else value
        if not isinstance(src, np.ndarray):
            try:
                src = np.asarray(src)
            except Exception as err:
                raise ValueError(f"set_input: input {key!r} cannot be read as an array: "
                                 f"{err}") from None
        if src.shape != shape or src.dtype != dt:
            raise ValueError(f"set_input: input {key!r} expects shape {_shape_str(shape)} "
                             f"{dt}, got shape {_shape_str(src.shape)} {src.dtype}")
        return src

    def _set(self, key, value, check: bool = True) -> None:
        key, e = self._input_entry(key, "set_input")
        src = self._checked(key, value)
        st = self._state()
        if self._plan["entries"][e][0] in st.shared:  # (a parameter: this thread's own copy)
            self._bind(st, e, _aligned_copy(src))
            return
        self._unbind(st, e)
        np.copyto(st.views[e], src)
        st.unset.discard(key)

    def _unbind(self, st: _State, e: int) -> None:
        """Input entry ``e`` read from its own storage again (undo ``set_input_zero_copy``)."""
        planned = st.planned.get(e)
        if planned is not None and st.views[e] is not planned:
            self._bind(st, e, planned)

    def _bind(self, st: _State, e: int, array: np.ndarray) -> None:
        """Make the kernels of ``st`` read input entry ``e`` (and its reshape views) from
        ``array``'s memory."""
        ptr = array.ctypes.data
        for a in st.family[e]:
            st.views[a] = array if a == e else array.reshape(self._plan["entries"][a][2])
            for t in st.slots[a]:  # (a step's argument pointers are a slice of the table)
                st.table[t] = ptr

    def set_input_zero_copy(self, key=None, value=None, **params) -> None:
        """Set inputs without copying them: the kernels read ``value``'s memory (a C-contiguous
        numpy array or NDArray of the input's shape and dtype) at every later run of this
        thread, until ``set_input`` copies a value in again. The caller keeps it unchanged
        while runs read it (TVM's ``set_input_zero_copy``)."""
        if key is not None:
            self._set_zero_copy(key, value)
        for k, v in params.items():
            self._set_zero_copy(k, v)

    def _set_zero_copy(self, key, value) -> None:
        key, e = self._input_entry(key, "set_input_zero_copy")
        st = self._state()
        if st.views[e] is value:  # bound already (a serving loop passing one buffer each call)
            st.unset.discard(key)
            return
        if isinstance(value, NDArray):
            value = value.numpy()
        if not isinstance(value, np.ndarray):
            raise ValueError(f"set_input_zero_copy: input {key!r} must be a numpy array or "
                             f"NDArray, got {type(value).__name__}")
        if key in self._param_names:
            raise ValueError(f"set_input_zero_copy: {key!r} is a parameter of the graph, not an "
                             "input; load_params sets parameters")
        src = self._checked(key, value)
        if not src.flags.c_contiguous:
            raise ValueError(f"set_input_zero_copy: input {key!r} must be C-contiguous (its "
                             "memory is read in place); use set_input to copy it")
        if e not in st.family:  # (an input turned parameter by load_params after setup)
            raise ValueError(f"set_input_zero_copy: {key!r} is not an input of this graph")
        self._bind(st, e, src)
        st.unset.discard(key)

    def _write_all_inputs(self, entries: list[int], values: list) -> None:
        """Copy already-checked ``values`` into input ``entries`` of this thread's storage (the
        compiled executors' fast path: all of the graph's inputs at once)."""
        st = self._state()
        for e, v in zip(entries, values, strict=True):
            self._unbind(st, e)
            np.copyto(st.views[e], v)
        st.unset.clear()

    def set_input(self, key=None, value=None, **params) -> None:
        """Set inputs by name (or index); shapes and dtypes are checked.

        Each value is copied into the graph's own storage, as TVM's ``set_input`` does: the
        caller may change or reuse its array right after, so the copy cannot be skipped even
        for a contiguous array of the right dtype. It is one ``np.copyto`` (a memcpy there),
        and the rest costs under a microsecond (768 x 768 float32: 183 us, the copy alone
        174 us). ``set_input_zero_copy`` reads the caller's array in place instead, as ONNX
        Runtime's ``run`` reads its feeds."""
        if key is not None:
            self._set(key, value)
        for k, v in params.items():
            self._set(k, v)

    def run(self, **inputs) -> None:
        """Run the graph once (after setting any inputs given as keywords)."""
        for k, v in inputs.items():
            self._set(k, v)
        st = self._state()
        if st.unset:
            missing = sorted(st.unset)
            raise ValueError(f"run: input(s) {missing} were never set; call set_input first "
                             f"(inputs are {self.input_names}; each thread sets its own)")
        done = threadpool.keep_warm()
        try:
            if self._uses_blas:
                with _BlasGuard():
                    self._run_kernels(st)
            else:
                self._run_kernels(st)
        finally:
            if done is not None:
                done()

    def _run_kernels(self, st: _State) -> None:
        if st.entry is not None:
            st.entry(st.table, self._nthreads)
            return
        if self._step_loop is not None:
            self._step_loop.run(st.table, self._nthreads)
            return
        for step in self._kernel_calls(st):
            if step[0] == "native":
                step[1](step[2], None, self._nthreads)
            else:
                self._run_fallback(st, step)

    def _run_fallback(self, st: _State, step) -> None:
        _, k, ins, outs, name = step
        args = [st.views[e] for e in ins] + list(k.consts)
        try:
            res = k.run(args)
        except Exception as err:
            raise RuntimeError(f"graph node {name!r} (numpy fallback) failed: "
                               f"{type(err).__name__}: {err}") from err
        if not isinstance(res, list | tuple) or len(res) != len(outs):
            raise RuntimeError(f"graph node {name!r} (numpy fallback) returned "
                               f"{type(res).__name__}, expected {len(outs)} arrays")
        for e, r in zip(outs, res, strict=True):
            r = np.asarray(r)
            if r.shape != st.views[e].shape:
                raise RuntimeError(f"graph node {name!r} (numpy fallback) returned shape "
                                   f"{_shape_str(r.shape)}, the graph plans "
                                   f"{_shape_str(st.views[e].shape)}")
            np.copyto(st.views[e], r, casting="unsafe")

    def get_num_outputs(self) -> int:
        return len(self._outputs)

    def get_num_inputs(self) -> int:
        return len(self.input_names)

    def get_output(self, index: int, out=None) -> NDArray:
        """Output ``index`` (a view of this thread's storage, overwritten by its next run)."""
        if type(index) is not int and (not isinstance(index, _INDEX) or isinstance(index, bool)):
            raise ValueError(f"get_output: the output index must be an integer, got "
                             f"{type(index).__name__} {index!r}")
        if not 0 <= index < len(self._outputs):
            raise ValueError(f"get_output: index {index} out of range; the graph has "
                             f"{len(self._outputs)} outputs")
        st = self._state()
        view = st.views[self._outputs[int(index)]]
        if out is not None:
            return out.copyfrom(view)
        nd = st.outputs.get(index)
        if nd is None or nd._data is not view:  # (an output that is a rebound input moves)
            nd = st.outputs[index] = NDArray(view, self.device)
        nd._content_hash = None  # (the next run rewrites it: no hash kept across runs)
        return nd

    def get_input(self, key) -> NDArray:
        """Input ``key`` (name or index): a view of its storage, which callers may fill."""
        key, e = self._input_entry(key, "get_input")
        st = self._state()
        st.unset.discard(key)
        return NDArray(st.views[e], self.device)

    def load_params(self, params) -> None:
        """Set parameters for every thread: a dict name -> array, or the bytes written by
        ``relay.save_param_dict`` / ``tvm.runtime.save_param_dict``."""
        if isinstance(params, bytes | bytearray | memoryview):
            params = _load_param_bytes(bytes(params))
        if not hasattr(params, "items"):
            raise ValueError(f"load_params: expected a dict of name -> array or the bytes of "
                             f"save_param_dict, got {type(params).__name__}")
        checked = {}
        for k, v in params.items():
            if isinstance(k, str) and k not in self._input_index:
                continue  # as in TVM: a parameter the graph folded into a constant is skipped
            key, _ = self._input_entry(k, "load_params")
            checked[key] = _shareable(_aligned_copy(self._checked(key, v)))
        with self._states_lock:
            self._params.update(checked)
            states = list(self._states)
        for st in states:
            for key, v in checked.items():
                e = self._input_index[key]
                if self._plan["entries"][e][0] in st.shared or e in st.family:
                    self._bind(st, e, v)  # (an input turned parameter: read in place too)
                else:
                    np.copyto(st.views[e], v)
                st.unset.discard(key)

    def share_params(self, other, params) -> None:
        self.load_params(params)

    def __getitem__(self, name: str):
        fns = {"set_input": self.set_input, "run": self.run, "get_output": self.get_output,
               "get_num_outputs": self.get_num_outputs, "get_input": self.get_input,
               "get_num_inputs": self.get_num_inputs, "load_params": self.load_params,
               "get_input_index": self.get_input_index,
               "set_input_zero_copy": self.set_input_zero_copy,
               "share_params": self.share_params}
        if name not in fns:
            raise AttributeError(f"graph executor module has no function {name!r} (it has "
                                 f"{sorted(fns)})")
        return fns[name]

    @property
    def module(self) -> GraphExecutorModule:
        """The runtime module under this wrapper (TVM's ``GraphModule.module``): what tutorials
        time with ``module.module.time_evaluator("run", dev, number=10, repeat=3)``."""
        return GraphExecutorModule(self)

    def benchmark(self, device=None, func_name: str = "run", repeat: int = 5, number: int = 5,
                  min_repeat_ms: int = 0, end_to_end: bool = False, **kwargs):
        """Seconds per run: a ``ProfileResult`` with mean/median/min/max/std (TVM's API)."""
        for k, v in kwargs.items():
            self._set(k, v)
        self.run()
        return time_calls(self.run, number, repeat, min_repeat_ms)

    def time_evaluator(self, func_name: str = "run", dev=None, number: int = 10,
                       repeat: int = 1, min_repeat_ms: int = 0, **kwargs):
        """A callable returning the ProfileResult of ``func_name`` (only ``run``)."""
        if func_name != "run":
            raise ValueError("time_evaluator: only 'run' can be timed on a graph module")
        return lambda *a: self.benchmark(repeat=repeat, number=number,
                                         min_repeat_ms=min_repeat_ms)

    @property
    def memory_bytes(self) -> int:
        """Bytes of planned storage (inputs, parameters, intermediates, outputs, workspace)."""
        st = self._state()  # (parameters: the one copy every thread reads, counted here)
        return sum(self._plan["sizes"]) + st.workspace.nbytes


class GraphExecutorModule(Module):
    """The graph executor as a runtime module (``GraphModule(...).module``): functions by name
    (``mod["run"]``, ``mod.get_function("set_input")``) and ``time_evaluator``; it shares the
    GraphModule's storage, so inputs set through either are seen by both."""

    type_key = "GraphExecutor"

    def __init__(self, graph: GraphModule):
        self._graph = graph

    def get_function(self, name: str, query_imports: bool = False):
        return self._graph[name]

    def time_evaluator(self, func_name: str, dev=None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: int = 0, **kwargs):
        return self._graph.time_evaluator(func_name, dev, number, repeat, min_repeat_ms,
                                          **kwargs)

    def __repr__(self):
        return f"Module(GraphExecutor, inputs={self._graph.input_names})"


def create(graph_json_str: str, libmod, device=None) -> GraphModule:
    """``graph_executor.create(graph_json, lib, dev)`` (parameters loaded later)."""
    from ..runtime.module import GraphLib

    if not isinstance(libmod, GraphLib):
        libmod = libmod.get_lib()
    self = object.__new__(GraphModule)
    self._setup(graph_json_str, libmod, {}, device)
    return self


class GraphExecutorFactoryModule(Module):
    """TVM's factory: ``lib["default"](dev)`` makes a graph executor module.

    ``get_graph_json()``, ``get_lib()``, ``get_params()``, ``export_library(path)``.
    """

    type_key = "GraphExecutorFactory"

    def __init__(self, graph_json: str, lib: GraphLib, params: dict, libmod_name: str = "default",
                 ir_mod=None, build_seconds: float = 0.0):
        self.graph_json = graph_json
        self.lib = lib
        self.params = {k: v if isinstance(v, NDArray) else NDArray(v) for k, v in params.items()}
        self.libmod_name = libmod_name
        self.ir_mod = ir_mod
        self.build_seconds = build_seconds
        self._checked = None  # (graph_json, lib, parsed graph, plan): see checked_graph

    def checked_graph(self) -> tuple[dict, dict]:
        """The graph JSON parsed and validated against the kernels (``check_graph``'s plan),
        computed once per graph and library, not per executor made from this factory: a
        100k-step graph takes about half a second to check."""
        c = getattr(self, "_checked", None)
        if c is None or c[0] is not self.graph_json or c[1] is not self.lib:
            with paused():
                g = parse_graph_json(self.graph_json, _WHERE)
                c = (self.graph_json, self.lib, g, check_graph(g, self.lib.kernels, _WHERE))
            self._checked = c
        return c[2], c[3]

    def _set_checked(self, g: dict, plan: dict) -> None:
        """Record what ``load_module`` already parsed and checked."""
        self._checked = (self.graph_json, self.lib, g, plan)

    def aligned_params(self) -> dict:
        """``params``, each moved to an ``ALIGN`` boundary (copied once, replacing the value
        here) where it is not: what the executors made from this factory read in place. Done
        when the first executor is made, not in the build, whose peak would hold both."""
        for k, v in self.params.items():
            self.params[k] = _aligned_param(v)
        return self.params

    def get_graph_json(self) -> str:
        return self.graph_json

    def get_lib(self) -> GraphLib:
        return self.lib

    def get_params(self) -> dict:
        return dict(self.params)

    def get_executor_config(self) -> str:
        return self.graph_json

    def get_function(self, name: str, query_imports: bool = False):
        if name == self.libmod_name:
            def create(dev=None):
                return GraphModule.from_factory(self, dev)

            return create
        if name == "debug_create":  # lib["debug_create"]("default", dev): for GraphModuleDebug
            def debug_create(libmod_name: str = self.libmod_name, dev=None):
                return self.get_function(libmod_name)(dev)

            return debug_create
        if name in ("get_graph_json", "get_lib", "get_params"):
            return getattr(self, name)
        return self.lib.get_function(name)

    def export_library(self, path: str, *args, **kwargs) -> None:
        """Write a portable archive; ``tvm.runtime.load_module(path)`` reads it back."""
        export_library(self, path)

    def __iter__(self):  # old-style ``graph, lib, params = relay.build(...)``
        return iter((self.graph_json, self.lib, self.params))

    def __repr__(self):
        return f"GraphExecutorFactoryModule({self.lib!r})"


def _load_param_bytes(data: bytes) -> dict:
    """Parameters from save_param_dict bytes (an .npz archive); a clear error otherwise."""
    import io
    import zipfile

    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise ValueError("load_params: the bytes are not a parameter archive written by "
                         "save_param_dict")
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except Exception as err:
        raise ValueError(f"load_params: damaged parameter bytes: {err}") from None
