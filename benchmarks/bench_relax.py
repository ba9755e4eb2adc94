"""Relax front end and pass speed: export + print of a 12-layer BERT-sized nn.Module, and
passes over 25k / 50k / 100k-binding dataflow blocks (time per binding shows linearity).

    python benchmarks/bench_relax.py [--rounds 3]

Best of ``--rounds`` wall times, in one process. No peer runs these (TVM's export/print is C++
we do not install); the table reports our own times and the per-binding ratio across sizes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend import nn  # noqa: E402


class BertLayer(nn.Module):
    def __init__(self, hidden: int, intermediate: int):
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.act = nn.GELU()
        self.output = nn.Linear(intermediate, hidden)
        self.out_norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        scores = nn.op.matmul(q, nn.op.permute_dims(k, [0, 2, 1]))
        ctx = nn.op.matmul(nn.op.softmax(scores, axis=-1), v)
        x = self.attn_norm(self.attn_out(ctx) + x)
        return self.out_norm(self.output(self.act(self.intermediate(x))) + x)


class Bert(nn.Module):
    def __init__(self, layers=12, hidden=768, intermediate=3072):
        self.layers = nn.ModuleList([BertLayer(hidden, intermediate) for _ in range(layers)])

    def forward(self, x):
        return self.layers(x)


def _best(fn, rounds):
    best, out = float("inf"), None
    for _ in range(rounds):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _chain(n: int) -> tvm.IRModule:
    x = relax.Var("x", relax.TensorStructInfo((4, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            v = x
            for _ in range(n):
                v = bb.emit(relax.op.add(v, x))
            gv = bb.emit_output(v)
        bb.emit_func_output(gv)
    return bb.get()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    spec = {"forward": {"x": nn.spec.Tensor(("batch", "seq", 768), "float32")}}
    t_export, (mod, _) = _best(lambda: Bert().export_tvm(spec), args.rounds)
    t_print, text = _best(mod.script, args.rounds)
    nbind = len(mod["forward"].body.blocks[0].bindings)
    print(f"12-layer BERT nn.Module ({nbind} bindings): export_tvm {t_export * 1e3:.0f} ms, "
          f"print {t_print * 1e3:.0f} ms, total {(t_export + t_print) * 1e3:.0f} ms "
          f"({len(text.splitlines())} lines)")
    print(f"{'bindings':>9} {'build':>9} {'print':>9} {'parse':>9} {'CanonBind':>9} "
          f"{'DCE':>9}   us/binding (build, print, parse, passes)")
    from minitvm.script import from_source

    for n in (25_000, 50_000, 100_000):
        tb, m = _best(lambda n=n: _chain(n), 1)
        tp, text = _best(m.script, 1)
        tq, _ = _best(lambda text=text: from_source(text), 1)
        tc, _ = _best(lambda m=m: relax.transform.CanonicalizeBindings()(m), 1)
        td, _ = _best(lambda m=m: relax.transform.DeadCodeElimination()(m), 1)
        per = ", ".join(f"{t / n * 1e6:.1f}" for t in (tb, tp, tq, tc + td))
        print(f"{n:>9} {tb:>8.2f}s {tp:>8.2f}s {tq:>8.2f}s {tc:>8.2f}s {td:>8.2f}s   {per}")


if __name__ == "__main__":
    main()
