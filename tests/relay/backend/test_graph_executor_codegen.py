"""The graph codegen's weight transforms: a constant read by several kernel calls in one packed
layout is packed and stored once (an unrolled RNN reads its recurrent weight at every step)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.backend.graph_executor_codegen import _transform_key
from minitvm.schedule import gemm


def _build(func):
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(func), target="llvm")
    return lib, graph_executor.GraphModule(lib["default"](tvm.cpu(0)))


def _packed_shapes(lib, n, k):
    nr = gemm._dense_nr(n)
    packed = (-(-n // nr), k, nr)
    return [v.numpy().shape for v in lib.get_params().values() if v.numpy().shape == packed]


def _rnn_steps(weights, steps, width=256):
    """h_{t+1} = tanh(h_t . W_t^T), W_t cycling through ``weights`` (shared constants)."""
    x = relay.var("x", shape=(1, width))
    consts = [relay.const(w) for w in weights]
    h = x
    for t in range(steps):
        h = relay.tanh(relay.nn.dense(h, consts[t % len(consts)]))
    return relay.Function([x], h)


def _numpy_steps(xv, weights, steps):
    h = xv
    for t in range(steps):
        h = np.tanh(h @ weights[t % len(weights)].T)
    return h


def test_weight_read_by_every_step_is_packed_once():
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((256, 256)) * 0.1).astype("float32")
    lib, m = _build(_rnn_steps([w], 6))
    assert len(_packed_shapes(lib, 256, 256)) == 1
    # every dense call reads the same parameter node
    plan = m._plan
    weight_entries = {ins[1] for name, _, ins, _ in plan["steps"] if "dense" in name}
    assert len(weight_entries) == 1
    xv = rng.standard_normal((1, 256)).astype("float32")
    m.run(x=xv)
    np.testing.assert_allclose(m.get_output(0).numpy(), _numpy_steps(xv, [w], 6), rtol=1e-4,
                               atol=1e-5)


def test_two_shared_weights_keep_their_own_packed_copies():
    rng = np.random.default_rng(1)
    ws = [(rng.standard_normal((256, 256)) * 0.1).astype("float32") for _ in range(2)]
    lib, m = _build(_rnn_steps(ws, 6))
    assert len(_packed_shapes(lib, 256, 256)) == 2
    xv = rng.standard_normal((1, 256)).astype("float32")
    m.run(x=xv)
    np.testing.assert_allclose(m.get_output(0).numpy(), _numpy_steps(xv, ws, 6), rtol=1e-4,
                               atol=1e-5)


def test_transform_key_is_by_value():
    a, b, c = gemm._PackB(32), gemm._PackB(32), gemm._PackB(16)
    assert _transform_key(a) == _transform_key(b)
    assert _transform_key(a) != _transform_key(c)
    assert _transform_key(gemm._PackB(32, transpose_b=False)) != _transform_key(a)

    class Unhashable:
        def __init__(self):
            self.table = [1, 2]

        def __call__(self, w):
            return w

    u = Unhashable()
    assert _transform_key(u) is u  # (falls back to the object's identity)


def test_pytorch_lstm_stores_each_recurrent_weight_once():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)

    class Seq(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = torch.nn.LSTM(64, 128, 2, batch_first=True)

        def forward(self, v):
            return self.rnn(v)[0]

    rnn = Seq().eval()
    x = torch.randn(1, 12, 64)
    with torch.no_grad():
        traced = torch.jit.trace(rnn, (x,), check_trace=False)
    mod, params = relay.frontend.from_pytorch(traced, [("x", ((1, 12, 64), "float32"))])
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    # one packed [512, 128] recurrent weight per layer (and layer 2's input projection, of the
    # same shape), not one per time step
    assert len(_packed_shapes(lib, 512, 128)) <= 3
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(x=x.numpy())
    with torch.no_grad():
        want = rnn(x).numpy()
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-5)


def test_a_value_dependent_shape_names_the_node_and_the_vm():
    # argwhere's row count depends on the values: the graph executor cannot plan it, the VM can
    from minitvm.relay.backend.graph_executor_codegen import GraphCodegenError

    x = relay.var("x", shape=(3, 4))
    found = relay.argwhere(relay.greater(x, relay.const(0.0)))
    mod = tvm.IRModule.from_expr(relay.Function([x], found))
    with pytest.raises(GraphCodegenError, match=r"needs static shapes.*argwhere.*relay.vm.compile"):
        relay.build(mod, target="llvm")


def test_weight_transforms_run_once_each_on_the_pack_threads(monkeypatch):
    """The transforms start on the codegen's threads once the kernels are lowered, one per
    (weight, layout), and the emit walk takes their results."""
    calls = []
    pack = gemm._PackB.__call__

    def counted(self, w):
        import threading

        calls.append(threading.current_thread().name)
        return pack(self, w)

    monkeypatch.setattr(gemm._PackB, "__call__", counted)
    rng = np.random.default_rng(2)
    ws = [(rng.standard_normal((256, 256)) * 0.1).astype("float32") for _ in range(2)]
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.compile_jobs": 1}):
        lib = relay.build(tvm.IRModule.from_expr(_rnn_steps(ws, 6)), target="llvm")
    assert len(calls) == 2 and all(n.startswith("minitvm-pack") for n in calls), calls
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    xv = rng.standard_normal((1, 256)).astype("float32")
    m.run(x=xv)
    np.testing.assert_allclose(m.get_output(0).numpy(), _numpy_steps(xv, ws, 6), rtol=1e-4,
                               atol=1e-5)


def test_a_failing_weight_transform_fails_the_build(monkeypatch):
    def broken(self, w):
        raise ValueError("cannot pack this weight")

    monkeypatch.setattr(gemm._PackB, "__call__", broken)
    w = np.ones((256, 256), "float32")
    with pytest.raises(ValueError, match="cannot pack this weight"):
        _build(_rnn_steps([w], 2))
