"""Relax programs over TWO symbolic dimensions (``n`` rows, ``m`` columns), built once by
``relax.build`` and run at three concrete ``(n, m)`` pairs (one with an empty axis) against the
numpy reference (``relax_reference.evaluate``).

The Relax generator's sizes programs (``check_relax_sizes``) vary one symbolic batch; here the
symbolic axis is also the contracted one of a matmul, the reduced one of a sum / mean / max /
softmax, the one a transpose moves to the front, a concat's axis and a flatten's factor, so
kernels index, reduce and allocate by products and sums of two run-time sizes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from .differential import DEFAULT_RTOL, Finding, compare_values, flatten

#: The (n, m) pairs each program runs at, in turn by seed.
SIZE_PAIRS = ((3, 4), (1, 2), (0, 3), (2, 0), (5, 1))


@dataclass
class SymbolicProgram:
    """A generated module and its parameters' shapes (``"n"`` / ``"m"`` or an int)."""

    seed: int
    mod: object
    params: list  # [(name, dims)]
    features: set = field(default_factory=set)

    def sizes(self) -> list[tuple[int, int]]:
        """Three distinct pairs by seed: a non-empty one, one with an empty axis, another."""
        full = [p for p in SIZE_PAIRS if 0 not in p]
        empty = [p for p in SIZE_PAIRS if 0 in p]
        k = self.seed
        return [full[k % len(full)], empty[k % len(empty)], full[(k + 1) % len(full)]]

    def inputs(self, n: int, m: int) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed * 31 + n * 7 + m)
        return [rng.uniform(-2, 2, tuple({"n": n, "m": m}.get(d, d) for d in dims))
                .astype("float32") for _, dims in self.params]


def _axis(d) -> str:
    """A feature's name for an axis of abstract size ``d``: its symbolic factors, or static."""
    names = [v for v in ("n", "m") if isinstance(d, str) and v in d]
    return "*".join(names) if names else "a static axis"


def generate_symbolic_program(seed: int) -> SymbolicProgram:
    """The program of ``seed``: 2-6 operations over an ``(n, m)`` and an ``(m, k)`` tensor."""
    from minitvm import relax, tir
    from minitvm.relax import op as R

    rng = random.Random(seed * 6151 + 1)
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    k = rng.randint(1, 4)
    sym = {"n": n, "m": m}
    params = [("x", ["n", "m"]), ("w", ["m", k])]
    pvars = [relax.Var(name, relax.TensorStructInfo([sym.get(d, d) for d in dims], "float32"))
             for name, dims in params]
    features: set = set()
    bb = relax.BlockBuilder()
    with bb.function("main", pvars):
        with bb.dataflow():
            # pool of (value, abstract dims)
            pool = [(pvars[0], ("n", "m")), (pvars[1], ("m", k))]
            for _ in range(rng.randint(2, 6)):
                v, dims = rng.choice(pool)
                r = rng.random()
                if r < 0.2 and len(dims) == 2 and dims[1] == "m":
                    other = [(u, d) for u, d in pool if len(d) == 2 and d[0] == "m"]
                    u, ud = rng.choice(other)
                    out, od, feat = R.matmul(v, u), (dims[0], ud[1]), "matmul over m"
                elif r < 0.35 and len(dims) == 2:
                    axis = rng.randrange(2)
                    kind = rng.choice(["sum", "mean", "max"])
                    keep = rng.random() < 0.5
                    out = getattr(R, kind)(v, axis=[axis], keepdims=keep)
                    od = tuple(1 if i == axis else d for i, d in enumerate(dims)) if keep \
                        else tuple(d for i, d in enumerate(dims) if i != axis)
                    feat = f"{kind} over {_axis(dims[axis])}"
                elif r < 0.5 and len(dims) == 2:
                    out, od, feat = R.permute_dims(v, [1, 0]), dims[::-1], "permute_dims"
                elif r < 0.6 and len(dims) == 2:
                    out, od, feat = R.nn.softmax(v, axis=-1), dims, f"softmax over {_axis(dims[1])}"
                elif r < 0.7:
                    same = [(u, d) for u, d in pool if d == dims]
                    u, _ = rng.choice(same)
                    axis = rng.randrange(len(dims)) if dims else 0
                    if not dims:
                        continue
                    out = R.concat([v, u], axis=axis)
                    od = tuple(("2*" + d if isinstance(d, str) else 2 * d) if i == axis else d
                               for i, d in enumerate(dims))
                    feat = f"concat along {_axis(dims[axis])}"
                elif r < 0.78 and len(dims) == 2:
                    # (a flatten of (m, 1) is (m,), not (n * m,): seeds 900227, 900991)
                    od = (dims[0] * dims[1] if all(isinstance(d, int) for d in dims)
                          else f"{dims[0]}*{dims[1]}",)
                    out, feat = R.flatten(v), "flatten"
                else:
                    same = [(u, d) for u, d in pool if d == dims]
                    u, _ = rng.choice(same)
                    op = rng.choice(["add", "multiply", "subtract", "maximum"])
                    out, od, feat = getattr(R, op)(R.tanh(v) if rng.random() < 0.5 else v,
                                                   u), dims, "elementwise"
                    if rng.random() < 0.5:
                        out = R.tanh(bb.emit(out))
                pool.append((bb.emit(out), od))
                features.add(feat)
            outs = [pool[-1][0]] + ([rng.choice(pool[2:])[0]] if rng.random() < 0.5 else [])
            res = bb.emit_output(outs[0] if len(outs) == 1 else relax.Tuple(outs))
        bb.emit_func_output(res)
    return SymbolicProgram(seed, bb.get(), params, features)


def check_symbolic_program(prog: SymbolicProgram) -> list[Finding]:
    """One ``relax.build``; at each ``(n, m)`` of the program the VM's values are the numpy
    reference's (float tolerance: the kernels sum in their own order)."""
    import minitvm as tvm
    from minitvm import relax

    from .relax_reference import evaluate

    text = prog.mod.script()
    try:
        vm = relax.VirtualMachine(relax.build(prog.mod, target="llvm"), tvm.cpu())
    except Exception as err:  # noqa: BLE001
        return [Finding("exception", "relax.build (n, m)", prog.seed,
                        f"{type(err).__name__}: {str(err)[:400]}", text)]
    for n, m in prog.sizes():
        inputs = prog.inputs(n, m)
        with np.errstate(all="ignore"):
            ref = flatten(evaluate(prog.mod, inputs))
            try:
                got = flatten(vm["main"](*inputs))
            except Exception as err:  # noqa: BLE001
                return [Finding("exception", "relax.build (n, m)", prog.seed,
                                f"VM at n={n}, m={m}: {type(err).__name__}: "
                                f"{str(err)[:400]}", text)]
        diff = compare_values(ref, got, rtol=DEFAULT_RTOL["float32"])
        if diff:
            return [Finding("mismatch", "relax.build (n, m)", prog.seed,
                            f"n={n}, m={m}: {diff}", text)]
    return []
