"""tvm.contrib: graph_executor (``tvm.contrib.graph_executor.GraphModule``)."""
