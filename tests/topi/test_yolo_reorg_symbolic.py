"""``vision.yolo_reorg`` over run-time sizes in the Relay VM: one symbolic kernel (the type rule
states the divisibility of channels, height and width for each call to check) gives Darknet's
order at every size, and a size the stride does not divide is refused, as the interpreter
refuses it."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend.vm.kernels import dynamic_kernel_counts
from minitvm.runtime.vm import VirtualMachine
from minitvm.topi.reference.vision import reorg_np


@pytest.mark.parametrize("stride", [2, 3])
def test_one_symbolic_kernel_for_every_size(stride):
    x = relay.var("x", shape=(relay.Any(),) * 4, dtype="float32")
    f = relay.Function([x], relay.vision.yolo_reorg(relay.nn.relu(x), stride))
    exe = relay.vm.compile(tvm.IRModule.from_expr(f), target="llvm")
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    vm = VirtualMachine(exe, tvm.cpu())
    s2 = stride * stride
    rng = np.random.default_rng(stride)
    for shape in [(1, s2, stride, stride), (2, 2 * s2, 2 * stride, 3 * stride),
                  (3, 3 * s2, 4 * stride, stride)]:
        xv = rng.standard_normal(shape).astype("float32")
        np.testing.assert_array_equal(vm.run(xv).numpy(), reorg_np(np.maximum(xv, 0), stride))
    for bad in [(1, s2 + 1, stride, stride), (1, s2, stride + 1, stride),
                (1, s2, stride, 2 * stride - 1)]:
        with pytest.raises(ValueError, match="not divisible by"):
            vm.run(np.zeros(bad, "float32"))


def test_static_shapes_still_type_and_refuse():
    x = relay.var("x", shape=(1, 6, 4, 4), dtype="float32")
    with pytest.raises(TypeError, match="channels 6 .* not divisible by 4"):
        relay.transform.InferType()(tvm.IRModule.from_expr(
            relay.Function([x], relay.vision.yolo_reorg(x, 2))))
