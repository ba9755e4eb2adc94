"""``GraphExecutorFactoryModule``: what ``relay.build`` returns (graph json, lib, params)."""

from __future__ import annotations

from ...runtime.module import GraphLib, Module, export_library
from ...runtime.ndarray import NDArray


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
            from ...contrib.graph_executor import GraphModule

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
