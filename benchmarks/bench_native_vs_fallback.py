"""A/B of an operator's native compute against its numpy fallback (the same build with the op's
FTECompute taken away), in one process, interleaved rounds, thread CPU time at one thread.

    python benchmarks/bench_native_vs_fallback.py [--scatter-mode add|update]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

os.environ.setdefault("TVM_NUM_THREADS", "1")
os.environ["MINITVM_STRICT_NATIVE"] = "0"

import numpy as np  # noqa: E402

import minitvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.backend import kernel_cache  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.ir.op import Op  # noqa: E402


def _v(name, a):
    return relay.var(name, shape=a.shape, dtype=str(a.dtype))


def _cases(scatter_mode: str) -> dict:
    r = np.random.default_rng(0)
    x = r.standard_normal((1, 64, 64, 32)).astype("float32")
    b = r.standard_normal((4, 33, 33, 32)).astype("float32")
    oh = r.integers(0, 1000, (64, 16)).astype("int32")
    d = r.standard_normal((256, 64)).astype("float32")
    si = r.integers(0, 256, (1, 128)).astype("int64")
    su = r.standard_normal((128, 64)).astype("float32")
    lengths = r.integers(0, 128, (32,)).astype("int32")
    sm = r.standard_normal((128, 32, 64)).astype("float32")
    pa = r.integers(-9, 10, (256, 256)).astype("int32")
    pb = r.integers(0, 8, (256, 256)).astype("int32")
    return {
        "nn.space_to_batch_nd": (lambda: relay.nn.space_to_batch_nd(
            _v("x", x), [2, 2], [[1, 1], [1, 1]]), {"x": x}),
        "nn.batch_to_space_nd": (lambda: relay.nn.batch_to_space_nd(
            _v("b", b), [2, 2], [[1, 1], [1, 1]]), {"b": b}),
        "one_hot": (lambda: relay.one_hot(_v("i", oh), relay.const(1.0), relay.const(0.0), 1000,
                                          -1, "float32"), {"i": oh}),
        "scatter_nd": (lambda: relay.scatter_nd(_v("d", d), _v("i", si), _v("u", su),
                                                scatter_mode), {"d": d, "i": si, "u": su}),
        "sequence_mask": (lambda: relay.sequence_mask(_v("x", sm), _v("l", lengths), 0.0, 0),
                          {"x": sm, "l": lengths}),
        "power": (lambda: relay.power(_v("a", pa), _v("b", pb)), {"a": pa, "b": pb}),
    }


def _build(expr, inputs):
    mod = minitvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(expr), expr))
    with minitvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    kinds = sorted({k.kind for k in lib.get_lib().kernels.values()})
    m = graph_executor.GraphModule(lib["default"](minitvm.cpu()))
    for n, a in inputs.items():
        m.set_input(n, a)
    m.run()
    return m, kinds


def _time(m, reps: int) -> float:
    t0 = time.thread_time()
    for _ in range(reps):
        m.run()
    return (time.thread_time() - t0) / reps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scatter-mode", default="add", choices=["update", "add"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    for name, (make, inputs) in _cases(args.scatter_mode).items():
        op = Op.get(name)
        native, kn = _build(make(), inputs)
        saved = op._attrs.pop("FTECompute")
        kernel_cache.clear_cache()
        try:
            fallback, kf = _build(make(), inputs)
        finally:
            op._attrs["FTECompute"] = saved
        np.testing.assert_allclose(native.get_output(0).numpy(), fallback.get_output(0).numpy(),
                                   rtol=1e-5, atol=1e-5)
        tn, tf = [], []
        for _ in range(args.rounds):
            tn.append(_time(native, args.reps))
            tf.append(_time(fallback, args.reps))
        print(f"{name:22s} native {kn} {min(tn) * 1e6:8.1f} us   fallback {kf} "
              f"{min(tf) * 1e6:8.1f} us   fallback/native {min(tf) / min(tn):6.2f}x")


if __name__ == "__main__":
    main()
