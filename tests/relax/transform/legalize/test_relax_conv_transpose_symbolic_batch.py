"""LegalizeOps of ``relax.nn.conv2d_transpose`` with a symbolic batch: still one conv2d per
output phase (no gather), the batch carried through zeros, stack, reshape and crop; built and
run on the VM at several batch sizes against PyTorch."""

import numpy as np
import pytest
from legalize_util import bindings, one_op_module, rand, sym, tensor

import minitvm as tvm
from minitvm import relax
from minitvm.relax.op import nn
from minitvm.relax.transform import LegalizeOps

torch = pytest.importorskip("torch")


def _called(mod) -> list[str]:
    return [str(b.value.args[0].name_hint).rstrip("0123456789") for b in bindings(mod["main"])
            if getattr(getattr(b.value, "op", None), "name", "") == "relax.call_tir"]


# (C, H, W), weight shape, attrs
CASES = {
    "k2s2": ((8, 5, 6), (8, 4, 2, 2), dict(strides=2)),
    "k4s2p1": ((8, 5, 6), (8, 4, 4, 4), dict(strides=2, padding=1)),
    "k3s2p1_op1": ((6, 5, 4), (6, 3, 3, 3), dict(strides=2, padding=1, output_padding=1)),
    "grouped": ((8, 5, 5), (8, 2, 4, 4), dict(strides=2, padding=1, groups=4)),
    "depthwise": ((6, 5, 4), (6, 1, 3, 3), dict(strides=2, padding=1, output_padding=1,
                                                groups=6)),
    "dilated": ((3, 5, 6), (3, 2, 3, 3), dict(strides=2, padding=1, dilation=2)),  # zeros
    "padding_past_filter": ((4, 6, 6), (4, 2, 3, 3), dict(padding=3, groups=2)),
}


def _module(chw, wshape, attrs, weight):
    (n,) = sym("n")
    if weight is not None:
        return one_op_module(lambda a: nn.conv2d_transpose(a, relax.const(weight), **attrs),
                             [tensor([n, *chw])])
    return one_op_module(lambda a, b: nn.conv2d_transpose(a, b, **attrs),
                         [tensor([n, *chw]), tensor(wshape)])


@pytest.mark.parametrize("constant", [True, False], ids=["const_weight", "weight_input"])
@pytest.mark.parametrize("case", list(CASES))
def test_symbolic_batch_is_a_conv2d_per_phase(case, constant):
    chw, wshape, attrs = CASES[case]
    w = rand(wshape)
    mod = _module(chw, wshape, attrs, w if constant else None)
    after = LegalizeOps()(mod)
    called = _called(after)
    assert "conv2d" in called and not any(f.startswith("conv2d_transpose") for f in called)
    if constant:  # the filter slices are constants
        assert not {"take", "transpose"} & set(called)
    assert tvm.ir.structural_equal(after["main"].ret_struct_info, mod["main"].ret_struct_info)

    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    torch_attrs = {("stride" if k == "strides" else k): v for k, v in attrs.items()}
    for batch in (1, 2, 5):
        x = np.random.default_rng(batch).standard_normal((batch, *chw)).astype("float32")
        args = [tvm.nd.array(x)] + ([] if constant else [tvm.nd.array(w)])
        got = vm["main"](*args).numpy()
        want = torch.nn.functional.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w),
                                                    **torch_attrs).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_zero_phases_take_the_symbolic_batch():
    chw, wshape, attrs = CASES["dilated"]
    after = LegalizeOps()(_module(chw, wshape, attrs, rand(wshape)))
    (n,) = after["main"].params[0].struct_info.shape.values[:1]
    zeros = [b.value for b in bindings(after["main"])
             if getattr(getattr(b.value, "op", None), "name", "") == "relax.call_tir"
             and b.value.args[0].name_hint.startswith("zeros")]
    assert len(zeros) == 3
    for call in zeros:
        assert call.sinfo_args[0].shape.values[0].same_as(n)


def test_symbolic_spatial_size_keeps_the_gather():
    (n, h) = sym("n", "h")
    mod = one_op_module(lambda a, b: nn.conv2d_transpose(a, b, strides=2, padding=1),
                        [tensor([n, 4, h, 5]), tensor((4, 3, 4, 4))])
    assert "conv2d_transpose" in _called(LegalizeOps()(mod))
