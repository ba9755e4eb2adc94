"""Shared checks of the tests of single Relay ops: build a one-op module, infer its type, run it
through the interpreter and relay.build, and round-trip it through the text format."""

import numpy as np

import minitvm as tvm
from minitvm import relay


def _mod(build, *arrays):
    vs = [relay.var(f"x{i}", shape=a.shape, dtype=str(a.dtype)) for i, a in enumerate(arrays)]
    mod = tvm.IRModule.from_expr(relay.Function(vs, build(*vs)))
    return relay.transform.InferType()(mod)


def _type(build, *shapes):
    """The checked type of ``build`` on float32 variables of ``shapes``."""
    vs = [relay.var(f"x{i}", shape=s) for i, s in enumerate(shapes)]
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(vs, build(*vs))))
    return mod["main"].body.checked_type


def run_all(build, *arrays, compiled: bool = True) -> list:
    """Every output of the interpreter, equal to relay.build's, after a print/parse round
    trip of the module."""
    mod = _mod(build, *arrays)
    tvm.ir.assert_structural_equal(relay.parse(mod.astext()), mod)
    got = relay.create_executor("debug", mod=mod).evaluate()(*arrays)
    outs = [o.numpy() for o in got] if hasattr(got, "__len__") and not hasattr(got, "numpy") \
        else [got.numpy()]
    if compiled:
        lib = relay.build(mod, "llvm")
        m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
        for i, a in enumerate(arrays):
            m.set_input(f"x{i}", a)
        m.run()
        for k, o in enumerate(outs):
            np.testing.assert_allclose(m.get_output(k).numpy(), o, rtol=1e-5, atol=1e-5)
    return outs


def run(build, *arrays):
    """The single output of ``run_all``."""
    return run_all(build, *arrays)[0]
