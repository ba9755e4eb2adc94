"""``tvm.contrib.debugger.debug_executor``: a graph executor that runs the graph one node at a
time, timing each node and keeping every node's output.

``GraphModuleDebug(lib["debug_create"]("default", dev), [dev], lib.get_graph_json(), dump_root)``
(or ``create(graph_json, lib, dev, dump_root)``) behaves as a ``GraphModule``; its ``run``
times each node, prints TVM's per-node table and, with ``dump_root``, writes the graph with the
times (``_tvmdbg_graph_dump.json``) and every node's output (``output_tensors.params``, the
format of ``save_param_dict``) under ``dump_root/_tvmdbg_device_CPU_0``. ``profile`` returns a
``tvm.runtime.profiling.Report``; ``run_individual`` times each node over repeats;
``debug_get_output(node)`` reads a node's output of the last run.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

from ...runtime import threadpool
from ...runtime.graph_executor import GraphModule
from ...runtime.module import ProfileResult, time_calls
from ...runtime.ndarray import NDArray
from ...runtime.params import save_param_dict
from ...runtime.profiling import Count, Duration, Percent, Report

_DUMP_DIR = "_tvmdbg_device_CPU_0"


def _node_ops(g: dict) -> dict[str, str]:
    """Node name -> the function it calls (``attrs.func_name``)."""
    return {n["name"]: (n.get("attrs") or {}).get("func_name", n.get("op", ""))
            for n in g["nodes"] if n.get("op") == "tvm_op"}


class GraphModuleDebug(GraphModule):
    """A ``GraphModule`` whose runs go node by node, timed, with every output kept."""

    def __init__(self, module, device=None, graph_json_str: str | None = None,
                 dump_root: str | None = None):
        super().__init__(module)
        self.dump_root = dump_root
        self._ops = _node_ops(self.graph)
        self._times: list[float] = []  # seconds per node of the last run, in step order

    # ------------------------------------------------------------------ stepping
    def _steps(self):
        st = self._state()
        calls = self._kernel_calls(st)
        for step, (name, _, _, outs) in zip(calls, self._plan["steps"], strict=True):
            yield st, step, name, outs

    def _run_step(self, st, step) -> None:
        if step[0] == "native":
            step[1](step[2], None, self._nthreads)
        else:
            self._run_fallback(st, step)

    def _run_timed(self) -> list[float]:
        st = self._state()
        if st.unset:
            raise ValueError(f"run: input(s) {sorted(st.unset)} were never set; call set_input "
                             f"first (inputs are {self.input_names})")
        times = []
        done = threadpool.keep_warm()
        try:
            for st, step, _, _ in self._steps():
                t0 = time.perf_counter()
                self._run_step(st, step)
                times.append(time.perf_counter() - t0)
        finally:
            if done is not None:
                done()
        self._times = times
        return times

    # ------------------------------------------------------------------ API
    def run(self, **input_dict) -> None:
        """Run node by node; print the per-node times and, with ``dump_root``, dump them."""
        for k, v in input_dict.items():
            self._set(k, v)
        self._run_timed()
        print(self.node_table())
        if self.dump_root is not None:
            self._dump()

    def node_table(self) -> str:
        """TVM's debug table: node, op, time (us), share, output shape, per node."""
        total = sum(self._times) or 1.0
        rows = [("Node Name", "Ops", "Time(us)", "Time(%)", "Shape")]
        for (_, _, name, outs), t in zip(self._steps(), self._times, strict=True):
            shape = self._state().views[outs[0]].shape if outs else ()
            rows.append((name, self._ops.get(name, name), f"{t * 1e6:.3f}",
                         f"{100 * t / total:.3f}", str(tuple(shape))))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def debug_get_output(self, node, out=None) -> NDArray:
        """The output of ``node`` (its name or step index) in the last run."""
        steps = self._plan["steps"]
        if isinstance(node, int) and not isinstance(node, bool):
            if not 0 <= node < len(steps):
                raise ValueError(f"debug_get_output: node index {node} out of range; the graph "
                                 f"runs {len(steps)} nodes")
            outs = steps[node][3]
        else:
            found = [s for s in steps if s[0] == node]
            if not found:
                raise ValueError(f"debug_get_output: no node named {node!r}; nodes are "
                                 f"{[s[0] for s in steps][:10]}...")
            outs = found[0][3]
        value = np.array(self._state().views[outs[0]], copy=True)
        return out.copyfrom(value) if out is not None else NDArray(value, self.device)

    def run_individual(self, number: int, repeat: int = 1, min_repeat_ms: int = 0
                       ) -> list[float]:
        """Mean seconds of each node, each node run ``number`` times per repeat."""
        return [r.mean for r in (self.run_individual_node(i, number, repeat, min_repeat_ms)
                                 for i in range(len(self._plan["steps"])))]

    def run_individual_node(self, index: int, number: int = 10, repeat: int = 1,
                            min_repeat_ms: int = 0) -> ProfileResult:
        """Seconds per call of node ``index`` (a ``BenchmarkResult``)."""
        steps = list(self._steps())
        if not 0 <= index < len(steps):
            raise ValueError(f"run_individual_node: index {index} out of range; the graph runs "
                             f"{len(steps)} nodes")
        st, step, _, _ = steps[index]
        return time_calls(lambda: self._run_step(st, step), number, repeat, min_repeat_ms)

    def profile(self, collectors=None, **input_dict) -> Report:
        """Run once node by node; the per-node ``Report`` (``print(report)`` shows the table)."""
        for k, v in input_dict.items():
            self._set(k, v)
        collectors = list(collectors or ())
        for c in collectors:
            c.init([self.device])
        tokens = [c.start(self.device) for c in collectors]
        times = self._run_timed()
        total = sum(times)
        dev = str(self.device).replace("(", "").replace(")", "")
        st = self._state()
        calls = []
        for (name, _, ins, outs), t in zip(self._plan["steps"], times, strict=True):
            shapes = ", ".join(f"{st.views[e].dtype}[{', '.join(map(str, st.views[e].shape))}]"
                               for e in list(ins) + list(outs))
            calls.append({"Name": self._ops.get(name, name), "Duration (us)": Duration(t * 1e6),
                          "Percent": Percent(100 * t / total if total else 0.0),
                          "Device": dev, "Count": Count(1), "Argument Shapes": shapes})
        metrics = {"Duration (us)": Duration(total * 1e6), "Percent": Percent(100.0),
                   "Count": Count(1)}
        for c, tok in zip(collectors, tokens, strict=True):
            metrics.update(c.stop(tok) or {})
        config = {"Number of threads": threadpool.get_num_threads(),
                  "Executor": "Graph (debug)"}
        return Report(calls, {dev: metrics}, config)

    def _dump(self) -> None:
        folder = os.path.join(self.dump_root, _DUMP_DIR)
        os.makedirs(folder, exist_ok=True)
        graph = json.loads(json.dumps(self.graph))
        by_name = dict(zip((s[0] for s in self._plan["steps"]), self._times, strict=True))
        for n in graph["nodes"]:
            if n["name"] in by_name:
                n["time_us"] = by_name[n["name"]] * 1e6
        with open(os.path.join(folder, "_tvmdbg_graph_dump.json"), "w") as f:
            json.dump(graph, f, indent=1)
        st = self._state()
        tensors = {name: np.array(st.views[outs[0]], copy=True)
                   for name, _, _, outs in self._plan["steps"] if outs}
        with open(os.path.join(folder, "output_tensors.params"), "wb") as f:
            f.write(save_param_dict(tensors))


def create(graph_json_str: str, libmod, device, dump_root: str | None = None
           ) -> GraphModuleDebug:
    """``debug_executor.create(graph_json, lib, dev, dump_root=...)``."""
    from ...runtime.graph_executor import create as _create

    return GraphModuleDebug(_create(graph_json_str, libmod, device), device, graph_json_str,
                            dump_root)
