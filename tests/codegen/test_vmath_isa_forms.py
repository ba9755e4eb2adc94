"""float32 exp and tanh by vector ISA (codegen/llvm/vmath), each form built on any host by naming
the ISA. exp's two scalings: AVX2 hosts' magic-number round with 2**floor(n/2) * 2**ceil(n/2)
from its bits and no select after the polynomial, and the rint / convert / select form other
hosts' scalar tails keep; tanh as AVX2's rational x P(x^2) / Q(x^2) or from exp. IR shape,
accuracy of exp and of its users (sigmoid, tanh), special values, the underflow edge."""

import numpy as np
import pytest
from test_vmath import MAX_REL, REF, _kernel, _max_rel

from minitvm.backend import kernel_cache
from minitvm.codegen.build import clear_cache as clear_code_cache
from minitvm.codegen.llvm import vmath


@pytest.fixture(params=["avx2", "avx512"])
def isa(request, monkeypatch):
    """Kernels built with ``isa``'s exp and tanh forms; caches emptied around the test, the disk one off
    (their keys do not see the patch)."""
    monkeypatch.setattr(vmath, "_isa", lambda: request.param)
    monkeypatch.setenv("MINITVM_DISABLE_DISK_CACHE", "1")
    kernel_cache.clear_cache()
    clear_code_cache()
    yield request.param
    kernel_cache.clear_cache()
    clear_code_cache()


def _exp(values, lanes: int = 8) -> np.ndarray:
    x = np.asarray(values, dtype="float32")
    out = np.empty_like(x)
    _kernel("exp", len(x), lanes)["main"](x, out)
    return out


def test_ir_shape(isa):
    src = _kernel("exp", 64, 8).get_source()
    if isa == "avx2":
        assert "llvm.rint" not in src and "fptosi" not in src
        assert "fcmp uno" not in src  # (NaN comes through the arithmetic)
    else:
        assert "llvm.rint" in src


@pytest.mark.parametrize("name,lo,hi", [("exp", -103, 88.7), ("exp", -1, 1),
                                        ("sigmoid", -40, 40), ("tanh", -12, 12)])
def test_accuracy(isa, name, lo, hi, rng):
    x = rng.uniform(lo, hi, 4099).astype("float32")
    out = np.empty_like(x)
    _kernel(name, len(x), 8)["main"](x, out)
    assert _max_rel(out, x, name) < MAX_REL


def test_special_values(isa):
    inf, nan = np.inf, np.nan
    x = [0.0, -0.0, 88.72, 88.7228, 88.73, 1000, 3e38, -87.5, -100.0, -103.972, -103.973,
         -104.0, -3e38, -inf, inf, nan, 1.0, -nan]
    out = _exp(x)
    assert out[0] == 1 and out[1] == 1 and abs(out[16] / np.e - 1) < MAX_REL
    assert np.isfinite(out[2]) and np.isfinite(out[3]) and (out[4:7] == inf).all()
    # denormal results keep their leading bits; the last one above the edge is 2**-149
    np.testing.assert_allclose(out[7:10], np.exp(np.float32(x[7:10]).astype("float64")),
                               rtol=1e-6, atol=2e-45)
    assert out[9] == np.float32(2.0 ** -149)
    assert (out[10:14] == 0).all() and out[14] == inf and np.isnan(out[15]) and np.isnan(out[17])
    np.testing.assert_allclose(out[2:4], REF["exp"](np.float32(x[2:4]).astype("float64")),
                               rtol=3e-7)


@pytest.mark.parametrize("lanes", [1, 8, 16])
def test_every_rounding_of_n(isa, lanes):
    # x next to (k + 1/2) ln 2, where n = rint(x / ln 2) changes: both sides of each tie,
    # every n from the denormals to the top, and the lane order kept
    k = np.arange(-150, 128)
    mid = np.float32((k + 0.5) * np.log(2))
    x = np.concatenate([np.nextafter(mid, -np.inf), mid, np.nextafter(mid, np.inf)])
    x = x[(x > -103.9) & (x < 88.7)].astype("float32")
    out = _exp(x, lanes)
    want = np.exp(x.astype("float64"))
    np.testing.assert_allclose(out, want, rtol=MAX_REL, atol=2e-45)


def test_tanh_forms_and_special_values(isa):
    src = _kernel("tanh", 64, 8).get_source()
    assert ("fdiv" in src) and (("shl" in src) == (isa != "avx2"))  # (AVX2: no exp inside)
    inf, nan = np.inf, np.nan
    x = np.float32([inf, -inf, 50.0, -9.0, 8.99, 6.78, nan, 0.0, -0.0, 1e-20, -3e-5, 0.625])
    out = np.empty_like(x)
    _kernel("tanh", len(x), 8)["main"](x, out)
    assert out[0] == 1 and out[1] == -1 and out[2] == 1 and np.isnan(out[6])
    assert out[7] == 0 and not np.signbit(out[7]) and out[8] == 0 and np.signbit(out[8])
    np.testing.assert_allclose(out[3:6], np.tanh(x[3:6].astype("float64")), rtol=MAX_REL)
    np.testing.assert_allclose(out[9:], np.tanh(x[9:].astype("float64")), rtol=MAX_REL)
    if isa == "avx2":  # (P(0) = 1: tanh(x) is x where x^3 / 3 is below its last bit)
        assert out[9] == x[9] and out[10] == x[10]
