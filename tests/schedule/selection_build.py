"""Build and run a one-op Relay selection program (shared by the selection schedule tests)."""

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor


def build_run(fn, x):
    """``fn(x)`` built at opt_level 3 and run on ``x``: (its outputs, the kinds of kernel)."""
    v = relay.var("x", shape=x.shape, dtype=str(x.dtype))
    mod = tvm.IRModule.from_expr(relay.Function([v], fn(v)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    g.run()
    kinds = sorted({k.kind for k in lib.get_lib().kernels.values()})
    return [g.get_output(i).numpy() for i in range(g.get_num_outputs())], kinds
