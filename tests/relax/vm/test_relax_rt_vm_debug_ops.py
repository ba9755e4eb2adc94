"""Built modules run ``R.print`` / ``R.assert_op`` (the VM calls the packed functions their
``FCallPacked`` names), and the VM takes opaque run-time objects as arguments (an
``R.Object`` parameter receives the object itself)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax

DEBUG = '''
@I.ir_module
class Mod:
    @R.function(pure=False)
    def main(x: R.Tensor((2,), "float32"), ok: R.Tensor((), "bool")) -> R.Tensor((2,), "float32"):
        y: R.Tensor((2,), "float32") = R.add(x, x)
        R.print(y, format="y = {}")
        R.assert_op(ok, y, format="not ok with y = {}")
        return y
'''


def _vm(src):
    mod = tvm.script.from_source(src)
    return relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())


def test_print_and_assert_run_in_a_built_module(capsys):
    vm = _vm(DEBUG)
    x = tvm.nd.array(np.array([1.0, 2.5], "float32"))
    out = vm["main"](x, tvm.nd.array(np.array(True)))
    np.testing.assert_array_equal(out.numpy(), [2.0, 5.0])
    assert "y = [2. 5.]" in capsys.readouterr().out
    with pytest.raises(AssertionError, match=r"not ok with y = \[2\. 5\.\]"):
        vm["main"](x, tvm.nd.array(np.array(False)))


def test_assert_without_a_format_has_a_default_message():
    vm = _vm('''
@I.ir_module
class Mod:
    @R.function(pure=False)
    def main(ok: R.Tensor((), "bool")) -> R.Tensor((), "bool"):
        R.assert_op(ok)
        return ok
''')
    assert bool(vm["main"](tvm.nd.array(np.array(True))).numpy())
    with pytest.raises(AssertionError, match="Assertion Failed"):
        vm["main"](tvm.nd.array(np.array(False)))


class _Handle:
    """An opaque object only packed functions understand."""

    def __init__(self, value):
        self.value = value


def test_opaque_objects_pass_through_object_parameters():
    tvm.register_func("test.rt.handle_value",
                      lambda h: tvm.nd.array(np.array(h.value, "float32")), override=True)
    vm = _vm('''
@I.ir_module
class Mod:
    @R.function
    def main(h: R.Object) -> R.Tuple(R.Object, R.Tensor((), "float32")):
        v = R.call_pure_packed("test.rt.handle_value", h, sinfo_args=(R.Tensor((), "float32"),))
        return (h, v)
''')
    h = _Handle(2.5)
    back, v = vm["main"](h)
    assert back is h and float(v.numpy()) == 2.5
    # a tensor parameter still says what it expected
    tensor_vm = _vm(DEBUG)
    with pytest.raises(TypeError, match="expected a tensor"):
        tensor_vm["main"](h, tvm.nd.array(np.array(True)))
    with pytest.raises(TypeError, match="cannot pass a dict"):
        tensor_vm["main"]({}, tvm.nd.array(np.array(True)))
