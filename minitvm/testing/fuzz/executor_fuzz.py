"""Abuse of the graph executor's API: random calls with wrong, odd and hostile arguments.

Each step calls one of ``set_input``/``run``/``get_output``/``get_input``/``load_params``/
``get_input_index`` with arguments drawn from a pool of good and bad values (wrong shapes,
dtypes, non-arrays, None, strings, floats, huge and negative indices, NaN/inf data, bytes).
Allowed outcomes: success, or a ``ValueError``/``TypeError`` from the executor; after every
successful ``run`` on good inputs the outputs equal the reference. Anything else is a failure.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np


@dataclass
class ExecutorFuzzReport:
    total: int = 0
    ok: int = 0
    clear_errors: int = 0
    failures: list = field(default_factory=list)

    def __str__(self):
        return (f"{self.total} executor calls: {self.ok} succeeded, {self.clear_errors} clear "
                f"errors, {len(self.failures)} failures")


def fuzz_executor(n: int, seed: int = 0) -> ExecutorFuzzReport:
    import minitvm as tvm
    from minitvm import relay
    from minitvm.contrib import graph_executor

    x = relay.var("x", shape=(2, 3), dtype="float32")
    y = relay.var("y", shape=(3,), dtype="int32")
    body = relay.Tuple([relay.nn.softmax(relay.add(x, relay.cast(y, "float32"))),
                        relay.divide(y, relay.const(np.array([0, 1, -1], "int32")))])
    mod = tvm.IRModule.from_expr(relay.Function([x, y], body))
    lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    ref = relay.create_executor("debug", mod=mod).evaluate()
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    good = {"x": lambda: nrng.standard_normal((2, 3)).astype("float32"),
            "y": lambda: nrng.integers(-2**31, 2**31 - 1, size=3).astype("int32")}
    bad_values = [None, "abc", 1.5, b"\x00", [1, 2], np.zeros((3, 2), "float32"),
                  np.zeros((2, 3), "float64"), np.zeros((2, 3, 1), "float32"),
                  np.array(np.nan, "float32"), np.full((2, 3), np.inf, "float32"), object(),
                  tvm.nd.array(np.zeros((2, 3), "float32")), np.zeros(3, "int64")]
    bad_keys = [None, "", "z", 0, 1, 2, -1, 10**20, 1.0, True, b"x", ("x",)]
    report = ExecutorFuzzReport()
    current: dict = {}
    for _ in range(n):
        op = rng.choice(["set", "set", "run", "get_output", "get_input", "load_params",
                         "index", "run_kw"])
        report.total += 1
        try:
            if op == "set":
                key = rng.choice(["x", "y"] + bad_keys)
                val = good[key]() if key in good and rng.random() < 0.6 else \
                    rng.choice(bad_values)
                m.set_input(key, val)
                if key in good:
                    current[key] = np.array(val.numpy() if hasattr(val, "numpy") else val)
            elif op in ("run", "run_kw"):
                if op == "run_kw":
                    vals = {k: g() for k, g in good.items()}
                    m.run(**vals)
                    current.update(vals)
                else:
                    m.run()
                if set(current) == {"x", "y"}:
                    want = [v.numpy() for v in ref(current["x"], current["y"])]
                    for k, w in enumerate(want):
                        got = m.get_output(k).numpy()
                        if not np.allclose(got, w, equal_nan=True, rtol=1e-5, atol=1e-6):
                            report.failures.append(("wrong output", op, k))
            elif op == "get_output":
                m.get_output(rng.choice([0, 1, 2, -1, "0", None, 1.5, np.int32(1)]))
            elif op == "get_input":
                m.get_input(rng.choice(["x", "y"] + bad_keys))
            elif op == "load_params":
                m.load_params(rng.choice([{}, {"x": good["x"]()}, b"junk", None, 3,
                                          {"y": np.zeros(2)}, {5: np.zeros(3)}]))
                current.pop("x", None)  # may or may not have been set; re-learn on next set
            else:
                m.get_input_index(rng.choice(["x", "y", "nope", None, 3]))
            report.ok += 1
        except (ValueError, TypeError):
            report.clear_errors += 1
        except Exception as err:  # noqa: BLE001 - what the fuzzer looks for
            report.failures.append((op, f"{type(err).__name__}: {err}"))
    return report
