"""Random PyTorch programs (``torch_generator``) through the PyTorch importers against eager.

Each program is imported three ways: traced by ``torch.jit.trace`` into
``relay.frontend.from_pytorch``; exported by ``torch.export`` into Relay's
``from_exported_program``; and the same export into Relax's ``from_exported_program``. Each is
built at opt_level 0 and 3 (``relay.build`` + the graph executor, ``relax.build`` + the VM) and
must give eager's outputs: the same count, shapes and dtypes, integers and bools exactly, floats
within the dtype's tolerance (``differential.compare_values``). A refusal that names an
unsupported operator (``OpNotImplemented``) is not a finding. Needs the optional ``torch``.
"""

from __future__ import annotations

import re

import numpy as np

from .differential import Finding, compare_values, flatten
from .torch_generator import TorchProgram, build_module, generate_torch_program

__all__ = ["check_torch_program", "generate_torch_program", "IMPORTERS", "OPT_LEVELS",
           "run_importer", "is_refusal"]

OPT_LEVELS = (0, 3)
IMPORTERS = ("torchscript->relay", "export->relay", "export->relax")


def _inputs(prog: TorchProgram):
    import torch

    return tuple(torch.from_numpy(v.copy()) for v in prog.feeds.values())


def _relay_run(mod, params, feeds: dict, opt_level: int) -> list[np.ndarray]:
    from ...relay.build_module import build
    from ...runtime.graph_executor import GraphModule
    from ...transform import PassContext

    with PassContext(opt_level=opt_level):
        lib = build(mod, target="llvm", params=params)
    m = GraphModule(lib["default"]())
    for k, v in feeds.items():
        m.set_input(k, v)
    m.run()
    return [m.get_output(i).numpy().copy() for i in range(m.get_num_outputs())]


def import_program(prog: TorchProgram, importer: str):
    """``prog`` imported by ``importer`` (one of ``IMPORTERS``): a Relay (mod, params) or a
    Relax module."""
    import torch

    module = build_module(prog)
    if importer == "torchscript->relay":
        from ...relay.frontend import from_pytorch

        with torch.no_grad():
            traced = torch.jit.trace(module, _inputs(prog), check_trace=False)
        infos = [(k, (v.shape, str(v.dtype))) for k, v in prog.feeds.items()]
        return from_pytorch(traced, infos)
    ep = torch.export.export(module, _inputs(prog))
    if importer == "export->relay":
        from ...relay.frontend.pytorch import from_exported_program

        return from_exported_program(ep)
    from ...relax.frontend.torch import from_exported_program

    return from_exported_program(ep)


def run_importer(prog: TorchProgram, importer: str, opt_level: int, imported=None):
    """``prog`` through ``importer``, built at ``opt_level`` and run on its inputs."""
    imported = import_program(prog, importer) if imported is None else imported
    if importer.endswith("relay"):
        mod, params = imported
        names = [p.name_hint for p in mod["main"].params]
        feeds = dict(zip(names, prog.feeds.values(), strict=True)) \
            if importer.startswith("export") else prog.feeds
        return _relay_run(mod, params, feeds, opt_level)
    from ...relax import VirtualMachine
    from ...relax import build as relax_build
    from ...runtime import cpu
    from ...transform import PassContext

    with PassContext(opt_level=opt_level):
        vm = VirtualMachine(relax_build(imported, target="llvm"), cpu())
    return flatten(vm["main"](*[v.copy() for v in prog.feeds.values()]))


def is_refusal(err: Exception) -> bool:
    """An importer's clear refusal of an operator it does not convert (not a finding)."""
    name = type(err).__name__
    text = str(err)
    return name in ("OpNotImplemented",) or "not supported" in text.lower() and (
        "operator" in text.lower() or "aten" in text.lower())


def _floor(prog: TorchProgram) -> str | None:
    if "float16" in prog.source or any(v.dtype == np.float16 for v in prog.feeds.values()) \
            or ".half()" in prog.source:
        return "float16"
    return "float32"


def check_torch_program(prog: TorchProgram, importers=IMPORTERS,
                        opt_levels=OPT_LEVELS) -> list[Finding]:
    """Every importer at every opt level against eager; refusals are skipped, not findings."""
    found = []
    for importer in importers:
        try:
            imported = import_program(prog, importer)
        except Exception as err:  # noqa: BLE001 - a finding unless a clear refusal
            if not is_refusal(err):
                found.append(Finding("import-crash", importer, prog.seed,
                                     f"{type(err).__name__}: {str(err)[:400]}", prog.text()))
            continue
        for level in opt_levels:
            where = f"{importer} opt_level={level}"
            try:
                with np.errstate(all="ignore"):
                    got = run_importer(prog, importer, level, imported)
            except Exception as err:  # noqa: BLE001 - a finding
                found.append(Finding("exception", where, prog.seed,
                                     f"{type(err).__name__}: {str(err)[:400]}", prog.text()))
                continue
            diff = compare_values(prog.expected, got, floor=_floor(prog))
            if diff:
                kind = "shape" if re.match(r"output \d+: \w+\(.*\) vs \w+\(", diff) \
                    else "mismatch"
                found.append(Finding(kind, where, prog.seed, diff, prog.text()))
    return found
