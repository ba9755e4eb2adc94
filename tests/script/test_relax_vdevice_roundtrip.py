"""Virtual devices in Relax TVMScript, as TVM prints and parses them (issue 13): the module's
``I.module_global_infos({"vdevice": [I.vdevice({target config}, id, "scope"), ...]})`` and
``R.Tensor(..., vdevice="cuda:1")`` naming the second cuda device of that list; print -> parse
-> print is the identity and the parsed struct infos refer to the declared devices."""

import warnings

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R

TEXT = '''# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    I.module_attrs({"attr": 10})
    I.module_global_infos({"vdevice": [I.vdevice({"keys": ["cpu"], "kind": "llvm", "tag": ""}, 0, "global"), I.vdevice({"arch": "sm_86", "keys": ["cuda", "gpu"], "kind": "cuda", "max_num_threads": 1024, "tag": "", "thread_warp_size": 32}, 0, "global"), I.vdevice({"arch": "sm_80", "keys": ["cuda", "gpu"], "kind": "cuda", "tag": ""}, 1, "global")]})
    @R.function
    def main(a: R.Tensor((2, 3), dtype="float32", vdevice="cuda:1"), b: R.Tensor((2, 3), dtype="float32", vdevice="llvm:0")) -> R.Tensor((2, 3), dtype="float32", vdevice="cuda:1"):
        c: R.Tensor((2, 3), dtype="float32", vdevice="cuda:1") = R.add(a, a)
        return c'''


def test_parse_resolves_vdevice_names_to_the_declared_devices():
    mod = tvm.script.from_source(TEXT)
    devices = mod.global_infos["vdevice"]
    assert [d.target.kind.name for d in devices] == ["llvm", "cuda", "cuda"]
    assert devices[1].target.attrs["arch"] == "sm_86" and devices[2].vdevice_id == 1
    assert "tag" not in devices[0].target.attrs  # TVM's empty tag is no tag
    a, b = mod["main"].params
    assert a.struct_info.vdevice is devices[2] and b.struct_info.vdevice is devices[0]
    assert mod["main"].ret_struct_info.vdevice is devices[2]


def test_print_parse_print_is_the_identity():
    mod = tvm.script.from_source(TEXT)
    assert mod.script() == TEXT
    again = tvm.script.from_source(mod.script())
    tvm.ir.assert_structural_equal(again, mod)
    assert again.script() == TEXT


def test_decorated_module_and_builder_module_print_alike():
    @I.ir_module
    class Decorated:
        I.module_global_infos({"vdevice": [I.vdevice("llvm", 0, "global"),
                                           I.vdevice("llvm", 1, "global")]})

        @R.function
        def main(x: R.Tensor((4,), "float32", vdevice="llvm:1")):
            y = R.multiply(x, x)
            return y

    vd0, vd1 = tvm.ir.VDevice("llvm", 0, "global"), tvm.ir.VDevice("llvm", 1, "global")
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32", vd1))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(relax.op.multiply(x, x))
        bb.emit_func_output(y)
    built = bb.get()
    built.update_global_info("vdevice", [vd0, vd1])
    text = built.script()
    assert 'I.vdevice({"keys": ["cpu"], "kind": "llvm", "tag": ""}, 1, "global")' in text
    assert 'x: R.Tensor((4,), dtype="float32", vdevice="llvm:1")' in text
    tvm.ir.assert_structural_equal(Decorated, built)
    # the same text but for the binding's name (``y`` in the source, ``lv`` from the builder)
    assert Decorated.script() == text.replace("lv:", "y:").replace("return lv", "return y")


def test_vdevice_module_still_runs():
    mod = tvm.script.from_source(TEXT.replace("cuda:1", "llvm:0"))
    exe = tvm.compile(mod, "llvm")
    vm = relax.VirtualMachine(exe, tvm.cpu())
    a = np.random.rand(2, 3).astype("float32")
    np.testing.assert_allclose(vm["main"](tvm.nd.array(a), tvm.nd.array(a)).numpy(), a + a)


def test_dummy_global_info_round_trips():
    @I.ir_module
    class Mod:
        I.module_global_infos({"dummy": [I.dummy_global_info(), I.dummy_global_info()]})

        @R.function
        def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            return x

    assert all(isinstance(g, tvm.ir.DummyGlobalInfo) for g in Mod.global_infos["dummy"])
    text = Mod.script()
    assert 'I.module_global_infos({"dummy": [I.dummy_global_info(), I.dummy_global_info()]})' \
        in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), Mod)


def test_unknown_vdevice_warns_and_is_dropped():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod = tvm.script.from_source(TEXT.replace('vdevice="llvm:0")', 'vdevice="llvm:3")', 1))
    assert any("annotated device was not found" in str(w.message) for w in caught)
    assert mod["main"].params[1].struct_info.vdevice is None


def test_lookup_vdevice_and_bad_names():
    devices = [I.vdevice("llvm"), I.vdevice("cuda"), I.vdevice("cuda", 1)]
    from minitvm.script.parser.ir import global_infos_scope

    with global_infos_scope({"vdevice": devices}):
        assert I.lookup_vdevice("cuda", 1) is devices[2]
        assert I.lookup_vdevice(None, 1) is devices[1]
        assert R.Tensor((2,), "float32", vdevice="cuda").vdevice is devices[1]
        with pytest.raises(ValueError, match="must be an integer"):
            R.Tensor((2,), "float32", vdevice="cuda:x")
    assert I.lookup_vdevice("cuda", 0) is None  # no module being parsed


# ------------------------------------------------------------------------------ R.to_vdevice
def _copy_module():
    @I.ir_module
    class Mod:
        I.module_global_infos({"vdevice": [I.vdevice("llvm", 0, "global"),
                                           I.vdevice("llvm", 1, "global")]})

        @R.function
        def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32",
                                                               vdevice="llvm:1"):
            y = R.to_vdevice(x, dst_vdevice="llvm:1")
            z = R.add(y, y)
            return z

    return Mod


def test_to_vdevice_struct_info_and_text():
    mod = _copy_module()
    dev = mod.global_infos["vdevice"][1]
    y = mod["main"].body.blocks[0].bindings[0]
    assert y.value.op.name == "relax.to_vdevice" and y.value.attrs.dst_vdevice is dev
    assert y.var.struct_info.vdevice is dev and [int(d) for d in y.var.struct_info.shape] == [2, 3]
    text = mod.script()
    assert ('y: R.Tensor((2, 3), dtype="float32", vdevice="llvm:1") = '
            'R.to_vdevice(x, dst_vdevice="llvm:1")') in text
    back = tvm.script.from_source(text)
    tvm.ir.assert_structural_equal(back, mod)
    assert back.script() == text
    # built with the API: the same program
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(relax.op.to_vdevice(x, dev))
        assert y.struct_info.vdevice is dev
        bb.emit_func_output(bb.emit(relax.op.add(y, y)))
    tvm.ir.assert_structural_equal(bb.get()["main"], mod["main"])
    with pytest.raises(TypeError, match="must be a VDevice"):
        relax.op.to_vdevice(x, "llvm:1")


def test_to_vdevice_lowers_to_the_vm_builtin_and_runs():
    mod = _copy_module()
    lowered = relax.transform.VMBuiltinLower()(mod)
    call = lowered["main"].body.blocks[0].bindings[0].value
    assert isinstance(call.op, relax.ExternFunc) and call.op.global_symbol == "vm.builtin.to_device"
    assert [int(a.value) for a in call.args[1:]] == [1, 1]  # CPU device type, vdevice id 1
    exe = tvm.compile(mod, "llvm")
    vm = relax.VirtualMachine(exe, tvm.cpu())
    a = np.random.rand(2, 3).astype("float32")
    np.testing.assert_allclose(vm["main"](tvm.nd.array(a)).numpy(), a + a, rtol=1e-6)


def test_to_vdevice_on_a_missing_device_is_an_error():
    @I.ir_module
    class Mod:
        I.module_global_infos({"vdevice": [I.vdevice("cuda", 0, "global")]})

        @R.function
        def main(x: R.Tensor((2,), "float32")):
            y = R.to_vdevice(x, dst_vdevice="cuda:0")
            return y

    vm = relax.VirtualMachine(tvm.compile(Mod, "llvm"), tvm.cpu())
    with pytest.raises(RuntimeError, match="CPU only"):
        vm["main"](tvm.nd.array(np.zeros(2, "float32")))
    with pytest.raises(ValueError, match="no virtual device 'cuda:3'"), \
            pytest.warns(UserWarning, match="annotated device was not found"):
        @I.ir_module
        class Bad:
            I.module_global_infos({"vdevice": [I.vdevice("cuda", 0, "global")]})

            @R.function
            def main(x: R.Tensor((2,), "float32")):
                y = R.to_vdevice(x, dst_vdevice="cuda:3")
                return y
