"""``relax.build(mod, target)`` / ``tvm.compile``: run the pipeline, compile every PrimFunc of
the module once with the shared code generator (after the shared schedules,
``schedule.optimize_prim_func``), generate VM code, and return the Executable.

A symbolic-shape PrimFunc is compiled once and serves every size: its dims are read from the
buffers it receives."""

from __future__ import annotations

from contextlib import nullcontext

from ...backend.disk_cache import active_cache
from ...backend.options import lowering_options
from ...backend.parallel_compile import run_sharded
from ...backend.target_cpu import for_target
from ...codegen.build import compile_prim_func
from ...codegen.llvm.stmt import MAX_UNROLL
from ...ir.gc_pause import frozen, paused
from ...ir.module import IRModule
from ...runtime.module import Kernel
from ...runtime.relax_vm import Executable, kernel_spec
from ...schedule import optimize_prim_func
from ...schedule.batch_loop import image_loop_var
from ...schedule.knobs import SCHEDULE_KNOBS_ATTR, use_knobs
from ...schedule.prim_func import optimize_prim_func_prepacked
from ...target.host_only import check_host_target
from ...tir.expr import IntImm
from ...tir.function import PrimFunc
from ...tir.stmt import For, ForKind
from ...tir.stmt_functor import stmt_children
from ...transform.context import PassContext
from ..expr import Function
from ..transform.legalize_ops.manipulate import CONCAT_AXIS_ATTR
from . import build_cache
from .codegen import TAIL_CALL_LOOPS, codegen
from .const_prepack import apply_packs, compact_constants, constant_params, kernels_as_values
from .const_scalars import inline_scalars, scalar_params
from .scalar_kernel import scalar_expression

__all__ = ["build", "compile_cost", "compile_kernels"]


def _target_ok(target) -> None:
    check_host_target("relax.build", target)


def _distinct_functions(mod: IRModule) -> IRModule:
    """``mod`` with every Relax function that shares parameter variables with an earlier one
    (one function bound to two names, ``mod["main"] = mod["forward"]``, or functions built
    with the same Var objects) replaced by a copy with fresh variables: a Relax variable
    belongs to one function (TVM's well-formedness), and the passes, which key their maps on
    variables, would mix the functions' bindings ("variable 'lv1' is used before it is
    defined")."""
    from ..utils import copy_with_new_vars

    seen: set[int] = set()
    copies = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, Function):
            continue
        ids = {id(p) for p in func.params}
        if ids & seen:
            func = copies[gv] = copy_with_new_vars(func)
            ids = {id(p) for p in func.params}
        seen |= ids
    if not copies:
        return mod
    mod = mod.shallow_copy()
    for gv, func in copies.items():
        mod[gv] = func
    return mod


def _has_local_functions(mod: IRModule) -> bool:
    """Whether a Relax function of ``mod`` binds a local function (``@R.function`` inside
    another): the VM runs only module-level functions, so LambdaLift must lift it first."""
    from ..expr import If, SeqExpr

    for func in mod.functions.values():
        if not isinstance(func, Function):
            continue
        stack = [func.body]
        while stack:
            e = stack.pop()
            if isinstance(e, SeqExpr):
                for block in e.blocks:
                    for b in block.bindings:
                        if isinstance(b.value, Function):
                            return True
                        if isinstance(b.value, If | SeqExpr):
                            stack.append(b.value)
                stack.append(e.body)
            elif isinstance(e, If):
                stack.extend((e.true_branch, e.false_branch))
    return False


def compile_kernels(prims: dict, options, const_params: dict | None = None,
                    transforms: dict | None = None) -> dict:
    """Compile each PrimFunc (name -> PrimFunc) once: name -> (Kernel record, spec).

    ``const_params`` (name -> parameter positions fed by constants) lets a GEMM take such a
    weight packed at build time; ``transforms[name]`` then gets {position: numpy transform}.

    Every kernel is scheduled here first, once: a cold build's forked workers (which compile
    into the on-disk cache, ``run_sharded``) inherit the schedules and take the costliest
    kernels first, so that one big kernel (a classifier GEMM over a symbolic batch: 60% of
    ResNet-18's kernel compile time) does not start last and finish alone.
    """
    out = {}
    cache = active_cache()  # the on-disk kernel cache Relay builds use too
    scheduled = {}
    for name, prim in prims.items():
        pos = (const_params or {}).get(name)
        if pos and transforms is not None:
            scheduled[name] = optimize_prim_func_prepacked(prim, options, pos)
        else:
            scheduled[name] = optimize_prim_func(prim, options), None

    def prefetch(name):  # (in a worker: its code reaches this process through the cache)
        compile_prim_func(scheduled[name][0], name, object_cache=cache)

    # a cold build compiles the kernels in forked workers first, as Relay's does
    costs = {name: compile_cost(fast) for name, (fast, _) in scheduled.items()}
    run_sharded(sorted(scheduled, key=lambda name: -costs[name]), prefetch, lambda name: name,
                cost=costs.__getitem__)
    for name, (fast, packs) in scheduled.items():
        if packs:
            transforms[name] = packs
        fn, ir_text = compile_prim_func(fast, name, object_cache=cache)
        compiled = fn._compiled
        rec = Kernel(name, "native", symbol=compiled.symbol, address=compiled.address,
                     ir=ir_text, compiled=compiled, kernel=fn, prim_func=fast)
        spec = kernel_spec(fn.sig)
        scalar = scalar_expression(fast)
        if scalar is not None and len(fast.params) == len(spec["params"]):
            spec["scalar"] = scalar  # the VM may evaluate it in Python (a loop's counter)
        attrs = prims[name].attrs
        axis = dict(attrs.items()).get(CONCAT_AXIS_ATTR) if attrs is not None else None
        if axis is not None:  # the native entry may run it in place (native_entry)
            spec["concat_axis"] = int(axis)
        image = image_loop_var(fast)
        at = next((k for k, v in enumerate(fn.sig.vars) if v is image), None)
        if at is not None:  # a loop over images: the native entry may run them one by one
            spec["image_var"] = at
        out[name] = (rec, spec)
    return out


def compile_cost(func) -> float:
    """A rough guess at how long a scheduled PrimFunc takes to compile: its statements, each
    counted once per copy the code generator makes of it (``unroll`` loops). (ResNet-18 with a
    symbolic batch: the classifier GEMM's row tails, 79% of the guess, 64% of the time.)"""
    total = 0.0
    stack = [(func.body, 1)] if isinstance(func, PrimFunc) else []
    while stack:
        s, copies = stack.pop()
        total += copies
        if isinstance(s, For) and s.kind == ForKind.UNROLLED and isinstance(s.extent, IntImm):
            copies *= max(1, min(s.extent.value, MAX_UNROLL))
        stack.extend((c, copies) for c in stmt_children(s))
    return total


def build(mod, target="llvm", params: dict | None = None, pipeline="default_build",
          exec_mode: str = "bytecode", *, system_lib=None, relax_pipeline=None,
          tir_pipeline=None) -> Executable:
    """Compile a Relax IRModule for the Relax VM.

    Parameters
    ----------
    mod : IRModule
        Relax functions (and PrimFuncs they call).
    target : str or Target
        ``"llvm"`` (the host CPU).
    params : dict, optional
        Values bound to ``main``'s parameters of the same names (``BindParams``) first.
    pipeline : str, Pass or None
        ``"default_build"`` (legalize, fuse, lower), ``"zero"`` or another pass run before the
        lowering to the VM; ``None`` runs only the lowering.
    """
    if not isinstance(mod, IRModule):
        if isinstance(mod, Function):
            mod = IRModule({"main": mod})
        else:
            raise TypeError(f"relax.build expects an IRModule, got {type(mod).__name__}")
    _target_ok(target)
    with for_target(target):  # a -mcpu naming another x86 CPU: its code (backend.target_cpu)
        # a build seen before is loaded (build_cache: keyed before any pass runs), with the
        # cyclic collector paused: a full collection rescanning the caller's program (a
        # model's IR, torch's objects) while the entry's header was decoded took 1.9 of a
        # ResNet-50's 3.5 s hit
        with paused():
            found = build_cache.build_key(mod, params, target, relax_pipeline if relax_pipeline
                                          is not None else pipeline, exec_mode)
            ex = build_cache.load(*found) if found is not None else None
        if ex is not None:
            return ex
        ex = _build(mod, params, pipeline, exec_mode, relax_pipeline)
        if found is not None:
            build_cache.store(*found, ex)
        return ex


def _build(mod: IRModule, params, pipeline, exec_mode: str, relax_pipeline) -> Executable:
    """``build`` of an IRModule whose target was checked."""
    from .. import transform
    from ..pipeline import get_pipeline, lowering_pipeline

    external_mods = list(mod.get_attr("external_mods") or [])  # RunCodegen's modules
    # schedule knobs a MetaScheduleApplyDatabase pass attached: kernels are lowered with them
    schedule_knobs = mod.get_attr(SCHEDULE_KNOBS_ATTR)
    if exec_mode not in ("bytecode", "compiled"):
        raise ValueError(f"relax.build: exec_mode must be 'bytecode' or 'compiled', got "
                         f"{exec_mode!r}")
    # the IR is freed by reference counting; the cyclic collector only rescans the growing
    # heap of nodes (a 30,000-step Relax ladder: 2.3 of its 10.0 CPU s), so it waits
    # through the passes and the VM codegen. The kernels are lowered and compiled with it on
    # (their TE/TIR and llvmlite objects make cyclic garbage), the input, the lowered program
    # and its VM code left out of its scans (``frozen``: frozen before the collector resumes,
    # so not even its first collection rescans them)
    with frozen() as freeze_new:
        with paused():
            mod = _distinct_functions(mod)
            if _has_local_functions(mod):  # local functions and closures become module functions
                mod = transform.LambdaLift()(mod)
            if relax_pipeline is not None:
                pipeline = relax_pipeline
            if params:
                mod = transform.BindParams("main", params)(mod)
            if isinstance(pipeline, str):
                if pipeline in ("default_build", "default"):
                    mod = get_pipeline(pipeline)(mod)
                else:
                    mod = lowering_pipeline()(get_pipeline(pipeline)(mod))
            elif pipeline is not None:
                mod = lowering_pipeline()(pipeline(mod))
            else:
                mod = lowering_pipeline()(mod)
            loops = bool(PassContext.current().config.get(TAIL_CALL_LOOPS, True))
            funcs, table, consts, prims = codegen(mod, loops)
            freeze_new()
        with use_knobs(schedule_knobs) if schedule_knobs is not None else nullcontext():
            options = lowering_options(PassContext.current())
        # matmul weights that are constants at every call site are packed once, here
        const_params, sites = constant_params(funcs, table, consts, prims)
        # scalar constants (scales, zero points) every call of a kernel shares: immediates
        scalars = scalar_params(sites, consts, prims, kernels_as_values(funcs, table))
        prims = {name: inline_scalars(prim, scalars[name]) if name in scalars else prim
                 for name, prim in prims.items()}
        transforms: dict = {}
        kernels = compile_kernels(prims, options, const_params, transforms)
        for name, packs in transforms.items():
            apply_packs(name, packs, sites, consts)
        if transforms:
            consts = compact_constants(funcs, consts)
        return Executable(funcs, table, consts, kernels, external_mods)


def compile(mod, target="llvm", *, relax_pipeline="default_build", tir_pipeline=None,
            params: dict | None = None):  # noqa: A001 - TVM's name (tvm.compile)
    """``tvm.compile``: a module with Relax functions becomes a Relax VM Executable
    (``relax.build``); a module (or function) of PrimFuncs only becomes a native Module
    (``codegen.build``)."""
    from ...codegen.build import build as tir_build
    from ...tir.function import PrimFunc

    if isinstance(mod, PrimFunc) or (isinstance(mod, IRModule) and not any(
            isinstance(f, Function) for f in mod.functions.values())):
        return tir_build(mod, target)
    return build(mod, target, params, pipeline=relax_pipeline)
