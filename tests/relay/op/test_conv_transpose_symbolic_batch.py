"""Legalize of ``nn.conv2d_transpose`` with a symbolic (``Any``) batch: one ``nn.conv2d`` per
output phase all the same, the reshapes keeping the batch by ``0`` and the zero phases
``zeros_like`` another; compiled for the Relay VM and run at several batch sizes against
PyTorch."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.expr import Call
from minitvm.relay.expr_functor import dataflow_post_order
from minitvm.runtime import vm as runtime_vm

torch = pytest.importorskip("torch")

# (C, H, W), weight shape, attrs
CASES = {
    "k2s2": ((8, 5, 6), (8, 4, 2, 2), dict(strides=(2, 2))),
    "k4s2p1": ((8, 5, 6), (8, 4, 4, 4), dict(strides=(2, 2), padding=(1, 1))),
    "k3s2p1_op1": ((6, 5, 4), (6, 3, 3, 3), dict(strides=(2, 2), padding=(1, 1),
                                                 output_padding=(1, 1))),
    "grouped": ((8, 5, 5), (8, 2, 4, 4), dict(strides=(2, 2), padding=(1, 1), groups=4)),
    "depthwise": ((6, 5, 4), (6, 1, 3, 3), dict(strides=(2, 2), padding=(1, 1),
                                                output_padding=(1, 1), groups=6)),
    "dilated": ((3, 5, 6), (3, 2, 3, 3), dict(strides=(2, 2), padding=(1, 1),
                                              dilation=(2, 2))),  # zero phases and a crop
    "padding_past_filter": ((4, 6, 6), (4, 2, 3, 3), dict(padding=(3, 3), groups=2)),
}


def _mod(chw, wshape, attrs, weight=None):
    x = relay.var("x", shape=(relay.Any(), *chw))
    w = relay.var("w", shape=wshape)
    kernel = relay.const(weight) if weight is not None else w
    y = relay.nn.conv2d_transpose(x, kernel, **attrs)
    params = [x] if weight is not None else [x, w]
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, y)))


def _calls(expr) -> list[Call]:
    return [e for e in dataflow_post_order(expr) if isinstance(e, Call)]


def _torch(x, w, attrs):
    kw = {("stride" if k == "strides" else k): v for k, v in attrs.items()}
    return torch.nn.functional.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w),
                                                **kw).numpy()


@pytest.mark.parametrize("case", list(CASES))
def test_symbolic_batch_is_a_conv2d_per_phase(case):
    chw, wshape, attrs = CASES[case]
    mod = _mod(chw, wshape, attrs)
    legal = relay.transform.InferType()(relay.transform.Legalize()(mod))["main"]
    names = [c.op.name for c in _calls(legal.body)]
    assert "nn.conv2d_transpose" not in names and "nn.conv2d" in names
    interleaves = [c for c in _calls(legal.body) if c.op.name == "reshape"
                   and isinstance(c.args[0], Call) and c.args[0].op.name == "stack"]
    assert len(interleaves) == (0 if "strides" not in attrs else 3)  # 2 lines, then rows
    assert all(int(c.attrs.newshape[0]) == 0 for c in interleaves)
    assert tvm.ir.structural_equal(legal.checked_type, mod["main"].checked_type)


@pytest.mark.parametrize("constant", [True, False], ids=["const_weight", "weight_input"])
@pytest.mark.parametrize("case", list(CASES))
def test_symbolic_batch_on_the_vm_matches_torch(case, constant):
    chw, wshape, attrs = CASES[case]
    w = np.random.default_rng(0).standard_normal(wshape).astype("float32")
    mod = _mod(chw, wshape, attrs, w if constant else None)
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
    for batch in (1, 2, 5):
        x = np.random.default_rng(batch).standard_normal((batch, *chw)).astype("float32")
        got = vm.run(x) if constant else vm.run(x, w)
        want = _torch(x, w, attrs)
        assert got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)


def test_zero_phases_are_shaped_as_a_conv():
    chw, wshape, attrs = CASES["dilated"]
    legal = relay.transform.Legalize()(_mod(chw, wshape, attrs))["main"]
    zeros = [c for c in _calls(legal.body) if c.op.name == "zeros_like"]
    assert len(zeros) == 3 and all(z.args[0].op.name == "nn.conv2d" for z in zeros)
    assert "zeros" not in [c.op.name for c in _calls(legal.body)]


def test_symbolic_spatial_size_keeps_the_op():
    x = relay.var("x", shape=(relay.Any(), 4, relay.Any(), 5))
    w = relay.var("w", shape=(4, 3, 4, 4))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d_transpose(x, w, strides=(2, 2), padding=(1, 1)))))
    legal = relay.transform.Legalize()(mod)["main"]
    assert "nn.conv2d_transpose" in [c.op.name for c in _calls(legal.body)]
