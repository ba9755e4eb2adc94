"""A 16x8 TFLite MobileNetV2-like (int16 activations, int8 per-channel weights, int64 biases:
``tflite_qtwin.mobilenet_v2("int16")``) through relay.frontend.from_tflite, its CONV_2D /
DEPTHWISE_CONV_2D / FULLY_CONNECTED sums computed two ways, built in one process and timed
interleaved (benchmarks/interleave.py), one thread, thread CPU time:

- ``byte split``: the 8-bit kernels run twice, on the int16 activations' high (int8) and low
  (uint8) bytes (``tflite.products16.ONE_PASS`` off);
- ``one pass``: one op on the int16 data where the weights bound the sums
  (``tflite.products16``: int32 convs / dense on ``conv_vnni``'s int16 words, float32
  depthwise convs), the convs requantized in int32 (``quantized_requantize.INT32_REQUANTIZE``);
- ``one pass f64``: the same sums requantized in float64 as the byte split's are.

LiteRT's builtin kernels (``ai_edge_litert``, where installed) run the same file: its time and
the outputs that differ from each (``off LiteRT``: 0 is LiteRT's integers exactly).

    python benchmarks/bench_tflite_16x8.py [--size 96] [--mult 2] [--width 16] [--rounds 7]
        [--reps 20]"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "relay", "frontend"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=96)
    ap.add_argument("--mult", type=int, default=2, help="widens every block")
    ap.add_argument("--width", type=int, default=16, help="the stem's channels before --mult")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=20, help="calls per round (median taken)")
    args = ap.parse_args(argv)

    import tflite_qtwin
    from bench_tflite import litert_runner
    from interleave import settled_rounds

    import minitvm as tvm
    from minitvm import relay
    from minitvm.contrib import graph_executor
    from minitvm.relay.frontend.tflite import products16, quantized_requantize
    from minitvm.runtime import threadpool

    threadpool.set_num_threads(1)
    t, _ = tflite_qtwin.mobilenet_v2("int16", size=args.size, width=args.width, mult=args.mult)
    blob = t.b.finish()
    x = t.inputs()["input"]

    def build(one_pass: bool, int32_requantize: bool = True):
        products16.ONE_PASS, quantized_requantize.INT32_REQUANTIZE = one_pass, int32_requantize
        try:
            mod, params = relay.frontend.from_tflite(blob)
        finally:
            products16.ONE_PASS = quantized_requantize.INT32_REQUANTIZE = True
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="llvm", params=params)
        gm = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        gm.set_input("input", x)
        gm.run()
        return gm, mod.astext().count('dtype="uint8"')  # (the byte splits' low bytes)

    runs = {"byte split": build(False), "one pass f64": build(True, False),
            "one pass": build(True)}
    impls = {k: gm.run for k, (gm, _) in runs.items()}
    ref = None
    runner = litert_runner(blob, x, False)
    if runner is not None:
        impls["LiteRT"] = runner[0]
        runner[0]()
        ref = runner[1]()
    times = settled_rounds(impls, args.rounds, args.reps, clock=time.thread_time)
    print(f"16x8 MobileNetV2-like (5 blocks), {args.size}x{args.size}, stem {args.width} "
          f"x{args.mult} channels; one thread; thread CPU time; median of {args.rounds} "
          "interleaved rounds")
    print(f"{'sums':<14}{'ms':>9}{'min ms':>9}{'byte splits':>13}{'off LiteRT':>12}")
    for k, ts in times.items():
        splits, off = "", ""
        if k in runs:
            gm, count = runs[k]
            splits = str(count)
            if ref is not None:
                off = str(int((gm.get_output(0).numpy() != ref).sum()))
        print(f"{k:<14}{statistics.median(ts) * 1e3:9.3f}{min(ts) * 1e3:9.3f}{splits:>13}"
              f"{off:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
