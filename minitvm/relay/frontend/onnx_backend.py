"""An ``onnx.backend.base.Backend`` running ONNX models through minitvm (import, build, run).

``MinitvmBackend.prepare(model)`` imports the model with ``from_onnx`` and compiles it with
``relay.build`` (or runs it on the debug interpreter with ``kind="debug"``). Inputs whose
dimensions the model leaves symbolic are compiled for the shapes of the first call, one
compiled module per distinct input signature.
"""

from __future__ import annotations

from typing import Any

from ...frontend_common.onnx_backend_rep import CachedBackendRep, CpuBackend

__all__ = ["MinitvmBackend", "MinitvmBackendRep", "prepare", "run_model", "run_node",
           "supports_device"]


def _import(model, values: dict):
    """from_onnx, binding the inputs the importer needs as constants (shapes, axes, pads)."""
    from .onnx import NeedsConstantInput, from_onnx

    shapes = {n: v.shape for n, v in values.items()}
    bound: dict = {}
    while True:
        try:
            mod, params = from_onnx(model, shape=shapes, freeze_params=True,
                                    const_inputs=bound)
            return mod, params, list(bound)
        except NeedsConstantInput as e:
            if e.input_name in bound or e.input_name not in values:
                raise
            bound[e.input_name] = values[e.input_name]


def _compile(model, values: dict, kind: str, opt_level: int):
    from ... import transform
    from ...runtime import cpu
    from ...runtime.graph_executor import GraphModule
    from .. import build, create_executor

    mod, params, bound = _import(model, values)
    if kind == "debug":
        run = create_executor("debug", mod=mod).evaluate()

        def call(values):
            out = run(*values) if values else run()
            return list(out) if not hasattr(out, "numpy") else [out]

        return call, bound
    with transform.PassContext(opt_level=opt_level):
        lib = build(mod, target="llvm", params=params)
    gm = GraphModule(lib["default"](cpu()))
    names = [p.name_hint for p in mod["main"].params]

    def call(values):
        for name, v in zip(names, values, strict=True):
            gm.set_input(name, v)
        gm.run()
        return [gm.get_output(i) for i in range(gm.get_num_outputs())]

    return call, bound


class MinitvmBackendRep(CachedBackendRep):
    """A prepared model: compiled per input signature, run with a list of numpy inputs."""

    def __init__(self, model, kind: str = "graph", opt_level: int = 3):
        super().__init__(model)
        self.kind = kind
        self.opt_level = opt_level

    def compile(self, named: dict) -> tuple:
        return _compile(self.model, named, self.kind, self.opt_level)


class MinitvmBackend(CpuBackend):
    """minitvm as an ONNX backend (``onnx.backend.test`` runs through it)."""

    @classmethod
    def prepare(cls, model, device: str = "CPU", kind: str = "graph", opt_level: int = 3,
                **kwargs: Any) -> MinitvmBackendRep:
        if not cls.supports_device(device):
            raise ValueError(f"minitvm's ONNX backend runs on CPU, not {device!r}")
        return MinitvmBackendRep(model, kind=kind, opt_level=opt_level)


prepare = MinitvmBackend.prepare
run_model = MinitvmBackend.run_model
run_node = MinitvmBackend.run_node
supports_device = MinitvmBackend.supports_device
