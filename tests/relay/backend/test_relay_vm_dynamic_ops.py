"""Ops whose shape rules refused run-time sizes (an ``Any`` dim made ``relay.vm.compile`` raise)
now run on the Relay VM as one symbolic kernel: each is compiled once over all-``Any`` inputs,
called at two shapes and compared with numpy (or the interpreter), and called at a shape the op
refuses, which raises the op's own type error (the condition its rule stated of the sizes is
checked at each call, and the per-shape typing names what is wrong)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend.vm import symbolic
from minitvm.runtime.vm import VirtualMachine

_RNG = np.random.default_rng(0)


def _var(name: str, rank: int, dtype: str = "float32"):
    return relay.var(name, shape=tuple(relay.Any() for _ in range(rank)), dtype=dtype)


def _f32(*shape):
    return _RNG.standard_normal(shape).astype("float32")


def _compiled(params, body):
    """(the VM, the interpreter) of ``fn(params) { body }``; every kernel is symbolic."""
    mod = tvm.IRModule.from_expr(relay.Function(params, body))
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm")
    kinds = {type(k.run).__name__ for k in exe.kernels}
    assert kinds == {symbolic.SymbolicKernel.__name__}, kinds
    return VirtualMachine(exe, tvm.cpu()), relay.create_executor("debug", mod=mod).evaluate()


def _check(params, body, valid, reference, invalid, match):
    """Values at each argument tuple of ``valid`` against ``reference(*args)`` (None: the
    interpreter), and the error matching ``match`` at ``invalid``."""
    vm, interp = _compiled(params, body)
    for args in valid:
        want = reference(*args) if reference is not None else interp(*args).numpy()
        got = vm.run(*args).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=match):
        vm.run(*invalid)


def _group_norm(x, gamma, beta, groups=2, eps=1e-5):
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    g = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return g.reshape(x.shape) * gamma.reshape(shape) + beta.reshape(shape)


def test_group_norm():
    x, g, b = _var("x", 3), _var("g", 1), _var("b", 1)
    _check([x, g, b], relay.nn.group_norm(x, g, b, num_groups=2),
           [(_f32(2, 4, 5), _f32(4), _f32(4)), (_f32(1, 6, 3), _f32(6), _f32(6))], _group_norm,
           (_f32(2, 3, 5), _f32(3), _f32(3)), "reshape.*cannot split 3 elements evenly by 2")


def _depth_to_space(x, b=2):
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return y.reshape(n, c // (b * b), h * b, w * b)


def _space_to_depth(x, b=2):
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


def test_depth_to_space():
    x = _var("x", 4)
    _check([x], relay.nn.depth_to_space(x, 2), [(_f32(1, 4, 2, 3),), (_f32(2, 8, 1, 2),)],
           _depth_to_space, (_f32(1, 3, 2, 2),),
           r"nn.depth_to_space: channels 3 are not divisible by block_size\^2 = 4")


def test_space_to_depth():
    x = _var("x", 4)
    _check([x], relay.nn.space_to_depth(x, 2), [(_f32(1, 1, 4, 4),), (_f32(2, 3, 2, 6),)],
           _space_to_depth, (_f32(1, 3, 3, 2),),
           "nn.space_to_depth: height 3 and width 2 must be divisible by block_size 2")


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
def test_mirror_pad(mode):
    x = _var("x", 2)
    pads = ((2, 1), (0, 1))
    _check([x], relay.nn.mirror_pad(x, pads, mode=mode), [(_f32(4, 3),), (_f32(3, 5),)],
           lambda a: np.pad(a, pads, mode=mode.lower()), (_f32(1, 3),),
           f"nn.mirror_pad: padding \\(2, 1\\) is too large .* size 1 in {mode} mode")


def _dilate(x, strides):
    out = np.zeros(tuple((d - 1) * s + 1 for d, s in zip(x.shape, strides, strict=True)),
                   x.dtype)
    out[tuple(slice(None, None, s) for s in strides)] = x
    return out


def test_dilate():
    x = _var("x", 2)
    _check([x], relay.nn.dilate(x, (2, 3)), [(_f32(4, 3),), (_f32(1, 2),)],
           lambda a: _dilate(a, (2, 3)), (_f32(0, 3),), "nn.dilate: cannot dilate an empty axis")


def test_gather_nd_with_index_rank():
    x, i = _var("x", 2), _var("i", 2, "int32")
    idx = np.array([[0, 3, 1], [2, 0, 1]], "int32")
    _check([x, i], relay.gather_nd(x, i, index_rank=2),
           [(_f32(4, 3), idx), (_f32(5, 4), idx[:, :2])], lambda a, j: a[tuple(j)],
           (_f32(4, 3), idx[:1]), "gather_nd: indices .* hold index tuples of 1 .* not "
           "index_rank 2")


def test_gather_nd_of_a_vector_takes_index_rank_one():
    x, i = _var("x", 1), _var("i", 2, "int32")
    idx = np.array([[0, 3, 1, 1]], "int32")
    _check([x, i], relay.gather_nd(x, i), [(_f32(4), idx), (_f32(6), idx[:, :2])],
           lambda a, j: a[tuple(j)], (_f32(4), np.zeros((2, 2), "int32")),
           "gather_nd: indices .* index more dims than the data")


def test_gather_nd_without_index_rank_names_it():
    x, i = _var("x", 2), _var("i", 2, "int32")
    mod = tvm.IRModule.from_expr(relay.Function([x, i], relay.gather_nd(x, i)))
    with pytest.raises(TypeError, match=r"gather_nd: the index rank .* pass index_rank, "
                                        r"gather_nd\(data, indices, index_rank=K\) with K .* "
                                        r"\(1 to 2 here\)"):
        relay.vm.compile(mod, target="llvm")


def _scatter_add(data, idx, upd):
    out = data.copy()
    np.add.at(out, tuple(idx), upd)
    return out


def test_scatter_nd():
    x, i, u = _var("x", 2), _var("i", 2, "int32"), _var("u", 1)
    idx = np.array([[0, 3, 0], [2, 1, 2]], "int32")
    _check([x, i, u], relay.scatter_nd(x, i, u, "add"), [(_f32(4, 3), idx, _f32(3)),
                                                  (_f32(5, 4), idx[:, :2], _f32(2))],
           _scatter_add, (_f32(4, 3), np.zeros((3, 2), "int32"), _f32(2)),
           "scatter_nd: indices .* must index at most the rank of the data")


def test_einsum():
    x, y = _var("x", 3), _var("y", 2)
    _check([x, y], relay.einsum([x, y], "bij,jk->bik"),
           [(_f32(2, 3, 4), _f32(4, 5)), (_f32(1, 2, 1), _f32(1, 3))],
           lambda a, b: np.einsum("bij,jk->bik", a, b), (_f32(2, 3, 4), _f32(3, 5)),
           "einsum: label 'j' has sizes 4 and 3")


def test_einsum_diagonal_does_not_broadcast():
    """A label repeated within one operand must match exactly (numpy refuses 1 against 4)."""
    x = _var("x", 2)
    _check([x], relay.einsum([x], "ii->i"), [(_f32(3, 3),), (_f32(1, 1),)],
           lambda a: np.einsum("ii->i", a), (_f32(4, 1),), "einsum: label 'i' repeats in 'ii'")


def test_searchsorted_nd():
    s, v = _var("s", 2), _var("v", 2)

    def ref(a, b):
        return np.stack([np.searchsorted(r, q) for r, q in zip(a, b, strict=True)]).astype(
            "int32")

    _check([s, v], relay.searchsorted(s, v),
           [(np.sort(_f32(2, 5), -1), _f32(2, 3)), (np.sort(_f32(3, 2), -1), _f32(3, 4))], ref,
           (np.sort(_f32(2, 5), -1), _f32(3, 3)),
           "searchsorted: the leading dims of sorted_sequence")


def test_space_to_batch_nd():
    x = _var("x", 4)
    _check([x], relay.nn.space_to_batch_nd(x, [2, 2], [[1, 1], [0, 1]]),
           [(_f32(1, 4, 3, 1),), (_f32(2, 2, 5, 2),)], None, (_f32(1, 3, 3, 1),),
           r"nn.space_to_batch_nd: padded dim 1 \(5\) is not divisible by block 2")


def test_batch_to_space_nd():
    x = _var("x", 4)
    _check([x], relay.nn.batch_to_space_nd(x, [2, 2], [[1, 0], [0, 1]]),
           [(_f32(4, 2, 2, 1),), (_f32(8, 1, 3, 2),)], None, (_f32(6, 2, 2, 1),),
           "nn.batch_to_space_nd: batch 6 is not divisible by 4")


def test_affine_grid():
    t = _var("t", 3)
    _check([t], relay.image.affine_grid(t, (3, 4)), [(_f32(1, 2, 3),), (_f32(3, 2, 3),)],
           None, (_f32(1, 3, 3),), r"image.affine_grid: expects affine matrices of shape")
