"""device_copy, dft, stft: types, numerics against numpy's FFT, text round trip, relay.build."""

import numpy as np
import pytest
from relay_op_check import _mod, _type, run, run_all

import minitvm as tvm
from minitvm import relay

RNG = np.random.default_rng(10)


def test_device_copy():
    x = RNG.standard_normal((2, 3)).astype("float32")
    got = run(lambda a: relay.device_copy(a, tvm.cpu(0), tvm.cpu(0)) * relay.const(2.0), x)
    np.testing.assert_array_equal(got, x * 2)
    call = relay.device_copy(relay.var("x"), "cpu", tvm.cpu(0))
    assert call.op.name == "device_copy"
    assert call.attrs.dst_virtual_device.device_type == tvm.cpu(0).device_type
    with pytest.raises(Exception, match="operator device_copy expects 1 argument"):
        _type(lambda a, b: relay.Call(tvm.ir.Op.get("device_copy"), [a, b], call.attrs),
              (1,), (1,))


@pytest.mark.parametrize("inverse", [False, True])
def test_dft(inverse):
    re = RNG.standard_normal((2, 8)).astype("float32")
    im = RNG.standard_normal((2, 8)).astype("float32")
    out_re, out_im = run_all(lambda a, b: relay.dft(a, b, inverse).astuple(), re, im)
    z = re.astype(np.float64) + 1j * im
    want = np.fft.ifft(z) if inverse else np.fft.fft(z)
    np.testing.assert_allclose(out_re, want.real, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out_im, want.imag, rtol=1e-5, atol=1e-5)
    with pytest.raises(Exception, match="dft: the real and imaginary parts must have one"):
        _type(lambda a, b: relay.dft(a, b).astuple(), (2, 8), (2, 4))


def test_stft():
    x = RNG.standard_normal((2, 20)).astype("float32")
    win = np.hanning(8).astype("float32")
    got = run(lambda a, w: relay.stft(a, 8, 4, 8, w, normalized=True), x, win)
    assert got.shape == (2, 5, 4, 2)
    frames = np.stack([x[:, 4 * f:4 * f + 8] * win for f in range(4)], axis=1)
    spec = np.fft.rfft(frames, axis=-1).transpose(0, 2, 1) / np.sqrt(8)
    np.testing.assert_allclose(got[..., 0], spec.real, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[..., 1], spec.imag, rtol=1e-4, atol=1e-5)
    full = run(lambda a: relay.stft(a, 8, onesided=False), x[0].copy())
    assert full.shape == (8, 7, 2)  # hop_length defaults to n_fft // 4
    mod = _mod(lambda a, w: relay.stft(a, 8, 4, 8, w), x, win)
    assert str(mod["main"].body.checked_type) == "Tensor[(2, 5, 4, 2), float32]"
    with pytest.raises(Exception, match="stft: the window must have win_length=8"):
        _type(lambda a, w: relay.stft(a, 8, 4, 8, w), (2, 20), (6,))


def test_vm_shape_of_and_reshape_tensor():
    x = RNG.standard_normal((2, 3, 4)).astype("float32")
    got = run(relay.op.vm.shape_of, x)
    np.testing.assert_array_equal(got, [2, 3, 4])
    assert got.dtype == np.int64
    shape = np.array([6, 4], "int64")
    got = run(lambda a, s: relay.op.vm.reshape_tensor(a, s, (6, 4)), x, shape)
    np.testing.assert_array_equal(got, x.reshape(6, 4))
    with pytest.raises(Exception, match=r"vm.reshape_tensor: cannot reshape"):
        _type(lambda a, s: relay.op.vm.reshape_tensor(a, relay.cast(s, "int64"), (5, 4)),
              (2, 3, 4), (2,))


def test_vm_update_row():
    data = RNG.standard_normal((4, 2, 3)).astype("float32")
    row = RNG.standard_normal((2, 3)).astype("float32")
    got = run(lambda d, r, k: relay.op.vm.update_row(d, r, k), data, row, np.array(2, "int64"))
    want = data.copy()
    want[2] = row
    np.testing.assert_array_equal(got, want)
    assert str(_type(lambda d, r, k: relay.op.vm.update_row(d, r, relay.cast(k, "int64")),
                     (4, 2, 3), (2, 3), ())) == "Tensor[(4, 2, 3), float32]"
    with pytest.raises(Exception, match=r"vm.update_row: the row .* is not a row of the data"):
        _type(lambda d, r, k: relay.op.vm.update_row(d, r, relay.cast(k, "int64")),
              (4, 2, 3), (3, 3), ())
    with pytest.raises(Exception, match=r"vm.update_row: the index must be an integer scalar"):
        _type(lambda d, r, k: relay.op.vm.update_row(d, r, k), (4, 2, 3), (2, 3), (1,))
