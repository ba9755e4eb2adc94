"""LegalizeOps of grouped (and depthwise) and dilated ``relax.nn.conv2d_transpose``: one grouped
or dilated conv2d PrimFunc per output phase (no gather), against PyTorch."""

import numpy as np
import pytest
from legalize_util import bindings, one_op_module, rand, run_legalized, tensor

from minitvm import relax
from minitvm.relax.op import nn
from minitvm.relax.transform import LegalizeOps

torch = pytest.importorskip("torch")


def _reference(x, w, strides, padding, output_padding, dilation, groups):
    """PyTorch's transposed conv, with (top, left, bottom, right) padding cropped from the
    unpadded result."""
    full = torch.nn.functional.conv_transpose2d(
        torch.from_numpy(x), torch.from_numpy(w), stride=strides, output_padding=output_padding,
        dilation=dilation, groups=groups).numpy()
    top, left, bottom, right = padding
    return full[:, :, top:full.shape[2] - bottom, left:full.shape[3] - right]


def _called(mod) -> list[str]:
    return [str(b.value.args[0].name_hint).rstrip("0123456789") for b in bindings(mod["main"])
            if getattr(getattr(b.value, "op", None), "name", "") == "relax.call_tir"]


# (data shape, weight shape, strides, padding, output_padding, dilation, groups)
CASES = [
    ((1, 8, 5, 5), (8, 2, 4, 4), (2, 2), (1, 1, 1, 1), (0, 0), (1, 1), 4),
    ((1, 6, 5, 4), (6, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1), 6),  # depthwise
    ((1, 4, 4, 5), (4, 2, 3, 2), (2, 1), (0, 1, 1, 0), (1, 0), (1, 1), 4),  # multiplier 2
    ((1, 3, 6, 6), (3, 2, 3, 3), (1, 1), (2, 2, 2, 2), (0, 0), (2, 2), 1),
    ((1, 3, 5, 6), (3, 2, 3, 3), (2, 2), (1, 1, 1, 1), (0, 1), (2, 2), 1),  # zero phases
    ((1, 4, 5, 4), (4, 3, 4, 3), (2, 3), (2, 1, 0, 2), (1, 2), (3, 2), 2),
    ((1, 4, 6, 6), (4, 2, 3, 3), (1, 1), (3, 3, 3, 3), (0, 0), (1, 1), 2),  # padding past it
]


@pytest.mark.parametrize("constant", [False, True])
@pytest.mark.parametrize("shape,wshape,strides,padding,out_pad,dilation,groups", CASES)
def test_conv2d_transpose_is_a_conv2d_per_phase(shape, wshape, strides, padding, out_pad,
                                                dilation, groups, constant):
    x, w = rand(shape), rand(wshape)
    kw = dict(strides=strides, padding=padding, output_padding=out_pad, dilation=dilation,
              groups=groups)
    if constant:  # sliced and regrouped at legalization
        mod = one_op_module(lambda a: nn.conv2d_transpose(a, relax.const(w), **kw),
                            [tensor(shape)])
        args = [x]
    else:
        mod = one_op_module(lambda a, b: nn.conv2d_transpose(a, b, **kw),
                            [tensor(shape), tensor(wshape)])
        args = [x, w]
    after = LegalizeOps()(mod)
    called = _called(after)
    assert "conv2d_transpose" not in called and "conv2d" in called
    if constant:
        assert not {"take", "permute_dims"} & set(called)
    got = run_legalized(after, args)
    np.testing.assert_allclose(got, _reference(x, w, strides, padding, out_pad, dilation, groups),
                               rtol=1e-4, atol=1e-4)

