"""float32 exp's two scalings (codegen/llvm/vmath._exp): AVX2 hosts' magic-number round with
2**floor(n/2) * 2**ceil(n/2) from its bits and no select after the polynomial, and the rint /
convert / select form other hosts' scalar tails keep, each built on any host by naming the ISA:
IR shape, accuracy of exp and of its users (sigmoid, tanh), special values, the underflow edge."""

import numpy as np
import pytest
from test_vmath import MAX_REL, REF, _kernel, _max_rel

from minitvm.backend import kernel_cache
from minitvm.codegen.build import clear_cache as clear_code_cache
from minitvm.codegen.llvm import vmath


@pytest.fixture(params=["avx2", "avx512"])
def isa(request, monkeypatch):
    """Kernels built with ``isa``'s exp form; caches emptied around the test, the disk one off
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
    assert out[0] == 1 and out[1] == 1 and out[16] == np.float32(np.e)
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
