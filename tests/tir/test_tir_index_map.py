"""tir.IndexMap: construction from lambdas, mapping indices and shapes (static and symbolic),
the inverse of permutations / splits / fusions checked point by point, the padding predicate of
a non-dividing split, the errors for maps without an inverse, and the TVMScript text."""

import itertools

import pytest

from minitvm import arith, tir
from minitvm.ir import structural_equal
from minitvm.tir import IndexMap


def _ints(values):
    return [int(v) for v in values]


def test_from_func_names_and_final_indices():
    m = IndexMap.from_func(lambda i, j: [j, i])
    assert [v.name for v in m.initial_indices] == ["i", "j"]
    assert all(v.dtype == "int64" for v in m.initial_indices)
    assert m.final_indices[0] is m.initial_indices[1]
    assert m.final_indices[1] is m.initial_indices[0]


def test_from_func_varargs_needs_ndim():
    m = IndexMap.from_func(lambda *idx: list(reversed(idx)), ndim=3)
    assert [v.name for v in m.initial_indices] == ["i0", "i1", "i2"]
    assert m.map_indices([1, 2, 3]) == [3, 2, 1]
    with pytest.raises(ValueError, match="needs ndim"):
        IndexMap.from_func(lambda *idx: idx)
    with pytest.raises(ValueError, match="ndim=3"):
        IndexMap.from_func(lambda i, j: [i, j], ndim=3)


def test_map_indices_ints_and_symbolic():
    m = IndexMap.from_func(lambda n, c: [n, c // 4, c % 4])
    assert m.map_indices([2, 9]) == [2, 2, 1]
    a = tir.Var("a", "int64")
    out = m.map_indices([a, 13])
    assert out[0] is a
    with pytest.raises(ValueError, match="expects 2 indices"):
        m.map_indices([1])


def test_map_shape_static():
    t = IndexMap.from_func(lambda i, j: (j, i))
    assert _ints(t.map_shape([3, 5])) == [5, 3]
    split = IndexMap.from_func(lambda n, c, h, w: (n, c // 4, h, w, c % 4))
    assert _ints(split.map_shape([2, 8, 3, 5])) == [2, 2, 3, 5, 4]
    assert _ints(split.map_shape([2, 10, 3, 5])) == [2, 3, 3, 5, 4]  # padded to 12
    fuse = IndexMap.from_func(lambda i, j: (i * 6 + j,))
    assert _ints(fuse.map_shape([4, 6])) == [24]
    small = IndexMap.from_func(lambda i: (i % 8,))
    assert _ints(small.map_shape([5])) == [5]


def test_map_shape_symbolic_with_analyzer():
    n = tir.Var("n", "int64")
    an = arith.Analyzer()
    fuse = IndexMap.from_func(lambda i, j: (i * 4 + j,))
    (ext,) = fuse.map_shape([n, 4], an)
    assert an.can_prove_equal(ext, n * 4)
    split = IndexMap.from_func(lambda i: (i // 4, i % 4))
    outer, inner = split.map_shape([n], an)
    assert int(inner) == 4
    for value in (1, 4, 7, 8, 13):  # ceil(n / 4)
        assert tir.index_map._eval_int(outer, {n: value}) == -(-value // 4)


def _roundtrip(m, shape):
    inv = m.inverse(shape)
    out_shape = _ints(m.map_shape(shape))
    seen = set()
    for idx in itertools.product(*[range(s) for s in shape]):
        y = m.map_indices(list(idx))
        assert all(0 <= a < b for a, b in zip(y, out_shape)), (idx, y)
        assert tuple(inv.map_indices(y)) == idx
        seen.add(tuple(y))
    assert len(seen) == len(list(itertools.product(*[range(s) for s in out_shape])))


def test_inverse_permutation_split_fusion():
    _roundtrip(IndexMap.from_func(lambda i, j, k: (k, i, j)), [2, 3, 4])
    _roundtrip(IndexMap.from_func(lambda n, c, h: (n, c // 4, h, c % 4)), [2, 8, 3])
    _roundtrip(IndexMap.from_func(lambda i, j: (i * 3 + j,)), [4, 3])
    _roundtrip(IndexMap.from_func(lambda i: (i // 6, (i // 2) % 3, i % 2)), [12])
    _roundtrip(IndexMap.from_func(lambda i, j: (j % 2, i, j // 2)), [3, 6])


def test_inverse_symbolic_exact_dims():
    n = tir.Var("n", "int64")
    m = IndexMap.from_func(lambda a, c: (c // 4, a, c % 4))
    inv = m.inverse([n, 8])
    assert len(inv.initial_indices) == 3
    assert inv.map_indices([1, 5, 3]) == [5, 7]


def test_non_surjective_inverse_padding_predicate():
    m = IndexMap.from_func(lambda c: (c // 4, c % 4))
    with pytest.raises(ValueError, match="not bijective"):
        m.inverse([10])
    inv, pred = m.non_surjective_inverse([10])
    padded = []
    for o, i in itertools.product(range(3), range(4)):
        (c,) = inv.map_indices([o, i])
        env = dict(zip(inv.initial_indices, [o, i]))
        is_pad = bool(tir.index_map._eval_int(pred, env))
        assert is_pad == (c >= 10)
        if not is_pad:
            assert m.map_indices([c]) == [o, i]
        padded.append(is_pad)
    assert sum(padded) == 2


@pytest.mark.parametrize("fn, shape, msg", [
    (lambda i: (i + 1,), [4], "offset"),
    (lambda i, j: (i,), [4, 3], "not used"),
    (lambda i: (i, i % 4), [8], "overlap"),
    (lambda i, j: (i * j,), [2, 2], "constant factor|not invertible"),
])
def test_inverse_errors(fn, shape, msg):
    with pytest.raises(ValueError, match=msg):
        IndexMap.from_func(fn).inverse(shape)


def test_script_text_and_equivalence():
    m = IndexMap.from_func(lambda n, c, h, w: (n, c // 4, h, w, c % 4))
    assert m.script() == "T.index_map(lambda n, c, h, w: (n, c // 4, h, w, c % 4))"
    assert str(IndexMap.from_func(lambda i: (i * 4 + 1 - i,))) == \
        "T.index_map(lambda i: (i * 4 + 1 - i,))"
    assert str(IndexMap.from_func(lambda i, j: ((i + j) // 2,))) == \
        "T.index_map(lambda i, j: ((i + j) // 2,))"
    same = IndexMap.from_func(lambda a, b, c, d: (a, b // 4, c, d, b % 4))
    assert m == same and m.is_equivalent_to(same)
    assert m != IndexMap.from_func(lambda a, b, c, d: (a, b // 2, c, d, b % 2))
    assert structural_equal(m.final_indices[1],
                            m.map_indices(list(m.initial_indices))[1])
