"""relay.testing's model zoo: every workload type-checks with TVM's output shapes, small
variants compile and agree with the interpreter, and the LSTM matches a numpy LSTM."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay import testing


@pytest.mark.parametrize("name,kwargs,out", [
    ("vgg", dict(num_layers=11), (1, 1000)),
    ("vgg", dict(num_layers=16, batch_norm=True, num_classes=10), (1, 10)),
    ("squeezenet", dict(version="1.0"), (1, 1000)),
    ("squeezenet", dict(version="1.1", batch_size=2), (2, 1000)),
    ("dqn", dict(), (1, 18)),
    ("dcgan", dict(batch_size=2), (2, 3, 64, 64)),
    ("synthetic", dict(), (1, 864)),
    ("densenet", dict(batch_size=1, densenet_size=121), (1, 1000)),
    ("inception_v3", dict(), (1, 1000)),
    ("mobilenet", dict(layout="NHWC"), (1, 1000)),
])
def test_workloads_type_check(name, kwargs, out):
    mod, params = getattr(testing, name).get_workload(**kwargs)
    ty = mod["main"].checked_type.ret_type
    assert tuple(int(d) for d in ty.shape) == out
    assert all(p.name_hint in params for p in mod["main"].params if p.name_hint != "data")


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="num_layers"):
        testing.vgg.get_workload(num_layers=12)
    with pytest.raises(ValueError, match="version"):
        testing.squeezenet.get_workload(version="2.0")
    with pytest.raises(ValueError, match="size"):
        testing.densenet.get_workload(densenet_size=100)
    with pytest.raises(ValueError, match="power of two"):
        testing.dcgan.get_workload(oshape=(3, 48, 48))


@pytest.mark.parametrize("name,kwargs", [
    ("dqn", dict(image_shape=(4, 36, 36), num_actions=5)),
    ("synthetic", dict()),
    ("squeezenet", dict(version="1.1", image_shape=(3, 48, 48), num_classes=10)),
    ("dcgan", dict(oshape=(3, 16, 16), ngf=8, random_len=10)),
])
def test_small_workloads_build_and_match_interpreter(name, kwargs):
    mod, params = getattr(testing, name).get_workload(**kwargs)
    data = mod["main"].params[0].checked_type
    x = np.random.default_rng(0).uniform(-1, 1, [int(d) for d in data.shape]).astype("float32")
    want = relay.create_executor("debug", mod=mod).evaluate()(x, **params).numpy()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, "llvm", params=params)
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("data", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-5)


def test_lstm_matches_numpy():
    steps, hidden, batch = 4, 6, 2
    mod, params = testing.lstm.get_workload(steps, hidden, batch)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((steps, batch, hidden)).astype("float32")
    h, c = relay.create_executor("debug", mod=mod).evaluate()(x, **params)
    p = {k: v.numpy() for k, v in params.items()}

    def sig(v):
        return 1 / (1 + np.exp(-v))

    hn = cn = np.zeros((batch, hidden), "float32")
    for t in range(steps):
        g = x[t] @ p["i2h_weight"].T + p["i2h_bias"] + hn @ p["h2h_weight"].T + p["h2h_bias"]
        i, f, cell, o = np.split(g, 4, axis=1)
        cn = sig(f) * cn + sig(i) * np.tanh(cell)
        hn = sig(o) * np.tanh(cn)
    np.testing.assert_allclose(h.numpy(), hn, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c.numpy(), cn, rtol=1e-5, atol=1e-5)
