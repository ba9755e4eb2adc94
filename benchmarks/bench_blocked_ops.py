"""A module altered by hand under an x86 ``-mcpu`` (AlterOpLayout's blocked
``nn.contrib_conv2d_NCHWc`` / ``contrib_depthwise_conv2d_NCHWc`` / ``contrib_dense_pack``) built
by relay.build, against the plain relay.build of the same model: both native (ConvertBlockedOps
takes the blocked ops back to NCHW / NC), outputs compared, the optimized Relay compared ("same
ops": the same op calls, fused the same way, as the plain build's), run times interleaved in
one process, one runtime thread, wall clock, medians; ratio altered / plain.

    python benchmarks/bench_blocked_ops.py [--rounds 7] [--target "llvm -mcpu=skylake-avx512"]

Models: a ResNet-like basic block (64 channels, 56x56), a MobileNetV2-like inverted residual
(32 -> 192 -> depthwise -> 32 at 28x28), an MLP (batch 8, 512-1024-1024-10).

Measured (shared 2-core Xeon VM, 9 rounds, skylake-avx512 rules), plain / altered ms: resnet_block
1.848 / 1.899 (1.03x), mobilenet_block 0.169 / 0.173 (1.02x), mlp 0.227 / 0.226 (0.99x); max
error 0, same ops in all three (the ratios are noise: the kernels are the same). Before
ConvertBlockedOps the altered modules ran their blocked ops in numpy.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from interleave import settled_rounds  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.runtime import threadpool  # noqa: E402

RNG = np.random.default_rng(0)


def _w(*shape):
    return (RNG.standard_normal(shape) * (2.0 / np.prod(shape[1:])) ** 0.5).astype("float32")


def resnet_block():
    x = relay.var("x", shape=(1, 64, 56, 56))
    names = ("w1", "w2", "b1", "b2")
    w1, w2 = (relay.var(n, shape=(64, 64, 3, 3)) for n in names[:2])
    b1, b2 = (relay.var(n, shape=(64,)) for n in names[2:])
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w1, padding=(1, 1)), b1))
    y = relay.nn.bias_add(relay.nn.conv2d(y, w2, padding=(1, 1)), b2)
    y = relay.nn.relu(relay.add(y, x))
    params = {"w1": _w(64, 64, 3, 3), "w2": _w(64, 64, 3, 3), "b1": _w(64, 1)[:, 0],
              "b2": _w(64, 1)[:, 0]}
    return relay.Function([x, w1, w2, b1, b2], y), params


def mobilenet_block():
    x = relay.var("x", shape=(1, 32, 28, 28))
    w1, w2 = relay.var("w1", shape=(192, 32, 1, 1)), relay.var("w2", shape=(192, 1, 3, 3))
    w3 = relay.var("w3", shape=(32, 192, 1, 1))
    y = relay.clip(relay.nn.conv2d(x, w1), 0.0, 6.0)
    y = relay.clip(relay.nn.conv2d(y, w2, padding=(1, 1), groups=192, channels=192,
                                   kernel_size=(3, 3)), 0.0, 6.0)
    y = relay.add(relay.nn.conv2d(y, w3), x)
    params = {"w1": _w(192, 32, 1, 1), "w2": _w(192, 1, 3, 3), "w3": _w(32, 192, 1, 1)}
    return relay.Function([x, w1, w2, w3], y), params


def mlp():
    x = relay.var("x", shape=(8, 512))
    ws = [relay.var(f"w{i}", shape=s) for i, s in enumerate([(1024, 512), (1024, 1024),
                                                              (10, 1024)])]
    y = relay.nn.relu(relay.nn.dense(x, ws[0]))
    y = relay.nn.relu(relay.nn.dense(y, ws[1]))
    y = relay.nn.dense(y, ws[2])
    params = {f"w{i}": _w(*[int(d) for d in w.type_annotation.shape]) for i, w in enumerate(ws)}
    return relay.Function([x, *ws], y), params


MODELS = {"resnet_block": resnet_block, "mobilenet_block": mobilenet_block, "mlp": mlp}


def _blocked_ops(mod) -> list[str]:
    text = mod.astext()
    return [op for op in ("contrib_conv2d_NCHWc", "contrib_depthwise_conv2d_NCHWc",
                          "contrib_dense_pack") if op in text]


def _op_calls(mod) -> list[str]:
    """The op of every call in the optimized module's text, in order (attrs left out: the
    converted convs keep ``channels``, the dense its ``out_dtype``)."""
    return re.findall(r"([A-Za-z_][\w.]*)\(%", mod.astext(show_meta_data=False))


def _build(mod, params):
    t0 = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    seconds = time.perf_counter() - t0
    fallback = lib.get_lib().fallback_functions
    if fallback:
        raise SystemExit(f"numpy fallbacks: {fallback}")
    return graph_executor.GraphModule(lib["default"](tvm.cpu())), seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--target", default="llvm -mcpu=skylake-avx512",
                    help="the x86 target AlterOpLayout runs under")
    ap.add_argument("--models", default=",".join(MODELS))
    args = ap.parse_args()
    threadpool.set_num_threads(1)
    print(f"{'model':16s} {'blocked ops':48s} {'plain ms':>9s} {'altered ms':>10s} "
          f"{'ratio':>6s} {'max err':>8s} same ops")
    for name in args.models.split(","):
        func, params = MODELS[name]()
        mod = relay.transform.InferType()(tvm.IRModule.from_expr(func))
        with tvm.target.Target(args.target), tvm.transform.PassContext(opt_level=3):
            altered = relay.transform.AlterOpLayout()(mod)
        ops = _blocked_ops(altered)
        with tvm.transform.PassContext(opt_level=3):
            same = _op_calls(relay.optimize(mod, "llvm", params)[0]) == \
                _op_calls(relay.optimize(altered, "llvm", params)[0])
        plain_g, _ = _build(mod, params)
        alt_g, _ = _build(altered, params)
        shape = [int(d) for d in func.params[0].type_annotation.shape]
        x = RNG.standard_normal(shape).astype("float32")
        outs = []
        for g in (plain_g, alt_g):
            g.set_input("x", x)
            g.run()
            outs.append(g.get_output(0).numpy())
        err = float(np.abs(outs[0] - outs[1]).max() / (np.abs(outs[0]).max() + 1e-30))
        times = settled_rounds({"plain": plain_g.run, "altered": alt_g.run}, args.rounds, 9,
                               clock=time.perf_counter)
        p, a = (statistics.median(times[k]) * 1e3 for k in ("plain", "altered"))
        print(f"{name:16s} {','.join(ops):48s} {p:9.3f} {a:10.3f} {a / p:6.3f} {err:8.1e} {same}")


if __name__ == "__main__":
    main()
