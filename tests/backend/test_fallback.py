"""A kernel whose native lowering fails runs in numpy with a NativeFallbackWarning, or raises
NativeFallbackError in a strict build; numpy-only ops and dynamic shapes are not reported."""

import warnings

import numpy as np
import pytest

import minitvm
from minitvm import relay
from minitvm.backend import NativeFallbackError, NativeFallbackWarning, clear_cache
from minitvm.contrib import graph_executor

STRICT = "relay.backend.strict_native"

pytestmark = pytest.mark.usefixtures("matrix_set_diag_without_compute")


def _diag_module():
    """An op with no native compute (matrix_set_diag, its compute taken away by the module's
    autouse fixture, as in tests/runtime/test_kernel_format)."""
    x = relay.var("x", shape=(3, 4), dtype="float32")
    d = relay.const(np.full(3, 7.0, "float32"))
    return minitvm.IRModule.from_expr(relay.Function([x], relay.matrix_set_diag(x, d)))


def _with_diag(x):
    out = x.copy()
    np.fill_diagonal(out, 7.0)
    return out


def _build(mod, strict):
    with minitvm.transform.PassContext(opt_level=3, config={STRICT: strict}):
        return relay.build(mod, target="llvm")


def test_failed_lowering_warns_once_and_still_computes():
    clear_cache()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib = _build(_diag_module(), strict=False)
    ours = [w for w in caught if issubclass(w.category, NativeFallbackWarning)]
    assert len(ours) == 1
    text = str(ours[0].message)
    assert "\n" not in text
    assert "tvmgen_default_fused_matrix_set_diag (matrix_set_diag) runs in numpy" in text
    assert "operator matrix_set_diag has no compute" in text
    (kernel,) = lib.get_lib().kernels.values()
    assert kernel.kind == "fallback" and kernel.error
    m = graph_executor.GraphModule(lib["default"](minitvm.cpu()))
    x = np.arange(12, dtype="float32").reshape(3, 4)
    m.set_input("x", x)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), _with_diag(x))


def test_strict_config_raises_a_clear_error():
    clear_cache()
    with pytest.raises(NativeFallbackError, match=r"fused_matrix_set_diag \(matrix_set_diag\) runs in numpy: "
                       r"native lowering failed: operator matrix_set_diag has no compute"):
        _build(_diag_module(), strict=True)


def test_strict_build_raises_for_a_fallback_cached_by_a_lenient_one():
    clear_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NativeFallbackWarning)
        _build(_diag_module(), strict=False)
    with pytest.raises(NativeFallbackError, match="matrix_set_diag"):
        _build(_diag_module(), strict=True)


def test_environment_switch_is_strict_unless_the_config_says_otherwise(monkeypatch):
    monkeypatch.setenv("MINITVM_STRICT_NATIVE", "1")
    with pytest.raises(NativeFallbackError):
        relay.build(_diag_module(), target="llvm")
    monkeypatch.setenv("MINITVM_STRICT_NATIVE", "0")
    with pytest.warns(NativeFallbackWarning, match="matrix_set_diag"):
        relay.build(_diag_module(), target="llvm")


def test_numpy_only_op_is_not_reported():
    x = relay.var("x", shape=(4,), dtype="float32")
    mod = minitvm.IRModule.from_expr(relay.Function([x], relay.reinterpret(x, "int32")))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NativeFallbackWarning)
        lib = _build(mod, strict=True)
    (kernel,) = lib.get_lib().kernels.values()
    assert kernel.kind == "fallback" and not kernel.error
    assert "reinterpret runs in numpy: a bit cast" in kernel.reason


def test_register_numpy_only_needs_a_reason():
    with pytest.raises(ValueError, match="give the reason"):
        relay.op.op.register_numpy_only("gather", "")
