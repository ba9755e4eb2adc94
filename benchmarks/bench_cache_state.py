"""Why a kernel runs slower in its model than alone: each kernel of an ONNX model timed in graph
order beside the same call after a few prepared cache states, in one process, interleaved.

    python benchmarks/bench_cache_state.py --model FILE.onnx|resnet50|mobilenetv2 [--rounds 11]
                                           [--kernels SUBSTRING,...]

``bench_layers_ort.py --alone`` compares graph order with a kernel called again at once (its
data hot). Between the two lie several causes, which this script tells apart by timing each
kernel (thread CPU time, median over ``--rounds`` rounds, one thread) right after:

- ``graph``: the kernels before it in graph order (one run of the whole step list a round);
- ``hot``: itself (called twice, the second call timed);
- ``pass``: one write pass over ``PASS_BYTES`` of other memory (what a "flush" usually is);
- ``reuse``: ``REUSE_PASSES`` write passes over ``REUSE_BYTES`` of other memory (data used
  more than once: an L3 that keeps reused lines over lines streamed through once evicts a
  kernel's data for these, where one ``pass`` over more memory may not);
- ``pages``: one read a 4 KB page over ``PAGES_BYTES`` of 4 KB pages (the TLBs emptied, the
  caches barely touched);
- ``others``: every other kernel of the model once.

A kernel slow after ``others`` (and ``reuse``) but not after ``pass`` or ``pages`` finds the data
it reads out of the caches the model's run leaves; slow after ``pages``, TLB misses; slow in
graph order only, the kernel just before it. Measured with it on an Intel Xeon (2 MB L2, a large
shared L3, a loaded machine), deeplab_head, ms, graph / hot / pass / reuse / pages / others: its
dilation-2 branch (256 -> 64 Winograd F(4x4) over four 16x16 phase images, 2.4 MB of
transformed weights) 1.21 / 0.91 / 0.87 / 1.00 / 0.85 / 1.16; its 8x bilinear resize to 21 x
256 x 256 (5.5 MB written) 0.64 / 0.44 / 0.42 / 0.43 / 0.40 / 0.64: neither a TLB effect nor
reproduced by one 32 MB pass (what ``--alone`` after a flush measured before).
"""

from __future__ import annotations

import argparse
import mmap
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

PASS_BYTES = 32 << 20
REUSE_BYTES = 24 << 20
REUSE_PASSES = 3
PAGES_BYTES = 64 << 20
PAGE = 4096
STATES = ("graph", "hot", "pass", "reuse", "pages", "others")


class Disturbers:
    """The memory the prepared states write or read (allocated once, outside the timings)."""

    def __init__(self):
        self.once = np.ones(PASS_BYTES // 4, dtype=np.float32)
        self.reused = np.ones(REUSE_BYTES // 4, dtype=np.float32)
        # an anonymous mapping: 4 KB pages (numpy asks for huge pages for large arrays)
        self._map = mmap.mmap(-1, PAGES_BYTES)
        self.pages = np.frombuffer(self._map, dtype=np.uint8)
        self.pages[::PAGE] = 1

    def one_pass(self):
        self.once += 1.0

    def reuse(self):
        for _ in range(REUSE_PASSES):
            self.reused += 1.0

    def touch_pages(self):
        self.pages[::PAGE] += 1


def build(blob: bytes):
    """(graph module, step names) of the ONNX model ``blob`` built at -O3, its inputs set."""
    import onnx

    import minitvm as tvm
    from minitvm import relay
    from minitvm.contrib import graph_executor

    model = onnx.load_from_string(blob)
    rng = np.random.default_rng(0)
    shapes, feeds = {}, {}
    for inp in model.graph.input:
        tt = inp.type.tensor_type
        dims = [d.dim_value for d in tt.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        shapes[inp.name] = dims
        feeds[inp.name] = rng.standard_normal(dims).astype(dtype) if dtype.kind == "f" \
            else rng.integers(0, 2, dims).astype(dtype)
    mod, params = relay.frontend.from_onnx(model, shape=shapes)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in feeds.items():
        g.set_input(k, v)
    g.run()
    names = [s[0].replace("tvmgen_default_fused_", "") for s in g._plan["steps"]]
    return g, names


def measure(g, names: list[str], rounds: int, picked: list[int]) -> dict[str, list[list[float]]]:
    """Seconds of each picked step after each state of ``STATES``, per round."""
    st = g._state()
    steps = g._kernel_calls(st)

    def call(k):
        step = steps[k]
        if step[0] == "native":
            step[1](step[2], None, 1)
        else:
            g._run_fallback(st, step)

    def timed(k):
        t0 = time.thread_time()
        call(k)
        return time.thread_time() - t0

    d = Disturbers()
    prepare = {"pass": d.one_pass, "reuse": d.reuse, "pages": d.touch_pages}
    times = {s: [[] for _ in names] for s in STATES}
    for _ in range(rounds):
        for k in range(len(steps)):
            t = timed(k)
            if k in picked:
                times["graph"][k].append(t)
        for k in picked:
            call(k)
            times["hot"][k].append(timed(k))
            for state, fn in prepare.items():
                call(k)
                fn()
                times[state][k].append(timed(k))
            for j in range(len(steps)):
                if j != k:
                    call(j)
            times["others"][k].append(timed(k))
    return times


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="an ONNX file, resnet50 or mobilenetv2")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--kernels", default="",
                    help="comma-separated substrings of the kernels to time (default: all)")
    args = ap.parse_args(argv)

    from bench_layers_ort import model_bytes

    from minitvm.runtime import threadpool

    threadpool.set_num_threads(1)
    g, names = build(model_bytes(args.model))
    wanted = [w for w in args.kernels.split(",") if w]
    picked = [k for k, n in enumerate(names) if not wanted or any(w in n for w in wanted)]
    if not picked:
        print(f"no kernel of {args.model} matches {args.kernels!r}; kernels: {', '.join(names)}")
        return 1
    times = measure(g, names, args.rounds, picked)
    print(f"{args.model}: one thread, thread CPU time, ms, median of {args.rounds} rounds, "
          "each kernel after:")
    print("".join(f"{s:>8s}" for s in STATES) + "  graph/hot  kernel")
    for k in picked:
        med = {s: float(np.median(times[s][k])) * 1e3 for s in STATES}
        ratio = med["graph"] / med["hot"] if med["hot"] > 0 else float("nan")
        print("".join(f"{med[s]:8.3f}" for s in STATES) + f"  {ratio:9.2f}  {names[k]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
