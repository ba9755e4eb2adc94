"""``tvm.contrib.graph_executor``: TVM's import path for the graph executor (minitvm.runtime)."""

from ..runtime.graph_executor import GraphExecutorFactoryModule, GraphModule, create  # noqa: F401
