"""Shared by the native-compute tests: build an expression strictly (a numpy fallback fails)
and run it beside the debug interpreter, which runs the ops' numpy references."""

import minitvm
from minitvm import relay
from minitvm.contrib import graph_executor


def native_and_reference(expr, inputs: dict):
    """(compiled output, interpreter output) of ``expr`` over the named ``inputs``; every
    kernel of the build is native."""
    func = relay.Function(relay.analysis.free_vars(expr), expr)
    mod = minitvm.IRModule.from_expr(func)
    with minitvm.transform.PassContext(opt_level=3,
                                       config={"relay.backend.strict_native": True}):
        lib = relay.build(mod, target="llvm")
    assert all(k.kind == "native" for k in lib.get_lib().kernels.values())
    m = graph_executor.GraphModule(lib["default"](minitvm.cpu()))
    for name, value in inputs.items():
        m.set_input(name, value)
    m.run()
    with minitvm.transform.PassContext(opt_level=0):
        ref = relay.create_executor("debug", mod, target="llvm").evaluate()(
            *[inputs[p.name_hint] for p in func.params])
    return m.get_output(0).numpy(), ref.numpy()
