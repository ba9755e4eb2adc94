"""LiteRT's count-dependent fixed-point steps computed when the model runs (the integer MEAN /
SUM over run-time sizes): ``fixed_point.multiply_run_time_expr`` equals the import-time
``fixed_point.multiply`` for multipliers and shifts given as run-time values (both roundings,
shifts left and right, none); QuantizeMultiplier of a float32 value computed by int64 steps
equals ``quantize_multiplier`` of it as a double (tiny ones 0); floor(log2) of a count. Pure
Relay: no TFLite package needed."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.frontend.tflite import exact_spatial, fixed_point


def _run(params, outputs, feeds: dict) -> list[np.ndarray]:
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function(params, relay.Tuple(outputs))),
                          target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in feeds.items():
        m.set_input(k, v)
    m.run()
    return [m.get_output(i).numpy() for i in range(len(outputs))]


def test_run_time_multipliers_equal_the_import_time_ones():
    rng = np.random.default_rng(0)
    acc = np.concatenate([rng.integers(-40000, 40000, 60), [0, 1, -1, 2, -2, 3, -3]])
    # (m0, shift): right shifts 1..20, none, left shifts; unnormalized significands too
    cases = [(1518500250, -3), (1073741824, -1), (2147483647, 0), (1234567890, 2),
             (987654321, -20), (1 << 30, 1), (5, -7), (0, 0)]
    half = (np.arange(acc.size) % 2).astype("int64").reshape(-1, 1)  # half up on every other
    x = relay.var("acc", shape=(acc.size, 1), dtype="int64")
    h = relay.var("half", shape=half.shape, dtype="int64")
    m0 = relay.var("m0", shape=(len(cases),), dtype="int64")
    shift = relay.var("shift", shape=(len(cases),), dtype="int64")
    outs = [fixed_point.multiply_run_time_expr(x, m0, shift, r) for r in (None, h, True)]
    got = _run([x, h, m0, shift], outs, {
        "acc": acc.astype("int64").reshape(-1, 1), "half": half,
        "m0": np.array([c[0] for c in cases], "int64"),
        "shift": np.array([c[1] for c in cases], "int64")})
    for k, (c0, s) in enumerate(cases):
        for j, half_up in enumerate((False, half[:, 0].astype(bool), True)):
            np.testing.assert_array_equal(got[j][:, k], fixed_point.multiply(acc, c0, s, half_up),
                                          err_msg=f"m0={c0} shift={s} rounding {j}")


def test_float32_quantize_multiplier():
    rng = np.random.default_rng(1)
    ms = np.concatenate([rng.uniform(1e-4, 4.0, 40), 2.0 ** rng.integers(-40, 8, 10),
                         [2.0**-31, 2.0**-32, 1e-12, 1.0, 0.75, np.nextafter(np.float32(1), 0)]])
    ms = ms.astype("float32")
    mv = relay.var("m", shape=(ms.size,), dtype="float32")
    m0, shift = _run([mv], list(exact_spatial._f32_quantize_multiplier(mv)), {"m": ms})
    want = [fixed_point.quantize_multiplier(float(m)) for m in ms]
    assert list(zip(m0.tolist(), shift.tolist(), strict=True)) == want


def test_floor_log2_of_counts():
    counts = np.array([1, 2, 3, 4, 7, 8, 9, 255, 256, 1000, 2**20 + 1, 2**33, 2**62 + 5], "int64")
    cv = relay.var("c", shape=(counts.size,), dtype="int64")
    (log2,) = _run([cv], [exact_spatial._floor_log2(cv)], {"c": counts})
    np.testing.assert_array_equal(log2, [int(c).bit_length() - 1 for c in counts])
