"""``relay.build_module.BuildModule``: TVM's stateful build driver — ``build`` (returning the
graph JSON, the library and the parameters), ``optimize``, and the getters of the last build."""

from __future__ import annotations

from ...ir.module import IRModule
from ...runtime.ndarray import NDArray, array


class BuildModule:
    """Build a Relay module and keep its results (``get_json``, ``get_module``,
    ``get_params``, ``get_irmodule``)."""

    def __init__(self):
        self._params: dict[str, NDArray] = {}
        self._factory = None

    def _set_params(self, params) -> None:
        self._params = {k: v if isinstance(v, NDArray) else array(v)
                        for k, v in (params or {}).items()}

    def build(self, mod, target=None, target_host=None, executor=None, runtime=None,
              workspace_memory_pools=None, constant_memory_pools=None, params=None,
              mod_name: str | None = None):
        """Compile ``mod``; returns ``(graph_json, lib, params)``."""
        from .graph_build import build

        if params:
            self._set_params(params)
        self._factory = build(mod, target=target, target_host=target_host, executor=executor,
                              runtime=runtime, params=self._params or None,
                              mod_name=mod_name or "default")
        return self.get_json(), self.get_module(), self.get_params()

    def optimize(self, mod, target=None, target_host=None, params=None):
        """Run the build pipeline only; returns ``(mod, params)``."""
        from ..transform.pipeline import optimize

        if params:
            self._set_params(params)
        return optimize(mod, target, self._params or None)

    def _built(self):
        if self._factory is None:
            raise RuntimeError("BuildModule: call build() first")
        return self._factory

    def get_json(self) -> str:
        """The graph executor's JSON of the last build."""
        return self._built().get_graph_json()

    def get_module(self):
        """The compiled library of the last build."""
        return self._built().get_lib()

    def get_params(self) -> dict:
        """The parameters the built graph reads (bound constants included)."""
        return dict(self._built().get_params())

    def get_irmodule(self) -> IRModule:
        """The optimized Relay module the last build compiled."""
        return self._built().ir_mod

    def get_executor_config(self) -> str:
        return self._built().get_executor_config()

    def get_devices(self) -> list:
        from ...runtime.ndarray import cpu

        return [cpu(0)]
