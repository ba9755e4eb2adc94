"""``relay.build``: optimize, lower every fused function, plan memory, emit the graph.

The result is TVM's factory module. Kernels that cannot be lowered natively (an op without a
compute, a symbolic shape) run through numpy inside the same graph executor; the factory's
``get_lib().summary()`` lists which are which. The back-end options are read once from the PassContext (``minitvm.backend.options``:
``relay.backend.use_native``, ``use_blas``, ``use_generated_conv`` / ``_dense`` /
``_batch_matmul``) and passed down as one value.
"""

from __future__ import annotations

import contextlib
import gc
import time

from ...backend import aot
from ...backend.options import lowering_options
from ...backend.target_cpu import for_target
from ...ir.gc_pause import frozen, paused
from ...ir.module import IRModule
from ...runtime import blas
from ...runtime.graph_executor import GraphExecutorFactoryModule
from ...runtime.module import GraphLib
from ...schedule.knobs import use_knobs
from ...target.host_only import check_host_target, target_kind_name
from ...transform.context import PassContext
from ..expr import Function
from . import build_cache
from .graph_executor_codegen import GraphCodegen


def _as_module(mod) -> IRModule:
    if isinstance(mod, Function):
        return IRModule.from_expr(mod)
    if not isinstance(mod, IRModule):
        raise TypeError(f"relay.build expects an IRModule or a relay.Function, got "
                        f"{type(mod).__name__}")
    if "main" not in [gv.name_hint for gv in mod.functions]:
        raise ValueError("relay.build: the module has no 'main' function")
    return mod


def _check_executor_runtime(executor, runtime) -> None:
    """relay.build makes graph-executor modules for the C++-style runtime; say so clearly for
    the other kinds TVM can target."""
    if executor is not None and getattr(executor, "name", executor) != "graph":
        raise ValueError(f"relay.build: only the graph executor is supported, got executor "
                         f"{executor!r} (use relay.backend.Executor('graph'))")
    if runtime is not None and getattr(runtime, "name", runtime) != "cpp":
        raise ValueError(f"relay.build: only the 'cpp' runtime is supported, got {runtime!r}")


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
    t0 = time.perf_counter()
    check_host_target("relay.build", target)
    kind = target_kind_name(target)
    _check_executor_runtime(executor, runtime)
    mod = _as_module(ir_mod)
    with for_target(target):  # a -mcpu naming another x86 CPU: its code (backend.target_cpu)
        return _build_or_load(mod, params, mod_name, kind, t0)


def _build_or_load(mod: IRModule, params, mod_name: str, kind: str, t0: float
                   ) -> GraphExecutorFactoryModule:
    """The whole-build cache's factory for ``mod``, else a fresh build (stored in it)."""
    options = lowering_options()
    cache = build_cache.enabled()
    with paused():  # (no full collection rescanning the caller's objects while keying)
        key = build_cache.build_key(mod, params, kind, options) if cache is not None else None
    if key is not None:
        ctx = PassContext.current()

        def rebuild() -> GraphExecutorFactoryModule:  # what a cached factory does not carry
            with ctx, use_knobs(options.knobs):
                return _build(mod, params, mod_name, lowering_options(), t0)

        with paused():
            hit = build_cache.load(cache, key, mod_name, rebuild)
        if hit is not None:
            hit.build_seconds = time.perf_counter() - t0
            return hit
    factory = _build(mod, params, mod_name, options, t0)
    if key is not None:  # (written on a thread: ResNet-50's 100 MB take 0.15 s)
        build_cache.store(cache, key, factory, wait=False)
    return factory


# Allocations between two young-generation collections while a build lowers its kernels
# (Python's default is 700). Lowering builds thousands of TE/TIR nodes a kernel, nearly all alive
# until the kernel is compiled: at 700 a cold ResNet-50 build ran 68 young and 6 middle
# collections, 0.09 of its 2.4 CPU s, for little garbage; at this threshold 4 and 0 (0.03 s).
# Cyclic garbage still gets collected, after this many allocations instead of 700.
BUILD_GC_THRESHOLD = 20000


@contextlib.contextmanager
def _fewer_collections():
    """Python's young-generation GC threshold raised to ``BUILD_GC_THRESHOLD`` inside, restored
    after (forked compile workers inherit it)."""
    gen0, *older = gc.get_threshold()
    gc.set_threshold(max(gen0, BUILD_GC_THRESHOLD), *older)
    try:
        yield
    finally:
        gc.set_threshold(gen0, *older)


def _build(mod: IRModule, params, mod_name: str, options, t0: float
           ) -> GraphExecutorFactoryModule:
    """Optimize, lower, plan and emit (no whole-build cache)."""
    from ..transform.pipeline import optimize
    from ..transform.plan_devices import host_program

    # the build's numpy work (constant folding, weight layout transforms) is small matrix
    # products: OpenBLAS's threads only slow them, 100x when the other cores are busy compiling
    # the input and then the optimized program are left out of the collector's scans while
    # the rest of the build runs (each full collection rescanned every node of a 100,000-node
    # program, ~2 s of its build); it stays paused from the optimizer's passes to the freeze,
    # so their new nodes are not scanned once either
    with frozen() as freeze_new, blas.single_threaded(), _fewer_collections():
        with paused():
            opt_mod, _ = optimize(mod, "llvm", params)
            opt_mod = host_program(opt_mod, "relay.build")
            freeze_new()
        cg = GraphCodegen(options)
        heads, arg_nodes = cg.codegen(opt_mod["main"])
        graph_json = cg.graph_json(heads, arg_nodes)
        kernels = cg.kernels
        entry = aot.graph_entry(cg.nodes, kernels)
    lib = GraphLib(kernels, entry, blas.describe() if options.blas else "")
    return GraphExecutorFactoryModule(graph_json, lib, cg.params, mod_name, opt_mod,
                                      time.perf_counter() - t0)
