"""The graph executor (``tvm.contrib.graph_executor``): run a built graph over planned storage.

``GraphModule(lib["default"](dev))`` allocates every planned storage once; ``set_input`` checks
shape and dtype and copies into the input's storage; ``run`` executes the kernels — as a single
call of the whole-graph native entry when every kernel is native, else a flat loop of prepared
native calls and numpy fallbacks. ``get_output`` returns a view of the output storage.
"""

from __future__ import annotations

import ctypes
import json
import time

import numpy as np

from . import blas, threadpool
from .module import GraphLib, Module, ProfileResult, export_library
from .ndarray import NDArray, cpu

ALIGN = 64
_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32)
_KERNEL = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)


def _aligned(nbytes: int) -> np.ndarray:
    raw = np.empty(nbytes + ALIGN, dtype=np.uint8)
    off = (-raw.ctypes.data) % ALIGN
    return raw[off:off + nbytes]


def _shape_str(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


class GraphModule:
    """The graph executor module (``tvm.contrib.graph_executor.GraphModule``)."""

    def __init__(self, module, dev=None):
        if isinstance(module, GraphModule):
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
        self._setup(factory.get_graph_json(), factory.get_lib(), factory.get_params(), dev)
        return self

    # ------------------------------------------------------------------ setup
    def _setup(self, graph_json: str, lib, params: dict, dev) -> None:
        self.device = dev or cpu(0)
        g = json.loads(graph_json)
        self.graph = g
        self.lib = lib
        nodes, attrs = g["nodes"], g["attrs"]
        row_ptr = g["node_row_ptr"]
        sids = attrs["storage_id"][1]
        shapes = attrs["shape"][1]
        dtypes = attrs["dltype"][1]
        sizes = attrs["minitvm_storage_bytes"][1]
        self._storage = [_aligned(n) for n in sizes]
        ws_bytes = attrs["minitvm_workspace_bytes"][1][0]
        self._workspace = _aligned(max(ws_bytes, 64))
        self._views = []
        for e, sid in enumerate(sids):
            dt = np.dtype(dtypes[e])
            n = int(np.prod(shapes[e], dtype=np.int64)) if shapes[e] else 1
            view = self._storage[sid][:n * dt.itemsize].view(dt).reshape(shapes[e])
            self._views.append(view)
        self._input_index = {}
        self._param_names = set()
        self._unset = set()
        for nid in g["arg_nodes"]:
            name = nodes[nid]["name"]
            self._input_index[name] = row_ptr[nid]
        for name, value in params.items():
            if name in self._input_index:
                self._set(name, value, check=True)
                self._param_names.add(name)
        self.input_names = [n for n in self._input_index if n not in self._param_names]
        self._unset = set(self.input_names)  # storage is uninitialized until set (or exposed)
        self._outputs = [row_ptr[h[0]] + h[1] for h in g["heads"]]
        self._keep = []
        self._steps = []
        table = []
        native_steps = []
        all_native = True
        for nid, node in enumerate(nodes):
            if node["op"] == "null":
                continue
            fname = node["attrs"]["func_name"]
            if fname == "__nop":
                continue
            k = lib.kernels[fname]
            ins = [row_ptr[i] + j for i, j, _ in node["inputs"]]
            outs = list(range(row_ptr[nid], row_ptr[nid + 1]))
            if k.kind == "native":
                arrays = [self._views[e] for e in ins] + list(k.consts) + \
                    [self._views[e] for e in outs]
                if k.ws_bytes:
                    arrays.append(self._workspace)
                ptrs = [a.ctypes.data for a in arrays]
                self._keep.extend(k.consts)
                native_steps.append((k.symbol, len(ptrs)))
                table.extend(ptrs)
                cptrs = (ctypes.c_void_p * len(ptrs))(*ptrs)
                self._keep.append(cptrs)
                fn = _KERNEL(k.address)
                self._keep.append(fn)
                self._steps.append(("native", fn, cptrs, node["name"]))
            else:
                all_native = False
                self._steps.append(("fallback", k, ins, outs, node["name"]))
        self._table = (ctypes.c_void_p * max(1, len(table)))(*table)
        self._entry = None
        if all_native and lib.entry is not None:
            self._entry = _ENTRY(lib.entry[2].address)
        self._nthreads = threadpool.get_num_threads()
        # kernels that call BLAS split GEMMs over the thread pool themselves: BLAS runs on one
        # thread during run() only, the user's setting (numpy's) is restored afterwards
        self._uses_blas = any(k.kind == "native" and blas.SHIM_SYMBOL in (k.ir or "")
                              for k in lib.kernels.values())

    # ------------------------------------------------------------------ API
    def _input_entry(self, key, what: str) -> tuple[str, int]:
        if isinstance(key, int):
            names = self.input_names
            if not 0 <= key < len(names):
                raise ValueError(f"{what}: input index {key} out of range; the graph has "
                                 f"{len(names)} inputs {names}")
            key = names[key]
        e = self._input_index.get(key)
        if e is None:
            raise ValueError(f"{what}: the graph has no input named {key!r}; inputs are "
                             f"{self.input_names}")
        return key, e

    def get_input_index(self, name: str) -> int:
        """Index of input ``name`` (-1 when the graph has no such input), as in TVM."""
        return self.input_names.index(name) if name in self.input_names else -1

    def _set(self, key, value, check: bool = True) -> None:
        key, e = self._input_entry(key, "set_input")
        dst = self._views[e]
        src = value.numpy() if isinstance(value, NDArray) else value
        if not isinstance(src, np.ndarray):
            src = np.asarray(src)
        if check and (src.shape != dst.shape or src.dtype != dst.dtype):
            raise ValueError(f"set_input: input {key!r} expects shape {_shape_str(dst.shape)} "
                             f"{dst.dtype}, got shape {_shape_str(src.shape)} {src.dtype}")
        np.copyto(dst, src)
        self._unset.discard(key)

    def set_input(self, key=None, value=None, **params) -> None:
        """Set inputs by name (or index); shapes and dtypes are checked."""
        if key is not None:
            self._set(key, value)
        for k, v in params.items():
            self._set(k, v)

    def run(self, **inputs) -> None:
        """Run the graph once (after setting any inputs given as keywords)."""
        for k, v in inputs.items():
            self._set(k, v)
        if self._unset:
            missing = sorted(self._unset)
            raise ValueError(f"run: input(s) {missing} were never set; call set_input first "
                             f"(inputs are {self.input_names})")
        if self._uses_blas:
            with blas.single_threaded():
                self._run_kernels()
        else:
            self._run_kernels()

    def _run_kernels(self) -> None:
        if self._entry is not None:
            self._entry(self._table, self._nthreads)
            return
        for step in self._steps:
            if step[0] == "native":
                step[1](step[2], None, self._nthreads)
            else:
                self._run_fallback(step)

    def _run_fallback(self, step) -> None:
        _, k, ins, outs, name = step
        args = [self._views[e] for e in ins] + list(k.consts)
        try:
            res = k.run(args)
        except Exception as err:
            raise RuntimeError(f"graph node {name!r} (numpy fallback) failed: "
                               f"{type(err).__name__}: {err}") from err
        for e, r in zip(outs, res):
            np.copyto(self._views[e], r, casting="unsafe")

    def get_num_outputs(self) -> int:
        return len(self._outputs)

    def get_num_inputs(self) -> int:
        return len(self.input_names)

    def get_output(self, index: int, out=None) -> NDArray:
        """Output ``index`` (a view of its storage, overwritten by the next run)."""
        if not 0 <= index < len(self._outputs):
            raise ValueError(f"get_output: index {index} out of range; the graph has "
                             f"{len(self._outputs)} outputs")
        view = self._views[self._outputs[index]]
        if out is not None:
            return out.copyfrom(view)
        return NDArray(view, self.device)

    def get_input(self, key) -> NDArray:
        """Input ``key`` (name or index): a view of its storage, which callers may fill."""
        key, e = self._input_entry(key, "get_input")
        self._unset.discard(key)
        return NDArray(self._views[e], self.device)

    def load_params(self, params) -> None:
        for k, v in params.items():
            self._set(k, v)

    def share_params(self, other, params) -> None:
        self.load_params(params)

    def __getitem__(self, name: str):
        fns = {"set_input": self.set_input, "run": self.run, "get_output": self.get_output,
               "get_num_outputs": self.get_num_outputs, "get_input": self.get_input,
               "get_num_inputs": self.get_num_inputs, "load_params": self.load_params,
               "get_input_index": self.get_input_index}
        if name not in fns:
            raise AttributeError(f"graph executor module has no function {name!r}")
        return fns[name]

    def benchmark(self, device=None, func_name: str = "run", repeat: int = 5, number: int = 5,
                  min_repeat_ms: int = 0, end_to_end: bool = False, **kwargs):
        """Seconds per run: a ``ProfileResult`` with mean/median/min/max/std (TVM's API)."""
        for k, v in kwargs.items():
            self._set(k, v)
        self.run()
        results = []
        for _ in range(repeat):
            n = number
            while True:
                t0 = time.perf_counter()
                for _ in range(n):
                    self.run()
                dt = time.perf_counter() - t0
                if dt * 1000 >= min_repeat_ms or min_repeat_ms <= 0:
                    break
                n *= 2
            results.append(dt / n)
        return ProfileResult(results)

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
        return sum(s.nbytes for s in self._storage) + self._workspace.nbytes


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
