"""GEMM shapes a new user brings, minitvm against ONNX Runtime at one thread, fp32: dense /
matmul / batch_matmul graphs (with bias, GELU and ReLU epilogues) written as small ONNX models,
imported with ``relay.frontend.from_onnx``, built at opt_level 3 and timed beside ORT's session
on the same model (thread CPU time, interleaved settled rounds, median of per-round medians).

    python benchmarks/bench_gemm_shapes.py [--only gemv_4096,clip_77] [--rounds 5]
    python benchmarks/bench_gemm_shapes.py --group decode   # decode, clip, odd, skinny, attn,
                                                            # batch, input_w, guard, rnn
    python benchmarks/bench_gemm_shapes.py --ab gemm.RUNTIME_W_AS_MATMUL --group input_w,guard

Each call is end to end like a user's: set the inputs, run, read the output. ``set_input``
copies each input (ORT's ``run`` reads the caller's arrays): ``--zero-copy`` binds them with
``set_input_zero_copy`` instead, which shows the kernels' share. Shapes are
``MxNxK`` (``BxMxNxK`` for batch matmuls). The one-row GEMVs are memory bound: their rows also
give the weight's read bandwidth (GB/s) on each side. ``guard`` holds the named models'
shapes (BERT-base seq 128, the MLP at batch 1 and 64), which a schedule change must not slow.
The ratio column is minitvm / ORT time (below 1: minitvm faster).

``--ab MODULE.SWITCH`` (a per-host switch dict of ``minitvm.schedule``) builds each case twice,
A with the host's entry of the switch flipped and B as it stands, and times A, B and ORT in the
same interleaved rounds: columns A, B, B/A and B/ORT. ``--ab PassName`` (no dot): A builds with
that Relay pass disabled.

Stop 51 (AVX-512, 2 shared cores, one thread, ratio minitvm / ORT, with set_input's copies ->
after; --zero-copy in brackets): weight an input 1x768x768 7.30 -> 3.67 [0.97], 64x768x768
1.71 -> 1.20 [0.97]; CLIP scores 8x77x77x64 (B transposed) 1.74 -> 1.33 [1.11], ViT attention
12x197 1.29 -> 1.26 [1.02], batch-4 decode 4x4096x4096 1.13 -> 0.93; the rest were and stay at
or under ~1.0 but for small inputs whose copy is the gap (tall-skinny 4096x64x64 1.09 [0.78],
1000x10x10 [1.15], 100x300x500 [1.01]). Numbers move ~5% between runs on that machine.

Stop 52 (same machine, load ~10, --zero-copy, ratio before -> after): a partial last panel's
tiles narrowed to its columns (``gemm_kernel.NARROW_PARTIAL_PANEL``), which keeps 77 columns
32 wide: CLIP scores 8x77x77x64 (B transposed) 1.04 -> 0.93, ViT attention 12x197 1.03 -> 0.97,
100x300x500 0.96 -> 0.95; BERT scores 0.92 -> 0.91 (the avx512 table's 6x64 entry dropped).
1000x10x10 (0.88-0.91) and the dense shapes (0.75-0.98) were already at or under 1.0; the
unchanged vit_197_mlp read 0.96-1.06 over three runs.

Stop 59 (Sapphire Rapids, 2 shared cores, --zero-copy, 7 rounds): DCCRN's LSTM input projection
256x256x512 + bias 378 vs ORT 387 us (0.98), its projection 256x512x64 107 vs 115 us (0.93):
bench_layers_ort's "nn_dense_add 2.9x ORT" in that model paired it with the wrong ORT node.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from interleave import settled_rounds  # noqa: E402

# (name, group, kind, shape, epilogue); kind: dense (weight [K, N] a constant, as torch's Linear
# exports it), matmul_in (the weight a graph input: nothing to prepack), bmm (two inputs
# [B, M, K] @ [B, K, N]), bmm_t (the second operand [B, N, K], transposed in the graph),
# bmm4 (a 4-D batch [b, h, M, K] @ [b, h, K, N])
CASES = [
    ("gemv_4096", "decode", "dense", (1, 4096, 4096), ""),
    ("gemv_768_3072", "decode", "dense", (1, 3072, 768), "bias_gelu"),
    ("vocab_head", "decode", "dense", (1, 32000, 1024), ""),
    ("clip_77", "clip", "dense", (77, 768, 768), "bias"),
    ("vit_197_mlp", "clip", "dense", (197, 3072, 768), "bias_gelu"),
    ("vit_50", "clip", "dense", (50, 768, 768), "bias"),
    ("odd_100x300x500", "odd", "dense", (100, 300, 500), "bias"),
    ("odd_7x999x513", "odd", "dense", (7, 999, 513), "bias_relu"),
    ("odd_1000x10x10", "odd", "dense", (1000, 10, 10), "bias"),
    ("odd_3x5x7", "odd", "dense", (3, 5, 7), ""),
    ("skinny_4096x64x64", "skinny", "dense", (4096, 64, 64), "bias_relu"),
    # DCCRN (bench_new_user_models' dccrn_enhance, batch 4 x 64 frames): its LSTM's input
    # projection, hoisted out of the time loop (ORT runs it inside its LSTM node), and the
    # Linear after the LSTM
    ("dccrn_lstm_in", "rnn", "dense", (256, 256, 512), "bias"),
    ("dccrn_proj", "rnn", "dense", (256, 512, 64), "bias"),
    ("attn_12x128x128x64", "attn", "bmm", (12, 128, 128, 64), ""),
    ("attn_12x197x197x64", "attn", "bmm", (12, 197, 197, 64), ""),
    ("attn_8x77x77x64_t", "attn", "bmm_t", (8, 77, 77, 64), ""),
    ("attn_4x12x128x128x64", "batch", "bmm4", (4, 12, 128, 128, 64), ""),
    ("dec_b4_4096", "batch", "dense", (4, 4096, 4096), ""),
    ("dec_b32_4096", "batch", "dense", (32, 4096, 4096), ""),
    ("dec_b4_768_3072", "batch", "dense", (4, 3072, 768), "bias_gelu"),
    ("dec_b32_768_3072", "batch", "dense", (32, 3072, 768), "bias_gelu"),
    ("input_w_64x768x768", "input_w", "matmul_in", (64, 768, 768), ""),
    ("input_w_1x768x768", "input_w", "matmul_in", (1, 768, 768), ""),
    ("bert_qkv", "guard", "dense", (128, 768, 768), "bias"),
    ("bert_ffn1", "guard", "dense", (128, 3072, 768), "bias_gelu"),
    ("bert_ffn2", "guard", "dense", (128, 768, 3072), "bias"),
    ("bert_scores_t", "guard", "bmm_t", (12, 128, 128, 64), ""),
    ("mlp_b64", "guard", "dense", (64, 128, 784), "bias_relu"),
    ("mlp_b1", "guard", "dense", (1, 128, 784), "bias_relu"),
]


def build_onnx(kind: str, shape: tuple, epilogue: str, rng):
    """(ONNX model bytes, feeds, numpy reference output) of one case."""
    from onnx import TensorProto, helper, numpy_helper

    def vi(name, dims):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(dims))

    def randn(*dims):
        return (rng.standard_normal(dims) / np.sqrt(dims[-1])).astype(np.float32)

    nodes, inits, feeds = [], [], {}
    if kind in ("dense", "matmul_in"):
        m, n, k = shape
        feeds["x"] = randn(m, k)
        w = randn(k, n)
        if kind == "dense":
            inits.append(numpy_helper.from_array(w, "w"))
        else:
            feeds["w"] = w
        nodes.append(helper.make_node("MatMul", ["x", "w"], ["mm"]))
        ref = feeds["x"] @ w
        out_dims = (m, n)
    else:
        if kind == "bmm4":
            b, h, m, n, k = shape
            lead = (b, h)
        else:
            b, m, n, k = shape
            lead = (b,)
        feeds["a"] = randn(*lead, m, k)
        if kind == "bmm_t":
            feeds["b"] = randn(*lead, n, k)
            nodes.append(helper.make_node("Transpose", ["b"], ["bt"], perm=[0, 2, 1]))
            nodes.append(helper.make_node("MatMul", ["a", "bt"], ["mm"]))
            ref = feeds["a"] @ feeds["b"].swapaxes(-1, -2)
        else:
            feeds["b"] = randn(*lead, k, n)
            nodes.append(helper.make_node("MatMul", ["a", "b"], ["mm"]))
            ref = feeds["a"] @ feeds["b"]
        out_dims = (*lead, m, n)
    cur = "mm"
    if "bias" in epilogue:
        bias = rng.standard_normal(out_dims[-1]).astype(np.float32)
        inits.append(numpy_helper.from_array(bias, "bias"))
        nodes.append(helper.make_node("Add", [cur, "bias"], ["biased"]))
        cur, ref = "biased", ref + bias
    if epilogue.endswith("relu"):
        nodes.append(helper.make_node("Relu", [cur], ["act"]))
        cur, ref = "act", np.maximum(ref, 0)
    if epilogue.endswith("gelu"):  # torch's exact GELU as its ONNX exporter writes it
        for name, val in (("rsqrt2", 1 / np.sqrt(2)), ("one", 1.0), ("half", 0.5)):
            inits.append(numpy_helper.from_array(np.array(val, np.float32), name))
        nodes += [helper.make_node("Mul", [cur, "rsqrt2"], ["g0"]),
                  helper.make_node("Erf", ["g0"], ["g1"]),
                  helper.make_node("Add", ["g1", "one"], ["g2"]),
                  helper.make_node("Mul", [cur, "g2"], ["g3"]),
                  helper.make_node("Mul", ["g3", "half"], ["act"])]
        from math import erf

        ref = ref * 0.5 * (1 + np.vectorize(erf)(ref.astype(np.float64) / np.sqrt(2)))
        cur = "act"
    nodes.append(helper.make_node("Identity", [cur], ["y"]))
    graph = helper.make_graph(nodes, "gemm_case", [vi(k, v.shape) for k, v in feeds.items()],
                              [vi("y", out_dims)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString(), feeds, ref.astype(np.float32)


def weight_bytes(kind: str, shape: tuple) -> int:
    """Bytes of the second operand (the memory traffic that bounds a one-row GEMV)."""
    if kind in ("dense", "matmul_in"):
        _, n, k = shape
        return 4 * n * k
    return 4 * int(np.prod(shape[:-3])) * shape[-2] * shape[-1]


def _flipped(switch_name: str):
    """A context manager flipping the host's entry of per-host switch ``MODULE.SWITCH``."""
    import contextlib
    import importlib

    from minitvm.schedule.common import host_key

    mod_name, attr = switch_name.rsplit(".", 1)
    switch = getattr(importlib.import_module(f"minitvm.schedule.{mod_name}"), attr)
    key = host_key(switch)

    @contextlib.contextmanager
    def flipped():
        old = switch[key]
        switch[key] = not old
        try:
            yield
        finally:
            switch[key] = old

    return flipped


def _graph_runner(blob: bytes, feeds: dict, disk_cache: bool = True, disabled=(),
                  zero_copy: bool = False):
    """(a call running minitvm's build of the model end to end, build seconds). An A/B builds
    without the disk cache, whose whole-build entries are keyed by the compiler's sources, not
    by a switch flipped in memory."""
    import onnx

    import minitvm as tvm
    from minitvm import relay
    from minitvm.backend.kernel_cache import clear_cache
    from minitvm.contrib import graph_executor

    clear_cache()  # (the in-process kernel cache is keyed by the Relay function: an A/B's two
    # builds of one model must each lower their own)
    mod, params = relay.frontend.from_onnx(onnx.load_from_string(blob),
                                           shape={k: v.shape for k, v in feeds.items()})
    t0 = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3, disabled_pass=list(disabled), config={
            "relay.backend.use_disk_cache": disk_cache}):
        lib = relay.build(mod, target="llvm", params=params)
    build_s = time.perf_counter() - t0
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))

    set_input = g.set_input_zero_copy if zero_copy else g.set_input

    def run():
        for key, val in feeds.items():
            set_input(key, val)
        g.run()
        return g.get_output(0).numpy()

    return run, build_s


def run_case(case, rounds: int, rng, ab: str = "", zero_copy: bool = False) -> dict:
    import onnxruntime as ort

    name, _, kind, shape, epilogue = case
    blob, feeds, ref = build_onnx(kind, shape, epilogue, rng)
    impls = {}
    if ab and "." not in ab:
        impls["A"], _ = _graph_runner(blob, feeds, False, [ab], zero_copy)
    elif ab:
        with _flipped(ab)():
            impls["A"], _ = _graph_runner(blob, feeds, False, zero_copy=zero_copy)
    impls["minitvm"], build_s = _graph_runner(blob, feeds, not ab, zero_copy=zero_copy)
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])

    def run_ort():
        return sess.run(None, feeds)[0]

    impls["ort"] = run_ort
    scale = float(np.abs(ref).max()) or 1.0
    err = max(float(np.abs(impls[k]() - ref).max()) for k in impls if k != "ort") / scale
    t_once = time.perf_counter()
    run_ort()
    t_once = time.perf_counter() - t_once
    reps = max(3, min(200, int(0.03 / max(t_once, 1e-6))))
    times = settled_rounds(impls, rounds, reps, clock=time.thread_time)
    med = {k: statistics.median(v) for k, v in times.items()}
    return dict(name=name, kind=kind, shape=shape, epilogue=epilogue, err=err, build_s=build_s,
                tvm=med["minitvm"], ort=med["ort"], a=med.get("A"),
                wbytes=weight_bytes(kind, shape))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--group", default="", help="comma-separated groups")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--zero-copy", action="store_true",
                    help="minitvm reads the inputs in place (set_input_zero_copy), as ORT does")
    ap.add_argument("--ab", default="", metavar="MODULE.SWITCH",
                    help="A/B a per-host switch of minitvm.schedule (A: flipped, B: as is) "
                    "or a Relay pass (A: disabled)")
    args = ap.parse_args(argv)
    from minitvm.runtime import threadpool

    threadpool.set_num_threads(1)
    only = set(filter(None, args.only.split(",")))
    groups = set(filter(None, args.group.split(",")))
    cases = [c for c in CASES if (not only or c[0] in only) and (not groups or c[1] in groups)]
    if not cases:
        raise SystemExit(f"no case matches --only {args.only!r} --group {args.group!r}; "
                         f"cases: {', '.join(c[0] for c in CASES)}")
    print("one thread, fp32, thread CPU time, median of per-round medians; ratio = minitvm / ORT"
          + ("; minitvm's inputs set zero-copy" if args.zero_copy else ""))
    if args.ab:
        print(f"A/B of {args.ab}: A " + ("flipped" if "." in args.ab else "without it")
              + ", B as it stands")
        print(f"{'case':<22} {'shape':<16} {'epilogue':<9} {'A us':>9} {'B us':>9} {'B/A':>5} "
              f"{'ORT us':>9} {'A/ORT':>6} {'B/ORT':>6}")
        rng = np.random.default_rng(0)
        for case in cases:
            r = run_case(case, args.rounds, rng, args.ab, args.zero_copy)
            print(f"{r['name']:<22} {'x'.join(map(str, r['shape'])):<16} "
                  f"{r['epilogue'] or '-':<9} {r['a'] * 1e6:>9.1f} {r['tvm'] * 1e6:>9.1f} "
                  f"{r['tvm'] / r['a']:>5.2f} {r['ort'] * 1e6:>9.1f} {r['a'] / r['ort']:>6.2f} "
                  f"{r['tvm'] / r['ort']:>6.2f}", flush=True)
        return 0
    print(f"{'case':<22} {'kind':<9} {'shape':<16} {'epilogue':<9} {'minitvm us':>10} "
          f"{'ORT us':>9} {'ratio':>6} {'GB/s ours':>9} {'GB/s ORT':>8} {'rel err':>8} "
          f"{'build s':>7}")
    rng = np.random.default_rng(0)
    for case in cases:
        r = run_case(case, args.rounds, rng, zero_copy=args.zero_copy)
        bw = ""
        if r["kind"] in ("dense", "matmul_in") and r["shape"][0] == 1:
            bw = f"{r['wbytes'] / r['tvm'] / 1e9:>9.1f} {r['wbytes'] / r['ort'] / 1e9:>8.1f}"
        print(f"{r['name']:<22} {r['kind']:<9} {'x'.join(map(str, r['shape'])):<16} "
              f"{r['epilogue'] or '-':<9} {r['tvm'] * 1e6:>10.1f} {r['ort'] * 1e6:>9.1f} "
              f"{r['tvm'] / r['ort']:>6.2f} {bw or ' ' * 18:>18} {r['err']:>8.1e} "
              f"{r['build_s']:>7.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
