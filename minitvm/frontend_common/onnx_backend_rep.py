"""The part of an ``onnx.backend`` backend both dialects share: a prepared model that compiles
once per input signature (and per value of the inputs the importer had to bind as constants)
and runs a list or dict of numpy inputs."""

from __future__ import annotations

from typing import Any

import numpy as np

try:  # the backend API lives in the optional onnx package
    from onnx.backend.base import Backend, BackendRep
except ImportError:  # pragma: no cover - without onnx the module still imports
    Backend, BackendRep = object, object

__all__ = ["CachedBackendRep", "CpuBackend"]


class CachedBackendRep(BackendRep):
    """A prepared model; subclasses say how to compile it (``compile(named) -> (run, bound)``:
    ``run`` takes the unbound inputs in order, ``bound`` names the inputs baked in)."""

    def __init__(self, model):
        self.model = model
        inits = {t.name for t in model.graph.initializer}
        self.input_names = [i.name for i in model.graph.input if i.name not in inits]
        self._compiled: dict = {}  # input signature -> [(bound names, values, runner)]

    def compile(self, named: dict) -> tuple:
        raise NotImplementedError(f"{type(self).__name__} must define compile(named)")

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        if isinstance(inputs, dict):
            inputs = [inputs[n] for n in self.input_names]
        elif not isinstance(inputs, list | tuple):
            inputs = [inputs]
        values = [np.asarray(v) for v in inputs]
        if len(values) != len(self.input_names):
            raise ValueError(f"the model takes {len(self.input_names)} inputs "
                             f"({', '.join(self.input_names)}), got {len(values)}")
        named = dict(zip(self.input_names, values, strict=True))
        key = tuple((v.shape, str(v.dtype)) for v in values)
        runner = None
        for bound, seen, fn in self._compiled.get(key, []):
            if all(np.array_equal(named[n], seen[n]) for n in bound):
                runner = (bound, fn)
                break
        if runner is None:
            fn, bound = self.compile(named)
            self._compiled.setdefault(key, []).append(
                (bound, {n: named[n].copy() for n in bound}, fn))
            runner = (bound, fn)
        bound, fn = runner
        outs = fn([v for n, v in named.items() if n not in bound])
        return tuple(o.numpy() if hasattr(o, "numpy") else np.asarray(o) for o in outs)


class CpuBackend(Backend):
    """An ``onnx.backend`` backend on the CPU; subclasses define ``prepare``. A node runs as a
    one-node model."""

    @classmethod
    def run_model(cls, model, inputs: Any, device: str = "CPU", **kwargs: Any):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs: Any, device: str = "CPU", outputs_info=None,
                 **kwargs: Any):
        from onnx import helper

        values = [np.asarray(v) for v in inputs]
        names = [n for n in node.input if n]
        in_vi = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype),
                                               v.shape) for n, v in zip(names, values)]
        out_vi = [helper.make_empty_tensor_value_info(n) for n in node.output if n]
        graph = helper.make_graph([node], "run_node", in_vi, out_vi)
        return cls.run_model(helper.make_model(graph), values, device, **kwargs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return str(device).upper().startswith("CPU")
