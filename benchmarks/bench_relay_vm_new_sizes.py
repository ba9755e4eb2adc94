"""First call of a Relay VM executable at each new batch size, for a detection / sort model whose
kernels a lowering rule writes (all-class NMS, RoI align / pool, top-k, argsort, cumsum,
unique): one symbolic kernel each (``vm.symbolic.SYMBOLIC_RULE_TAGS``) against the per-shape
path they took before (a kernel compiled at each new size: the tags off, in this process; RoI
align, a plain te reduction since its compute takes a symbolic box count, is symbolic in both).

    python benchmarks/bench_relay_vm_new_sizes.py [--sizes 1,3,7,12] [--rounds 3] [--model boxes]

``--model boxes``: TVM's box-row NMS instead (``vision.get_valid_counts``, then
``vision.non_max_suppression`` twice: indices, and the boxes at their ranks), 64 boxes a batch.
``--model sorts``: sorts along the dynamic axis (argsort down the batch of rows, a sort of
each row's scores along its dynamic length, their top 100 along it) and a running sum of the
whole input flattened.

Both paths run interleaved in one process, each round with an empty disk cache of its own and
nothing kept in process; the columns are medians over the rounds, in milliseconds: the compile,
the first call at each new batch size (what a user waits for when a batch of a new size
arrives), and the best of five later calls at the last size (the steady cost; the second
call, which records the VM's native entry, left out). ``kernels`` counts the symbolic
kernels / the per-shape kernels compiled over all the sizes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np


def _model():
    """Boxes and scores of a dynamic batch -> all-class NMS, the top scores and their order, a
    running sum, the distinct best classes, and RoI align / pool over boxes of a dynamic
    count."""
    import minitvm as tvm
    from minitvm import relay

    n = relay.Any()
    boxes = relay.var("boxes", shape=(n, 32, 4), dtype="float32")
    scores = relay.var("scores", shape=(n, 4, 32), dtype="float32")
    feats = relay.var("feats", shape=(n, 8, 16, 16), dtype="float32")
    rois = relay.var("rois", shape=(relay.Any(), 5), dtype="float32")
    nms = relay.vision.all_class_non_max_suppression(
        boxes, scores, relay.const(8, "int64"), relay.const(0.5, "float32"),
        relay.const(0.05, "float32"))
    top = relay.topk(scores, k=5, axis=2, ret_type="both")
    order = relay.argsort(scores, axis=2, is_ascend=False)
    running = relay.cumsum(relay.exp(scores), axis=2)
    best = relay.argmax(scores, axis=1)  # (the best class of each box)
    classes = relay.unique(relay.reshape(relay.cast(best, "int32"), (-1,)))
    outs = [nms[0], nms[1], top[0], top[1], order, running, classes[0],
            relay.vision.roi_align(feats, rois, (4, 4), 1.0, 2),
            relay.vision.roi_pool(feats, rois, (4, 4), 1.0)]
    return tvm.IRModule.from_expr(relay.Function([boxes, scores, feats, rois],
                                                 relay.Tuple(outs)))


def _box_model():
    """Rows (id, score, x1, y1, x2, y2) of a dynamic batch -> valid counts -> NMS (indices and
    counts; the boxes at their ranks, across ids, top 20)."""
    import minitvm as tvm
    from minitvm import relay

    d = relay.var("d", shape=(relay.Any(), 64, 6), dtype="float32")
    gv = relay.vision.get_valid_counts(d, 0.1)
    nms = relay.vision.non_max_suppression(gv[1], gv[0], gv[2], relay.const(16, "int32"), 0.5)
    ranked = relay.vision.non_max_suppression(gv[1], gv[0], gv[2], relay.const(-1, "int32"),
                                              0.4, force_suppress=True, top_k=20,
                                              return_indices=False)
    return tvm.IRModule.from_expr(relay.Function([d], relay.Tuple([nms[0], nms[1], ranked])))


def _box_inputs(b: int) -> list:
    r = np.random.default_rng(b)
    x = np.zeros((b, 64, 6), "float32")
    x[..., 0] = r.integers(0, 3, (b, 64))
    x[..., 1] = r.random((b, 64))
    x[..., 2:4] = r.random((b, 64, 2)) * 20
    x[..., 4:6] = x[..., 2:4] + 2 + r.random((b, 64, 2)) * 8
    return [x]


def _sort_model():
    """Scores [batch, 16] and rows [4, length] of a dynamic batch / length -> argsort down the
    batch, each row sorted descending along its length, each row's top 100 along it, cumsum
    of the scores flattened."""
    import minitvm as tvm
    from minitvm import relay

    x = relay.var("x", shape=(relay.Any(), 16), dtype="float32")
    y = relay.var("y", shape=(4, relay.Any()), dtype="float32")
    top = relay.topk(y, k=100, axis=1, ret_type="both")
    outs = [relay.argsort(x, axis=0), relay.sort(y, axis=1, is_ascend=False), top[0], top[1],
            relay.cumsum(x)]
    return tvm.IRModule.from_expr(relay.Function([x, y], relay.Tuple(outs)))


def _sort_inputs(b: int) -> list:
    r = np.random.default_rng(b)
    return [r.standard_normal((b * 64, 16)).astype("float32"),
            r.standard_normal((4, b * 256)).astype("float32")]


def _inputs(b: int) -> list:
    r = np.random.default_rng(b)
    bx = r.random((b, 32, 4)).astype("float32") * 10
    bx[..., 2:] += 4
    rois = np.zeros((3 * b, 5), "float32")
    rois[:, 0] = r.integers(0, b, 3 * b)
    rois[:, 1:3] = r.random((3 * b, 2)) * 8
    rois[:, 3:] = rois[:, 1:3] + 1 + r.random((3 * b, 2)) * 6
    return [bx, r.random((b, 4, 32)).astype("float32"),
            r.standard_normal((b, 8, 16, 16)).astype("float32"), rois]


MODELS = {"detection": (_model, _inputs), "boxes": (_box_model, _box_inputs),
          "sorts": (_sort_model, _sort_inputs)}


def _forget() -> None:
    from minitvm.backend.kernel_cache import clear_cache
    from minitvm.codegen.build import clear_cache as clear_codegen_cache
    from minitvm.relay.backend.vm.symbolic import clear_symbolic_cache

    clear_cache()
    clear_codegen_cache()
    clear_symbolic_cache()


def _one(symbolic_rules: bool, sizes: list[int], model: str = "detection") -> dict:
    """Compile the model on an empty cache and time the first call at each size."""
    import minitvm as tvm
    from minitvm import relay
    from minitvm.relay.backend.vm import symbolic
    from minitvm.relay.backend.vm.kernels import ShapeSpecializer, dynamic_kernel_counts
    from minitvm.runtime.vm import VirtualMachine
    from minitvm.topi.scatter_linear import SCATTER_LINEAR_TAG

    tags = symbolic.SYMBOLIC_RULE_TAGS
    if not symbolic_rules:  # (the per-shape path these ops took before)
        symbolic.SYMBOLIC_RULE_TAGS = frozenset({SCATTER_LINEAR_TAG})
    try:
        with tempfile.TemporaryDirectory() as cache:
            os.environ["MINITVM_CACHE_DIR"] = cache
            _forget()
            t0 = time.perf_counter()
            make, inputs = MODELS[model]
            exe = relay.vm.compile(make(), target="llvm")
            out = {"compile": time.perf_counter() - t0}
            vm = VirtualMachine(exe, tvm.cpu())
            for b in sizes:
                args = inputs(b)
                t0 = time.perf_counter()
                vm.run(*args)
                out[f"b{b}"] = time.perf_counter() - t0
            vm.run(*args)  # (the second call records the native entry)
            steady = []
            for _ in range(5):
                t0 = time.perf_counter()
                vm.run(*args)
                steady.append(time.perf_counter() - t0)
            out["steady"] = min(steady)
            counts = dynamic_kernel_counts(exe.kernels)
            made = sum(len(k.run.cache) for k in exe.kernels
                       if isinstance(k.run, ShapeSpecializer))
            out["kernels"] = f"{counts['symbolic']}/{made}"
            _forget()
    finally:
        symbolic.SYMBOLIC_RULE_TAGS = tags
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1,3,7,12")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--model", choices=sorted(MODELS), default="detection")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    runs: dict[str, list] = {"per-shape": [], "symbolic": []}
    for _ in range(args.rounds):  # (interleaved: the machine's load hits both alike)
        runs["per-shape"].append(_one(False, sizes, args.model))
        runs["symbolic"].append(_one(True, sizes, args.model))
    cols = ["compile", *(f"b{b}" for b in sizes), "steady"]
    print(f"{'path':10s} " + " ".join(f"{c:>8s}" for c in cols) + "  kernels (symbolic/per-shape)")
    med = {}
    for name, rs in runs.items():
        med[name] = {c: statistics.median(r[c] for r in rs) for c in cols}
        print(f"{name:10s} " + " ".join(f"{med[name][c] * 1e3:8.1f}" for c in cols)
              + f"  {rs[-1]['kernels']}")
    ratio = [med["per-shape"][c] / med["symbolic"][c] for c in cols]
    print(f"{'ratio':10s} " + " ".join(f"{r:8.2f}" for r in ratio)
          + "  (per-shape / symbolic: above 1, the symbolic kernels are faster)")
    first = sum(med["per-shape"][f"b{b}"] for b in sizes[1:]) / \
        sum(med["symbolic"][f"b{b}"] for b in sizes[1:])
    print(f"first calls at the sizes after the first: {first:.1f}x faster with symbolic kernels")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
