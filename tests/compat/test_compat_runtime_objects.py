"""tvm.runtime's object helpers as TVM code uses them (issue 13): ObjectPath and its step
classes, ObjectPathPair from structural comparison (tvm.ir.base.get_first_structural_mismatch),
the Scriptable mixin, and object_generic (ObjectGeneric, convert_to_object, const)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, relay
from minitvm.runtime import object_path as op_mod
from minitvm.runtime.object_path import ObjectPath


# ------------------------------------------------------------------------------ ObjectPath
def test_object_path_steps_and_text():
    root = ObjectPath.root()
    p = root.attr("body").attr("args").array_index(2)
    assert str(p) == "<root>.body.args[2]"
    assert len(p) == 4 and len(root) == 1 and root.parent is None
    assert isinstance(p, op_mod.ArrayIndexPath) and isinstance(p.parent, op_mod.AttributeAccessPath)
    assert isinstance(root, op_mod.RootPath)
    assert str(root.attr(None)) == "<root>.<unknown attribute>"
    assert str(p.parent.missing_array_element(5)) == "<root>.body.args[<missing element #5>]"
    assert str(root.map_value("w")) == '<root>["w"]' and str(root.map_value(3)) == "<root>[3]"
    assert str(root.missing_map_entry()) == "<root>[<missing entry>]"
    assert str(ObjectPath.root("mod").attr("f")) == "mod.f"
    with pytest.raises(ValueError, match="ObjectPath.root"):
        ObjectPath()


def test_object_path_equality_and_prefixes():
    a = ObjectPath.root().attr("x").array_index(1)
    b = ObjectPath.root().attr("x").array_index(1)
    assert a == b and not (a != b) and hash(a) == hash(b)
    assert a != ObjectPath.root().attr("x").array_index(2)
    assert a != ObjectPath.root().attr("x").missing_array_element(1)  # another kind of step
    u = ObjectPath.root().attr(None)
    assert u != ObjectPath.root().attr(None)  # unknown attribute accesses never compare equal
    assert ObjectPath.root().missing_map_entry() == ObjectPath.root().missing_map_entry()
    assert a.get_prefix(2) == ObjectPath.root().attr("x") and a.get_prefix(3) is a
    assert ObjectPath.root().attr("x").is_prefix_of(a) and a.is_prefix_of(a)
    assert not a.is_prefix_of(a.parent)
    with pytest.raises(IndexError):
        a.get_prefix(0)
    with pytest.raises(IndexError):
        a.get_prefix(4)


def test_long_paths_need_no_recursion():
    p = ObjectPath.root()
    for _ in range(100_000):
        p = p.attr("body")
    q = ObjectPath.root()
    for _ in range(100_000):
        q = q.attr("body")
    assert len(p) == 100_001 and p == q
    assert str(p).count(".body") == 100_000 and p.get_prefix(1) == ObjectPath.root()


# ------------------------------------------------------------------------------ mismatches
def test_first_structural_mismatch_paths():
    from minitvm.ir.base import get_first_structural_mismatch

    x = relay.var("x", shape=(2,))
    y = relay.var("y", shape=(2,))
    f = relay.Function([x], relay.add(x, x))
    assert get_first_structural_mismatch(f, relay.Function([y], relay.add(y, y))) is None
    pair = get_first_structural_mismatch(f, relay.Function([y], relay.multiply(y, y)))
    assert isinstance(pair, tvm.runtime.ObjectPathPair)
    assert isinstance(pair.lhs_path, ObjectPath) and pair.lhs_path == pair.rhs_path
    assert str(pair.lhs_path) == "<root>.body.op"
    assert pair.lhs_path == ObjectPath.root().attr("body").attr("op")

    three = relay.Function([y], relay.Tuple([y, y, y]))
    two = relay.Function([y], relay.Tuple([y, y]))
    pair = get_first_structural_mismatch(three, two)
    assert str(pair.lhs_path) == "<root>.body.fields[2]"
    assert str(pair.rhs_path) == "<root>.body.fields[<missing element #2>]"
    assert isinstance(pair.rhs_path, op_mod.MissingArrayElementPath)
    pair = get_first_structural_mismatch(two, three)
    assert str(pair.lhs_path).endswith("[<missing element #2>]")

    pair = get_first_structural_mismatch({"a": 1, "b": 2}, {"b": 2})
    assert str(pair.lhs_path) == '<root>["a"]' and str(pair.rhs_path) == "<root>[<missing entry>]"
    pair = get_first_structural_mismatch({"k": 1}, {"k": 2})
    assert pair.lhs_path == ObjectPath.root().map_value("k")


def test_mismatch_path_locates_the_differing_node():
    """Follow the reported path through both programs: it ends at the nodes that differ."""
    from minitvm.ir.base import get_first_structural_mismatch

    def build(second):
        x = relay.var("x", shape=(3, 4))
        y = relay.nn.relu(relay.add(x, relay.const(1.0)))
        return relay.Function([x], relay.Tuple([y, second(y)]))

    lhs, rhs = build(relay.exp), build(relay.log)
    pair = get_first_structural_mismatch(lhs, rhs)

    def follow(obj, path):
        for step in path.steps()[1:]:
            if isinstance(step, op_mod.AttributeAccessPath):
                obj = getattr(obj, step.attr_key)
            else:
                obj = obj[step.index]
        return obj

    a, b = follow(lhs, pair.lhs_path), follow(rhs, pair.rhs_path)
    assert (a.name, b.name) == ("exp", "log")


# ------------------------------------------------------------------------------ Scriptable
def test_ir_objects_are_scriptable():
    Scriptable = tvm.runtime.Scriptable
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    for obj in (tvm.IRModule(), x, relax.TensorStructInfo((2,), "int32"), relay.var("v"),
                relay.TensorType((2,))):
        assert isinstance(obj, Scriptable)
    assert relax.TensorStructInfo((2, 3), "float32").script() == \
        'R.Tensor((2, 3), dtype="float32")'


def test_scriptable_mixin_on_a_user_class(capsys):
    from minitvm.ir.dialect import register_hook
    from minitvm.ir.node import Node

    class Marker(Node, tvm.runtime.Scriptable):
        __slots__ = ("label",)

        def __init__(self, label):
            self.label = label

    with pytest.raises(TypeError, match="no TVMScript printer is registered for Marker"):
        Marker("a").script()
    register_hook("script", Marker, lambda m, **kw: f"M.marker({m.label!r}, {sorted(kw)})")
    assert Marker("a").script(show_meta=True) == "M.marker('a', ['show_meta'])"
    Marker("b").show()
    assert capsys.readouterr().out == "M.marker('b', [])\n"


# ------------------------------------------------------------------------------ object_generic
def test_const_infers_tvm_dtypes():
    const = tvm.runtime.const
    assert const is tvm.runtime.object_generic.const
    cases = [(3, "int32", tvm.tir.IntImm), (2**40, "int64", tvm.tir.IntImm),
             (2.5, "float32", tvm.tir.FloatImm), (1e300, "float64", tvm.tir.FloatImm),
             (True, "bool", tvm.tir.IntImm), (np.float16(1.5), "float16", tvm.tir.FloatImm),
             (np.int8(-3), "int8", tvm.tir.IntImm)]
    for value, dtype, cls in cases:
        c = const(value)
        assert type(c) is cls and c.dtype == dtype and c.value == value, (value, c)
    assert const(7, "int64").dtype == "int64" and const(7, "float16").value == 7.0
    assert const(2**64 - 1, "uint64").value == 2**64 - 1
    with pytest.raises(ValueError, match="dtype 'handle'"):
        const(1, "handle")
    with pytest.raises(ValueError, match="not an integer"):
        const(1.5, "int32")


def test_convert_to_object():
    from minitvm.runtime.object_generic import ObjectGeneric, ObjectTypes, convert_to_object

    class Wrapped(ObjectGeneric):
        def __init__(self, v):
            self.v = v

        def asobject(self):
            return tvm.runtime.const(self.v, "int64")

    out = convert_to_object([1, "s", {"k": 2.0}, Wrapped(5), None])
    assert isinstance(out, tvm.ir.Array) and out[0].dtype == "int32"
    assert isinstance(out[1], tvm.runtime.String) and out[1] == "s"
    assert isinstance(out[2], tvm.ir.Map) and out[2]["k"].dtype == "float32"
    assert out[3].dtype == "int64" and out[3].value == 5 and out[4] is None
    arr = tvm.nd.array(np.zeros(2, "float32"))
    x = relay.var("x")
    assert convert_to_object(arr) is arr and convert_to_object(x) is x
    assert isinstance(arr, ObjectTypes) and tvm.runtime.convert_to_object is convert_to_object
    with pytest.raises(ValueError, match="key of map"):
        convert_to_object({1: 2})
    with pytest.raises(ValueError, match="don't know how to convert type"):
        convert_to_object(object())


# ------------------------------------------------------------------------------ DataType
@pytest.mark.parametrize("text,code,bits,lanes", [
    ("float32", 2, 32, 1), ("int8x4", 0, 8, 4), ("uint64", 1, 64, 1), ("bool", 1, 1, 1),
    ("void", 3, 0, 0), ("bfloat16", 4, 16, 1), ("e4m3_float8", 6, 8, 1),
    ("e5m2_float8", 7, 8, 1), ("float16xvscalex4", 2, 16, -4),
])
def test_data_type_fields_and_text(text, code, bits, lanes):
    dt = tvm.runtime.DataType(text)
    assert (dt.type_code, dt.bits, dt.lanes) == (code, bits, lanes)
    assert str(dt) == text and dt == text and dt == tvm.runtime.DataType(str(dt))


def test_data_type_helpers():
    DataType, Code = tvm.DataType, tvm.DataTypeCode
    assert DataType is tvm.runtime.DataType and Code.FLOAT == 2 and Code.BFLOAT == 4
    assert str(DataType("float")) == "float32" and str(DataType("int")) == "int32"
    assert str(DataType("handle")) == "handle64" and DataType("handle").bits == 64
    assert DataType(np.dtype("float16")) == "float16" and str(DataType(np.dtype(bool))) == "bool"
    assert DataType("int8x4").itemsize() == 4 and DataType("float64").itemsize() == 8
    assert DataType("bool").itemsize() == 1
    assert {DataType("int32"), DataType("int32")} == {DataType("int32")}
    assert DataType("int32") != "int64" and DataType("int32") != "not a dtype"
    with pytest.raises(ValueError, match="scalable"):
        DataType("float32xvscalex4").itemsize()
    with pytest.raises(ValueError, match="Do not know how to handle type"):
        DataType("complex64")


def test_tir_expressions_and_statements_script():
    from minitvm import te, tir

    x = tir.Var("x", "int32")
    assert isinstance(x, tvm.runtime.Scriptable) and (x + 1).script() == "x + 1"
    a = te.placeholder((4,), "float32", "A")
    b = te.compute((4,), lambda i: a[i] * 2.0, name="B")
    body = te.create_prim_func([a, b]).body
    assert isinstance(body, tvm.runtime.Scriptable)
    assert 'with T.block("B"):' in body.script()
