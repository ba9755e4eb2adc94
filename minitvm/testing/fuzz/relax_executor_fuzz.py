"""Abuse of the Relax VM's call interface: random calls with wrong, odd and hostile arguments.

A small program ``main(x: (n, 4) f32, y: (n, 4) f32, z: (3,) i32)`` is built once (one symbolic
``n`` shared by two parameters). Each call replaces one or two arguments by a bad value — wrong
rank, dtype or shape, an ``n`` contradicting the one another parameter bound, a scalar, None, a
string, a list, a tuple, bytes, an object — or drops/adds an argument. Allowed outcomes: a
``ValueError``/``TypeError`` whose message names the offending parameter (or, for a wrong count,
the function), or — on good arguments — the numpy result. Anything else is a failure.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

__all__ = ["fuzz_relax_executor", "RelaxExecutorFuzzReport"]


@dataclass
class RelaxExecutorFuzzReport:
    total: int = 0
    ok: int = 0
    clear_errors: int = 0
    failures: list = field(default_factory=list)

    def __str__(self):
        return (f"{self.total} VM calls: {self.ok} correct results, {self.clear_errors} clear "
                f"errors naming the parameter, {len(self.failures)} failures")


def _module():
    from ...relax import BlockBuilder, Var
    from ...relax import op as R
    from ...relax.struct_info import TensorStructInfo
    from ...tir import Var as TirVar

    n = TirVar("n", "int64")
    x = Var("x", TensorStructInfo([n, 4], "float32"))
    y = Var("y", TensorStructInfo([n, 4], "float32"))
    z = Var("z", TensorStructInfo([3], "int32"))
    bb = BlockBuilder()
    with bb.function("main", [x, y, z]):
        with bb.dataflow():
            s = bb.emit(R.add(R.multiply(x, y), R.sum(R.astype(z, "float32"))))
            gv = bb.emit_output(R.nn.softmax(s, axis=1))
        bb.emit_func_output(gv)
    return bb.get()


def _reference(x, y, z):
    s = x * y + np.float32(z.astype("float32").sum())
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def fuzz_relax_executor(n: int, seed: int = 0) -> RelaxExecutorFuzzReport:
    """``n`` calls of the VM with random good and bad arguments."""
    import minitvm as tvm
    from minitvm import relax

    vm = relax.VirtualMachine(relax.build(_module(), target="llvm"), tvm.cpu())
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    names = ["x", "y", "z"]

    def good(rows):
        return [nrng.standard_normal((rows, 4)).astype("float32"),
                nrng.standard_normal((rows, 4)).astype("float32"),
                nrng.integers(-3, 3, size=3).astype("int32")]

    def bad_value(k, rows):
        shape = (rows, 4) if k < 2 else (3,)
        dtype = "float32" if k < 2 else "int32"
        return rng.choice([
            None, "abc", 1.5, 7, b"\x00", [1, 2], (1, 2), {}, object(), np.float32(1.0),
            np.zeros(shape + (1,), dtype), np.zeros(shape[:-1], dtype),
            np.zeros(shape, "float64"), np.zeros(shape, "int64"), np.zeros(shape, "bool"),
            np.zeros(tuple(d + 1 for d in shape), dtype),
            np.zeros((rows + 1, 4), dtype) if k < 2 else np.zeros((4,), dtype),
            np.zeros((rows, 5), dtype) if k < 2 else np.zeros((2,), dtype),
            np.zeros((0, 4), dtype) if k < 2 else np.zeros((0,), dtype),
            np.zeros(shape, dtype)[..., ::2] if shape[-1] > 1 else np.zeros(shape, dtype),
            tvm.nd.array(np.zeros(shape, "float16")), np.array(1, dtype)])

    report = RelaxExecutorFuzzReport()
    for _ in range(n):
        rows = rng.choice([1, 2, 5])
        args = good(rows)
        bad: set = set()
        mode = rng.random()
        if mode < 0.15:
            pass  # a good call
        elif mode < 0.25:
            args = args[:rng.randrange(3)] if rng.random() < 0.5 else args + [args[0]]
        else:
            for k in rng.sample(range(3), rng.randint(1, 2)):
                args[k] = bad_value(k, rows)
                bad.add(names[k])
        report.total += 1
        try:
            out = vm["main"](*args)
        except (ValueError, TypeError) as err:
            msg = str(err)
            if len(args) != 3:
                ok = "main" in msg and "argument" in msg
            else:
                ok = any(f"param={b}" in msg or f"'{b}'" in msg or f" {b}:" in msg
                         for b in bad) if bad else False
                # a bad x binds n; the good y then contradicts it: naming y is right too
                ok |= bool(bad) and "bound earlier" in msg and "param=" in msg
            if ok:
                report.clear_errors += 1
            else:
                report.failures.append((sorted(bad), f"{type(err).__name__}: {msg[:300]}"))
            continue
        except Exception as err:  # noqa: BLE001 - what the fuzzer looks for
            report.failures.append((sorted(bad), f"{type(err).__name__}: {str(err)[:300]}"))
            continue
        if len(args) != 3:
            report.failures.append(("count", f"{len(args)} arguments accepted"))
            continue
        try:
            xs = [np.asarray(a.numpy() if hasattr(a, "numpy") else a) for a in args]
            want = _reference(*xs) if not bad else None
        except Exception:  # noqa: BLE001
            want = None
        got = out.numpy()
        if want is not None and got.shape == want.shape and np.allclose(got, want, rtol=1e-5,
                                                                        atol=1e-6):
            report.ok += 1
        elif bad and _equivalent(args, names, bad):
            report.ok += 1  # a value that converts exactly (a numpy scalar of rank 0...)
        else:
            report.failures.append((sorted(bad), f"a result for bad arguments {sorted(bad)}: "
                                    f"{[type(a).__name__ for a in args]}"))
    return report


def _equivalent(args, names, bad) -> bool:
    """Whether the "bad" arguments were in fact acceptable (same shape and dtype as
    annotated, e.g. a strided view)."""
    want = {"x": ((None, 4), "float32"), "y": ((None, 4), "float32"), "z": ((3,), "int32")}
    rows = None
    for a, name in zip(args, names, strict=True):
        if not isinstance(a, np.ndarray):
            return False
        shape, dtype = want[name]
        if a.ndim != len(shape) or str(a.dtype) != dtype:
            return False
        if shape[0] is None:
            if rows is not None and a.shape[0] != rows:
                return False
            rows = a.shape[0]
            if a.shape[1] != 4:
                return False
        elif a.shape != shape:
            return False
    return True
