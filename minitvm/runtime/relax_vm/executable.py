"""The Relax VM's executable: functions as instruction lists, a constant pool, a function table
(VM functions, native kernels, packed functions by name) and the kernels' machine code.

``export_library(path)`` writes a zip archive (never a pickle): ``minitvm_relax_vm.json``
(functions, table, kernel specs, scalar constants), ``constants.npz`` (tensors, read back with
``allow_pickle=False``) and ``kernels/<name>.ll`` (LLVM IR, JIT-compiled on load, through the
on-disk object cache when ``MINITVM_CACHE_DIR`` is set). ``tvm.runtime.load_module`` reads it
back with nothing of the compiler.

Instructions (lists, as stored): ``[CALL, dst, func, args]``, ``[RET, reg]``, ``[GOTO, off]``,
``[IF, cond_reg, off]`` (jump by ``off`` when false), ``[KILL, reg]``, ``[MOVE, dst, arg]``;
an argument is ``[kind, value]``: a register, a constant index, an immediate int, a function
table index, or the VM itself (builtins called with context).
"""

from __future__ import annotations

import io
import json
import os
import zipfile

import numpy as np

from ..module import Kernel, Module
from .builtins import ShapeTuple
from .kernel import NativeKernel

FORMAT = "minitvm-relax-vm"
VERSION = 1
META = "minitvm_relax_vm.json"

CALL, RET, GOTO, IF, KILL, MOVE = range(6)
ARG_REG, ARG_CONST, ARG_IMM, ARG_FUNC, ARG_CTX = range(5)


def call_argv(tmpl: list, slots: list, regs_only, regs: list) -> list:
    """The arguments of a linked CALL: its template with the register slots filled in
    (``regs_only`` lists the registers when every argument is one)."""
    if regs_only is not None:
        return [regs[r] for r in regs_only]
    argv = tmpl.copy()
    for k, r in slots:
        argv[k] = regs[r]
    return argv
_OPNAMES = {CALL: "call", RET: "ret", GOTO: "goto", IF: "if", KILL: "kill", MOVE: "move"}


class VMFunction:
    """One Relax function: parameter names (and annotations, for messages), registers, code."""

    __slots__ = ("name", "params", "param_sinfo", "num_regs", "code")

    def __init__(self, name: str, params, num_regs: int, code, param_sinfo=None):
        self.name = name
        self.params = list(params)
        self.param_sinfo = list(param_sinfo or [""] * len(self.params))
        self.num_regs = int(num_regs)
        self.code = [tuple(i) for i in code]

    def __repr__(self):
        return f"VMFunction({self.name!r}, params={self.params})"


class Executable(Module):
    """A compiled Relax program (``relax.build``'s result; ``tvm.relax.Executable``)."""

    type_key = "relax.Executable"

    def __init__(self, functions, func_table, constants, kernels):
        self.functions: dict[str, VMFunction] = {f.name: f for f in functions}
        self.func_table: list[tuple[str, str]] = [tuple(e) for e in func_table]
        self.constants: list = list(constants)
        # kernel name -> (Kernel record, spec)
        self.kernels: dict[str, tuple[Kernel, dict]] = dict(kernels)
        self._native: dict[str, NativeKernel] = {}

    @property
    def mod(self):  # TVM: ex.mod is the runtime module
        return self

    def native_kernel(self, name: str) -> NativeKernel:
        k = self._native.get(name)
        if k is None:
            rec, spec = self.kernels[name]
            k = self._native[name] = NativeKernel(name, spec, rec.compiled)
        return k

    def get_function(self, name: str, query_imports: bool = False):
        if name in self.kernels:
            return self.native_kernel(name)
        raise AttributeError(f"executable has no kernel {name!r}; run Relax functions with "
                             "relax.VirtualMachine(ex, tvm.cpu())")

    def stats(self) -> str:
        lines = [f"Relax VM executable: {len(self.functions)} functions, "
                 f"{len(self.kernels)} kernels, {len(self.constants)} constants"]
        for f in self.functions.values():
            lines.append(f"  {f.name}({', '.join(f.params)}): {len(f.code)} instructions, "
                         f"{f.num_regs} registers")
        return "\n".join(lines)

    def as_text(self) -> str:
        """The instructions of every function, one per line."""
        out = []
        for f in self.functions.values():
            out.append(f"@{f.name}({', '.join(f.params)}):  # {f.num_regs} registers")
            for pc, ins in enumerate(f.code):
                op = ins[0]
                if op == CALL:
                    kind, name = self.func_table[ins[2]]
                    args = ", ".join(self._arg_text(a) for a in ins[3])
                    out.append(f"  {pc:4d}: %{ins[1]} = call {kind}:{name}({args})")
                elif op == MOVE:
                    out.append(f"  {pc:4d}: %{ins[1]} = {self._arg_text(ins[2])}")
                else:
                    out.append(f"  {pc:4d}: {_OPNAMES[op]} " + ", ".join(str(x) for x in ins[1:]))
        return "\n".join(out)

    def _arg_text(self, a) -> str:
        kind, v = a
        if kind == ARG_REG:
            return f"%{v}"
        if kind == ARG_CONST:
            c = self.constants[v]
            return f"c[{v}]" if isinstance(c, np.ndarray) else repr(c)
        if kind == ARG_FUNC:
            return f"@{self.func_table[v][1]}"
        if kind == ARG_CTX:
            return "vm"
        return str(v)

    # ------------------------------------------------------------------ export / load
    def export_library(self, path: str, *args, **kwargs) -> None:
        arrays, consts = {}, []
        for k, c in enumerate(self.constants):
            if isinstance(c, np.ndarray):
                arrays[f"c{k}"] = c
                consts.append({"t": "nd"})
            elif isinstance(c, ShapeTuple):
                consts.append({"t": "shape", "v": [int(x) for x in c]})
            elif isinstance(c, str):
                consts.append({"t": "str", "v": c})
            elif isinstance(c, bool | int):
                consts.append({"t": "int", "v": int(c)})
            elif isinstance(c, float):
                consts.append({"t": "float", "v": c})
            elif c is None:
                consts.append({"t": "none"})
            else:
                raise ValueError(f"export_library: constant {k} of type {type(c).__name__} "
                                 "cannot be saved")
        kernels, files = {}, {}
        for name, (rec, spec) in self.kernels.items():
            kernels[name] = {"symbol": rec.symbol, "spec": spec}
            files[f"kernels/{name}.ll"] = rec.ir
        meta = {"format": FORMAT, "version": VERSION, "constants": consts,
                "func_table": [list(e) for e in self.func_table], "kernels": kernels,
                "functions": [{"name": f.name, "params": f.params, "param_sinfo": f.param_sinfo,
                               "num_regs": f.num_regs, "code": [list(i) for i in f.code]}
                              for f in self.functions.values()]}
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        tmp = f"{path}.{os.getpid()}.tmp"
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(META, json.dumps(meta))
            z.writestr("constants.npz", buf.getvalue())
            for fname, text in files.items():
                z.writestr(fname, text)
        os.replace(tmp, path)

    def __repr__(self):
        return f"Executable(functions={list(self.functions)}, kernels={len(self.kernels)})"


def load_executable(path: str, z: zipfile.ZipFile) -> Executable:
    """Read an archive written by ``Executable.export_library`` (opened as ``z``)."""
    from .. import blas
    from ..module import _compile_ir

    try:
        meta = json.loads(z.read(META))
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise ValueError(f"load_module: {path!r} has format {meta.get('format')!r} version "
                             f"{meta.get('version')!r}; expected {FORMAT!r} version {VERSION}")
        npz = np.load(io.BytesIO(z.read("constants.npz")), allow_pickle=False)
        consts = []
        for k, c in enumerate(meta["constants"]):
            t = c["t"]
            consts.append(npz[f"c{k}"] if t == "nd" else ShapeTuple(c["v"]) if t == "shape"
                          else None if t == "none" else c["v"])
        texts = {n: z.read(n).decode() for n in z.namelist() if n.startswith("kernels/")}
        functions = [VMFunction(f["name"], f["params"], f["num_regs"], f["code"],
                                f.get("param_sinfo")) for f in meta["functions"]]
    except (KeyError, json.JSONDecodeError, UnicodeDecodeError, zipfile.BadZipFile) as err:
        raise ValueError(f"load_module: {path!r} is damaged: {err}") from err
    if meta["kernels"]:
        blas.available()  # kernels may call the BLAS shim
    kernels = {}
    for name, info in meta["kernels"].items():
        ir = texts.get(f"kernels/{name}.ll")
        where = f"load_module({path!r}) kernel {name!r}"
        if ir is None:
            raise ValueError(f"{where}: its LLVM IR is missing")
        compiled = _compile_ir(ir, info["symbol"], where)
        rec = Kernel(name, "native", symbol=info["symbol"], address=compiled.address, ir=ir,
                     compiled=compiled)
        kernels[name] = (rec, info["spec"])
    return Executable(functions, meta["func_table"], consts, kernels)


def load_relax_executable(path: str) -> Executable | None:
    """The executable in archive ``path``, or None when it is not a Relax VM executable."""
    try:
        with zipfile.ZipFile(path) as z:
            if META not in z.namelist():
                return None
            return load_executable(path, z)
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        raise ValueError(f"load_module: {path!r} is damaged: {type(err).__name__}: "
                         f"{err}") from None
