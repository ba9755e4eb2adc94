"""An ``onnx.backend.base.Backend`` running ONNX models through minitvm (import, build, run).

``MinitvmBackend.prepare(model)`` imports the model with ``from_onnx`` and compiles it with
``relay.build`` for the graph executor, or for the Relay VM when the program has control flow
or dynamic shapes (a run-time ``Loop`` or ``If``), or runs it on the debug interpreter with
``kind="debug"``. Inputs whose dimensions the model leaves symbolic are compiled for the
shapes of the first call, one compiled module per distinct input signature.
"""

from __future__ import annotations

from typing import Any

from ...frontend_common.onnx_backend_rep import CachedBackendRep, CpuBackend

__all__ = ["MinitvmBackend", "MinitvmBackendRep", "prepare", "run_model", "run_node",
           "supports_device"]


def _import(model, values: dict):
    """from_onnx, binding the inputs the importer needs as constants (shapes, axes, pads)."""
    from .onnx import NeedsConstantInput, from_onnx

    shapes = {n: None if v is None else [e.shape for e in v] if isinstance(v, list) else v.shape
              for n, v in values.items()}
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
            return run(*values) if values else run()

        return call, bound
    if _needs_vm(mod):
        return _compile_vm(mod, params, opt_level), bound
    with transform.PassContext(opt_level=opt_level):
        lib = build(mod, target="llvm", params=params)
    gm = GraphModule(lib["default"](cpu()))
    names = [p.name_hint for p in mod["main"].params]
    ret_type = mod["main"].checked_type.ret_type

    def call(values):
        for name, v in zip(names, values, strict=True):
            gm.set_input(name, v)
        gm.run()
        return _regroup([gm.get_output(i) for i in range(gm.get_num_outputs())], ret_type)

    return call, bound


def _needs_vm(mod) -> bool:
    """Whether ``main`` has what the graph executor cannot run: control flow or local
    functions (a run-time ONNX Loop is a recursive one) or dynamic shapes."""
    from ..analysis import post_order_visit
    from ..expr import Function, If, Let

    main = mod["main"]
    found = []
    post_order_visit(main.body, lambda e: found.append(e) if isinstance(e, Function | If | Let)
                     else None)
    return bool(found) or not all(getattr(t, "is_static", lambda: True)()
                                  for t in _leaf_types(main.checked_type.ret_type))


def _leaf_types(ty) -> list:
    from ..ty import TupleType

    out, stack = [], [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, TupleType):
            stack.extend(t.fields)
        else:
            out.append(t)
    return out


def _compile_vm(mod, params, opt_level: int):
    """Compile for the Relay VM, which runs recursion (loops) and dynamic shapes."""
    from ... import transform
    from ...runtime import cpu
    from ...runtime import vm as runtime_vm
    from .. import vm as relay_vm

    with transform.PassContext(opt_level=opt_level):
        exe = relay_vm.compile(mod, target="llvm", params=params)
    machine = runtime_vm.VirtualMachine(exe, cpu())

    def call(values):
        return machine.run(*values)

    return call


def _regroup(flat: list, ty):
    """The graph executor's flat outputs nested as the function's (tuple) return type."""
    from ..ty import TupleType

    it = iter(flat)

    def take(t):  # nesting depth is that of the ONNX types (a sequence in a tuple), not size
        return tuple(take(f) for f in t.fields) if isinstance(t, TupleType) else next(it)

    return take(ty)


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
