"""LegalizeOps and AnnotateTIROpPattern cost: seed 003's MLP, a 12-layer BERT-sized nn.Module
(symbolic sequence length) and chains of 10,000 / 100,000 bindings (linear in size: one topi
build per distinct call signature, then a cached lowering per binding).

    python benchmarks/bench_relax_legalize.py [--rounds 3] [--skip-100k]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))


def _best(fn, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def seed_mlp():
    from minitvm.relax.frontend import nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(784, 128)
            self.relu1 = nn.ReLU()
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            return self.fc2(self.relu1(self.fc1(x)))

    mod, _ = MLP().export_tvm({"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}})
    return mod


def bert(layers: int = 12, hidden: int = 768, inter: int = 3072):
    from minitvm.relax.frontend import nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Linear(hidden, hidden)
            self.o = nn.Linear(hidden, hidden)
            self.ln1 = nn.LayerNorm(hidden)
            self.f1 = nn.Linear(hidden, inter)
            self.f2 = nn.Linear(inter, hidden)
            self.ln2 = nn.LayerNorm(hidden)
            self.act = nn.GELU()

        def forward(self, x):
            h = self.ln1(x + self.o(nn.op.softmax(self.q(x), axis=-1)))
            return self.ln2(h + self.f2(self.act(self.f1(h))))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Layer() for _ in range(layers)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    mod, _ = Model().export_tvm({"forward": {"x": nn.spec.Tensor((1, "s", hidden), "float32")}})
    return mod


def chain(n: int):
    from minitvm import relax, tir
    from minitvm.relax import op as R

    s = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([s, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            v = x
            for i in range(n):
                v = bb.emit(R.add(v, x) if i % 2 else R.nn.relu(v))
            gv = bb.emit_output(v)
        bb.emit_func_output(gv)
    return bb.get()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-100k", action="store_true")
    args = ap.parse_args()
    from minitvm.relax.transform import AnnotateTIROpPattern, LegalizeOps

    cases = [("seed 003 MLP", seed_mlp()), ("BERT 12 layers", bert()),
             ("chain 10k", chain(10_000))]
    if not args.skip_100k:
        cases.append(("chain 100k", chain(100_000)))
    print(f"{'module':<16}{'bindings':>10}{'LegalizeOps s':>16}{'Annotate s':>12}")
    for name, mod in cases:
        n = sum(len(b.bindings) for f in mod.functions.values()
                if hasattr(f, "body") and hasattr(f.body, "blocks") for b in f.body.blocks)
        rounds = 1 if "100k" in name else args.rounds
        t_leg = _best(lambda m=mod: LegalizeOps()(m), rounds)
        legal = LegalizeOps()(mod)
        t_ann = _best(lambda m=legal: AnnotateTIROpPattern()(m), rounds)
        print(f"{name:<16}{n:>10}{t_leg:>16.3f}{t_ann:>12.4f}")


if __name__ == "__main__":
    main()
