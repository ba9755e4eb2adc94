"""Pass-manager overhead: a Sequential of 100 trivial passes over a 10,000-node module.

Overhead = time of ``Sequential(passes)(mod)`` minus the passes' own work (calling their
functions directly), with no instruments installed. Budget: under 50 ms. Also checks that
nothing is printed or hashed per pass on that path.

Run: ``python benchmarks/bench_pass_overhead.py``
"""

from __future__ import annotations

import time

import minitvm as tvm
from minitvm import relay
from minitvm.ir import structural as structural_mod


def chain_module(n: int = 10_000):
    x = relay.var("x", shape=(4,), dtype="float32")
    y = x
    for _ in range(n):
        y = relay.add(y, x)
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], y)))


def best_of(fn, repeat: int = 7) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def module_passes(k: int):
    def identity(mod, ctx):
        return mod

    return [tvm.transform.module_pass(identity, opt_level=0, name=f"Trivial{i}")
            for i in range(k)], identity


def function_passes(k: int):
    def identity(func, mod, ctx):
        return func

    return [relay.transform.function_pass(identity, opt_level=0, name=f"TrivialFn{i}")
            for i in range(k)], identity


def measure(kind: str, mod, k: int = 100) -> tuple[float, float]:
    passes, func = module_passes(k) if kind == "module" else function_passes(k)
    seq = tvm.transform.Sequential(passes)
    ctx = tvm.transform.PassContext.current()
    main_fn = mod["main"]
    if kind == "module":
        def own_work():
            for _ in range(k):
                func(mod, ctx)
    else:
        def own_work():
            for _ in range(k):
                func(main_fn, mod, ctx)
    total = best_of(lambda: seq(mod))
    own = best_of(own_work)
    return total, own


def count_debug_work(mod) -> dict:
    """Calls to the printer and to structural hashing while a 100-pass Sequential runs."""
    from minitvm.ir.module import IRModule

    counts = {"astext": 0, "str": 0, "structural_hash": 0}
    orig = (IRModule.astext, IRModule.__str__, structural_mod.structural_hash)

    def astext(self, *a, **k):
        counts["astext"] += 1
        return orig[0](self, *a, **k)

    def to_str(self):
        counts["str"] += 1
        return orig[1](self)

    def shash(*a, **k):
        counts["structural_hash"] += 1
        return orig[2](*a, **k)

    IRModule.astext, IRModule.__str__, structural_mod.structural_hash = astext, to_str, shash
    try:
        passes, _ = module_passes(100)
        fpasses, _ = function_passes(100)
        tvm.transform.Sequential(passes + fpasses)(mod)
    finally:
        IRModule.astext, IRModule.__str__, structural_mod.structural_hash = orig
    return counts


def main() -> int:
    mod = chain_module()
    ok = True
    for kind in ("module", "function"):
        total, own = measure(kind, mod)
        overhead_ms = (total - own) * 1e3
        ok &= overhead_ms < 50
        print(f"{kind:8s} passes: 100 passes over a 10,000-node module: total "
              f"{total * 1e3:.2f} ms, passes' own work {own * 1e3:.2f} ms, overhead "
              f"{overhead_ms:.2f} ms ({overhead_ms * 10:.0f} us/pass)  budget 50 ms")
    counts = count_debug_work(mod)
    print(f"per-pass debug work with no instruments: {counts}")
    ok &= not any(counts.values())
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
