"""Build and run a small Relay program on numpy inputs (shared by the schedule and topi tests)."""

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor


def build_run(fn, *arrays):
    """``fn(*vars)`` built at opt_level 3 and run on ``arrays`` (inputs ``x0``, ``x1``, ...):
    (its outputs, the kinds of its kernels)."""
    vs = [relay.var(f"x{i}", shape=a.shape, dtype=str(a.dtype)) for i, a in enumerate(arrays)]
    mod = tvm.IRModule.from_expr(relay.Function(vs, fn(*vs)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for i, a in enumerate(arrays):
        g.set_input(f"x{i}", a)
    g.run()
    kinds = sorted({k.kind for k in lib.get_lib().kernels.values()})
    return [g.get_output(i).numpy() for i in range(g.get_num_outputs())], kinds


def run_against_interpreter(fn, *arrays):
    """``build_run``'s first output, with every kernel native, and Relay's debug interpreter's
    on the same program."""
    (got, *_), kinds = build_run(fn, *arrays)
    assert kinds == ["native"], kinds
    vs = [relay.var(f"x{i}", shape=a.shape, dtype=str(a.dtype)) for i, a in enumerate(arrays)]
    mod = tvm.IRModule.from_expr(relay.Function(vs, fn(*vs)))
    return got, relay.create_executor("debug", mod=mod).evaluate()(*arrays).numpy()


def build_runner(x, y):
    """Relay ``y`` of input var ``x`` built at opt_level 3: (lib, ``run(xv)`` -> its first
    output), one graph module run again per input."""
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))

    def run(xv):
        g.set_input(x.name_hint, xv)
        g.run()
        return g.get_output(0).numpy()

    return lib, run
