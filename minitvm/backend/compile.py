"""A fused function's tensor expressions to one native kernel: schedule, then generate code."""

from __future__ import annotations

import contextlib

from ..codegen.build import compile_prim_func
from ..runtime import jit
from ..runtime.module import Kernel
from ..schedule import LoweringError, LoweringOptions, lower_te
from ..schedule.prim_func import optimize_prim_func_prepacked
from ..te.symbolic_prim_func import make_te_prim_func
from ..tir.transform.inline_scalars import inline_scalars
from .disk_cache import active_cache


@contextlib.contextmanager
def made_for(options: LoweringOptions):
    """Schedule and generate code inside for the CPU ``options`` were read under (a build's
    ``-mcpu``, ``LoweringOptions.cpu``), also where a kernel is lowered after its build left
    that scope: a VM's first call at new shapes, or a saved model's symbolic kernel that fails
    its shape conditions, made the running host's code instead."""
    cpu = options.cpu
    if cpu is None or jit.codegen_target() == cpu:
        yield
        return
    with jit.generating_for(*cpu):
        yield


def compile_te(inputs, consts, outputs, name: str, options: LoweringOptions,
               const_inputs: frozenset = frozenset(), source=None) -> Kernel:
    """Compile ``outputs`` computed from ``inputs`` and constant placeholders ``consts``
    (``[(placeholder, array)]``) into a native ``Kernel`` named ``name``.

    ``const_inputs``: input positions fed by constants (a dense weight there is taken prepacked).
    Raises ``LoweringError`` when the schedule or the code generator cannot handle it.
    """
    with made_for(options):
        prim, packs, ws = schedule_te(inputs, consts, outputs, name, options, const_inputs)
        return compile_scheduled(prim, packs, consts, name, source, ws)


def schedule_te(inputs, consts, outputs, name: str, options: LoweringOptions,
                const_inputs: frozenset = frozenset()) -> tuple:
    """The first half of ``compile_te``: ``(the PrimFunc lower_te makes, its input packs, its
    workspace bytes)``. Extents may be symbolic where every stage's rule takes them."""
    packs: dict = {}
    with made_for(options):
        prim, ws = lower_te(list(inputs) + [c[0] for c in consts], outputs, name,
                            prepack=const_inputs, packs=packs, options=options)
    return prim, packs, ws


def compile_symbolic_te(inputs, consts, outputs, name: str, options: LoweringOptions,
                        const_inputs: frozenset = frozenset(), source=None) -> Kernel:
    """``compile_te`` for tensor expressions with symbolic dimensions: one kernel for every size,
    made as Relax's are (``te.make_te_prim_func``, ``schedule.optimize_prim_func``; a symbolic
    batch runs the static schedules once per image). Every variable must be a dimension of an
    input, from which the kernel reads it; the kernel's entry takes ``(buffers, int64 vars,
    threads)``, the vars as its signature lists them (``KernelSignature.vars``)."""
    with made_for(options):
        fast, packs = schedule_symbolic_te(inputs, consts, outputs, options, const_inputs)
        return compile_scheduled(fast, packs, consts, name, source)


def schedule_symbolic_te(inputs, consts, outputs, options: LoweringOptions,
                         const_inputs: frozenset = frozenset()) -> tuple:
    """The first half of ``compile_symbolic_te``: ``(the scheduled PrimFunc, its input packs)``
    (a parallel build schedules every kernel before its workers fork, which then only generate
    code)."""
    prim, extra = make_te_prim_func(list(inputs) + [c[0] for c in consts], outputs)
    if extra:
        raise LoweringError(f"sizes {[v.name for v in extra]} are no input's dimension")
    scalars = {len(inputs) + k: arr for k, (_, arr) in enumerate(consts)
               if arr.ndim == 0 and arr.dtype.kind in "fiu"}
    if scalars:  # (a scalar constant is a rank-0 input, read as an immediate)
        prim = inline_scalars(prim, scalars)
    with made_for(options):
        return optimize_prim_func_prepacked(prim, options, sorted(const_inputs))


def compile_scheduled(fast, packs: dict, consts, name: str, source=None,
                      ws_bytes: int = 0) -> Kernel:
    """The native ``Kernel`` of scheduled PrimFunc ``fast`` (through the code caches): the
    second half of ``compile_te`` and ``compile_symbolic_te``."""
    try:
        kernel, ir_text = compile_prim_func(fast, name, object_cache=active_cache())
    except (ValueError, NotImplementedError, KeyError) as err:
        raise LoweringError(f"codegen failed: {err}") from err
    compiled = kernel._compiled
    return Kernel(name, "native", symbol=compiled.symbol, address=compiled.address, ir=ir_text,
                  ws_bytes=ws_bytes, consts=[c[1] for c in consts], kernel=kernel, prim_func=fast,
                  input_packs=packs, source=source, compiled=compiled)
