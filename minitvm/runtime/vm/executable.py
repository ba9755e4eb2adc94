"""The Relay VM executable (``tvm.runtime.vm.Executable``): bytecode functions, a constant pool
and the primitive kernels they invoke.

``save()`` returns ``(code, lib)`` as TVM does: ``code`` is bytes (a zip of the functions as JSON
and the constants as ``.npz`` — never a pickle), ``lib`` the module holding the kernels;
``Executable.load_exec(code, lib)`` rebuilds the executable from the two.
"""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np

from ..module import GraphLib, Kernel
from .bytecode import VMFunction, instruction_text

__all__ = ["Executable"]

FORMAT = "minitvm-relay-vm"
VERSION = 1


def _type_text(rec) -> str:
    if rec[0] == "tensor":
        dims = ", ".join("?" if d < 0 else str(d) for d in rec[1])
        return f"Tensor[({dims}), {rec[2]}]"
    if rec[0] == "tuple":
        return "(" + ", ".join(_type_text(r) for r in rec[1]) + ")"
    return "?"


class Executable:
    """Functions (``functions``, ``global_map`` name -> index), ``constants`` (numpy arrays) and
    ``kernels`` (``runtime.Kernel``, indexed by ``InvokePacked``)."""

    def __init__(self, functions: list[VMFunction], constants: list[np.ndarray],
                 kernels: list[Kernel]):
        self.functions = list(functions)
        self.global_map = {f.name: k for k, f in enumerate(self.functions)}
        self.constants = list(constants)
        self.kernels = list(kernels)
        self.mod = self  # TVM code reads ``exe.mod``; the runtime module is the executable

    # ------------------------------------------------------------------ inspection
    @property
    def globals(self) -> list[str]:
        return [f.name for f in self.functions]

    @property
    def primitive_ops(self) -> list[str]:
        return [k.name for k in self.kernels]

    @property
    def lib(self) -> GraphLib:
        return GraphLib({k.name: k for k in self.kernels})

    def get_lib(self) -> GraphLib:
        return self.lib

    def get_function_arity(self, func_name: str) -> int:
        return len(self._function(func_name).params)

    def get_function_param_name(self, func_name: str, index: int) -> str:
        return self._function(func_name).params[index]

    def _function(self, name: str) -> VMFunction:
        k = self.global_map.get(name)
        if k is None:
            raise ValueError(f"the Relay VM executable has no function {name!r}; it has "
                             f"{sorted(self.global_map)}")
        return self.functions[k]

    @property
    def bytecode(self) -> str:
        """Every function's instructions, one per line, as TVM prints them."""
        names = self.globals
        out = []
        for k, f in enumerate(self.functions):
            sig = ", ".join(f"{n}: {_type_text(t)}" for n, t in zip(f.params, f.param_types))
            out.append(f"VM Function[{k}]: {f.name}({sig})")
            out.append(f"# reg file size = {f.register_file_size}")
            out.append(f"# instruction count = {len(f.instructions)}")
            out.append("opcode, fields # inst(text):")
            for pc, ins in enumerate(f.instructions):
                fields = " ".join(str(x) for x in _flat_fields(ins))
                out.append(f" {pc}: {fields}   # {instruction_text(ins, names)}")
            out.append("")
        return "\n".join(out)

    @property
    def stats(self) -> str:
        """Counts and names of the constants, globals and primitive ops."""
        shapes = ", ".join(f"[{', '.join(map(str, c.shape))}]" for c in self.constants)
        lines = ["Relay VM executable statistics:",
                 f"  Constant shapes (# {len(self.constants)}): [{shapes}]",
                 f"  Globals (#{len(self.functions)}): "
                 f"[{', '.join(f'({n}, {k})' for n, k in self.global_map.items())}]",
                 f"  Primitive ops (#{len(self.kernels)}): [{', '.join(self.primitive_ops)}]"]
        native = sum(1 for k in self.kernels if k.kind == "native")
        # (a function with dynamic sizes runs one native kernel over symbolic sizes through a
        # Python wrapper that computes its sizes: native code too)
        symbolic = sum(1 for k in self.kernels if k.kind != "native" and
                       getattr(getattr(getattr(k, "run", None), "kernel", None), "kind",
                               None) == "native")
        tail = f" ({symbolic} over symbolic sizes)" if symbolic else ""
        lines.append(f"  Native kernels: {native + symbolic} of {len(self.kernels)}{tail}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ serialization
    def save(self) -> tuple[bytes, GraphLib]:
        """``(code, lib)``: the bytecode and constants as bytes, the kernels as a module."""
        meta = {"format": FORMAT, "version": VERSION,
                "functions": [f.to_json() for f in self.functions],
                "kernels": [k.name for k in self.kernels]}
        consts = io.BytesIO()
        np.savez(consts, **{f"c{k}": c for k, c in enumerate(self.constants)})
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("relay_vm.json", json.dumps(meta))
            # (stored, not deflated: float weights barely compress, and inflating ResNet-18's
            # 45 MB took most of a load)
            z.writestr("constants.npz", consts.getvalue(), compress_type=zipfile.ZIP_STORED)
        return buf.getvalue(), self.lib

    @staticmethod
    def load_exec(bytecode, lib) -> Executable:
        """Rebuild an executable from ``save()``'s two parts."""
        where = "Executable.load_exec"
        try:
            with zipfile.ZipFile(io.BytesIO(bytes(bytecode))) as z:
                meta = json.loads(z.read("relay_vm.json"))
                with np.load(io.BytesIO(z.read("constants.npz")), allow_pickle=False) as npz:
                    consts = [npz[f"c{k}"] for k in range(len(npz.files))]
        except (zipfile.BadZipFile, KeyError, ValueError) as err:
            raise ValueError(f"{where}: not a saved Relay VM executable ({err})") from None
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise ValueError(f"{where}: format {meta.get('format')!r} version "
                             f"{meta.get('version')!r}, expected {FORMAT!r} {VERSION}")
        kernels_by_name = getattr(lib, "kernels", None)
        if not isinstance(kernels_by_name, dict):
            raise ValueError(f"{where}: lib must be the module save() returned, got "
                             f"{type(lib).__name__}")
        missing = [n for n in meta["kernels"] if n not in kernels_by_name]
        if missing:
            raise ValueError(f"{where}: lib lacks the kernels {missing}")
        funcs = [VMFunction.from_json(d) for d in meta["functions"]]
        return Executable(funcs, consts, [kernels_by_name[n] for n in meta["kernels"]])

    def __repr__(self):
        return f"Executable(globals={self.globals}, kernels={len(self.kernels)}, " \
               f"constants={len(self.constants)})"


def _flat_fields(ins):
    out = []
    for x in ins:
        if isinstance(x, tuple | list):
            out.extend(x)
        elif isinstance(x, bool):
            out.append(int(x))
        else:
            out.append(x)
    return out
