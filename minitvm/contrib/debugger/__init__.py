"""``tvm.contrib.debugger``: the graph executor that runs and times node by node."""
