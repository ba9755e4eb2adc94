"""Per-phase CPU split of one ``relay.build`` (``bench_compile_time.py --phases``).

Each phase's *self* thread-CPU time (``time.thread_time``: what this thread ran, not what it
waited for) is charged to the innermost phase running: a Relay pass (through a pass
instrument, per pass name), lowering a fused function to a PrimFunc, the kernel's cache key
(printing its TIR), LLVM IR generation in Python, LLVM's compile, loading an object from the
disk cache, the whole-build cache key, ... and "serial rest" for the build's code outside all
of them. Compile workers (forked by ``backend.parallel_compile``) time their own phases the same
way and leave them in a file the parent reads. Nothing in the package changes: the phases are
wrappers around its functions, installed for this one process.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict

REST = "serial rest (outside the phases below)"


class PhaseClock:
    """Exclusive thread-CPU accounting over a stack of phases (the main thread only)."""

    def __init__(self):
        self.totals: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        self.stack: list[str] = []
        self.mark = 0.0
        self.thread = None

    def start(self, root: str = REST) -> None:
        import threading

        self.totals.clear()
        self.counts.clear()
        self.stack = [root]
        self.thread = threading.get_ident()
        self.mark = time.thread_time()

    def enter(self, name: str) -> bool:
        import threading

        if not self.stack or threading.get_ident() != self.thread:
            return False
        now = time.thread_time()
        self.totals[self.stack[-1]] += now - self.mark
        self.mark = now
        self.stack.append(name)
        self.counts[name] += 1
        return True

    def leave(self) -> None:
        now = time.thread_time()
        self.totals[self.stack.pop()] += now - self.mark
        self.mark = now

    def stop(self) -> dict[str, float]:
        while self.stack:
            self.leave()
        return dict(self.totals)


CLOCK = PhaseClock()


def _wrap(owner, attr: str, phase: str) -> None:
    inner = getattr(owner, attr)

    def timed(*args, **kwargs):
        entered = CLOCK.enter(phase)
        try:
            return inner(*args, **kwargs)
        finally:
            if entered:
                CLOCK.leave()

    setattr(owner, attr, timed)


def _pass_instrument():
    """An instrument charging each pass's own time to ``pass NAME`` (a Sequential's own time
    is its bookkeeping between the passes it runs)."""
    from minitvm.instrument import pass_instrument

    @pass_instrument
    class PhasePasses:
        def __init__(self):
            self.entered: list[bool] = []

        def run_before_pass(self, mod, info):
            self.entered.append(CLOCK.enter(f"pass {info.name}"))

        def run_after_pass(self, mod, info):
            if self.entered.pop():
                CLOCK.leave()

    return PhasePasses()


def install(worker_dir: str):
    """Wrap the build's phases; return the pass instrument to put in the PassContext. Workers
    write their phases to ``worker_dir/PID.json`` when their queue runs dry."""
    import importlib

    from minitvm.backend import aot, parallel_compile
    from minitvm.codegen.llvm.codegen import CodeGenLLVM
    from minitvm.relay.backend import build_cache, graph_executor_codegen, te_compiler
    from minitvm.relay.transform import pipeline, plan_devices
    from minitvm.runtime import jit

    # (by module path: the packages re-export functions of the same names)
    backend_compile = importlib.import_module("minitvm.backend.compile")
    codegen_build = importlib.import_module("minitvm.codegen.build")

    _wrap(build_cache, "build_key", "build-cache key (fingerprint, params digest)")
    _wrap(build_cache, "store", "build-cache store (main-thread part)")
    _wrap(pipeline, "optimize", "relay passes: pipeline outside the passes")
    _wrap(plan_devices, "host_program", "host_program")
    _wrap(graph_executor_codegen.GraphCodegen, "codegen", "graph codegen (outside kernels)")
    _wrap(graph_executor_codegen.GraphCodegen, "graph_json", "graph JSON")
    _wrap(te_compiler, "compile_te", "kernels: compile_te glue")
    _wrap(backend_compile, "lower_te", "kernels: lowering (TE -> PrimFunc, schedules)")
    _wrap(backend_compile, "compile_prim_func", "kernels: TIR passes, keys (compile_prim_func)")
    _wrap(codegen_build, "script", "kernels: TIR text for the kernel key")
    _wrap(codegen_build, "_load_cached_object", "kernels: load object from disk cache")
    _wrap(CodeGenLLVM, "generate", "kernels: LLVM IR generation (Python)")
    _wrap(jit, "compile_ir_to_object", "kernels: LLVM compile (llvmlite)")
    _wrap(jit, "compile_ir", "kernels: LLVM compile (llvmlite)")
    _wrap(aot, "graph_entry", "graph entry (AOT IR + compile)")

    # the instrument would switch the whole-build cache off: a cold build computes its key and
    # stores its result, so keep that on here
    enabled = build_cache.enabled

    def enabled_despite_instruments(ctx=None):
        from minitvm.transform.context import PassContext

        ctx = ctx if ctx is not None else PassContext.current()
        saved = ctx.instruments
        ctx.instruments = []
        try:
            return enabled(ctx)
        finally:
            ctx.instruments = saved

    build_cache.enabled = enabled_despite_instruments

    drain = parallel_compile._drain

    def timed_drain(rd, members, run_one, done_wr=-1, done_rd=-1):
        if done_wr < 0:  # the parent
            return drain(rd, members, run_one, done_wr=done_wr, done_rd=done_rd)
        CLOCK.start("worker rest")  # (a forked process starts with zero CPU time)
        try:
            return drain(rd, members, run_one, done_wr=done_wr, done_rd=done_rd)
        finally:
            path = os.path.join(worker_dir, f"{os.getpid()}.json")
            with open(path, "w") as f:
                json.dump({"phases": CLOCK.stop(), "cpu": time.thread_time()}, f)

    parallel_compile._drain = timed_drain
    return _pass_instrument()


def worker_phases(worker_dir: str) -> tuple[dict[str, float], int]:
    """The workers' phases summed, and how many workers reported."""
    out: dict[str, float] = defaultdict(float)
    n = 0
    for f in sorted(os.listdir(worker_dir)):
        with open(os.path.join(worker_dir, f)) as fh:
            data = json.load(fh)
        n += 1
        for k, v in data["phases"].items():
            out[k] += v
    return dict(out), n


def table(name: str, r: dict) -> str:
    """The phase split of one build (``r`` from the child) as text."""
    main, workers, counts = r["main"], r["workers"], r["counts"]
    lines = [f"{name}: relay.build cold, CPU seconds (thread time, each phase's own)",
             f"  parent process {r['cpu']:.3f} s = main thread {r['main_cpu']:.3f} s + other "
             f"threads {r['cpu'] - r['main_cpu']:.3f} s (cache digest/writer, LLVM); "
             f"{r['n_workers']} workers {r['worker_cpu']:.3f} s; wall {r['wall']:.2f} s",
             f"  {'phase':58s} {'calls':>6s} {'main':>7s} {'workers':>8s}"]
    passes = {k: v for k, v in main.items() if k.startswith("pass ")}
    rest = (set(main) | set(workers)) - set(passes)
    for k in sorted(rest, key=lambda k: -(main.get(k, 0.0) + workers.get(k, 0.0))):
        lines.append(f"  {k:58s} {counts.get(k, 0):6d} {main.get(k, 0.0):7.3f} "
                     f"{workers.get(k, 0.0):8.3f}")
    total = sum(passes.values())
    lines.append(f"  {'relay passes (self time, all)':58s} {'':6s} {total:7.3f}")
    for k in sorted(passes, key=lambda k: -passes[k]):
        if passes[k] >= 0.002:
            lines.append(f"    {k:56s} {counts.get(k, 0):6d} {passes[k]:7.3f}")
    return "\n".join(lines)


def install_kernel_log() -> list[dict]:
    """Record each kernel compiled in this process (run the build with
    ``MINITVM_COMPILE_JOBS=1``: workers' kernels are not seen): its symbol, TIR lines (the key's
    text), LLVM IR lines, the IR pipeline level, and the thread-CPU seconds of IR generation and
    of LLVM. Returns the list the records are appended to."""
    import importlib

    from minitvm.codegen.llvm.codegen import CodeGenLLVM
    from minitvm.runtime import jit

    codegen_build = importlib.import_module("minitvm.codegen.build")
    log: list[dict] = []
    pending: dict = {}
    script, generate = codegen_build.script, CodeGenLLVM.generate

    def timed_script(*args, **kwargs):
        text = script(*args, **kwargs)
        pending["tir_lines"] = text.count("\n")
        return text

    def timed_generate(self):
        t = time.thread_time()
        text = generate(self)
        pending.update(gen_s=time.thread_time() - t, symbol=self.symbol)
        return text

    def timed_compile(inner):
        def run(ir_text, symbol, *args, **kwargs):
            t = time.thread_time()
            out = inner(ir_text, symbol, *args, **kwargs)
            if pending.get("symbol") == symbol:
                log.append({**pending, "ir_lines": ir_text.count("\n"),
                            "pipeline": args[0] if args else kwargs.get("opt"),
                            "llvm_s": time.thread_time() - t})
            pending.clear()
            return out
        return run

    codegen_build.script = timed_script
    CodeGenLLVM.generate = timed_generate
    jit.compile_ir = timed_compile(jit.compile_ir)
    jit.compile_ir_to_object = timed_compile(jit.compile_ir_to_object)
    return log


def kernel_table(name: str, log: list[dict], top: int = 15) -> str:
    """The kernels of ``install_kernel_log`` as text, the costliest (IR generation + LLVM)
    first, with the totals."""
    rows = sorted(log, key=lambda r: -(r["gen_s"] + r["llvm_s"]))
    lines = [f"{name}: {len(log)} kernels compiled, TIR {sum(r['tir_lines'] for r in log)} "
             f"lines, LLVM IR {sum(r['ir_lines'] for r in log)} lines, IR generation "
             f"{sum(r['gen_s'] for r in log):.3f} s, LLVM {sum(r['llvm_s'] for r in log):.3f} s",
             f"  {'symbol':28s} {'pipeline':>8s} {'TIR':>6s} {'LLVM IR':>8s} {'gen s':>7s} "
             f"{'LLVM s':>7s}"]
    for r in rows[:top]:
        lines.append(f"  {r['symbol']:28s} {str(r['pipeline']):>8s} {r['tir_lines']:6d} "
                     f"{r['ir_lines']:8d} {r['gen_s']:7.3f} {r['llvm_s']:7.3f}")
    return "\n".join(lines)

