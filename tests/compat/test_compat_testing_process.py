"""tvm.testing's process helpers as TVM v0.19 defines them (issue 13): terminate_self ends the
process with sys.exit(-1), identity_after returns its input after a sleep, and
install_request_hook installs the CI download hook only when running in CI."""

import os
import subprocess
import sys
import time
import urllib.request

import pytest

import minitvm as tvm
from minitvm.testing import utils


def test_terminate_self_exits_with_failure():
    with pytest.raises(SystemExit) as info:
        tvm.testing.terminate_self()
    assert info.value.code == -1
    code = ("import minitvm\nminitvm.compat.install_as_tvm()\nimport tvm.testing\n"
            "tvm.testing.terminate_self()\nprint('still alive')\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=os.path.dirname(os.path.dirname(tvm.__file__)))
    assert res.returncode == 255 and "still alive" not in res.stdout  # -1 as an exit status


def test_identity_after_sleeps():
    start = time.monotonic()
    assert tvm.testing.identity_after({"k": 1}, 0.05) == {"k": 1}
    assert time.monotonic() - start >= 0.05
    assert tvm.testing.identity_after(3, 0) == 3


def test_install_request_hook_outside_ci_does_nothing(monkeypatch):
    monkeypatch.setattr(utils, "IS_IN_CI", False)
    before = urllib.request.urlopen
    assert tvm.testing.install_request_hook(depth=3) is None
    assert urllib.request.urlopen is before and "request_hook" not in sys.modules


def test_install_request_hook_in_ci(monkeypatch, tmp_path):
    monkeypatch.setattr(utils, "IS_IN_CI", True)
    # a checkout laid out as TVM's: <root>/python/tvm/testing/utils.py and the hook under
    # <root>/tests/scripts/request_hook; depth 3 climbs from testing/ to <root>
    fake_file = tmp_path / "python" / "tvm" / "testing" / "utils.py"
    fake_file.parent.mkdir(parents=True)
    fake_file.write_text("")
    hook_dir = tmp_path / "tests" / "scripts" / "request_hook"
    hook_dir.mkdir(parents=True)
    (hook_dir / "request_hook.py").write_text(
        "import urllib.request\nINSTALLED = []\n"
        "def init():\n"
        "    real = urllib.request.urlopen\n"
        "    def hooked(url, *a, **k):\n"
        "        return real(url.replace('https://example.org/', 'file:///'), *a, **k)\n"
        "    INSTALLED.append(real)\n"
        "    urllib.request.urlopen = hooked\n")
    monkeypatch.setattr(utils, "__file__", str(fake_file))
    monkeypatch.setattr(urllib.request, "urlopen", urllib.request.urlopen)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "request_hook", raising=False)
    data = tmp_path / "blob.txt"
    data.write_text("payload")
    try:
        tvm.testing.install_request_hook(depth=3)
        hook = sys.modules["request_hook"]
        assert len(hook.INSTALLED) == 1
        with urllib.request.urlopen("https://example.org/" + str(data).lstrip("/")) as f:
            assert f.read() == b"payload"
        with pytest.raises(ValueError, match="depth less than 1"):
            tvm.testing.install_request_hook(depth=0)
        with pytest.raises(RuntimeError, match="does not exist"):
            tvm.testing.install_request_hook(depth=1)
    finally:
        sys.modules.pop("request_hook", None)


# ------------------------------------------------------------------------------ FFI test functions
def test_ffi_testing_functions():
    t = tvm.testing
    assert t.echo([1, "a"]) == [1, "a"] and t.nop(1, 2, "x") is None
    assert tvm.get_global_func("testing.echo") is t.echo
    dev = tvm.cpu(0)
    assert t.device_test(dev, 1, 0) is dev
    with pytest.raises(tvm.TVMError, match="expected device"):
        t.device_test(dev, 2, 0)
    with pytest.raises(ValueError, match="expect x and y to be equal"):
        t.ErrorTest(0, 1)
    with pytest.raises(tvm.error.InternalError, match="cannot reach here"):
        t.ErrorTest(1, 1)
    t.ErrorTest(2, 2)
    seen = []
    assert t.test_wrap_callback(lambda: seen.append(1))() is None and seen == [1]
    with pytest.raises(tvm.TVMError, match="boom"):
        t.test_raise_error_callback("boom")()
    t.test_check_eq_callback("differ")(3, 3)
    with pytest.raises(tvm.TVMError, match="differ"):
        t.test_check_eq_callback("differ")(3, 4)
    start = time.monotonic()
    t.run_check_signal(0.02, 2)
    assert time.monotonic() - start >= 0.02


def test_popen_pool_jobs():
    from minitvm.testing import popen_pool

    t = tvm.testing
    assert t.fast_summation(100) == t.slow_summation(100) == 5050
    t.initializer(1, "two", [3])
    assert t.after_initializer() == (1, "two", [3])
    t.initializer(0, 0, 0)
    assert t.call_cpp_ffi(7) == 7 and t.call_cpp_py_ffi("x") == "x"  # via testing.identity_py
    t.register_ffi()
    assert t.call_py_ffi(9) == 9
    start = time.monotonic()
    t.timeout_job(0.02)
    assert time.monotonic() - start >= 0.03
    tvm.runtime.registry.remove_global_func("testing.identity_py")
    try:
        with pytest.raises(AttributeError, match="identity_py"):
            t.identity_cpp(1)
    finally:
        tvm.register_func("testing.identity_py", popen_pool.identity_py, override=True)
