"""Struct-info inference of Relax shape-manipulation and indexing ops."""

import pytest
from sinfo_util import T, assert_sinfo, tvar

from minitvm import relax, tir
from minitvm.ir import Op, OpPattern
from minitvm.relax import op as R

n = tir.Var("n", "int64")
m = tir.Var("m", "int64")
inf = R.infer_struct_info


# --------------------------------------------------------------------------- permute_dims
def test_permute_dims():
    w = tvar("w", [8, 4])
    call = R.permute_dims(w)
    assert call.attrs.type_key == "relax.attrs.PermuteDimsAttrs" and call.attrs.axes is None
    assert_sinfo(inf(call), T([4, 8]))
    assert_sinfo(inf(R.permute_dims(tvar("x", [1, n, 3]), [2, 0, 1])), T([3, 1, n]))
    assert_sinfo(inf(R.permute_dims(tvar("x", [1, n, 3]), [-1, 0, 1])), T([3, 1, n]))
    assert_sinfo(inf(R.permute_dims(tvar("x", ndim=3), [2, 0, 1])), T(ndim=3))
    assert_sinfo(inf(R.permute_dims(tvar("x", ndim=-1), [2, 0, 1])), T(ndim=3))
    x = tvar("x", [2, 3])
    assert inf(R.permute_dims(x, [0, 1])) is x.struct_info
    assert Op.get("relax.permute_dims").get_attr("TOpPattern") == OpPattern.INJECTIVE


def test_permute_dims_errors():
    with pytest.raises(R.StructInfoError, match="axes"):
        inf(R.permute_dims(tvar("x", [2, 3]), [0]))
    with pytest.raises(R.StructInfoError, match="out of range"):
        inf(R.permute_dims(tvar("x", [2, 3]), [0, 2]))
    with pytest.raises(R.StructInfoError, match="distinct"):
        inf(R.permute_dims(tvar("x", [2, 3]), [1, 1]))


# --------------------------------------------------------------------------- reshape
def test_reshape_static_and_minus_one():
    call = R.reshape(tvar("x", [2, 3, 4]), [6, -1])
    assert isinstance(call.args[1], relax.ShapeExpr)
    assert int(call.args[1].values[1]) == 4
    assert_sinfo(inf(call), T([6, 4]))
    assert_sinfo(inf(R.reshape(tvar("x", [2, 3, 4]), (24,))), T([24]))


def test_reshape_symbolic():
    assert_sinfo(inf(R.reshape(tvar("x", [n, 4]), [-1])), T([n * 4]))
    assert_sinfo(inf(R.reshape(tvar("x", [n, 4]), [n, 2, 2])), T([n, 2, 2]))
    assert_sinfo(inf(R.reshape(tvar("x", [n, 4]), [2, -1])), T([2, n * 2]))
    # unprovable products are trusted
    assert_sinfo(inf(R.reshape(tvar("x", [n, 4]), [m, 4])), T([m, 4]))


def test_reshape_to_shape_var():
    s = relax.Var("s", relax.ShapeStructInfo(ndim=3))
    out = inf(R.reshape(tvar("x", [2, 3, 4]), s))
    assert out.shape is s and out.ndim == 3
    s2 = relax.Var("s2", relax.ShapeStructInfo([4, 6]))
    assert_sinfo(inf(R.reshape(tvar("x", [2, 3, 4]), s2)), T([4, 6]))


def test_reshape_errors():
    with pytest.raises(R.StructInfoError, match=r"relax.reshape.*\(2, 3\).*\(4, 2\)"):
        inf(R.reshape(tvar("x", [2, 3]), [4, 2]))
    with pytest.raises(R.StructInfoError, match="at most one -1"):
        R.reshape(tvar("x", [2, 3]), [-1, -1])
    with pytest.raises(R.StructInfoError, match="positive"):
        R.reshape(tvar("x", [2, 3]), [0, 6])
    with pytest.raises(R.StructInfoError, match="known shape"):
        R.reshape(tvar("x", ndim=2), [-1])
    with pytest.raises(TypeError, match="shape value"):
        inf(relax.Call(Op.get("relax.reshape"), [tvar("x", [2]), tvar("y", [2])]))


# --------------------------------------------------------------------------- expand/squeeze
def test_expand_dims():
    assert_sinfo(inf(R.expand_dims(tvar("x", [2, n]), 0)), T([1, 2, n]))
    assert_sinfo(inf(R.expand_dims(tvar("x", [2, n]), [1, -1])), T([2, 1, n, 1]))
    assert_sinfo(inf(R.expand_dims(tvar("x", ndim=2), [0])), T(ndim=3))
    assert_sinfo(inf(R.expand_dims(tvar("x", ndim=-1), [0])), T(ndim=-1))
    with pytest.raises(R.StructInfoError, match="out of range"):
        inf(R.expand_dims(tvar("x", [2]), [3]))


def test_squeeze():
    assert_sinfo(inf(R.squeeze(tvar("x", [1, 3, 1]))), T([3]))
    assert_sinfo(inf(R.squeeze(tvar("x", [1, 3, 1]), 0)), T([3, 1]))
    assert_sinfo(inf(R.squeeze(tvar("x", [1, n, 1]), [0, 2])), T([n]))
    assert_sinfo(inf(R.squeeze(tvar("x", [n, 1]), [0])), T([1]))  # symbolic: trusted
    assert_sinfo(inf(R.squeeze(tvar("x", ndim=3), [0])), T(ndim=2))
    assert_sinfo(inf(R.squeeze(tvar("x", ndim=3))), T(ndim=-1))
    x = tvar("x", [2, 3])
    assert inf(R.squeeze(x, [])) is x.struct_info
    with pytest.raises(R.StructInfoError, match="length 1.*dimension 1"):
        inf(R.squeeze(tvar("x", [1, 3]), [1]))


def test_flatten():
    assert_sinfo(inf(R.flatten(tvar("x", [2, 3, 4]))), T([24]))
    assert_sinfo(inf(R.flatten(tvar("x", [n, 4]))), T([n * 4]))
    assert_sinfo(inf(R.flatten(tvar("x", []))), T([1]))
    assert_sinfo(inf(R.flatten(tvar("x", ndim=3))), T(ndim=1))
    assert_sinfo(inf(R.flatten(tvar("x", ndim=-1))), T(ndim=1))


# --------------------------------------------------------------------------- concat / split
def test_concat():
    call = R.concat([tvar("a", [2, 3]), tvar("b", [4, 3])])
    assert isinstance(call.args[0], relax.Tuple)
    assert_sinfo(inf(call), T([6, 3]))
    assert_sinfo(inf(R.concat([tvar("a", [2, 3]), tvar("b", [2, 5])], axis=-1)), T([2, 8]))
    assert_sinfo(inf(R.concat([tvar("a", [n, 3]), tvar("b", [n, 3])], axis=0)), T([n * 2, 3]))
    assert_sinfo(inf(R.concat([tvar("a", [n, 3]), tvar("b", [m, 3])], axis=0)), T([n + m, 3]))
    assert_sinfo(inf(R.concat([tvar("a", [2, n]), tvar("b", [2, m])], axis=0)), T(ndim=2))
    assert_sinfo(inf(R.concat([tvar("a", ndim=2), tvar("b", [2, 3])])), T(ndim=2))
    a = tvar("a", [2, 3])
    assert inf(R.concat([a])) is a.struct_info


def test_concat_errors():
    with pytest.raises(R.StructInfoError, match=r"same shape except.*dimension 1"):
        inf(R.concat([tvar("a", [2, 3]), tvar("b", [2, 4])]))
    with pytest.raises(R.StructInfoError, match="same dtype"):
        inf(R.concat([tvar("a", [2, 3]), tvar("b", [2, 3], "int32")]))
    with pytest.raises(R.StructInfoError, match="same rank"):
        inf(R.concat([tvar("a", [2, 3]), tvar("b", [2])]))
    with pytest.raises(R.StructInfoError, match="at least one"):
        inf(R.concat(relax.Tuple([])))
    with pytest.raises(TypeError, match="tuple of tensors"):
        inf(relax.Call(Op.get("relax.concat"), [tvar("a", [2])]))


def test_split_sections():
    out = inf(R.split(tvar("x", [6, 4]), 3))
    assert isinstance(out, relax.TupleStructInfo) and len(out.fields) == 3
    for f in out.fields:
        assert_sinfo(f, T([2, 4]))
    out = inf(R.split(tvar("x", [7, 4]), 3))
    assert [int(f.shape[0]) for f in out.fields] == [3, 3, 1]
    out = inf(R.split(tvar("x", [4, n]), 2, axis=1))
    assert all(f.ndim == 2 and int(f.shape[0]) == 4 for f in out.fields)
    out = inf(R.split(tvar("x", ndim=2), 2))
    assert [f.ndim for f in out.fields] == [2, 2] and out.fields[0].shape is None
    x = tvar("x", [2, 3])
    assert inf(R.split(x, 1)).fields[0] is x.struct_info


def test_split_indices():
    out = inf(R.split(tvar("x", [10, 4]), [3, 7]))
    assert [int(f.shape[0]) for f in out.fields] == [3, 4, 3]
    out = inf(R.split(tvar("x", [10, 4]), [3, 12]))
    assert [int(f.shape[0]) for f in out.fields] == [3, 7, 0]
    out = inf(R.split(tvar("x", [4, 10]), [2], axis=-1))
    assert_sinfo(out.fields[0], T([4, 2]))
    assert_sinfo(out.fields[1], T([4, 8]))
    with pytest.raises(R.StructInfoError, match="positive"):
        inf(R.split(tvar("x", [4]), 0))


# --------------------------------------------------------------------------- broadcast_to
def test_broadcast_to():
    assert_sinfo(inf(R.broadcast_to(tvar("x", [1, 3]), [4, 2, 3])), T([4, 2, 3]))
    assert_sinfo(inf(R.broadcast_to(tvar("x", [n, 1]), [n, m])), T([n, m]))
    assert_sinfo(inf(R.broadcast_to(tvar("x", ndim=2), [4, 2, 3])), T([4, 2, 3]))
    with pytest.raises(R.StructInfoError, match="cannot broadcast"):
        inf(R.broadcast_to(tvar("x", [2, 3]), [2, 4]))
    with pytest.raises(R.StructInfoError, match="fewer dimensions"):
        inf(R.broadcast_to(tvar("x", [2, 3]), [3]))


# --------------------------------------------------------------------------- take
def test_take():
    call = R.take(tvar("x", [5, n]), tvar("i", [3], "int64"), axis=0)
    assert call.attrs.type_key == "relax.attrs.TakeAttrs" and call.attrs.mode == "fast"
    assert_sinfo(inf(call), T([3, n]))
    assert_sinfo(inf(R.take(tvar("x", [5, 6]), tvar("i", [2, 3], "int32"), axis=1)),
                 T([5, 2, 3]))
    assert_sinfo(inf(R.take(tvar("x", [5, 6]), tvar("i", [], "int32"), axis=-1)), T([5]))
    assert_sinfo(inf(R.take(tvar("x", [5]), tvar("i", [m], "int64"))), T([m]))
    assert_sinfo(inf(R.take(tvar("x", ndim=2), tvar("i", [3], "int64"), axis=0)), T(ndim=2))


def test_take_errors():
    with pytest.raises(R.StructInfoError, match="integer indices"):
        inf(R.take(tvar("x", [5]), tvar("i", [3], "float32")))
    with pytest.raises(R.StructInfoError, match="1-dimensional"):
        inf(R.take(tvar("x", [5, 2]), tvar("i", [3], "int64")))
    with pytest.raises(R.StructInfoError, match="out of range"):
        inf(R.take(tvar("x", [5, 2]), tvar("i", [3], "int64"), axis=2))


# --------------------------------------------------------------------------- strided_slice
def test_strided_slice_static():
    call = R.strided_slice(tvar("x", [8, 9]), axes=[0], begin=[1], end=[5])
    assert call.attrs.type_key == "relax.attrs.StridedSliceAttrs"
    assert_sinfo(inf(call), T([4, 9]))
    assert_sinfo(inf(R.strided_slice(tvar("x", [8, 9]), [0, 1], [1, 0], [8, 9], [3, 2])),
                 T([3, 5]))
    assert_sinfo(inf(R.strided_slice(tvar("x", [8]), [0], [-3], [100])), T([3]))
    assert_sinfo(inf(R.strided_slice(tvar("x", [8]), [0], [7], [0], [-2])), T([4]))
    assert_sinfo(inf(R.strided_slice(tvar("x", [8]), [0], [5], [2])), T([0]))
    x = tvar("x", [2, 3])
    assert inf(R.strided_slice(x, [], [], [])) is x.struct_info


def test_strided_slice_symbolic():
    assert_sinfo(inf(R.strided_slice(tvar("x", [n, 9]), [1], [0], [4])), T([n, 4]))
    assert_sinfo(inf(R.strided_slice(tvar("x", [n, 9]), [0], [0], [2**31 - 1])), T([n, 9]))
    out = inf(R.strided_slice(tvar("x", [n, 9]), [0], [0], [2]))
    assert out.ndim == 2 and int(out.shape[1]) == 9
    # a symbolic begin: the canonicalized length (tests/relax/transform/legalize/
    # test_relax_legalize_strided_slice_symbolic.py checks it against Python slicing)
    out = inf(R.strided_slice(tvar("x", [8, 9]), [0], [m], [8]))
    assert out.shape is not None and int(out.shape[1]) == 9
    assert_sinfo(inf(R.strided_slice(tvar("x", ndim=2), [0], [1], [3])), T(ndim=2))


def test_strided_slice_errors():
    with pytest.raises(ValueError, match="one value per axis"):
        R.strided_slice(tvar("x", [8]), [0], [1, 2], [3])
    with pytest.raises(R.StructInfoError, match="non-zero"):
        inf(R.strided_slice(tvar("x", [8]), [0], [1], [3], [0]))
    with pytest.raises(R.StructInfoError, match="out of range"):
        inf(R.strided_slice(tvar("x", [8]), [1], [1], [3]))


# --------------------------------------------------------------------------- repeat
def test_repeat():
    call = R.repeat(tvar("x", [2, 3]), 2, axis=1)
    assert call.attrs.type_key == "relax.attrs.RepeatAttrs"
    assert_sinfo(inf(call), T([2, 6]))
    assert_sinfo(inf(R.repeat(tvar("x", [2, 3]), 3)), T([18]))
    assert_sinfo(inf(R.repeat(tvar("x", [n, 3]), 2, axis=0)), T([n * 2, 3]))
    assert_sinfo(inf(R.repeat(tvar("x", ndim=2), 2, axis=0)), T(ndim=2))
    assert_sinfo(inf(R.repeat(tvar("x", ndim=2), 2)), T(ndim=1))
    with pytest.raises(R.StructInfoError, match="out of range"):
        inf(R.repeat(tvar("x", [2, 3]), 2, axis=2))
