"""Task extraction leaves out the 1x1 convs the AVX2 pointwise kernels compute (they read no
conv knob, so tuning them would measure the same kernel over and over) and keeps the others."""

import numpy as np

import minitvm as tvm
from minitvm import relay, tune
from minitvm.schedule import common, conv_pointwise


def _model():
    x = relay.var("x", shape=(1, 16, 14, 14))
    w1 = relay.const(np.ones((32, 16, 1, 1), "float32"))
    w3 = relay.const(np.ones((32, 32, 3, 3), "float32"))
    y = relay.nn.relu(relay.nn.conv2d(x, w1, kernel_size=(1, 1)))
    y = relay.nn.conv2d(y, w3, kernel_size=(3, 3), padding=(1, 1))
    return tvm.IRModule.from_expr(relay.Function([x], y))


def test_pointwise_convs_are_not_tasks(monkeypatch):
    for isa in ("avx2", "avx512"):
        monkeypatch.setattr(common, "vector_isa", lambda isa=isa: isa)
        monkeypatch.setattr(conv_pointwise, "vector_isa", lambda isa=isa: isa)
        convs = sorted(tuple(t.workload[2]) for t in tune.extract_tasks(_model())
                       if t.workload[0] == "conv2d_nchw")
        kernels = [w[2:] for w in convs]
        assert (3, 3) in kernels, (isa, convs)
        assert ((1, 1) in kernels) == (not conv_pointwise.ENABLED[isa]), (isa, convs)
