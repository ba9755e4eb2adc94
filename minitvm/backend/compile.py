"""A fused function's tensor expressions to one native kernel: schedule, then generate code."""

from __future__ import annotations

from ..codegen.build import compile_prim_func
from ..runtime.module import Kernel
from ..schedule import LoweringError, LoweringOptions, lower_te
from .disk_cache import active_cache


def compile_te(inputs, consts, outputs, name: str, options: LoweringOptions,
               const_inputs: frozenset = frozenset(), source=None) -> Kernel:
    """Compile ``outputs`` computed from ``inputs`` and constant placeholders ``consts``
    (``[(placeholder, array)]``) into a native ``Kernel`` named ``name``.

    ``const_inputs``: input positions fed by constants (a dense weight there is taken prepacked).
    Raises ``LoweringError`` when the schedule or the code generator cannot handle it.
    """
    packs: dict = {}
    prim, ws = lower_te(list(inputs) + [c[0] for c in consts], outputs, name,
                        prepack=const_inputs, packs=packs, options=options)
    try:
        kernel, ir_text = compile_prim_func(prim, name, object_cache=active_cache())
    except (ValueError, NotImplementedError, KeyError) as err:
        raise LoweringError(f"codegen failed: {err}") from err
    compiled = kernel._compiled
    return Kernel(name, "native", symbol=compiled.symbol, address=compiled.address, ir=ir_text,
                  ws_bytes=ws, consts=[c[1] for c in consts], kernel=kernel, prim_func=prim,
                  input_packs=packs, source=source, compiled=compiled)
