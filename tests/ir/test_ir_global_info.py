"""tvm.ir.GlobalInfo / DummyGlobalInfo / VDevice (TVM v0.19's global_info.py): module-level
infos that compare structurally, with VDevice taking a Target or its spec."""

import pytest

import minitvm as tvm
from minitvm.ir import DummyGlobalInfo, GlobalInfo, VDevice


def test_vdevice_fields_and_target_specs():
    v = VDevice("llvm", 1, "global")
    assert isinstance(v, GlobalInfo)
    assert isinstance(v.target, tvm.target.Target) and v.target.kind.name == "llvm"
    assert (v.vdevice_id, v.memory_scope) == (1, "global")
    assert VDevice({"kind": "llvm"}).target == tvm.target.Target("llvm")
    d = VDevice()
    assert d.target is None and d.vdevice_id == 0 and d.memory_scope == "global"


def test_structural_equality_and_hash():
    a = VDevice("llvm", 0, "global")
    b = VDevice(tvm.target.Target("llvm"))
    assert a == b and hash(a) == hash(b) and tvm.ir.structural_equal(a, b)
    assert not a.same_as(b) and a.same_as(a)
    assert a != VDevice("llvm", 1) and a != VDevice("llvm", 0, "shared")
    assert a != VDevice("c")
    assert DummyGlobalInfo() == DummyGlobalInfo() and DummyGlobalInfo() != a
    assert len({a, b, VDevice("llvm", 1)}) == 2


def test_module_keeps_global_infos():
    infos = {"vdevice": [VDevice("llvm", 0), VDevice("llvm", 1)], "dummy": [DummyGlobalInfo()]}
    mod = tvm.IRModule(global_infos=infos)
    assert mod.global_infos["vdevice"][1] == VDevice("llvm", 1)
    assert mod.shallow_copy().global_infos["dummy"] == [DummyGlobalInfo()]


@pytest.mark.parametrize("kwargs,err,match", [
    ({"target": 3}, TypeError, "target must be a Target"),
    ({"target": "llvm", "vdevice_id": -1}, ValueError, "non-negative"),
    ({"target": "llvm", "memory_scope": 0}, TypeError, "memory_scope"),
])
def test_bad_arguments(kwargs, err, match):
    with pytest.raises(err, match=match):
        VDevice(**kwargs)


def test_json_round_trip():
    v = VDevice("llvm", 2, "global")
    back = tvm.ir.load_json(tvm.ir.save_json(v))
    assert isinstance(back, VDevice) and back == v and back.target.kind.name == "llvm"
