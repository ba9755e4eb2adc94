"""``tvm.relay.backend.executor_factory``: TVM's import path for what ``relay.build`` returns."""

from ...runtime.graph_executor import GraphExecutorFactoryModule  # noqa: F401
