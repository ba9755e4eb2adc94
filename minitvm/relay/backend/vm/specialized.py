"""Saving and reading back a *shape-specializing* kernel (``kernels.ShapeSpecializer``: a
primitive function with ``Any`` dimensions whose ops do not lower symbolically, lowered natively
per input shape at run time).

Saved as plain Relay text (the ``relay`` kernel format) it read back as the ops' numpy
references, on every call: an executable from the whole-executable cache
(``exe_cache``: every warm ``relay.vm.compile``) or ``load_module`` ran such kernels in numpy —
the ONNX LSTM over a run-time length 8x slower a step than the compile that saved it. The
``relay_specialized`` format records the function and its constant inputs, and reads it back as
the specializer it was.
"""

from __future__ import annotations

import json

from ....backend.target_cpu import loaded_cpu, saved_cpu
from ....ir.attrs import DictAttrs
from ....runtime.module import Kernel, register_kernel_format
from ....schedule import LoweringOptions
from ...expr import Function
from ..te_compiler import _kernel_text, _read_kernel
from .kernels import SPECIALIZED_FORMAT, ShapeSpecializer

__all__ = ["HEADER", "read_specialized", "specialized_text"]

HEADER = "// minitvm relay_specialized "


def specialized_text(kernel: Kernel) -> str:
    """A specializing kernel as text: a header line (its name, constant inputs and the CPU its
    build made code for), then its function in Relay text."""
    run = kernel.run
    const_inputs = sorted(run.const_inputs) if isinstance(run, ShapeSpecializer) else []
    head = {"name": kernel.name, "const_inputs": [int(k) for k in const_inputs]}
    cpu = saved_cpu(run.options) if isinstance(run, ShapeSpecializer) else None
    if cpu:
        head["cpu"] = cpu
    return f"{HEADER}{json.dumps(head)}\n{_kernel_text(kernel.source)}"


def read_specialized(text: str):
    """``(function, run)`` of ``specialized_text``'s text: ``run`` a ``ShapeSpecializer`` of the
    function (lowered per input shape at its first call of it)."""
    head, _, body = text.partition("\n")
    if not head.startswith(HEADER):
        raise ValueError("not a relay_specialized kernel (no header line)")
    meta = json.loads(head[len(HEADER):])
    if not isinstance(meta.get("name"), str) or not isinstance(meta.get("const_inputs"), list):
        raise ValueError("relay_specialized kernel: its header needs 'name' and 'const_inputs'")
    func, _ = _read_kernel(body)
    func = Function(func.params, func.body, func.ret_type, attrs=DictAttrs({"Primitive": 1}))
    return func, ShapeSpecializer(func, meta["name"], LoweringOptions(cpu=loaded_cpu(meta.get("cpu"))),
                                  frozenset(int(k) for k in meta["const_inputs"]))


register_kernel_format(SPECIALIZED_FORMAT, specialized_text, read_specialized, whole_kernel=True)
