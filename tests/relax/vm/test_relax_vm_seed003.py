"""Seed 003 end to end: the nn.Module MLP exported with a symbolic batch, the seed's custom
ReluToGelu pass, relax.build once, run for several batch sizes against numpy."""

import math

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax.frontend import nn
from minitvm.relax.testing.tutorial import ReluToGelu, TutorialMLP

_erf = np.vectorize(math.erf)


def _weights(params, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal([int(d) for d in p.shape]) * 0.1).astype("float32")
            for _, p in params]


def _mlp(x, w, act):
    return act(x @ w[0].T + w[1]) @ w[2].T + w[3]


def _relu(v):
    return np.maximum(v, 0)


def _gelu(v):
    return 0.5 * v * (1 + _erf(v / math.sqrt(2)))


@pytest.fixture(scope="module")
def exported():
    return TutorialMLP().export_tvm({"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}})


@pytest.mark.parametrize("rewrite", [False, True])
def test_seed003_mlp_built_once_runs_every_batch(exported, rewrite):
    mod, params = exported
    if rewrite:
        mod = ReluToGelu()(mod)
    ex = relax.build(mod, target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    w = _weights(params)
    rng = np.random.default_rng(1)
    for n in (1, 7, 64):
        x = rng.standard_normal((n, 784)).astype("float32")
        out = vm["forward"](tvm.nd.array(x), *[tvm.nd.array(a) for a in w])
        assert out.shape == (n, 10)
        ref = _mlp(x.astype("float64"), [a.astype("float64") for a in w],
                   _gelu if rewrite else _relu)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_seed003_bad_batch_input(exported):
    mod, params = exported
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    w = _weights(params)
    with pytest.raises(ValueError, match=r"param=x.*dimension 1 must be 784, got 783"):
        vm["forward"](np.zeros((2, 783), "float32"), *w)
    with pytest.raises(ValueError, match=r"param=fc1_weight.*dimension 0 must be 128"):
        vm["forward"](np.zeros((2, 784), "float32"), w[0][:64], *w[1:])
