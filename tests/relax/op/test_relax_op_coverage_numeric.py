"""The Relax ops added for TVM coverage (flip, tile, stack, one_hot, gathers, scatters,
collapse_sum, meshgrid, masked_fill, sorting, quantize, nn.prelu/softplus/selu/pixel_shuffle/
batch_flatten/instance_norm, ...) and reversed strided slices: each legalized, built once over a
symbolic dim ``n`` and run at two odd sizes against numpy."""

import numpy as np
import pytest
from coverage_util import F, check_numeric, ints, n
from scipy.special import erf  # noqa: F401 - scipy is a test dependency of the numpy refs

from minitvm import relax
from minitvm.relax import op as R


def _scatter_elements_ref(x, idx, upd, axis, reduction):
    out = x.copy()
    for pos in np.ndindex(*idx.shape):
        dst = list(pos)
        dst[axis] = idx[pos] % x.shape[axis]
        dst = tuple(dst)
        if reduction == "update":
            out[dst] = upd[pos]
        elif reduction == "add":
            out[dst] += upd[pos]
        elif reduction == "mul":
            out[dst] *= upd[pos]
        elif reduction == "min":
            out[dst] = min(out[dst], upd[pos])
        else:
            out[dst] = max(out[dst], upd[pos])
    return out


def _scatter_nd_ref(x, idx, upd, reduction):
    out = x.copy()
    m = idx.shape[-1]
    for pos in np.ndindex(*idx.shape[:-1]):
        dst = tuple(int(v) for v in idx[pos])
        if reduction == "update":
            out[dst] = upd[pos]
        elif reduction == "add":
            out[dst] += upd[pos]
        elif reduction == "mul":
            out[dst] *= upd[pos]
        elif reduction == "min":
            out[dst] = np.minimum(out[dst], upd[pos])
        else:
            out[dst] = np.maximum(out[dst], upd[pos])
    del m
    return out


def _put(x, idx, v, acc):
    out = x.copy()
    if acc:
        np.add.at(out, idx, v)
    else:
        out[idx] = v
    return out


def _set(x, key, v):
    out = x.copy()
    out[key] = v
    return out


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _nll(p, t, w, red, ignore=-100):
    tt = np.where(t == ignore, 0, t)
    ww = w[tt] * (t != ignore)
    loss = -ww * np.take_along_axis(p, tt[:, None], 1)[:, 0]
    if red == "none":
        return loss
    return loss.sum() if red == "sum" else loss.sum() / ww.sum()


def _positive(rng, s, nv):
    return (rng.random(s) + 0.5).astype("float32")


def _ties(rng, s, nv):
    return rng.integers(-2, 3, size=s).astype("float32")


CASES = {
    "flip": (lambda x: R.flip(x, axis=-1), [(["n", 3, 5], F)], lambda x: np.flip(x, -1)),
    "flip_symbolic_axis": (lambda x: R.flip(x, axis=0), [(["n", 2], "int32")],
                           lambda x: np.flip(x, 0)),
    "tile": (lambda x: R.tile(x, [2, 1, 3]), [(["n", 3], F)], lambda x: np.tile(x, [2, 1, 3])),
    "tile_fewer_reps": (lambda x: R.tile(x, 2), [(["n", 3], F)], lambda x: np.tile(x, 2)),
    "stack": (lambda a, b: R.stack((a, b), axis=-1), [(["n", 3], F), (["n", 3], F)],
              lambda a, b: np.stack([a, b], -1)),
    "stack_three": (lambda a, b, c: R.stack([a, b, c], axis=0),
                    [(["n"], "int32"), (["n"], "int32"), (["n"], "int32")],
                    lambda a, b, c: np.stack([a, b, c], 0)),
    "one_hot": (lambda i: R.one_hot(i, 1.0, 0.0, 5), [(["n"], "int64", ints(0, 5))],
                lambda i: np.eye(5)[i]),
    "one_hot_axis0_out_of_range": (lambda i: R.one_hot(i, 7, -1, 4, axis=0),
                          [(["n", 2], "int32", ints(-4, 4, "int32"))],
                          lambda i: np.where(np.arange(4)[:, None, None] == i[None], 7, -1)),
    "gather_elements": (lambda x, i: R.gather_elements(x, i, axis=1),
                        [(["n", 4], F), (["n", 6], "int64", ints(0, 4))],
                        lambda x, i: np.take_along_axis(x, i, 1)),
    "gather_elements_axis0": (lambda x, i: R.gather_elements(x, i, axis=0),
                              [(["n", 4], F), ([2, 3], "int32", ints(-3, 3, "int32"))],
                              lambda x, i: np.take_along_axis(x[:, :3], i % x.shape[0], 0)),
    "gather_nd": (lambda x, i: R.gather_nd(x, i), [(["n", 4, 3], F), ([5, 2], "int64",
                                                                       ints(0, 3))],
                  lambda x, i: x[i[:, 0], i[:, 1]]),
    "gather_nd_batch": (lambda x, i: R.gather_nd(x, i, batch_dims=1),
                        [(["n", 4, 3], F), (["n", 2, 1], "int64", ints(0, 4))],
                        lambda x, i: np.stack([x[b, i[b, :, 0]] for b in range(x.shape[0])])),
    "collapse_sum_to": (lambda x: R.collapse_sum_to(x, relax.ShapeExpr([1, 3])),
                        [(["n", 2, 3], F)], lambda x: x.sum((0, 1))[None]),
    "collapse_sum_like": (lambda x, y: R.collapse_sum_like(x, y), [(["n", 3], F), ([3], F)],
                          lambda x, y: x.sum(0)),
    "collapse_sum_keep_n": (lambda x: R.collapse_sum_to(x, relax.ShapeExpr([n, 1])),
                            [([2, "n", 3], F)], lambda x: x.sum((0, 2))[:, None]),
    "meshgrid_ij": (lambda a, b: R.meshgrid((a, b), indexing="ij"), [(["n"], F), ([3], F)],
                    lambda a, b: tuple(np.meshgrid(a, b, indexing="ij"))),
    "meshgrid_xy": (lambda a, b, c: R.meshgrid((a, b, c), indexing="xy"),
                    [(["n"], F), ([3], F), ([2], F)],
                    lambda a, b, c: tuple(np.meshgrid(a, b, c, indexing="xy"))),
    "masked_fill": (lambda x, m: R.masked_fill(x, m, relax.const(-1.0, F)),
                    [(["n", 3], F), (["n", 3], "bool")], lambda x, m: np.where(m, np.float32(-1),
                                                                                x)),
    "sort": (lambda x: R.sort(x, axis=1), [(["n", 5], F)], lambda x: np.sort(x, 1)),
    "sort_desc_ties": (lambda x: R.sort(x, axis=0, descending=True), [(["n", 5], F, _ties)],
                       lambda x: -np.sort(-x, 0)),
    "sort_int": (lambda x: R.sort(x), [(["n", 4], "int32")], lambda x: np.sort(x, -1)),
    "argsort_ties": (lambda x: R.argsort(x, axis=0), [(["n", 3], F, _ties)],
                     lambda x: np.argsort(x, 0, kind="stable").astype("int32")),
    "argsort_desc_int64": (lambda x: R.argsort(x, axis=-1, descending=True, dtype="int64"),
                           [(["n", 6], F)], lambda x: np.argsort(-x, -1, kind="stable")),
    "topk": (lambda x: R.topk(x, 2, axis=-1), [(["n", 5], F)],
             lambda x: (-np.sort(-x, -1)[:, :2],
                        np.argsort(-x, -1, kind="stable")[:, :2].astype("int32"))),
    "topk_smallest_axis0": (lambda x: R.topk(x, 3, axis=0, ret_type="indices", largest=False,
                                             dtype="int64"),
                            [(["n", 4], F)], lambda x: np.argsort(x, 0, kind="stable")[:3]),
    "topk_values": (lambda x: R.topk(x, 1, ret_type="values"), [(["n", 5], F, _ties)],
                    lambda x: x.max(-1, keepdims=True)),
    "quantize": (lambda x: R.quantize(x, relax.const(0.1, F), relax.const(3, "int8")),
                 [(["n", 3], F)],
                 lambda x: np.clip(np.round(x / np.float32(0.1)) + 3, -128, 127).astype("int8")),
    "quantize_per_channel_uint8": (
        lambda x: R.quantize(x, relax.const(np.array([0.01, 0.1, 1.0], "float32")),
                             relax.const(np.array([128, 0, 5], "uint8")), axis=1,
                             out_dtype="uint8"),
        [(["n", 3], F)],
        lambda x: np.clip(np.round(x / np.array([0.01, 0.1, 1.0], "float32"))
                          + np.array([128, 0, 5]), 0, 255).astype("uint8")),
    "dequantize": (lambda x: R.dequantize(x, relax.const(0.1, F), relax.const(3, "int8")),
                   [(["n", 3], "int8", ints(-128, 128, "int8"))],
                   lambda x: ((x.astype("int32") - 3) * np.float32(0.1)).astype("float32")),
    "dequantize_per_channel": (
        lambda x: R.dequantize(x, relax.const(np.array([0.5, 2.0], "float32")),
                               relax.const(np.array([1, -1], "int8")), axis=0),
        [([2, "n"], "int8", ints(-128, 128, "int8"))],
        lambda x: ((x.astype("int32") - np.array([[1], [-1]])) *
                   np.array([[0.5], [2.0]], "float32")).astype("float32")),
    "log_add_exp": (lambda a, b: R.log_add_exp(a, b), [(["n", 3], F), ([3], F)], np.logaddexp),
    "outer": (lambda a, b: R.outer(a, b), [(["n"], F), ([3], F)], np.outer),
    "eye": (lambda x: R.eye(4, 3, 1, "float32"), [(["n"], F)],
            lambda x: np.eye(4, 3, 1, dtype="float32")),
    "eye_like": (lambda x: R.eye_like(x, -1, "int32"), [(["n", 4], F)],
                 lambda x: np.eye(x.shape[0], 4, -1, dtype="int32")),
    "bucketize": (lambda x, b: R.bucketize(x, b), [(["n", 3], F, _ties),
                                                   ([4], F, lambda r, s, nv: np.array(
                                                       [-1, 0, 0.5, 1], "float32"))],
                  lambda x, b: np.searchsorted(b, x, side="left")),
    "bucketize_right_int32": (lambda x, b: R.bucketize(x, b, out_int32=True, right=True),
                              [(["n", 3], F, _ties), ([3], F, lambda r, s, nv: np.array(
                                  [-1, 0, 1], "float32"))],
                              lambda x, b: np.searchsorted(b, x, side="right").astype("int32")),
    "ewise_fma": (lambda a, b, c: R.ewise_fma(a, b, c), [(["n", 3], F)] * 3,
                  lambda a, b, c: a * b + c),
    "prelu": (lambda x, a: R.nn.prelu(x, a, axis=1), [(["n", 3, 2], F), ([3], F)],
              lambda x, a: np.where(x > 0, x, x * a[:, None])),
    "prelu_one_alpha": (lambda x, a: R.nn.prelu(x, a, axis=-1), [(["n", 3], F), ([1], F)],
                        lambda x, a: np.where(x > 0, x, x * a)),
    "softplus": (lambda x: R.nn.softplus(x), [(["n", 3], F)], lambda x: np.log1p(np.exp(x))),
    "softplus_beta_threshold": (
        lambda x: R.nn.softplus(x, beta=2.0, threshold=1.0), [(["n", 3], F)],
        lambda x: np.where(2 * x > 1, x, np.log1p(np.exp(2 * x)) / 2)),
    "selu": (lambda x: R.nn.selu(x), [(["n", 3], F)],
             lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 *
                                                     (np.exp(x) - 1))),
    "pixel_shuffle": (lambda x: R.nn.pixel_shuffle(x, 2), [(["n", 8, 3, 1], F)],
                      lambda x: x.reshape(x.shape[0], 2, 2, 2, 3, 1).transpose(0, 1, 4, 2, 5, 3)
                      .reshape(x.shape[0], 2, 6, 2)),
    "batch_flatten": (lambda x: R.nn.batch_flatten(x), [(["n", 3, 5], F)],
                      lambda x: x.reshape(x.shape[0], -1)),
    "instance_norm": (lambda x, g, b: R.nn.instance_norm(x, g, b, channel_axis=1, axes=[2, 3]),
                      [(["n", 3, 5, 2], F), ([3], F), ([3], F)],
                      lambda x, g, b: (x - x.mean((2, 3), keepdims=True)) /
                      np.sqrt(x.var((2, 3), keepdims=True) + 1e-5) * g[:, None, None] +
                      b[:, None, None]),
    "instance_norm_symbolic_channels": (
        lambda x, g, b: R.nn.instance_norm(x, g, b, channel_axis=1, axes=[2], scale=False),
        [([2, "n", 5], F), (["n"], F), (["n"], F)],
        lambda x, g, b: (x - x.mean(2, keepdims=True)) / np.sqrt(x.var(2, keepdims=True) + 1e-5)
        + b[:, None]),
    "index_tensor": (lambda x, a, b: R.index_tensor(x, (a, b)),
                     [(["n", 4, 3], F), ([2, 1], "int64", ints(0, 3)), ([5], "int64",
                                                                          ints(-4, 4))],
                     lambda x, a, b: x[a, b]),
    "index_tensor_symbolic_index": (lambda x, a: R.index_tensor(x, [a]),
                                    [(["n", 3], F), (["n"], "int64", ints(0, "n"))],
                                    lambda x, a: x[a]),
    "index_put": (lambda x, a, v: R.index_put(x, (a,), v),
                  [(["n", 3], F), ([2], "int64", lambda r, s, nv: np.array([0, nv - 1])),
                   ([3], F)],
                  lambda x, a, v: _put(x, (a,), v, False)),
    "index_put_accumulate": (lambda x, a, b, v: R.index_put(x, (a, b), v, accumulate=True),
                             [(["n", 3], F), ([4], "int64", ints(0, 2)),
                              ([4], "int64", ints(-3, 3)), ([4], F)],
                             lambda x, a, b, v: _put(x, (a, b), v, True)),
    "slice_scatter": (lambda x, s: R.slice_scatter(x, s, 1, 6, 2, axis=1),
                      [(["n", 7], F), (["n", 3], F)],
                      lambda x, s: _set(x, (slice(None), slice(1, 6, 2)), s)),
    "slice_scatter_symbolic_axis": (lambda x, s: R.slice_scatter(x, s, 0, n, 1, axis=0),
                                    [(["n", 2], F), (["n", 2], F)], lambda x, s: s),
    "hamming_window_periodic": (lambda x: R.hamming_window(7, True, 0.54, 0.46), [(["n"], F)],
                                lambda x: (0.54 - 0.46 * np.cos(2 * np.pi * np.arange(7) / 7))
                                .astype("float32")),
    "hamming_window_symmetric": (lambda x: R.hamming_window(5, False, 0.54, 0.46),
                                 [(["n"], F)], lambda x: np.hamming(5).astype("float32")),
    "conv3d_transpose": (lambda x, w: R.nn.conv3d_transpose(x, w, strides=2),
                         [(["n", 2, 1, 2, 3], F), ([2, 1, 2, 2, 2], F)],
                         lambda x, w: np.einsum("ncdhw,coijk->nodihjwk", x, w)
                         .reshape(x.shape[0], 1, 2, 4, 6)),
    "attention_bias": (lambda q, k, v, b: R.nn.attention_bias(q, k, v, b),
                       [([1, "n", 2, 4], F), ([1, 5, 2, 4], F), ([1, 5, 2, 4], F),
                        ([1, 2, "n", 5], F)],
                       lambda q, k, v, b: np.einsum("bhqk,bkhd->bqhd", _softmax(
                           np.einsum("bqhd,bkhd->bhqk", q, k) / 2.0 + b), v)),
    "cross_entropy_with_logits": (lambda p, lab: R.nn.cross_entropy_with_logits(p, lab),
                                  [(["n", 3], F), (["n", 3], F)],
                                  lambda p, lab: np.array(-(p * lab).sum() / p.shape[0], F)),
    "nll_loss_mean_weights": (lambda p, t, w: R.nn.nll_loss(p, t, w),
                              [(["n", 4], F), (["n"], "int64", ints(0, 4)), ([4], F, _positive)],
                              lambda p, t, w: np.array(_nll(p, t, w, "mean"), F)),
    "nll_loss_none_ignore": (lambda p, t: R.nn.nll_loss(p, t, reduction="none", ignore_index=1),
                             [(["n", 4], F), (["n"], "int64", ints(0, 4))],
                             lambda p, t: _nll(p, t, np.ones(4, F), "none", 1).astype(F)),
    "nll_loss_sum_spatial": (lambda p, t: R.nn.nll_loss(p, t, reduction="sum"),
                             [(["n", 3, 2], F), (["n", 2], "int64", ints(0, 3))],
                             lambda p, t: np.array(-np.take_along_axis(p, t[:, None], 1).sum(),
                                                   F)),
    # reversed slices of a symbolic axis (the length is symbolic now, so they legalize)
    "strided_slice_reverse": (lambda x: R.strided_slice(x, [0], [-1], [-2**31], [-1]),
                              [(["n", 3], F)], lambda x: x[::-1]),
    "strided_slice_reverse_step": (lambda x: R.strided_slice(x, [0], [5], [1], [-3]),
                                   [(["n", 3], F)], lambda x: x[5:1:-3]),
    "strided_slice_reverse_far_end": (lambda x: R.strided_slice(x, [0], [0], [-100], [-2]),
                                      [(["n", 3], F)], lambda x: x[0:-100:-2]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_numpy_on_odd_symbolic_shapes(name):
    make, specs, ref = CASES[name]
    check_numeric(make, specs, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("reduction", ["update", "add", "mul", "min", "max"])
def test_scatter_elements(reduction):
    check_numeric(
        lambda x, i, u: R.scatter_elements(x, i, u, axis=1, reduction=reduction),
        [(["n", 4], F), (["n", 3], "int64", ints(-4, 4)), (["n", 3], F)],
        lambda x, i, u: _scatter_elements_ref(x, i, u, 1, reduction))


@pytest.mark.parametrize("reduction", ["update", "add", "mul", "min", "max"])
def test_scatter_nd(reduction):
    # index tuples may repeat: update keeps the last, the others combine all of them
    check_numeric(
        lambda x, i, u: R.scatter_nd(x, i, u, reduction),
        [(["n", 4, 2], F), ([5, 2], "int64", ints(0, 3)), ([5, 2], F)],
        lambda x, i, u: _scatter_nd_ref(x, i, u, reduction))


def test_scatter_elements_axis0_symbolic_updates():
    check_numeric(
        lambda x, i, u: R.scatter_elements(x, i, u),
        [(["n", 3], "int32"), ([2, 3], "int64", ints(0, 3)), ([2, 3], "int32")],
        lambda x, i, u: _scatter_elements_ref(x, i, u, 0, "update"))


def test_sort_nan_last():
    def make_nan(rng, s, nv):
        a = rng.standard_normal(s).astype("float32")
        a[::2, 1] = np.nan
        return a

    check_numeric(lambda x: R.sort(x, axis=1), [(["n", 4], F, make_nan)],
                  lambda x: np.sort(x, 1))
    check_numeric(lambda x: R.argsort(x, axis=1, dtype="int64"), [(["n", 4], F, make_nan)],
                  lambda x: np.argsort(x, 1, kind="stable"))


def test_integer_power_including_negative_exponents():
    def ref(a, b):
        out = np.zeros(np.broadcast(a, b).shape, a.dtype)
        for pos in np.ndindex(*out.shape):
            x, e = int(np.broadcast_to(a, out.shape)[pos]), int(np.broadcast_to(b, out.shape)[pos])
            out[pos] = x ** e if e >= 0 else (1 if x == 1 else (-1) ** e if x == -1 else 0)
        return out

    check_numeric(R.power, [(["n", 4], "int32", ints(-3, 4, "int32")),
                            ([4], "int32", lambda r, s, nv: np.array([0, 1, 3, -2], "int32"))],
                  ref)
    check_numeric(R.power, [(["n", 3], "int64", ints(-9, 9)), ([1], "int64", ints(5, 6))],
                  lambda a, b: a ** b)


def _probs(rng, s, nv):
    p = rng.random(s).astype("float32") + 0.1
    return (p / p.sum(-1, keepdims=True)).astype("float32")


def test_multinomial_from_uniform_and_wrap_param():
    def ref(p, u, i):
        c = np.cumsum(p, 1)
        return np.minimum((c[i[:, 0]] <= u).sum(1, keepdims=True), p.shape[1] - 1)

    check_numeric(lambda p, u, i: R.multinomial_from_uniform(p, u, i),
                  [([3, 6], F, _probs), (["n", 1], F, lambda r, s, nv: r.random(s).astype(F)),
                   (["n", 1], "int64", ints(0, 3))], ref)
    check_numeric(lambda x: R.wrap_param(x, "float16"), [(["n", 3], F)],
                  lambda x: x.astype("float16"), rtol=1e-3, atol=1e-3)


def _build_main(body, params):
    import minitvm as tvm

    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(body(bb, *params))
        bb.emit_func_output(out)
    return relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())


def test_nonzero_and_unique_data_dependent_shapes():
    from minitvm import tir

    x = relax.Var("x", relax.TensorStructInfo([n, 3], "float32"))
    vm = _build_main(lambda bb, a: bb.emit(R.nonzero(a)), [x])
    rng = np.random.default_rng(1)
    for rows in (3, 7):
        a = (rng.random((rows, 3)) > 0.6).astype("float32") * rng.standard_normal((rows, 3))
        np.testing.assert_array_equal(vm["main"](a.astype("float32")).numpy(),
                                      np.stack(np.nonzero(a)))
    m = tir.Var("m", "int64")
    y = relax.Var("y", relax.TensorStructInfo([n], "int32"))

    def body(bb, a):
        u = bb.emit(R.unique(a, return_inverse=True, return_counts=True))
        vals = bb.match_cast(relax.TupleGetItem(u, 0), relax.TensorStructInfo([m], "int32"))
        shifted = bb.emit(R.add(vals, relax.const(1, "int32")))  # legalized on the cast shape
        return bb.emit(relax.Tuple([shifted, relax.TupleGetItem(u, 1),
                                    relax.TupleGetItem(u, 2)]))

    vm = _build_main(body, [y])
    for size in (3, 7):
        a = rng.integers(0, 4, size=size).astype("int32")
        got = vm["main"](a)
        vals, inv, cnt = np.unique(a, return_inverse=True, return_counts=True)
        np.testing.assert_array_equal(got[0].numpy(), vals + 1)
        np.testing.assert_array_equal(got[1].numpy(), inv)
        np.testing.assert_array_equal(got[2].numpy(), cnt)
    vm = _build_main(lambda bb, a: bb.emit(R.unique(a, sorted=False)), [y])
    np.testing.assert_array_equal(vm["main"](np.array([3, 1, 3, 0, 1], "int32")).numpy(),
                                  [3, 1, 0])


@pytest.mark.parametrize("bounds", [
    ((0, 1), (None, 4), (1, 2)), ((-1, 4), (-100, 0), (-1, -1)), ((1, -2), (100, 5), (2, 1)),
    ((5, 0), (1, 5), (1, 1)),
])
def test_dynamic_strided_slice_one_build_two_sizes(bounds):
    (b, e, s) = bounds
    params = [relax.Var("x", relax.TensorStructInfo([n, 5], F))] + [
        relax.Var(k, relax.TensorStructInfo([2], "int64")) for k in ("b", "e", "s")]
    vm = _build_main(lambda bb, *a: bb.emit(R.dynamic_strided_slice(*a)), params)
    rng = np.random.default_rng(2)
    for rows in (3, 7):
        x = rng.standard_normal((rows, 5)).astype(F)
        end = tuple(rows if v is None else v for v in e)
        got = vm["main"](x, np.array(b), np.array(end), np.array(s)).numpy()
        np.testing.assert_array_equal(got, x[b[0]:end[0]:s[0], b[1]:end[1]:s[1]])
