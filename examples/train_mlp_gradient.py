"""Train a small MLP with gradients from ``relay.transform.gradient``, compiled by relay.build.

The loss program ``mean((relu(x W1^T + b1) W2^T + b2 - y)^2)`` is differentiated (first-order
mode: a plain dataflow program), compiled once with ``relay.build`` for llvm, and run by the
graph executor for a few SGD steps on a synthetic regression task. The loss must go down, and
the gradients are checked against PyTorch autograd on the same weights (finite differences when
torch is not installed); the higher-order gradient is checked too, in the VM.

    python examples/train_mlp_gradient.py [--steps 30] [--lr 0.1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor

BATCH, IN, HIDDEN, OUT = 32, 8, 16, 2
PARAMS = ["w1", "b1", "w2", "b2"]


def loss_function() -> relay.Function:
    """The training loss of the MLP as a Relay function of data, target and weights."""
    x = relay.var("x", shape=(BATCH, IN))
    y = relay.var("y", shape=(BATCH, OUT))
    w1 = relay.var("w1", shape=(HIDDEN, IN))
    b1 = relay.var("b1", shape=(HIDDEN,))
    w2 = relay.var("w2", shape=(OUT, HIDDEN))
    b2 = relay.var("b2", shape=(OUT,))
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w1), b1))
    pred = relay.nn.bias_add(relay.nn.dense(h, w2), b2)
    diff = relay.subtract(pred, y)
    return relay.Function([x, y, w1, b1, w2, b2], relay.mean(relay.multiply(diff, diff)))


def synthetic_task(rng):
    x = rng.standard_normal((BATCH, IN)).astype("float32")
    true_w = rng.standard_normal((OUT, IN)).astype("float32") * 0.5
    y = np.tanh(x @ true_w.T).astype("float32")
    return x, y


def init_weights(rng) -> dict:
    return {
        "w1": (rng.standard_normal((HIDDEN, IN)) * 0.3).astype("float32"),
        "b1": np.zeros(HIDDEN, "float32"),
        "w2": (rng.standard_normal((OUT, HIDDEN)) * 0.3).astype("float32"),
        "b2": np.zeros(OUT, "float32"),
    }


def compile_gradient(mode: str = "first_order"):
    """``gradient`` of the loss, built with relay.build; returns a step function."""
    grad_fn = relay.transform.gradient(loss_function(), mode=mode)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(grad_fn))
    # the gradient is a let chain; graph form lets the graph executor run it and FuseOps fuse it
    mod = relay.transform.ToGraphNormalForm()(mod)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    gmod = graph_executor.GraphModule(lib["default"](tvm.cpu()))

    def run(x, y, weights):
        gmod.set_input("x", x)
        gmod.set_input("y", y)
        for k in PARAMS:
            gmod.set_input(k, weights[k])
        gmod.run()
        # outputs are flattened: loss, then one gradient per parameter (x, y, w1, b1, w2, b2)
        outs = [gmod.get_output(i).numpy() for i in range(gmod.get_num_outputs())]
        return float(outs[0]), dict(zip(["x", "y"] + PARAMS, outs[1:], strict=True))

    return run


def higher_order_grads(x, y, weights):
    """The same gradients from the higher-order mode (references, closures) run in the VM."""
    grad_fn = relay.transform.gradient(loss_function(), mode="higher_order")
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(grad_fn))
    res = relay.create_executor("vm", mod=mod).evaluate()(x, y, *[weights[k] for k in PARAMS])
    return float(res[0].numpy()), [g.numpy() for g in res[1]][2:]


def reference_grads(x, y, weights):
    """Loss and weight gradients from PyTorch autograd, or central finite differences."""
    try:
        import torch
    except ImportError:
        return "finite differences", _finite_differences(x, y, weights)
    t = {k: torch.tensor(v, requires_grad=True) for k, v in weights.items()}
    h = torch.relu(torch.tensor(x) @ t["w1"].T + t["b1"])
    loss = (((h @ t["w2"].T + t["b2"]) - torch.tensor(y)) ** 2).mean()
    loss.backward()
    return "torch autograd", [t[k].grad.numpy() for k in PARAMS]


def _numpy_loss(x, y, w):
    h = np.maximum(x @ w["w1"].T + w["b1"], 0)
    return float((((h @ w["w2"].T + w["b2"]) - y) ** 2).mean())


def _finite_differences(x, y, weights, eps=1e-3):
    out = []
    w64 = {k: v.astype("float64") for k, v in weights.items()}
    for k in PARAMS:
        g = np.zeros_like(w64[k])
        for idx in np.ndindex(g.shape):
            old = w64[k][idx]
            w64[k][idx] = old + eps
            up = _numpy_loss(x, y, w64)
            w64[k][idx] = old - eps
            down = _numpy_loss(x, y, w64)
            w64[k][idx] = old
            g[idx] = (up - down) / (2 * eps)
        out.append(g)
    return out


def main(steps: int = 30, lr: float = 0.1, seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    x, y = synthetic_task(rng)
    weights = init_weights(rng)
    t0 = time.perf_counter()
    step = compile_gradient()
    print(f"gradient + relay.build: {time.perf_counter() - t0:.2f} s")

    loss, grads = step(x, y, weights)
    how, ref = reference_grads(x, y, weights)
    for k, r in zip(PARAMS, ref, strict=True):
        np.testing.assert_allclose(grads[k], r, rtol=1e-4, atol=1e-5, err_msg=k)
    print(f"gradients match {how} (rtol 1e-4)")
    ho_loss, ho = higher_order_grads(x, y, weights)
    for k, g in zip(PARAMS, ho, strict=True):
        np.testing.assert_allclose(grads[k], g, rtol=1e-4, atol=1e-6, err_msg=k)
    print("higher-order gradients (VM) match the compiled first-order ones")

    losses = []
    t0 = time.perf_counter()
    for i in range(steps):
        loss, grads = step(x, y, weights)
        losses.append(loss)
        for k in PARAMS:
            weights[k] = weights[k] - lr * grads[k]
        if i % 5 == 0 or i == steps - 1:
            print(f"step {i:3d}  loss {loss:.5f}")
    print(f"{steps} SGD steps: {time.perf_counter() - t0:.3f} s")
    assert losses[-1] < losses[0], "the loss did not decrease"
    print(f"loss {losses[0]:.5f} -> {losses[-1]:.5f}")
    return losses


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--lr", type=float, default=0.1)
    args = ap.parse_args()
    main(args.steps, args.lr)
