"""Helpers of the struct-info inference tests: typed vars, expected struct info, and a check
that two struct infos are equal both ways (``struct_info_base_check`` in each direction)."""

from minitvm import relax
from minitvm.relax.analysis import struct_info_base_check


def tvar(name, shape=None, dtype="float32", ndim=-1):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype, ndim=ndim))


def T(shape=None, dtype="float32", ndim=-1):
    return relax.TensorStructInfo(shape, dtype, ndim=ndim)


def assert_sinfo(actual, expected):
    assert type(actual) is type(expected), (actual, expected)
    if isinstance(expected, relax.TensorStructInfo):
        assert actual.dtype == expected.dtype and actual.ndim == expected.ndim
        assert (actual.shape is None) == (expected.shape is None), (actual, expected)
    assert struct_info_base_check(expected, actual) and struct_info_base_check(actual, expected), \
        (str(actual), str(expected))
