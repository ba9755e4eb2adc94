"""Fuzzing of exported Relax VM executables: "a ValueError naming the file, or correct outputs".

A small Relax program (native kernels, a constant, a symbolic dimension, an If) is built and
exported once; each case damages one member of the archive (bytes flipped, truncated, replaced
by garbage, removed, added; one JSON field of ``minitvm_relax_vm.json`` given another value or
type — an instruction's register, a kernel's dimension, a constant's shape...) and loads and
runs the result in a worker subprocess, so a crash or a hang is observed instead of suffered.
Allowed outcomes: the executable loads and gives the original outputs, or ``load_module`` /
the VM raises a ``ValueError`` whose message names the file and the member.
"""

from __future__ import annotations

import os
import random
import zipfile
from dataclasses import dataclass, field

import numpy as np

from .library_fuzz import _edit_json, damage_bytes, run_cases, serve

__all__ = ["fuzz_relax_library", "build_relax_reference", "damage_relax"]

META = "minitvm_relax_vm.json"


@dataclass
class RelaxLibraryFuzzReport:
    total: int = 0
    loaded_ok: int = 0
    value_errors: int = 0
    failures: list = field(default_factory=list)

    def __str__(self):
        return (f"{self.total} damaged Relax executables: {self.loaded_ok} loaded with correct "
                f"outputs, {self.value_errors} ValueError naming the file and member, "
                f"{len(self.failures)} failures")


def _inputs(rows: int):
    x = np.linspace(-2, 2, rows * 8, dtype="float32").reshape(rows, 8)
    return x, np.array(rows % 2 == 0)


def _module():
    from ...relax import BlockBuilder, Var, const
    from ...relax import op as R
    from ...relax.expr import If
    from ...relax.struct_info import TensorStructInfo
    from ...tir import Var as TirVar

    n = TirVar("n", "int64")
    x = Var("x", TensorStructInfo([n, 8], "float32"))
    c = Var("c", TensorStructInfo([], "bool"))
    w = const(np.linspace(-1, 1, 32, dtype="float32").reshape(8, 4))
    bb = BlockBuilder()
    with bb.function("main", [x, c]):
        with bb.dataflow():
            h = bb.emit(R.nn.relu(R.matmul(x, w)))
            s = bb.emit(R.nn.softmax(h, axis=1))
            a = bb.emit(R.argmax(h, axis=1))
            s, a = bb.emit_output(s), bb.emit_output(a)
        y = bb.emit(If(c, R.exp(s), R.negative(s)))
        bb.emit_func_output((y, a))
    return bb.get()


def build_relax_reference(workdir: str) -> tuple[str, list]:
    """Export the reference executable; returns (path, expected outputs for rows 3 and 4)."""
    import minitvm as tvm
    from minitvm import relax

    ex = relax.build(_module(), target="llvm")
    path = os.path.join(workdir, "reference_relax.so")
    ex.export_library(path)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    expected = []
    for rows in (3, 4):
        out = vm["main"](*_inputs(rows))
        expected.append(np.concatenate([o.numpy().ravel().astype("float64") for o in out]))
    return path, expected


def damage_relax(members: dict[str, bytes], rng: random.Random) -> dict[str, bytes]:
    """One random damage to a copy of ``members`` (the JSON metadata most often)."""
    out = dict(members)
    name = rng.choice(sorted(out)) if rng.random() < 0.5 else META
    if name not in out:
        name = rng.choice(sorted(out))
    data = out[name]
    kind = rng.randrange(8)
    damaged = damage_bytes(data, kind, rng)
    if damaged is not None:
        out[name] = damaged
    elif kind == 3:
        del out[name]
    elif kind == 4:
        out["kernels/extra.ll"] = b"define void @x() { ret void }"
    elif kind == 5 and name.endswith(".json"):
        out[name] = b"[" * 100000 + b"]" * 100000
    else:  # one JSON field changed: the most plausible damage
        for _ in range(rng.randint(1, 2)):
            out[META] = _edit_json(out[META], rng) if META in out else b"{}"
    return out


def _check_relax_executable(path: str, expected_path: str) -> bool:
    import minitvm as tvm
    from minitvm import relax

    expected = np.load(expected_path)
    vm = relax.VirtualMachine(tvm.runtime.load_module(path), tvm.cpu())
    ok = True
    for k, rows in enumerate((3, 4)):
        out = vm["main"](*_inputs(rows))
        got = np.concatenate([np.asarray(o.numpy()).ravel().astype("float64") for o in out])
        want = expected[f"e{k}"]
        ok &= got.shape == want.shape and bool(np.allclose(got, want, rtol=1e-5, atol=1e-6))
    return ok


def _worker() -> None:
    serve(_check_relax_executable)


def fuzz_relax_library(n: int, workdir: str, seed: int = 0, timeout: float = 60.0,
                       keep: int = 20) -> RelaxLibraryFuzzReport:
    """Load and run ``n`` damaged copies of a reference Relax executable (in a subprocess)."""
    rng = random.Random(seed)
    ref, expected = build_relax_reference(workdir)
    exp_path = os.path.join(workdir, "expected_relax.npz")
    np.savez(exp_path, e0=expected[0], e1=expected[1])
    with zipfile.ZipFile(ref) as z:
        members = {m: z.read(m) for m in z.namelist()}
    return run_cases(n, RelaxLibraryFuzzReport(), members, damage_relax, rng, exp_path, workdir,
                     "relax_case", __name__, timeout, keep)
