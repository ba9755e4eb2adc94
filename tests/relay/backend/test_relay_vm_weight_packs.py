"""Relay VM kernels that take a constant weight in another layout (``Kernel.input_packs``) read
a copy transformed once (in the constant pool, or kept by a dynamic-shape kernel), as relay.build's
graph does, instead of the weight as written."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.runtime import vm as runtime_vm


def _conv_relu(batch, w):
    x = relay.var("x", shape=(batch, 16, 8, 8), dtype="float32")
    y = relay.nn.relu(relay.nn.conv2d(x, relay.const(w), kernel_size=(3, 3), padding=(1, 1),
                                      channels=32))
    return tvm.IRModule.from_expr(relay.Function([x], y))


def _reference(x, w):
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.stack([xp[:, :, i:i + 8, j:j + 8] for i in range(3) for j in range(3)], 2)
    return np.maximum(np.einsum("nckhw,ock->nohw", cols, w.reshape(32, 16, 9)), 0)


def test_static_and_dynamic_conv_weights_are_packed_once():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((32, 16, 3, 3)).astype("float32")
    for batch in (2, relay.Any()):
        exe = relay.vm.compile(_conv_relu(batch, w), "llvm")
        vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
        for n in ((2,) if isinstance(batch, int) else (1, 3)):
            x = rng.standard_normal((n, 16, 8, 8)).astype("float32")
            for _ in range(2):  # the second call reuses the transformed weight
                np.testing.assert_allclose(vm.run(x).numpy(), _reference(x, w), rtol=1e-4,
                                           atol=1e-4)
        kernel = exe.kernels[0]
        if isinstance(batch, int):
            assert kernel.input_packs, "the conv kernel takes its weight in another layout"
        else:
            packs = kernel.run._packs  # (a symbolic kernel: packed at build, for every shape)
            assert len(packs) == 1  # one transformed weight serves both input shapes
            assert all(p[1].shape != w.shape or not np.array_equal(p[1], w)
                       for p in packs.values())
