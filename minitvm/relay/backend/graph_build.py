"""``relay.build``: optimize, lower every fused function, plan memory, emit the graph.

The result is TVM's factory module. Kernels that cannot be lowered natively (an op without a
compute, a symbolic shape) run through numpy inside the same graph executor; the factory's
``get_lib().summary()`` lists which are which. Config options (``PassContext(config=...)``):
``relay.backend.use_native`` (default True), ``relay.backend.use_blas`` (default True) and
``relay.backend.use_generated_conv`` / ``use_generated_dense`` / ``use_generated_batch_matmul``
(default True).
"""

from __future__ import annotations

import time

from ...ir.module import IRModule
from ...runtime.module import GraphLib, KernelEntry
from ...transform.config import register_pass_config
from ..expr import Function
from . import aot, blas, gemm
from .executor_factory import GraphExecutorFactoryModule
from .graph_executor_codegen import GraphCodegen

register_pass_config("relay.backend.use_native", bool, True,
                     "Lower fused functions to native code (False: run all kernels in numpy).")
register_pass_config("relay.backend.use_blas", bool, True,
                     "Let dense/matmul/conv2d call the process's BLAS (like -libs=cblas).")
register_pass_config("relay.backend.use_generated_conv", bool, True,
                     "conv2d (float32, groups 1) as the generated implicit GEMM (else im2col "
                     "+ BLAS when BLAS is allowed).")
register_pass_config("relay.backend.use_generated_dense", bool, True,
                     "dense (float32, 2+ rows) as the generated packed GEMM (else BLAS when "
                     "allowed).")
register_pass_config("relay.backend.use_generated_batch_matmul", bool, True,
                     "batch_matmul (float32, A not transposed) as the generated tir.batch_gemm, "
                     "B packed per call (else BLAS when allowed).")


def _config(key: str, default):
    from ...transform import PassContext

    try:
        cfg = PassContext.current().config
        return cfg.get(key, default) if cfg is not None else default
    except (AttributeError, KeyError):
        return default


def _as_module(mod) -> IRModule:
    if isinstance(mod, Function):
        return IRModule.from_expr(mod)
    if not isinstance(mod, IRModule):
        raise TypeError(f"relay.build expects an IRModule or a relay.Function, got "
                        f"{type(mod).__name__}")
    if "main" not in [gv.name_hint for gv in mod.functions]:
        raise ValueError("relay.build: the module has no 'main' function")
    return mod


def build(ir_mod, target=None, target_host=None, executor=None, runtime=None,
          workspace_memory_pools=None, constant_memory_pools=None, params=None,
          mod_name: str = "default") -> GraphExecutorFactoryModule:
    """Compile a Relay module for the host CPU (``target="llvm"``).

    Parameters
    ----------
    ir_mod : IRModule or relay.Function
        The program; ``main`` is the entry.
    target : str or Target
        ``"llvm"`` (the host CPU); ``None`` means llvm.
    params : dict of str to NDArray
        Values bound to ``main``'s parameters of the same name (they become constants).
    mod_name : str
        The name the graph executor is created under (``lib[mod_name](dev)``).

    Returns
    -------
    GraphExecutorFactoryModule
        ``get_graph_json()``, ``get_lib()``, ``get_params()``, ``export_library(path)``.
    """
    from ..transform.pipeline import optimize

    t0 = time.perf_counter()
    kind = str(getattr(getattr(target, "kind", None), "name", target) or "llvm").split()[0]
    if kind not in ("llvm", "c", "cpu"):
        raise ValueError(f"relay.build: only the 'llvm' (host CPU) target is supported, "
                         f"got {target!r}")
    mod = _as_module(ir_mod)
    opt_mod, _ = optimize(mod, "llvm", params)
    native = bool(_config("relay.backend.use_native", True))
    use_blas = bool(_config("relay.backend.use_blas", True))
    saved = blas._STATE.get("ok")
    saved_gen = dict(gemm.GENERATED)
    gemm.GENERATED["conv2d"] = bool(_config("relay.backend.use_generated_conv", True))
    gemm.GENERATED["dense"] = bool(_config("relay.backend.use_generated_dense", True))
    gemm.GENERATED["batch_matmul"] = bool(
        _config("relay.backend.use_generated_batch_matmul", True))
    if not use_blas:
        blas._STATE["ok"] = False
    try:
        cg = GraphCodegen(native=native)
        heads, arg_nodes = cg.codegen(opt_mod["main"])
        graph_json = cg.graph_json(heads, arg_nodes)
    finally:
        gemm.GENERATED.update(saved_gen)
        if not use_blas:
            if saved is None:
                blas._STATE.pop("ok", None)
            else:
                blas._STATE["ok"] = saved
    kernels = {}
    for name, lw in cg.kernels.items():
        kernels[name] = KernelEntry(name, lw.kind, lw.symbol, lw.address, lw.ir_text,
                                    lw.ws_bytes, lw.consts, lw.func, lw.reason,
                                    kernel=lw.kernel)
    entry = _entry(cg, kernels)
    lib = GraphLib(kernels, entry, blas.describe() if use_blas and blas.available() else "")
    return GraphExecutorFactoryModule(graph_json, lib, cg.params, mod_name, opt_mod,
                                      time.perf_counter() - t0)


MAX_ENTRY_STEPS = 20000  # beyond this, run() loops in Python (LLVM time grows with the entry)


def _entry(cg: GraphCodegen, kernels: dict):
    """The whole-graph native entry when every step is native (else None)."""
    steps = []
    for node in cg.nodes:
        if node["op"] == "null":
            continue
        fname = node["attrs"]["func_name"]
        if fname == "__nop":
            continue
        k = kernels[fname]
        if k.kind != "native":
            return None
        nargs = int(node["attrs"]["num_inputs"]) + len(k.consts) + \
            int(node["attrs"]["num_outputs"]) + (1 if k.ws_bytes else 0)
        steps.append((k.symbol, nargs))
    if len(steps) > MAX_ENTRY_STEPS:
        return None
    ir, symbol = aot.entry_ir(steps)
    compiled = aot.compile_entry(ir, symbol, {k.symbol: k.address for k in kernels.values()
                                              if k.kind == "native"})
    return ir, symbol, compiled
