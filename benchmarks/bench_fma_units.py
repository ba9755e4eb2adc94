"""Which built-in table a host's tuning belongs in: its 512-bit FMA throughput per instruction
against 256-bit, and the host CPU LLVM names.

    python benchmarks/bench_fma_units.py

An Intel server core (Skylake-SP to Granite Rapids) has two 512-bit FMA units: 512-bit FMAs
issue as often as 256-bit ones (ratio near 1), the machine ``avx512.jsonl``'s constants were
measured on. A client Ice Lake / Rocket Lake core has one, and a Zen 4 runs them as two 256-bit
halves (ratio near 2): knobs measured there belong in a CPU table (``tune.builtin.CPUS``). A
virtual machine may report another model than it runs on: the ratio is what the core does.
Timing: independent FMA chains in an llvmlite-compiled loop, the thread's CPU time, best of 15.
"""

from __future__ import annotations

import ctypes
import time

import llvmlite.binding as llvm


def _loop_ir(lanes: int, chains: int) -> str:
    """A loop of ``chains`` independent ``<lanes x float>`` FMA chains, ``iters`` times."""
    v = f"<{lanes} x float>"
    phis = [f"  %a{c} = phi {v} [ zeroinitializer, %entry ], [ %n{c}, %loop ]"
            for c in range(chains)]
    fmas = [f"  %n{c} = call {v} @llvm.fma.v{lanes}f32({v} %a{c}, {v} %m, {v} %m)"
            for c in range(chains)]
    sums = [f"  %s0 = fadd {v} %n0, zeroinitializer"] + \
        [f"  %s{c} = fadd {v} %s{c - 1}, %n{c}" for c in range(1, chains)]
    nl = "\n"
    return f"""
declare {v} @llvm.fma.v{lanes}f32({v}, {v}, {v})
define float @fma_loop(i64 %iters, float %x) {{
entry:
  %i0 = insertelement {v} undef, float %x, i32 0
  %m = shufflevector {v} %i0, {v} undef, <{lanes} x i32> zeroinitializer
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
{nl.join(phis)}
{nl.join(fmas)}
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %iters
  br i1 %more, label %loop, label %exit
exit:
{nl.join(sums)}
  %r = extractelement {v} %s{chains - 1}, i32 0
  ret float %r
}}
"""


class _Jit:
    def __init__(self):
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        self.engines = []  # (kept alive: their code backs the function pointers)

    def loop(self, lanes: int, chains: int):
        mod = llvm.parse_assembly(_loop_ir(lanes, chains))
        mod.verify()
        # (an engine owns its target machine: one each)
        tm = llvm.Target.from_default_triple().create_target_machine(
            cpu=self.cpu, features=self.features, opt=2)
        ee = llvm.create_mcjit_compiler(mod, tm)
        ee.finalize_object()
        self.engines.append(ee)
        proto = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_int64, ctypes.c_float)
        return proto(ee.get_function_address("fma_loop"))


def ns_per_fma(jit: _Jit, lanes: int, chains: int, iters: int = 2_000_000,
               reps: int = 15) -> float:
    """Best-of-``reps`` thread CPU nanoseconds per FMA instruction."""
    fn = jit.loop(lanes, chains)
    fn(1000, 0.5)
    best = float("inf")
    for _ in range(reps):
        t0 = time.thread_time_ns()
        fn(iters, 0.5)
        best = min(best, time.thread_time_ns() - t0)
    return best / (iters * chains)


def main() -> int:
    jit = _Jit()
    latency = ns_per_fma(jit, 16, 1)  # one chain: each FMA waits for the last (4 cycles on Intel)
    print(f"host CPU (LLVM): {jit.cpu}; one dependent 512-bit FMA chain {latency:.3f} ns/FMA")
    print(f"{'chains':>6s}{'256-bit ns':>12s}{'512-bit ns':>12s}{'512/256':>9s}"
          f"{'FMA/cycle 256':>15s}{'FMA/cycle 512':>15s}")
    for chains in (8, 12, 16):
        a, b = ns_per_fma(jit, 8, chains), ns_per_fma(jit, 16, chains)
        cycle = latency / 4
        print(f"{chains:6d}{a:12.4f}{b:12.4f}{b / a:9.2f}{cycle / a:15.2f}{cycle / b:15.2f}")
    print("512/256 near 1: two 512-bit FMA units (Intel server); near 2: one (client Intel, "
          "Zen 4's halves). FMA/cycle assumes a 4-cycle FMA latency")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
