"""An ``onnx.backend.base.Backend`` running ONNX models through the Relax importer, ``relax.build``
and the Relax VM (what ``onnx.backend.test`` drives).

Inputs the importer needs as known values (a shape, axes or pads tensor fed as a graph input)
are bound at the first call, one compiled executable per distinct input signature and bound
values; every other input stays a runtime argument.
"""

from __future__ import annotations

from typing import Any

from ....frontend_common.onnx_backend_rep import CachedBackendRep, CpuBackend

__all__ = ["RelaxBackend", "RelaxBackendRep", "prepare", "run_model", "run_node",
           "supports_device"]


def _import(model, values: dict):
    """from_onnx with the input shapes of this call, binding the inputs it needs as known."""
    from . import NeedsConstantInput, from_onnx

    shapes = {n: None if v is None else [list(e.shape) for e in v] if isinstance(v, list)
              else list(v.shape) for n, v in values.items()}
    dtypes = {n: str(v.dtype) for n, v in values.items() if hasattr(v, "dtype")}
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
        return vm["main"](*args)

    return call, bound


class RelaxBackendRep(CachedBackendRep):
    """A prepared model: compiled per input signature, run with a list of numpy inputs."""

    def compile(self, named: dict) -> tuple:
        return _compile(self.model, named)


class RelaxBackend(CpuBackend):
    """minitvm's Relax path as an ONNX backend (``onnx.backend.test`` runs through it)."""

    @classmethod
    def prepare(cls, model, device: str = "CPU", **kwargs: Any) -> RelaxBackendRep:
        if not cls.supports_device(device):
            raise ValueError(f"minitvm's Relax ONNX backend runs on CPU, not {device!r}")
        return RelaxBackendRep(model)


prepare = RelaxBackend.prepare
run_model = RelaxBackend.run_model
run_node = RelaxBackend.run_node
supports_device = RelaxBackend.supports_device
