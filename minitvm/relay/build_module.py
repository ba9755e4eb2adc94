"""``relay.create_executor`` and the executor kinds; ``relay.build`` is added here later.

Until the native back end lands, the "graph", "vm" and "aot" executors run the program in the
debug interpreter after type inference (same results, no compilation). They are separate classes
so that the compiled executors can replace them without changing callers.
"""

from __future__ import annotations

from ..ir.module import IRModule
from ..runtime.ndarray import cpu
from .backend.executor import Executor
from .backend.interpreter import Interpreter

__all__ = [
    "create_executor", "bind_params_by_name", "Executor", "Interpreter", "GraphExecutor",
    "VMExecutor", "AotExecutor",
]


from .transform.bind_params import bind_params_by_name  # noqa: E402  (one definition)


class GraphExecutor(Interpreter):
    """``create_executor("graph")``: for now evaluated by the interpreter (see module doc)."""


class VMExecutor(Interpreter):
    """``create_executor("vm")``: for now evaluated by the interpreter (see module doc)."""


class AotExecutor(Interpreter):
    """``create_executor("aot")``: for now evaluated by the interpreter (see module doc)."""


_KINDS = {"debug": Interpreter, "graph": GraphExecutor, "vm": VMExecutor, "aot": AotExecutor}


def create_executor(kind: str = "debug", mod: IRModule | None = None, device=None,
                    target="llvm", params: dict | None = None) -> Executor:
    """Create an executor for ``mod``: ``kind`` is "debug", "graph", "vm" or "aot".

    Parameters
    ----------
    kind : str
        The executor kind.
    mod : IRModule
        The module to run (an empty one when None).
    device : Device
        The device to run on (``tvm.cpu(0)`` when None).
    target : str or Target
        The compilation target.
    params : dict of str to NDArray
        Values bound to ``main``'s parameters of the same name (they become constants).
    """
    if mod is None:
        mod = IRModule()
    if device is None:
        device = cpu(0)
    if params is not None:
        mod = mod.shallow_copy()
        mod["main"] = bind_params_by_name(mod["main"], params)
    cls = _KINDS.get(kind)
    if cls is None:
        raise ValueError(f"unknown executor kind {kind!r}; expected one of {sorted(_KINDS)}")
    return cls(mod, device, target)


# --------------------------------------------------------------------------- relay.build
# ``build``, ``optimize`` and the graph executor factory module are added below by the back-end
# work; keep ``create_executor`` above independent of them.
from .backend.built_executor import AotExecutor, GraphExecutor, VMExecutor  # noqa: E402,F811
from .backend.graph_build import build  # noqa: E402
from .backend.vm import VMExecutor  # noqa: E402,F811  the Relay VM (relay.vm.compile)
from .transform.pipeline import optimize  # noqa: E402

_KINDS.update({"graph": GraphExecutor, "vm": VMExecutor, "aot": AotExecutor})
__all__ += ["build", "optimize"]
from .backend.build_module_class import BuildModule  # noqa: E402,F401  (TVM's BuildModule)
