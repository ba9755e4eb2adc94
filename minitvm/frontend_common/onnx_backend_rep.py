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
    ``run`` takes the unbound inputs in order, a sequence input's tensors one by one, and
    returns the function's result: the single output, or a tuple of the outputs; ``bound``
    names the inputs baked in)."""

    def __init__(self, model):
        self.model = model
        inits = {t.name for t in model.graph.initializer}
        self.input_names = [i.name for i in model.graph.input if i.name not in inits]
        self.output_kinds = [o.type.WhichOneof("value") for o in model.graph.output]
        self._compiled: dict = {}  # input signature -> [(bound names, values, runner)]

    def compile(self, named: dict) -> tuple:
        raise NotImplementedError(f"{type(self).__name__} must define compile(named)")

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        if isinstance(inputs, dict):
            inputs = [inputs[n] for n in self.input_names]
        elif not isinstance(inputs, list | tuple):
            inputs = [inputs]
        # a sequence input is a list of arrays, an empty optional None
        values = [_as_value(v) for v in inputs]
        if len(values) != len(self.input_names):
            raise ValueError(f"the model takes {len(self.input_names)} inputs "
                             f"({', '.join(self.input_names)}), got {len(values)}")
        named = dict(zip(self.input_names, values, strict=True))
        key = tuple(_signature(v) for v in values)
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
        args: list = []
        for n, v in named.items():
            if n not in bound:
                args.extend(v if isinstance(v, list) else [] if v is None else [v])
        outs = fn(args)
        if len(self.output_kinds) == 1:
            outs = [outs]  # one output: a sequence output stays one value
        return tuple(_as_output(o, kind) for o, kind in zip(outs, self.output_kinds))


def _as_value(v):
    if v is None:
        return None
    if isinstance(v, list):
        return [np.asarray(e) for e in v]
    return np.asarray(v)


def _signature(v):
    if v is None:
        return None
    if isinstance(v, list):
        return ("sequence",) + tuple((e.shape, str(e.dtype)) for e in v)
    return v.shape, str(v.dtype)


def _as_output(o, kind: str | None):
    """A run's output as numpy: a tuple (a sequence output) becomes a list of arrays, an
    empty tuple for an optional output None."""
    if hasattr(o, "numpy"):
        return o.numpy()
    if isinstance(o, np.ndarray | np.generic):
        return np.asarray(o)
    items = [e.numpy() if hasattr(e, "numpy") else np.asarray(e) for e in o]
    if kind == "optional_type" and not items:
        return None
    return items


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
