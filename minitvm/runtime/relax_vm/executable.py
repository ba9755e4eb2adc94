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

from ..module import (
    Kernel,
    Module,
    _meta_digest,
    _sha256,
    check_member_digests,
    pipeline_record,
    read_meta,
    recorded_pipeline,
)
from ..ndarray import aligned
from .builtins import ShapeTuple
from .kernel import NativeKernel
from .numpy_packed import numpy_reason

FORMAT = "minitvm-relax-vm"
VERSION = 2  # 2: members and the metadata carry SHA-256 digests
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


def external_function(modules, symbol: str):
    """The packed function ``symbol`` from the first of ``modules`` (runtime modules with
    ``get_function``, or dicts symbol -> callable) that provides it, or None."""
    for m in modules:
        if isinstance(m, dict):
            fn = m.get(symbol)
        else:
            try:
                fn = m.get_function(symbol)
            except (AttributeError, KeyError):
                fn = None
        if fn is not None:
            return fn
    return None


class Executable(Module):
    """A compiled Relax program (``relax.build``'s result; ``tvm.relax.Executable``)."""

    type_key = "relax.Executable"

    def __init__(self, functions, func_table, constants, kernels, external_mods=()):
        self.functions: dict[str, VMFunction] = {f.name: f for f in functions}
        self.func_table: list[tuple[str, str]] = [tuple(e) for e in func_table]
        # tensors 64-byte aligned, as loaded ones are: relax.build's (a prepacked weight from
        # np.ascontiguousarray, an importer's arrays) start wherever numpy put them, 16-byte
        # aligned, and a kernel's 64-byte weight loads then straddle two cache lines
        self.constants: list = [aligned(c) if isinstance(c, np.ndarray) and not
                                c.dtype.hasobject else c for c in constants]
        # kernel name -> (Kernel record, spec)
        self.kernels: dict[str, tuple[Kernel, dict]] = dict(kernels)
        self._native: dict[str, NativeKernel] = {}
        # modules of external codegens (relax.transform.RunCodegen): their packed functions
        # are found before the global registry's
        self.external_mods: list = list(external_mods)

    def external_function(self, symbol: str):
        """The packed function ``symbol`` of the external modules, or None."""
        return external_function(self.external_mods, symbol)

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
        if name in ("stats", "as_text"):  # TVM's executable module functions
            return getattr(self, name)
        raise AttributeError(f"executable has no kernel {name!r}; run Relax functions with "
                             "relax.VirtualMachine(ex, tvm.cpu())")

    def numpy_calls(self) -> dict[str, str]:
        """The packed functions this program calls that compute in numpy rather than native
        code (``numpy_packed.mark_numpy_packed``): name -> reason; empty when every
        computation is a native kernel (or an external module's function)."""
        out = {}
        for kind, name in self.func_table:
            why = numpy_reason(name) if kind == "packed" else None
            if why is not None and self.external_function(name) is None:
                out[name] = why
        return out

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
        if self.external_mods:
            raise ValueError("export_library: this executable calls functions of external "
                             "codegen modules (relax.transform.RunCodegen), which live in this "
                             "process only and cannot be written to a file")
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
            kernels[name] = {"symbol": rec.symbol, "spec": spec, **pipeline_record(rec)}
            files[f"kernels/{name}.ll"] = rec.ir
        meta = {"format": FORMAT, "version": VERSION, "constants": consts,
                "func_table": [list(e) for e in self.func_table], "kernels": kernels,
                "functions": [{"name": f.name, "params": f.params, "param_sinfo": f.param_sinfo,
                               "num_regs": f.num_regs, "code": [list(i) for i in f.code]}
                              for f in self.functions.values()]}
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        members = {"constants.npz": buf.getvalue()}
        members.update((f, t.encode()) for f, t in files.items())
        # digests: a damaged or edited file is refused on load instead of running code whose
        # sizes, registers or kernel specs no longer match (memory safety)
        meta["sha256"] = {f: _sha256(b) for f, b in members.items()}
        meta["meta_sha256"] = _meta_digest(meta)
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr(META, json.dumps(meta))
                for fname, data in members.items():
                    z.writestr(fname, data)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise

    def __repr__(self):
        return f"Executable(functions={list(self.functions)}, kernels={len(self.kernels)})"


def _read_archive(path: str, z: zipfile.ZipFile) -> tuple[dict, dict[str, bytes]]:
    """The checked metadata and every member of archive ``z``, digest-verified."""
    raw = {}
    for n in z.namelist():
        try:
            raw[n] = z.read(n)
        except Exception as err:  # noqa: BLE001 - CRC, zlib, truncation
            raise ValueError(f"load_module: {path!r} member {n!r} is damaged: "
                             f"{type(err).__name__}: {err}") from None
    where = f"load_module: {path!r} member {META!r}"
    meta = read_meta(raw, path, META, FORMAT, VERSION)
    digests = meta.get("sha256")
    if not isinstance(digests, dict) or meta.get("meta_sha256") != _meta_digest(meta):
        raise ValueError(f"{where} was modified or damaged (its SHA-256 differs from the one "
                         "recorded at export)")
    check_member_digests(raw, digests, path, META)
    if "constants.npz" not in raw:
        raise ValueError(f"load_module: {path!r} member 'constants.npz' is missing")
    return meta, raw


def _is_index(v, bound: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < bound


def _valid_arg(a, nregs: int, nfuncs: int, nconsts: int) -> bool:
    if not isinstance(a, list | tuple) or len(a) != 2 or a[0] not in range(5):
        return False
    kind, v = a
    if kind == ARG_REG:
        return _is_index(v, nregs)
    if kind == ARG_CONST:
        return _is_index(v, nconsts)
    if kind == ARG_FUNC:
        return _is_index(v, nfuncs)
    if kind == ARG_IMM:
        return isinstance(v, int) and not isinstance(v, bool)
    return True


def _valid_instruction(ins, pc: int, f: VMFunction, nfuncs: int, nconsts: int) -> bool:
    if not ins or ins[0] not in _OPNAMES:
        return False
    op, nregs = ins[0], f.num_regs
    if op == CALL:
        return (len(ins) == 4 and _is_index(ins[1], nregs) and _is_index(ins[2], nfuncs)
                and isinstance(ins[3], list | tuple)
                and all(_valid_arg(a, nregs, nfuncs, nconsts) for a in ins[3]))
    if op in (RET, KILL):
        return len(ins) == 2 and _is_index(ins[1], nregs)
    if op == MOVE:
        return len(ins) == 3 and _is_index(ins[1], nregs) and \
            _valid_arg(ins[2], nregs, nfuncs, nconsts)
    off = ins[-1]  # GOTO off / IF cond off
    if len(ins) != (2 if op == GOTO else 3) or not isinstance(off, int) \
            or not 0 <= pc + off <= len(f.code):
        return False
    return op == GOTO or _is_index(ins[1], nregs)


def _check_code(f: VMFunction, nfuncs: int, nconsts: int, where: str) -> None:
    """Every instruction of ``f`` well formed: known opcode, registers below ``num_regs``,
    function table / constant indices in range, jumps inside the function."""
    for pc, ins in enumerate(f.code):
        if not _valid_instruction(ins, pc, f, nfuncs, nconsts):
            raise ValueError(f"{where}: function {f.name!r} instruction {pc} {list(ins)!r} "
                             "is malformed")


def load_executable(path: str, z: zipfile.ZipFile) -> Executable:
    """Read an archive written by ``Executable.export_library`` (opened as ``z``): every
    member is digest-verified and every field checked, so a damaged file is a ValueError
    naming the file and the member, never a crash."""
    from .. import blas
    from ..module import _compile_ir

    meta, raw = _read_archive(path, z)
    where = f"load_module: {path!r} member {META!r}"
    try:
        try:
            npz = np.load(io.BytesIO(raw["constants.npz"]), allow_pickle=False)
            arrays = {k: npz[k] for k in npz.files}
        except Exception as err:  # noqa: BLE001 - numpy's messages mislead ("pickled data")
            raise ValueError(f"load_module: {path!r} member 'constants.npz' is damaged: "
                             f"{type(err).__name__}") from None
        consts = []
        for k, c in enumerate(meta["constants"]):
            t = c["t"]
            if t == "nd":
                if f"c{k}" not in arrays:
                    raise ValueError(f"load_module: {path!r} member 'constants.npz' lacks c{k}")
                consts.append(aligned(arrays[f"c{k}"]))  # (read in at any address)
            elif t == "shape":
                consts.append(ShapeTuple([int(x) for x in c["v"]]))
            elif t == "none":
                consts.append(None)
            elif t in ("str", "int", "float") and isinstance(c["v"], {"str": str, "int": int,
                                                                       "float": float}[t]):
                consts.append(c["v"])
            else:
                raise ValueError(f"{where}: constant {k} has an unknown kind {t!r}")
        texts = {n: raw[n].decode() for n in raw if n.startswith("kernels/")}
        table = [tuple(e) for e in meta["func_table"]]
        if not all(len(e) == 2 and all(isinstance(x, str) for x in e) for e in table):
            raise ValueError(f"{where}: field 'func_table' is malformed")
        functions = []
        for f in meta["functions"]:
            vf = VMFunction(str(f["name"]), [str(p) for p in f["params"]], f["num_regs"],
                            f["code"], f.get("param_sinfo"))
            if vf.num_regs < 0 or vf.num_regs > 1 << 24:
                raise ValueError(f"{where}: function {vf.name!r} has {vf.num_regs} registers")
            _check_code(vf, len(table), len(consts), where)
            functions.append(vf)
        specs = meta["kernels"]
        if not isinstance(specs, dict):
            raise ValueError(f"{where}: field 'kernels' must be an object")
    except ValueError:
        raise
    except (KeyError, TypeError, AttributeError, IndexError, UnicodeDecodeError,
            OverflowError) as err:
        raise ValueError(f"{where} is damaged: {type(err).__name__}: {err}") from None
    if specs:
        blas.available()  # kernels may call the BLAS shim
    kernels = {}
    for name, info in specs.items():
        ir = texts.get(f"kernels/{name}.ll")
        kwhere = f"load_module({path!r}) member 'kernels/{name}.ll'"
        if ir is None:
            raise ValueError(f"{kwhere}: the kernel's LLVM IR is missing")
        if not isinstance(info, dict) or not isinstance(info.get("spec"), dict):
            raise ValueError(f"{where}: kernel {name!r} has no spec")
        compiled = _compile_ir(ir, info.get("symbol"), kwhere, recorded_pipeline(info, where))
        rec = Kernel(name, "native", symbol=info["symbol"], address=compiled.address, ir=ir,
                     compiled=compiled)
        kernels[name] = (rec, info["spec"])
    return Executable(functions, table, consts, kernels)


def load_relax_executable(path: str) -> Executable | None:
    """The executable in archive ``path``, or None when it is not a Relax VM executable."""
    try:
        with zipfile.ZipFile(path) as z:
            if META not in z.namelist():
                return None
            return load_executable(path, z)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, NotImplementedError,
            RuntimeError) as err:
        raise ValueError(f"load_module: {path!r} is damaged: {type(err).__name__}: "
                         f"{err}") from None
