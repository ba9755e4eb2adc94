"""Relax models with a symbolic dimension, built once by ``relax.build`` and run at several
sizes on the Relax VM, side by side with numpy, ONNX Runtime and PyTorch eager.

    python benchmarks/bench_relax_models.py [--rounds 7] [--reps 5] [--models mlp,bert,convnet]
                                            [--threads N] [--weights-as-args]

Models (``relax.frontend.nn`` modules exported with a symbolic dim, float32):
  * the seed-003 MLP 784-128-10 (relu), batch ``n`` = 1, 64, 1024;
  * a BERT-base encoder layer (hidden 768, 12 heads, FFN 3072, GELU, two layer norms), batch 1,
    sequence length ``seq`` = 32, 128, 512;
  * a small convnet (3x3 convs 3->16, 16->32 stride 2, 32->32, relu, global mean, linear 10),
    NCHW 32x32, ``batch`` = 1, 8, 32.
Each model is compiled once (the default build pipeline: LegalizeOps, fusion, FuseTIR, the
shared schedules via ``schedule.optimize_prim_func``, llvmlite) and that one executable serves
every size. The weights are bound as constants (``BindParams``), as they are in the peers
(ONNX Runtime initializers, the torch module's tensors): ``FoldConstant`` folds the transposes
and the build packs matmul weights into the GEMM's layout once. ``--weights-as-args`` passes
them as VM arguments instead, as the seed does (each call then transposes and packs them, which
no peer does). Straight-line Relax functions run through the VM's native entry: one native call
per run once a shape has been seen (``runtime/relax_vm/native_entry.py``).

Every implementation's output is checked against numpy (max relative error shown). Rounds are
interleaved over the implementations; each cell is the median over rounds of each round's
median of ``--reps`` runs, and ratios are minitvm / peer (below 1: minitvm is faster). ORT and
torch columns are left out when the package is not importable. ``--threads`` sizes every
library's pool (minitvm, OpenBLAS under numpy, torch, ORT; default: all cores); ORT's workers do
not spin between calls (``session.intra_op.allow_spinning=0``), so that no peer's idle threads
take the cores from the next one measured, and each implementation's runs start after a short
pause (``interleave.SETTLE_S``) in which the previous one's spinning pool threads (OpenBLAS, libgomp) go idle.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import statistics
import sys
import time
import warnings
from pathlib import Path


def _threads_from_argv() -> int:
    """``--threads`` is read before numpy / torch are imported: their pools size at import."""
    for k, a in enumerate(sys.argv):
        if a == "--threads" and k + 1 < len(sys.argv):
            return int(sys.argv[k + 1])
        if a.startswith("--threads="):
            return int(a.split("=", 1)[1])
    return int(os.environ.get("TVM_NUM_THREADS", os.cpu_count() or 1))


THREADS = _threads_from_argv()
for _var in ("TVM_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "MKL_NUM_THREADS"):
    os.environ[_var] = str(THREADS)

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from interleave import settled_rounds  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend import nn  # noqa: E402


# ---------------------------------------------------------------------------------- models
class MLP(nn.Module):
    """Seed 003's model."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(self.relu1(self.fc1(x)))


class BertLayer(nn.Module):
    """One BERT-base encoder layer (post-norm), batch 1, symbolic sequence length."""

    def __init__(self, hidden=768, heads=12, inter=3072):
        super().__init__()
        self.hidden, self.heads = hidden, heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, inter)
        self.act = nn.GELU()
        self.output = nn.Linear(inter, hidden)
        self.out_norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x):
        s, h, d = x.shape[1], self.heads, self.hidden // self.heads

        def heads(t):
            return nn.op.permute_dims(nn.op.reshape(t, (1, s, h, d)), [0, 2, 1, 3])

        # 1/sqrt(d) is folded into the query projection's weights and bias (see _weights)
        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        probs = nn.op.softmax(nn.op.matmul(q, nn.op.permute_dims(k, [0, 1, 3, 2])), axis=-1)
        ctx = nn.op.reshape(nn.op.permute_dims(nn.op.matmul(probs, v), [0, 2, 1, 3]),
                            (1, s, self.hidden))
        x = self.attn_norm(self.attn_out(ctx) + x)
        return self.out_norm(self.output(self.act(self.intermediate(x))) + x)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2D(3, 16, 3, padding=1)
        self.c2 = nn.Conv2D(16, 32, 3, stride=2, padding=1)
        self.c3 = nn.Conv2D(32, 32, 3, padding=1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = nn.op.relu(self.c1(x))
        x = nn.op.relu(self.c2(x))
        x = nn.op.relu(self.c3(x))
        return self.fc(nn.op.mean(x, axis=[2, 3]))


def _weights(params, rng, scale_query: float = 1.0) -> dict:
    out = {}
    for name, p in params:
        shape = tuple(int(d) for d in p.shape)
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        if name.endswith("norm.weight"):
            w = 1.0 + 0.1 * rng.standard_normal(shape)
        else:
            w = rng.standard_normal(shape) / math.sqrt(fan_in)
        if name.startswith("query."):
            w = w * scale_query
        out[name] = w.astype("float32")
    return out


# ---------------------------------------------------------------------------------- numpy
def _ln(x, g, b, eps=1e-12):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def _erf(x):
    try:
        from scipy.special import erf
    except ImportError:  # exact but slow: only the numpy column's time suffers
        return np.vectorize(math.erf, otypes=[np.float32])(x)
    return erf(x).astype(np.float32)


def numpy_mlp(w, x):
    h = np.maximum(x @ w["fc1.weight"].T + w["fc1.bias"], 0)
    return h @ w["fc2.weight"].T + w["fc2.bias"]


def numpy_bert(w, x, heads=12):
    _, s, hid = x.shape
    d = hid // heads
    x2 = x[0]

    def proj(name, t):
        return t @ w[name + ".weight"].T + w[name + ".bias"]

    q = proj("query", x2).reshape(s, heads, d).transpose(1, 0, 2)
    k = proj("key", x2).reshape(s, heads, d).transpose(1, 2, 0)
    v = proj("value", x2).reshape(s, heads, d).transpose(1, 0, 2)
    sc = q @ k
    e = np.exp(sc - sc.max(-1, keepdims=True))
    ctx = ((e / e.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(s, hid)
    h1 = _ln(proj("attn_out", ctx) + x2, w["attn_norm.weight"], w["attn_norm.bias"])
    f = proj("intermediate", h1)
    f = f * 0.5 * (1.0 + _erf(f / np.float32(math.sqrt(2.0))))
    out = _ln(proj("output", f) + h1, w["out_norm.weight"], w["out_norm.bias"])
    return out[None]


def _conv(x, wt, b, stride):
    """3x3 pad-1 NCHW convolution by im2col + one matmul."""
    n, c, h, wd = x.shape
    o = wt.shape[0]
    oh, ow = (h - 1) // stride + 1, (wd - 1) // stride + 1
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.stack([xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
                     for i in range(3) for j in range(3)], axis=2).reshape(n, c * 9, oh * ow)
    # weight (o, c, 3, 3) -> (o, c*9) with taps innermost, matching the stack order
    return (wt.reshape(o, c * 9) @ cols).reshape(n, o, oh, ow) + b[:, None, None]


def numpy_convnet(w, x):
    h = np.maximum(_conv(x, w["c1.weight"], w["c1.bias"], 1), 0)
    h = np.maximum(_conv(h, w["c2.weight"], w["c2.bias"], 2), 0)
    h = np.maximum(_conv(h, w["c3.weight"], w["c3.bias"], 1), 0)
    return h.mean(axis=(2, 3)) @ w["fc.weight"].T + w["fc.bias"]


# ---------------------------------------------------------------------------------- torch
def torch_model(key: str, w: dict):
    import torch

    t = {k: torch.from_numpy(v) for k, v in w.items()}
    F = torch.nn.functional

    class Mlp(torch.nn.Module):
        def forward(self, x):
            h = F.relu(F.linear(x, t["fc1.weight"], t["fc1.bias"]))
            return F.linear(h, t["fc2.weight"], t["fc2.bias"])

    class Bert(torch.nn.Module):
        def forward(self, x):
            s = x.shape[1]

            def heads(y):
                return y.reshape(1, s, 12, 64).permute(0, 2, 1, 3)

            def proj(name, y):
                return F.linear(y, t[name + ".weight"], t[name + ".bias"])

            q, k, v = heads(proj("query", x)), heads(proj("key", x)), heads(proj("value", x))
            p = torch.softmax(q @ k.transpose(2, 3), dim=-1)
            ctx = (p @ v).permute(0, 2, 1, 3).reshape(1, s, 768)
            h1 = F.layer_norm(proj("attn_out", ctx) + x, (768,), t["attn_norm.weight"],
                              t["attn_norm.bias"], 1e-12)
            f = F.gelu(proj("intermediate", h1))
            return F.layer_norm(proj("output", f) + h1, (768,), t["out_norm.weight"],
                                t["out_norm.bias"], 1e-12)

    class Conv(torch.nn.Module):
        def forward(self, x):
            x = F.relu(F.conv2d(x, t["c1.weight"], t["c1.bias"], padding=1))
            x = F.relu(F.conv2d(x, t["c2.weight"], t["c2.bias"], stride=2, padding=1))
            x = F.relu(F.conv2d(x, t["c3.weight"], t["c3.bias"], padding=1))
            return F.linear(x.mean(dim=(2, 3)), t["fc.weight"], t["fc.bias"])

    return {"mlp": Mlp, "bert": Bert, "convnet": Conv}[key]().eval()


def torch_runner(key, w, x):
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(THREADS)
    m = torch_model(key, w)
    xt = torch.from_numpy(x)

    def run():
        with torch.no_grad():
            return m(xt).numpy()

    return run


def ort_session(key, w, example, dyn_axis: int, dyn_name: str):
    """An ONNX Runtime session for the torch model exported with a dynamic axis."""
    import onnxruntime as ort
    import torch

    f = io.BytesIO()
    with warnings.catch_warnings():  # the TorchScript exporter's deprecation / tracer notes
        warnings.simplefilter("ignore")
        torch.onnx.export(torch_model(key, w), (torch.from_numpy(example),), f,
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {dyn_axis: dyn_name}}, opset_version=17,
                          dynamo=False)
    so = ort.SessionOptions()
    so.intra_op_num_threads = THREADS
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(f.getvalue(), so, providers=["CPUExecutionProvider"])


# ---------------------------------------------------------------------------------- driver
MODELS = {
    # key: (title, module, input shape with the symbolic dim as a str, sizes, numpy reference)
    "mlp": ("MLP 784-128-10", MLP, ("n", 784), (1, 64, 1024), numpy_mlp),
    "bert": ("BERT-base layer", BertLayer, (1, "seq", 768), (32, 128, 512), numpy_bert),
    "convnet": ("convnet 3 conv", ConvNet, ("batch", 3, 32, 32), (1, 8, 32), numpy_convnet),
}


def build_model(key: str, bind_weights: bool):
    """(vm, weights, param names, compile seconds) for one model."""
    title, cls, shape, sizes, ref = MODELS[key]
    mod, params = cls().export_tvm({"forward": {"x": nn.spec.Tensor(shape, "float32")}})
    rng = np.random.default_rng(0)
    w = _weights(params, rng, scale_query=1 / 8 if key == "bert" else 1.0)
    names = [n for n, _ in params]
    t0 = time.perf_counter()
    if bind_weights:
        # the exporter names parameters with "_" where the module path has "."
        mod = relax.transform.BindParams(
            "forward", {n.replace(".", "_"): v for n, v in w.items()})(mod)
    ex = relax.build(mod, "llvm")
    compile_s = time.perf_counter() - t0
    return relax.VirtualMachine(ex, tvm.cpu()), w, names, compile_s


CLOCK = time.perf_counter  # --cpu-time: time.thread_time (the calling thread's CPU time)


def rel_err(got, want) -> float:
    return float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-6))


def bench(key: str, args, rows: list) -> None:
    title, _, shape, sizes, ref = MODELS[key]
    vm, w, names, compile_s = build_model(key, args.bind_weights)
    print(f"{title}: relax.build {compile_s:.2f} s (once, for every size)", flush=True)
    dyn_axis = next(k for k, d in enumerate(shape) if isinstance(d, str))
    rng = np.random.default_rng(1)
    sess = None
    for size in sizes:
        x = rng.standard_normal([size if isinstance(d, str) else d for d in shape])
        x = x.astype("float32")
        want = ref(w, x)
        vm_args = [tvm.nd.array(x)] + ([] if args.bind_weights else
                                       [tvm.nd.array(w[n]) for n in names])
        fn = vm["forward"]
        impls = {"minitvm": lambda fn=fn, a=vm_args: fn(*a).numpy(),
                 "numpy": lambda x=x: ref(w, x)}
        try:
            if sess is None:
                sess = ort_session(key, w, x, dyn_axis, shape[dyn_axis])
            impls["onnxruntime"] = lambda x=x, sess=sess: sess.run(None, {"x": x})[0]
        except ImportError:
            pass
        except Exception as e:  # noqa: BLE001 - a peer that fails is reported, not fatal
            print(f"  onnxruntime unavailable: {type(e).__name__}: {str(e)[:200]}")
        tr = torch_runner(key, w, x)
        if tr is not None:
            impls["torch"] = tr
        errs = {k: rel_err(f(), want) for k, f in impls.items()}
        times = {k: [t * 1e3 for t in v] for k, v in
                 settled_rounds(impls, args.rounds, args.reps, CLOCK).items()}
        med = {k: statistics.median(v) for k, v in times.items()}
        best = {k: min(v) for k, v in times.items()}
        rows.append((title, f"{shape[dyn_axis]}={size}", med, best, errs))
        print(f"  {shape[dyn_axis]}={size}: " + "  ".join(
            f"{k} {med[k]:.3f} ms (best {best[k]:.3f}, err {errs[k]:.0e})" for k in med),
            flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--models", default="mlp,bert,convnet")
    ap.add_argument("--threads", type=int, default=THREADS,
                    help="threads of every library (read before the imports)")
    ap.add_argument("--weights-as-args", dest="bind_weights", action="store_false",
                    help="pass the weights to the VM at run time (as the seed does) instead of "
                         "binding them as constants")
    ap.add_argument("--bind-weights", dest="bind_weights", action="store_true",
                    help="bind the weights as constants (the default)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time with the calling thread's CPU time (fair at --threads 1 on a "
                         "loaded machine: every library computes on the calling thread)")
    ap.set_defaults(bind_weights=True)
    args = ap.parse_args(argv)
    global CLOCK
    if args.cpu_time:
        CLOCK = time.thread_time
    rows: list = []
    for key in args.models.split(","):
        bench(key, args, rows)
    peers = ["numpy", "onnxruntime", "torch"]
    print()
    for label, col in (("median", 2), ("best round", 3)):
        print(f"\n{label}:")
        print(f"{'model':16} {'size':9} {'minitvm ms':>10} " +
              " ".join(f"{p + ' ms':>14} {'x/' + p[:4]:>7}" for p in peers) + f" {'max err':>8}")
        for row in rows:
            title, size, t, errs = row[0], row[1], row[col], row[4]
            line = f"{title:16} {size:9} {t['minitvm']:10.3f} "
            for p in peers:
                line += (f"{t[p]:14.3f} {t['minitvm'] / t[p]:7.2f} " if p in t
                         else f"{'-':>14} {'-':>7} ")
            print(line + f"{errs['minitvm']:8.0e}")
    print(f"\nx/peer = minitvm time / peer time (below 1: minitvm faster); {THREADS} threads; "
          f"{args.rounds} interleaved rounds of {args.reps}-run medians (median / best round); "
          "weights " + ("bound as constants" if args.bind_weights else "passed at run time"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
