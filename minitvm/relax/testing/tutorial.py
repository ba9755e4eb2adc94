"""Seed 003's Relax flow up to its custom pass: export an nn.Module MLP with a symbolic batch,
print it, rewrite relu to gelu with a PyExprMutator module pass, print again, and check that the
printed module parses back to the same IR."""

from __future__ import annotations

from ... import transform
from ...ir.module import IRModule
from ...ir.structural import structural_equal
from .. import op
from ..expr import Call, Function
from ..expr_functor import PyExprMutator, mutator
from ..frontend import nn


class TutorialMLP(nn.Module):
    """The seed's model: Linear(784, 128) -> ReLU -> Linear(128, 10)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(self.relu1(self.fc1(x)))


@mutator
class ReluRewriter(PyExprMutator):
    """relu calls become gelu calls."""

    def visit_call_(self, call: Call):
        if getattr(call.op, "name", None) == "relax.nn.relu":
            return op.nn.gelu(call.args[0])
        return super().visit_call_(call)


@transform.module_pass(opt_level=0, name="ReluToGelu")
class ReluToGelu:
    """The seed's custom module pass."""

    def transform_module(self, mod: IRModule, _ctx) -> IRModule:
        rewriter = ReluRewriter(mod)
        for gvar, func in mod.functions_items():
            if isinstance(func, Function):
                rewriter.builder_.update_func(gvar, rewriter.visit_expr(func))
        return rewriter.builder_.get()


def run_tutorial(args=None) -> int:
    """Run the flow, printing each module; 0 when the round trips hold, 1 otherwise."""
    from ...ir.dialect import parse_module_text  # TVMScript's reader, registered by script

    print("== Relax (seed 003): nn.Module MLP exported with a symbolic batch size")
    mod, params = TutorialMLP().export_tvm(
        {"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}})
    mod.show()
    print(f"  {len(params)} parameters: {', '.join(name for name, _ in params)}")
    from ...transform import Sequential
    from ..transform import AnnotateTIROpPattern, FuseOps, FuseTIR, LegalizeOps

    print("== Relax: LegalizeOps (every operator to a tir.PrimFunc called by R.call_tir)")
    legalized = LegalizeOps()(mod)
    legalized.show()
    print("== Relax: AnnotateTIROpPattern + FuseOps + FuseTIR")
    fused = Sequential([AnnotateTIROpPattern(), FuseOps(), FuseTIR()])(legalized)
    fused.show()
    print("== Relax: custom module pass ReluToGelu (a PyExprMutator)")
    rewritten = ReluToGelu()(mod)
    rewritten.show()
    ok = all(structural_equal(parse_module_text(m.script()), m)
             for m in (mod, legalized, fused, rewritten))
    print("  TVMScript round trip (from_source(mod.script()) == mod): "
          f"{'OK' if ok else 'FAILED'}")
    ran = build_and_run(rewritten, params)
    return 0 if ok and ran else 1


def build_and_run(mod: IRModule, params, batches=(1, 64)) -> bool:
    """relax.build the module once (legalize, fuse, lower to the VM) and run it for each batch
    size against numpy; print what was compiled and the results."""
    import math
    import time

    import numpy as np

    from ...runtime import cpu
    from ..vm import VirtualMachine, build

    print("== Relax: relax.build (LegalizeOps, FuseOps, FuseTIR, lowering) and the Relax VM")
    t0 = time.perf_counter()
    ex = build(mod, target="llvm")
    print(f"  built once in {time.perf_counter() - t0:.2f} s: "
          f"{len(ex.kernels)} kernels ({', '.join(sorted(ex.kernels))})")
    vm = VirtualMachine(ex, cpu())
    rng = np.random.default_rng(0)
    w = [(rng.standard_normal([int(d) for d in p.shape]) * 0.1).astype("float32")
         for _, p in params]
    erf = np.vectorize(math.erf)
    ok = True
    for n in batches:
        x = rng.standard_normal((n, 784)).astype("float32")
        out = vm["forward"](x, *w).numpy()
        h = x.astype("float64") @ w[0].T + w[1]
        ref = (0.5 * h * (1 + erf(h / math.sqrt(2)))) @ w[2].T + w[3]
        err = float(np.max(np.abs(out - ref)))
        good = out.shape == (n, 10) and err < 1e-4
        ok = ok and good
        print(f"  batch n={n}: output {out.shape}, max |vm - numpy| = {err:.2e} "
              f"{'OK' if good else 'FAILED'}")
    return ok
