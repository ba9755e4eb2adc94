"""An ``onnx.backend.base.Backend`` running ONNX models through the Relax importer, ``relax.build``
and the Relax VM (what ``onnx.backend.test`` drives).

Inputs the importer needs as known values (a shape, axes or pads tensor fed as a graph input)
are bound at the first call, one compiled executable per distinct input signature and bound
values; every other input stays a runtime argument.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....frontend_common.onnx_backend_rep import CachedBackendRep

try:  # the backend API lives in the optional onnx package
    from onnx.backend.base import Backend
except ImportError:  # pragma: no cover - without onnx the module still imports
    Backend = object

__all__ = ["RelaxBackend", "RelaxBackendRep", "prepare", "run_model", "run_node",
           "supports_device"]


def _import(model, values: dict):
    """from_onnx with the input shapes of this call, binding the inputs it needs as known."""
    from . import NeedsConstantInput, from_onnx

    shapes = {n: list(v.shape) for n, v in values.items()}
    dtypes = {n: str(v.dtype) for n, v in values.items()}
    bound: dict = {}
    while True:
        try:
            mod = from_onnx(model, shape_dict=shapes, dtype_dict=dtypes, const_inputs=bound)
            return mod, list(bound)
        except NeedsConstantInput as e:
            if e.input_name in bound or e.input_name not in values:
                raise
            bound[e.input_name] = values[e.input_name]


def _compile(model, values: dict):
    from .... import runtime
    from ... import build
    from ...vm import VirtualMachine

    mod, bound = _import(model, values)
    vm = VirtualMachine(build(mod, "llvm"), runtime.cpu())

    def call(args):
        out = vm["main"](*args)
        if hasattr(out, "numpy"):
            return [out]
        return list(out)

    return call, bound


class RelaxBackendRep(CachedBackendRep):
    """A prepared model: compiled per input signature, run with a list of numpy inputs."""

    def compile(self, named: dict) -> tuple:
        return _compile(self.model, named)

class RelaxBackend(Backend):
    """minitvm's Relax path as an ONNX backend (``onnx.backend.test`` runs through it)."""

    @classmethod
    def prepare(cls, model, device: str = "CPU", **kwargs: Any) -> RelaxBackendRep:
        if not cls.supports_device(device):
            raise ValueError(f"minitvm's Relax ONNX backend runs on CPU, not {device!r}")
        return RelaxBackendRep(model)

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


prepare = RelaxBackend.prepare
run_model = RelaxBackend.run_model
run_node = RelaxBackend.run_node
supports_device = RelaxBackend.supports_device
