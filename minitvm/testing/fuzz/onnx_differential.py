"""Random ONNX graphs (``onnx_generator``) through both importers against ONNX Runtime.

Each graph is imported by ``relay.frontend.from_onnx`` (relay.build + the graph executor) and
by ``relax.frontend.onnx.from_onnx`` (relax.build + the VM), each built at opt_level 0 and 3;
all four must give ONNX Runtime's outputs: the same count, shapes and dtypes, integers and
bools exactly, floats within the dtype's tolerance (``differential.compare_values``; float16
graphs at float16's). Needs the optional ``onnx`` and ``onnxruntime`` packages.
"""

from __future__ import annotations

import numpy as np

from .differential import Finding, compare_values
from .onnx_generator import OnnxProgram, generate_onnx_program

__all__ = ["check_onnx_program", "generate_onnx_program", "run_relay", "run_relax", "OPT_LEVELS"]

OPT_LEVELS = (0, 3)


def _text(prog: OnnxProgram) -> str:
    from onnx import helper

    feeds = "\n".join(f"{k}: {v.dtype}{list(v.shape)} {v.ravel()[:16].tolist()}"
                      for k, v in prog.feeds.items())
    return f"opset {prog.opset}\n{helper.printable_graph(prog.model.graph)}\n{feeds}"


def run_relay(prog: OnnxProgram, opt_level: int) -> list[np.ndarray]:
    """``prog`` imported into Relay, built at ``opt_level`` and run by the graph executor."""
    from ...relay.build_module import build
    from ...relay.frontend import from_onnx
    from ...runtime.graph_executor import GraphModule
    from ...transform import PassContext

    shapes = {k: v.shape for k, v in prog.feeds.items()}
    mod, params = from_onnx(prog.model, shape=shapes)
    with PassContext(opt_level=opt_level):
        lib = build(mod, target="llvm", params=params)
    m = GraphModule(lib["default"]())
    for k, v in prog.feeds.items():
        m.set_input(k, v)
    m.run()
    return [m.get_output(i).numpy().copy() for i in range(m.get_num_outputs())]


def run_relax(prog: OnnxProgram, opt_level: int) -> list[np.ndarray]:
    """``prog`` imported into Relax, built at ``opt_level`` and run by the VM."""
    from ...relax import VirtualMachine
    from ...relax import build as relax_build
    from ...relax.frontend.onnx import from_onnx
    from ...runtime import cpu
    from ...transform import PassContext
    from .differential import flatten

    # (shapes given, as to Relay: both importers read a declared dim of 0 as unknown, as TVM's do)
    mod = from_onnx(prog.model, {k: v.shape for k, v in prog.feeds.items()},
                    sanitize_input_names=False)
    with PassContext(opt_level=opt_level):
        vm = VirtualMachine(relax_build(mod, target="llvm"), cpu())
    names = [p.name_hint for p in mod["main"].params]
    return flatten(vm["main"](*[prog.feeds[n] for n in names]))


def _floor(prog: OnnxProgram) -> str | None:
    """The least precise float the graph computes in (its inputs, initializers and casts): a
    float64 output cast from float32 work is float32-accurate."""
    from onnx import TensorProto

    g = prog.model.graph
    types = {vi.type.tensor_type.elem_type for vi in g.input}
    types |= {t.data_type for t in g.initializer}
    types |= {a.i for n in g.node for a in n.attribute if a.name == "to"}
    for code, name in ((TensorProto.FLOAT16, "float16"), (TensorProto.FLOAT, "float32")):
        if code in types:
            return name
    return None


def check_onnx_program(prog: OnnxProgram) -> list[Finding]:
    """Both importers at both opt levels against ONNX Runtime's outputs."""
    found = []
    floor = _floor(prog)
    for dialect, run in (("relay", run_relay), ("relax", run_relax)):
        for level in OPT_LEVELS:
            where = f"onnx->{dialect} opt_level={level}"
            try:
                with np.errstate(all="ignore"):
                    got = run(prog, level)
            except Exception as err:  # noqa: BLE001 - a finding
                found.append(Finding("exception", where, prog.seed,
                                     f"{type(err).__name__}: {str(err)[:400]}", _text(prog)))
                break
            diff = compare_values(prog.expected, got, floor=floor)
            if diff:
                found.append(Finding("mismatch", where, prog.seed, diff, _text(prog)))
    return found
