"""Quantized ONNX models as a new user makes them, over onnxruntime.quantization's options:
each model (PyTorch, exported to ONNX) quantized with quantize_static / quantize_dynamic under
one option set, then imported with Relay's and Relax's ONNX importers, built at opt_level 3,
checked against ONNX Runtime's own output of the same quantized file, and (``--time``) timed
beside it at one thread, rounds interleaved (thread CPU time).

For each (model, options) it prints: does each importer take it (else the error), the largest
difference from ORT (and in steps of the output's quantization grid where a DequantizeLinear
makes the output), which path the heavy ops took in the Relay IR -- ``i``: an int32 product of
8-bit operands (VNNI), ``8``: a float32 product reading 8-bit data as it is, ``f``: a float32
product of float data (the dequantized fallback) -- and with ``--time`` ms of Relay and ORT.

    python benchmarks/sweep_quantized_options.py [--models mlp,encoder] [--options qdq,qop_pc]
        [--time] [--rounds 5] [--jsonl results.jsonl] [--near 0.85]

``--near R`` ends a timed sweep with the table of every (model, options, importer) at R x ORT's
time or above, worst first; ``--summary results.jsonl [--near R]`` prints that table from
rows written before (several files, comma-separated: sweeps split across processes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import traceback
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "relay", "frontend"))


def _gpt_block(dim: int = 256, heads: int = 4, seq: int = 64):
    """A GPT-style decoder block: pre-LayerNorm, causal self-attention (an additive mask of
    -inf above the diagonal), a GELU MLP, residual adds."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.fc, self.out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
            mask = torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1)
            self.register_buffer("mask", mask)

        def forward(self, x):
            b, s, _ = x.shape
            d = dim // heads
            q, k, v = self.qkv(self.ln1(x)).reshape(b, s, 3, heads, d).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-1, -2) * d ** -0.5 + self.mask, dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, s, dim))
            return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))

    return Block()


def _recurrent(kind: str, feat: int = 40, hidden: int = 128):
    """A speech-style recurrent model: a 2-layer LSTM or GRU over (time, batch, features),
    then a Linear classifier on every step."""
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(nn, kind)(feat, hidden, num_layers=1)
            self.head = nn.Linear(hidden, 32)

        def forward(self, x):
            return self.head(self.rnn(x)[0])

    return Net()


def _audio(channels: int = 64):
    """A Conv1d keyword-spotting net over a (1, 40, 200) feature sequence: conv / BN / ReLU
    stacks, global average pool, a Linear."""
    from torch import nn

    def block(cin, cout, k, s):
        return [nn.Conv1d(cin, cout, k, s, k // 2), nn.BatchNorm1d(cout), nn.ReLU()]

    return nn.Sequential(*block(40, channels, 5, 2), *block(channels, channels, 3, 1),
                         *block(channels, 2 * channels, 3, 2),
                         *block(2 * channels, 2 * channels, 3, 1),
                         nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(2 * channels, 12))


def models() -> dict:
    import frontend_models as fm
    from bench_quantized import _encoder, _mlp

    return {
        "resnet18": (lambda: fm.randomize_batchnorm(fm.resnet18(16, 10)), (1, 3, 64, 64)),
        "mbv2_05": (lambda: fm.randomize_batchnorm(fm.mobilenet_v2(0.5, 10)), (1, 3, 64, 64)),
        "mbv2_10": (lambda: fm.randomize_batchnorm(fm.mobilenet_v2(1.0, 10)), (1, 3, 64, 64)),
        "encoder": (_encoder, (1, 128, 256)),
        "gpt": (_gpt_block, (1, 64, 256)),
        "lstm": (lambda: _recurrent("LSTM"), (50, 1, 40)),
        "gru": (lambda: _recurrent("GRU"), (50, 1, 40)),
        "audio": (lambda: fm.randomize_batchnorm(_audio()), (1, 40, 200)),
        "mlp": (_mlp, (16, 64)),
    }


# name -> (static or dynamic, keyword arguments of quantize_static / quantize_dynamic, with
# QuantFormat / QuantType members named by string)
OPTIONS = {
    "qdq": ("static", dict(quant_format="QDQ", activation_type="QInt8")),
    "qdq_u8": ("static", dict(quant_format="QDQ", activation_type="QUInt8")),
    "qop": ("static", dict(quant_format="QOperator", activation_type="QUInt8")),
    "qop_s8": ("static", dict(quant_format="QOperator", activation_type="QInt8")),
    "qdq_pc": ("static", dict(quant_format="QDQ", activation_type="QInt8", per_channel=True)),
    "qdq_u8_pc": ("static", dict(quant_format="QDQ", activation_type="QUInt8",
                                 per_channel=True)),
    "qop_pc": ("static", dict(quant_format="QOperator", activation_type="QUInt8",
                              per_channel=True)),
    "qdq_rr": ("static", dict(quant_format="QDQ", activation_type="QUInt8", reduce_range=True,
                              per_channel=True)),
    "qdq_wu8": ("static", dict(quant_format="QDQ", activation_type="QUInt8",
                               weight_type="QUInt8")),
    "qop_wu8": ("static", dict(quant_format="QOperator", activation_type="QUInt8",
                               weight_type="QUInt8")),
    "qdq_sym": ("static", dict(quant_format="QDQ", activation_type="QInt8",
                               extra_options={"ActivationSymmetric": True,
                                              "WeightSymmetric": True})),
    "qdq_u8_wasym": ("static", dict(quant_format="QDQ", activation_type="QUInt8",
                                    extra_options={"WeightSymmetric": False})),
    "qdq_keep": ("static", dict(quant_format="QDQ", activation_type="QUInt8",
                                extra_options={"QDQKeepRemovableActivations": True})),
    "qdq_force": ("static", dict(quant_format="QDQ", activation_type="QUInt8",
                                 extra_options={"ForceQuantizeNoInputCheck": True})),
    "qdq_constb": ("static", dict(quant_format="QDQ", activation_type="QUInt8",
                                  extra_options={"MatMulConstBOnly": True})),
    "qdq_only_mm": ("static", dict(quant_format="QDQ", activation_type="QUInt8",
                                   op_types_to_quantize=["MatMul", "Gemm"])),
    "dyn": ("dynamic", dict(weight_type="QInt8")),
    "dyn_u8": ("dynamic", dict(weight_type="QUInt8")),
    "dyn_pc": ("dynamic", dict(weight_type="QInt8", per_channel=True)),
    "dyn_pc_u8": ("dynamic", dict(weight_type="QUInt8", per_channel=True)),
    "dyn_only_mm": ("dynamic", dict(weight_type="QInt8", op_types_to_quantize=["MatMul"])),
}


def quantize(d: str, name: str, make, shape, option: str) -> str:
    """The quantized ONNX file of model ``name`` under ``OPTIONS[option]`` (made in ``d``)."""
    from bench_quantized import calibration_reader, float_file
    from onnxruntime import quantization as q

    f32 = float_file(d, name, make, shape)
    out = os.path.join(d, f"{name}_{option}.onnx")
    kind, kw = OPTIONS[option]
    kw = dict(kw)
    for key, enum in (("quant_format", q.QuantFormat), ("activation_type", q.QuantType),
                      ("weight_type", q.QuantType)):
        if key in kw:
            kw[key] = getattr(enum, kw[key])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "dynamic":
            q.quantize_dynamic(f32, out, **kw)
        else:
            kw.setdefault("weight_type", q.QuantType.QInt8)
            q.quantize_static(f32, out, calibration_reader(shape), **kw)
    return out


HEAVY = ("nn.conv1d", "nn.conv2d", "nn.dense", "nn.matmul", "nn.batch_matmul")


def relay_paths(mod) -> str:
    """Counts of the heavy ops by path (see the module docstring): ``i``, ``8``, ``f``."""
    from minitvm import relay
    from minitvm.relay.analysis import post_order_visit

    counts = {"i": 0, "8": 0, "f": 0}

    def visit(e):
        if isinstance(e, relay.Call) and getattr(e.op, "name", "") in HEAVY:
            if e.checked_type.dtype == "int32":
                counts["i"] += 1
            elif any(a.checked_type.dtype in ("uint8", "int8") for a in e.args[:1]):
                counts["8"] += 1
            else:
                counts["f"] += 1

    post_order_visit(relay.transform.InferType()(mod)["main"], visit)
    return " ".join(f"{k}{v}" for k, v in counts.items() if v)


def ops_of(proto) -> str:
    """The quantized-op types of the file (what the importer has to take)."""
    seen = sorted({(n.domain + "." if n.domain else "") + n.op_type for n in proto.graph.node
                   if any(t in n.op_type for t in ("Quant", "QLinear", "Integer", "QGemm",
                                                   "QAttention", "LSTM", "GRU"))})
    return ",".join(seen)


def run_case(d: str, name: str, option: str, timed: bool, rounds: int, reps: int) -> dict:
    import onnx
    import onnxruntime as ort

    import minitvm as tvm
    from minitvm import relax, relay
    from minitvm.contrib import graph_executor
    from minitvm.relax.frontend.onnx import from_onnx as relax_from_onnx

    make, shape = models()[name]
    row = {"model": name, "option": option}
    try:
        path = quantize(d, name, make, shape, option)
    except Exception as e:  # (onnxruntime's quantizer itself fails: nothing to import)
        row["quantize_error"] = f"{type(e).__name__}: {e}"[:200]
        return row
    proto = onnx.load(path)
    row["ops"] = ops_of(proto)
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"x": x})[0]
    from bench_quantized import output_step

    step = output_step(proto)
    impls = {"ort": lambda: sess.run(None, {"x": x})}
    try:
        mod, params = relay.frontend.from_onnx(proto, shape={"x": shape})
        row["paths"] = relay_paths(mod)
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="llvm", params=params)
        gm = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        gm.set_input("x", x)
        gm.run()
        err = float(np.abs(gm.get_output(0).numpy().astype("float64") - ref).max())
        row["relay_err"] = err / step if step else err
        impls["relay"] = gm.run
    except Exception as e:
        row["relay_error"] = f"{type(e).__name__}: {e}"[:300]
        row["relay_tb"] = traceback.format_exc()[-1500:]
    try:
        with tvm.transform.PassContext(opt_level=3):
            ex = relax.build(relax_from_onnx(proto, shape_dict={"x": shape}), "llvm")
        fn, xnd = relax.VirtualMachine(ex, tvm.cpu())["main"], tvm.nd.array(x)
        got = fn(xnd)
        got = got[0] if isinstance(got, (list, tuple)) else got
        err = float(np.abs(got.numpy().astype("float64") - ref).max())
        row["relax_err"] = err / step if step else err
        impls["relax"] = lambda: fn(xnd)
    except Exception as e:
        row["relax_error"] = f"{type(e).__name__}: {e}"[:300]
        row["relax_tb"] = traceback.format_exc()[-1500:]
    row["step"] = step
    if timed and len(impls) > 1:
        from interleave import settled_rounds

        times = settled_rounds(impls, rounds, reps, clock=time.thread_time)
        for k, v in times.items():
            row[f"{k}_ms"] = statistics.median(v) * 1e3
    return row


def line(row: dict) -> str:
    def err(k):
        if f"{k}_error" in row:
            return "ERR"
        v = row.get(f"{k}_err")
        if v is None:
            return "-"
        return f"{v:.2f}s" if row.get("step") else f"{v:.1e}"

    t = ""
    if "ort_ms" in row:
        r = row.get("relay_ms")
        t = f"  relay {r:.3f}" if r else "  relay -"
        rx = row.get("relax_ms")
        t += f"  relax {rx:.3f}" if rx else "  relax -"
        t += f"  ort {row['ort_ms']:.3f}"
        if r:
            t += f"  x{r / row['ort_ms']:.2f}"
    if "quantize_error" in row:
        return f"{row['model']:<9}{row['option']:<13} ORT quantizer fails: " \
               f"{row['quantize_error'][:80]}"
    msg = f"{row['model']:<9}{row['option']:<13} relay {err('relay'):>7} relax " \
          f"{err('relax'):>7}  [{row.get('paths', '')}]{t}"
    for k in ("relay", "relax"):
        if f"{k}_error" in row:
            msg += f"\n      {k}: {row[f'{k}_error'][:200]}"
    return msg


def near_ort(rows, at_least: float) -> list[tuple]:
    """``(ratio, model, option, importer, ms, ort ms)`` of each timed row's Relay and Relax
    time at ``at_least`` x ORT's or above, worst (highest ratio) first."""
    out = []
    for row in rows:
        ort_ms = row.get("ort_ms")
        for k in ("relay", "relax"):
            ms = row.get(f"{k}_ms")
            if ort_ms and ms and ms / ort_ms >= at_least:
                out.append((ms / ort_ms, row["model"], row["option"], k, ms, ort_ms))
    return sorted(out, key=lambda r: (-r[0], r[1], r[2], r[3]))


def near_table(rows, at_least: float) -> str:
    """``near_ort``'s rows as a text table."""
    near = near_ort(rows, at_least)
    lines = [f"{len(near)} importer rows at {at_least:.2f}x ORT or above, worst first",
             f"{'x ORT':>6}  {'model':<9}{'option':<13}{'importer':<9}{'ms':>8}{'ORT ms':>9}"]
    lines += [f"{r:6.2f}  {m:<9}{o:<13}{k:<9}{ms:8.3f}{ort_ms:9.3f}"
              for r, m, o, k, ms, ort_ms in near]
    return "\n".join(lines)


def read_rows(paths: str) -> list[dict]:
    """The rows of the comma-separated ``--jsonl`` files ``paths``."""
    rows = []
    for path in paths.split(","):
        with open(path) as f:
            rows += [json.loads(ln) for ln in f if ln.strip()]
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(models()))
    ap.add_argument("--options", default=",".join(OPTIONS))
    ap.add_argument("--time", action="store_true", help="time Relay, Relax and ORT")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--jsonl", default=None, help="append each row as JSON to this file")
    ap.add_argument("--near", type=float, default=None,
                    help="end with the rows at this ratio of ORT's time or above")
    ap.add_argument("--summary", default=None,
                    help="only print --near's table (default 0.85) of these --jsonl files")
    args = ap.parse_args(argv)
    if args.summary:
        print(near_table(read_rows(args.summary), 0.85 if args.near is None else args.near))
        return 0

    import logging

    logging.getLogger().setLevel(logging.ERROR)
    from minitvm.runtime import threadpool

    threadpool.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for name in args.models.split(","):
            for option in args.options.split(","):
                row = run_case(d, name, option, args.time, args.rounds, args.reps)
                rows.append(row)
                print(line(row), flush=True)
                if args.jsonl:
                    with open(args.jsonl, "a") as f:
                        f.write(json.dumps(row) + "\n")
    if args.near is not None:
        print(near_table(rows, args.near))
    return 0


if __name__ == "__main__":
    sys.exit(main())
