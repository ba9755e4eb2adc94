"""What LegalizeOps makes the VM check when it runs, where a kernel over the wrong sizes would
read what is not there: reflect / edge pads of an axis that is empty (numpy raises; a static 0
is refused when typed, a symbolic one by ``vm.builtin.check_pad_source`` before the kernel), and
a conv's data channels tied to the weight's (a ``match_cast`` named ``<op>_data_channels``) where
either count is symbolic."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.op import nn
from minitvm.relax.transform import LegalizeOps


def _func(params, body):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            y = bb.emit_output(body(*params))
        bb.emit_func_output(y)
    return tvm.IRModule({"main": bb.get()["main"]})


def _vm(mod):
    return relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())


def _tensor(shape, dtype="float32"):
    return relax.TensorStructInfo(shape, dtype)


# ------------------------------------------------------------------ reflect / edge pads
@pytest.mark.parametrize("mode", ["reflect", "edge"])
def test_pad_of_a_static_empty_axis_is_refused_when_typed(mode):
    x = relax.Var("x", _tensor([0, 3]))
    with pytest.raises(Exception, match=rf"relax.nn.pad: cannot {mode}-pad axis 0 of "
                                        r"R.Tensor\(\(0, 3\), dtype=\"float32\"\) by \(1, 2\): "
                                        r"the axis is empty.*pad_mode='constant'"):
        _func([x], lambda v: nn.pad(v, [1, 2, 0, 0], pad_mode=mode))
    # an unpadded empty axis, and constant padding of one, are fine
    _func([x], lambda v: nn.pad(v, [0, 0, 1, 1], pad_mode=mode))
    _func([x], lambda v: nn.pad(v, [1, 2, 0, 0]))


@pytest.mark.parametrize("mode", ["reflect", "edge"])
def test_pad_of_a_symbolic_axis_empty_at_run_time_raises(mode):
    n = tir.Var("n", "int64")
    x = relax.Var("x", _tensor([n, 3]))
    mod = _func([x], lambda v: nn.pad(v, [1, 2, 1, 1], pad_mode=mode))
    text = LegalizeOps()(mod).script()
    assert text.count("vm.builtin.check_pad_source") == 1 and f'"{mode}"' in text
    vm = _vm(mod)
    for k in (3, 0, 1, 0, 4):  # one build: the error does not stick, nor a good size
        xv = np.arange(3 * k, dtype="float32").reshape(k, 3)
        if k == 0:
            with pytest.raises(ValueError, match=rf"pad: cannot {mode}-pad axis 0 of a tensor "
                                                 r"of shape \(0, 3\): the axis is empty"):
                vm["main"](tvm.nd.array(xv))
        else:
            np.testing.assert_array_equal(vm["main"](tvm.nd.array(xv)).numpy(),
                                          np.pad(xv, ((1, 2), (1, 1)), mode=mode))


def test_constant_pad_and_static_sizes_need_no_check():
    n = tir.Var("n", "int64")
    sym = LegalizeOps()(_func([relax.Var("x", _tensor([n, 3]))],
                              lambda v: nn.pad(v, [1, 1, 0, 0]))).script()
    static = LegalizeOps()(_func([relax.Var("x", _tensor([2, 3]))],
                                 lambda v: nn.pad(v, [1, 1, 0, 0], pad_mode="reflect"))).script()
    unpadded = LegalizeOps()(_func([relax.Var("x", _tensor([n, 3]))],
                                   lambda v: nn.pad(v, [0, 0, 1, 1], pad_mode="edge"))).script()
    assert "check_pad_source" not in sym + static + unpadded


# ------------------------------------------------------------------ conv channel ties
def _conv_mod(weight_in):
    n, c = tir.Var("n", "int64"), tir.Var("c", "int64")
    x = relax.Var("x", _tensor([n, c, 6, 6]))
    w = relax.Var("w", _tensor([4, weight_in, 3, 3]))
    return _func([x, w], lambda a, b: nn.conv2d(a, b, padding=1))


def _conv_ref(x, w):
    out = np.zeros((x.shape[0], w.shape[0], x.shape[2], x.shape[3]), "float64")
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + x.shape[2], j:j + x.shape[3]],
                             w[:, :, i, j])
    return out


@pytest.mark.parametrize("weight_in", [3, "c2"], ids=["static", "symbolic"])
def test_conv_data_channels_tied_to_the_weight(weight_in):
    if weight_in == "c2":
        weight_in = tir.Var("c2", "int64")
    mod = _conv_mod(weight_in)
    text = LegalizeOps()(mod).script()
    cast = "3" if isinstance(weight_in, int) else "c2"
    assert f"= R.match_cast(x, R.Tensor((n, {cast}, 6, 6)" in text
    assert "R.call_tir(cls.conv2d, (conv2d_data_channels, w)" in text
    vm = _vm(mod)
    rng = np.random.default_rng(0)
    for cx, cw in ((3, 3), (4, 3), (3, 4), (2, 3), (3, 3)):
        x = rng.standard_normal((2, cx, 6, 6)).astype("float32")
        w = rng.standard_normal((4, cw, 3, 3)).astype("float32")
        args = (tvm.nd.array(x), tvm.nd.array(w))
        if cx == cw:
            np.testing.assert_allclose(vm["main"](*args).numpy(), _conv_ref(x, w), rtol=1e-4,
                                       atol=1e-4)
        elif isinstance(weight_in, int) and cw != weight_in:  # (the parameter's own check)
            with pytest.raises(ValueError, match=r"param=w.*dimension 1 must be 3, got 4"):
                vm["main"](*args)
        else:
            with pytest.raises(ValueError, match=rf"var=conv2d_data_channels.*dimension 1 "
                                                 rf"(must be {cw}, got {cx}|is {cx} but the "
                                                 rf"annotation requires {cw})"):
                vm["main"](*args)


def test_conv_with_provably_equal_channels_is_not_cast():
    n, c = tir.Var("n", "int64"), tir.Var("c", "int64")
    x = relax.Var("x", _tensor([n, c, 6, 6]))
    w = relax.Var("w", _tensor([4, c, 3, 3]))
    text = LegalizeOps()(_func([x, w], lambda a, b: nn.conv2d(a, b))).script()
    assert "match_cast" not in text
    static = LegalizeOps()(_func([relax.Var("x", _tensor([2, 3, 6, 6])),
                                  relax.Var("w", _tensor([4, 3, 3, 3]))],
                                 lambda a, b: nn.conv2d(a, b))).script()
    assert "match_cast" not in static


def test_grouped_and_transposed_convs_tie_their_channels():
    """Grouped: the data's channels are I x groups; transposed: the weight's I."""
    n, c = tir.Var("n", "int64"), tir.Var("c", "int64")
    x = relax.Var("x", _tensor([n, c, 6, 6]))
    grouped = LegalizeOps()(_func([x, relax.Var("w", _tensor([4, 2, 3, 3]))],
                                  lambda a, b: nn.conv2d(a, b, groups=2))).script()
    assert "conv2d_data_channels: R.Tensor((n, 4, 6, 6), dtype=\"float32\") = R.match_cast(x" \
        in grouped
    x = relax.Var("x", _tensor([n, c, 6, 6]))
    mod = _func([x, relax.Var("w", _tensor([3, 5, 2, 2]))],
                lambda a, b: nn.conv2d_transpose(a, b, strides=2))
    assert "conv2d_transpose_data_channels: R.Tensor((n, 3, 6, 6), dtype=\"float32\") = " \
        "R.match_cast(x" in LegalizeOps()(mod).script()
    vm = _vm(mod)
    w = np.ones((3, 5, 2, 2), "float32")
    out = vm["main"](tvm.nd.array(np.ones((1, 3, 6, 6), "float32")), tvm.nd.array(w)).numpy()
    np.testing.assert_allclose(out, np.full((1, 5, 12, 12), 3.0, "float32"))
    with pytest.raises(ValueError, match=r"var=conv2d_transpose_data_channels.*dimension 1"):
        vm["main"](tvm.nd.array(np.ones((1, 2, 6, 6), "float32")), tvm.nd.array(w))
