"""Fuzzing of exported library files: "a ValueError naming the file, or correct outputs".

A small model (native kernels and a numpy-fallback kernel) is exported once; each case damages
one member of the archive (bytes flipped, truncated, replaced by garbage, a JSON field given
another value or type, a member removed or added, deep JSON) and loads and runs the result in a
worker subprocess, so a crash or a hang is observed instead of suffered. Allowed outcomes: the
library loads and gives the original outputs, or ``load_module`` / the executor raises a
``ValueError`` whose message names the file.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field

import numpy as np

_RANDOM_VALUES = [None, True, -1, 0, 1, 7, 2**31, 2**63, -(2**63), 1.5, float("inf"), "", "x",
                  "native", "fallback", [], [1, 2], {}, {"a": 1}, [[[]]]]


@dataclass
class LibraryFuzzReport:
    total: int = 0
    loaded_ok: int = 0
    value_errors: int = 0
    failures: list = field(default_factory=list)

    def __str__(self):
        return (f"{self.total} damaged libraries: {self.loaded_ok} loaded with correct outputs, "
                f"{self.value_errors} ValueError naming the file, {len(self.failures)} failures")


def build_reference(workdir: str) -> tuple[str, np.ndarray, np.ndarray]:
    """Export the reference library; returns (path, input, expected output)."""
    import minitvm as tvm
    from minitvm import relay

    x = relay.var("x", shape=(2, 8), dtype="float32")
    w = relay.const(np.linspace(-1, 1, 32, dtype="float32").reshape(4, 8))
    body = relay.nn.relu(relay.nn.dense(x, w))
    body = relay.Tuple([relay.nn.softmax(body), relay.argmax(body, axis=1)])
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    path = os.path.join(workdir, "reference.so")
    lib.export_library(path)
    xv = np.linspace(-2, 2, 16, dtype="float32").reshape(2, 8)
    out = relay.create_executor("debug", mod=mod).evaluate()(xv)
    return path, xv, np.concatenate([out[0].numpy().ravel(), out[1].numpy().ravel()])


def _members(path: str) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def _edit_json(data: bytes, rng: random.Random) -> bytes:
    try:
        obj = json.loads(data)
    except ValueError:
        return data[: len(data) // 2]
    # collect (container, key) slots
    slots, stack = [], [obj]
    while stack:
        o = stack.pop()
        items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) \
            else ()
        for k, v in items:
            slots.append((o, k))
            if isinstance(v, dict | list):
                stack.append(v)
    if not slots:
        return b"[]"
    o, k = rng.choice(slots)
    if rng.random() < 0.2 and isinstance(o, dict):
        del o[k]
    elif isinstance(o[k], int) and not isinstance(o[k], bool) and rng.random() < 0.5:
        o[k] = o[k] + rng.choice([-1, 1, 8, -8, 1 << 20, -(1 << 40)])  # one edited integer
    else:
        o[k] = rng.choice(_RANDOM_VALUES)
    return json.dumps(obj).encode()


def damage_bytes(data: bytes, kind: int, rng: random.Random) -> bytes | None:
    """The byte-level damages both archive fuzzers use (kind 0: bits flipped, 1: truncated,
    2: replaced by garbage); None for another kind (or kind 0 of an empty member)."""
    if kind == 0 and data:
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        return bytes(b)
    if kind == 1:
        return data[: rng.randrange(len(data) + 1)]
    if kind == 2:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))
    return None


def damage(members: dict[str, bytes], rng: random.Random) -> dict[str, bytes]:
    """One random damage to a copy of ``members``."""
    out = dict(members)
    name = rng.choice(sorted(out))
    data = out[name]
    kind = rng.randrange(8)
    damaged = damage_bytes(data, kind, rng)
    if damaged is not None:
        out[name] = damaged
    elif kind == 3 and name.endswith(".json"):
        out[name] = _edit_json(data, rng)
    elif kind == 4:
        del out[name]
    elif kind == 5:
        out["kernels/extra.ll"] = b"define void @x() { ret void }"
    elif kind == 6 and name.endswith(".json"):
        out[name] = b"[" * 100000 + b"]" * 100000
    else:  # a JSON edit that also fixes up nothing else: the most "plausible" damage
        meta = "minitvm_lib.json" if "minitvm_lib.json" in out else name
        out[meta] = _edit_json(out[meta], rng)
    return out


def outcome(path: str, run) -> dict:
    """Classify one load-and-run of the damaged file ``path``: ``run()`` says whether the
    outputs were right; a ValueError must name the file; anything else is what fuzzing seeks."""
    try:
        ok = run()
        return {"outcome": "ok" if ok else "wrong", "detail": "" if ok else "wrong outputs"}
    except ValueError as err:
        named = os.path.basename(path) in str(err)
        return {"outcome": "value_error" if named else "unnamed", "detail": str(err)[:300]}
    except Exception as err:  # noqa: BLE001 - what the fuzzer looks for
        return {"outcome": "exception", "detail": f"{type(err).__name__}: {str(err)[:300]}"}


def serve(check) -> None:
    """Subprocess loop: read ``path<TAB>expected`` lines, answer one JSON outcome line each
    (``check(path, expected)`` loads, runs and compares)."""
    for line in sys.stdin:
        path, expected = line.rstrip("\n").split("\t")
        res = outcome(path, lambda p=path, e=expected: check(p, e))
        sys.stdout.write(json.dumps(res) + "\n")
        sys.stdout.flush()


def _check_graph_library(path: str, expected: str) -> bool:
    import minitvm as tvm
    from minitvm.contrib import graph_executor

    want = np.load(expected)
    xv = np.linspace(-2, 2, 16, dtype="float32").reshape(2, 8)
    m = graph_executor.GraphModule(tvm.runtime.load_module(path)["default"](tvm.cpu()))
    m.set_input("x", xv)
    m.run()
    got = np.concatenate([m.get_output(k).numpy().ravel().astype("float64")
                          for k in range(m.get_num_outputs())])
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=1e-5, atol=1e-6))


def _worker() -> None:
    serve(_check_graph_library)


class _Worker:
    """A subprocess running ``module._worker()``, asked one damaged file at a time."""

    def __init__(self, module: str = __name__):
        self.module = module
        self.proc = subprocess.Popen(
            [sys.executable, "-c", f"from {module} import _worker; _worker()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, path: str, expected: str, timeout: float) -> dict:
        import select

        self.proc.stdin.write(f"{path}\t{expected}\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.proc.kill()
            self.proc.wait()
            return {"outcome": "hang", "detail": f"no answer in {timeout} s"}
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            return {"outcome": "crash", "detail": f"the process died (exit status {code})"}
        return json.loads(line)

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def run_cases(n: int, report, members: dict, damage_fn, rng, exp_path: str, workdir: str,
              prefix: str, module: str, timeout: float, keep: int):
    """Write ``n`` damaged archives (``damage_fn(members, rng)``), have a worker subprocess of
    ``module`` load and run each, and count the outcomes in ``report``; a hang or a crash
    restarts the worker."""
    worker = _Worker(module)
    try:
        for i in range(n):
            path = os.path.join(workdir, f"{prefix}{i % 8}.so")
            with zipfile.ZipFile(path, "w") as z:
                for name, data in damage_fn(members, rng).items():
                    z.writestr(name, data)
            res = worker.ask(path, exp_path, timeout)
            report.total += 1
            if res["outcome"] == "ok":
                report.loaded_ok += 1
            elif res["outcome"] == "value_error":
                report.value_errors += 1
            else:
                if len(report.failures) < keep:
                    report.failures.append((i, res["outcome"], res["detail"]))
                if res["outcome"] in ("hang", "crash"):
                    worker.close()
                    worker = _Worker(module)
    finally:
        worker.close()
    return report


def fuzz_library(n: int, workdir: str, seed: int = 0, timeout: float = 60.0,
                 keep: int = 20) -> LibraryFuzzReport:
    """Load and run ``n`` damaged copies of a reference library (in a worker subprocess)."""
    rng = random.Random(seed)
    ref, _, expected = build_reference(workdir)
    exp_path = os.path.join(workdir, "expected.npy")
    np.save(exp_path, expected.astype("float64"))
    members = _members(ref)
    return run_cases(n, LibraryFuzzReport(), members, damage, rng, exp_path, workdir, "case",
                     __name__, timeout, keep)
