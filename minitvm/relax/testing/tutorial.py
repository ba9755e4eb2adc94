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
    print("== Relax: custom module pass ReluToGelu (a PyExprMutator)")
    rewritten = ReluToGelu()(mod)
    rewritten.show()
    ok = all(structural_equal(parse_module_text(m.script()), m) for m in (mod, rewritten))
    print("  TVMScript round trip (from_source(mod.script()) == mod): "
          f"{'OK' if ok else 'FAILED'}")
    return 0 if ok else 1
