"""The Relay VM's symbolic kernels against the interpreter, op by op, at valid and invalid shapes.

``relay.vm.compile`` runs a fused function whose parameters have ``Any`` dimensions as ONE
kernel for every size: its typing gives each ``Any`` a size variable, and a type relation that
cannot check what it assumes of symbolic sizes must state it (``topi.shape_conditions``), or a
call at sizes that break the assumption reads or writes the wrong number of elements. This
sweep builds each op of ``CASES`` over inputs whose dimensions are all (or partly) ``Any``,
compiles it once, and calls it at a grid of shapes, most of them ones the op refuses. At each
shape the VM must do what the interpreter (``relay.create_executor("debug")``) does: both raise,
or both give values of the same shape, close.

``python -m minitvm.testing.symbolic_sweep`` sweeps every case (``--ops`` a few) and prints the
differences and, per case, how many of its kernels are one symbolic kernel and how many compile
per input shape; ``check_op`` is what a test calls.
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["CASES", "Case", "Difference", "REPRESENTATIVE", "SILENT", "check_case", "check_op",
           "main"]

# shapes each rank is called at: valid ones for most ops and ones that break them (a 1 where a
# size must match, swapped dims, a window larger than the input)
POOLS: dict[int, list[tuple]] = {
    0: [()],
    1: [(3,), (1,), (4,)],
    2: [(4, 3), (2, 3), (1, 3), (4, 1), (3, 4), (2, 2)],
    3: [(2, 3, 4), (1, 3, 4), (2, 4, 3), (2, 4, 5), (2, 3, 1)],
    4: [(1, 3, 5, 5), (2, 3, 5, 5), (4, 3, 3, 3), (4, 2, 3, 3), (1, 3, 6, 6), (2, 4, 4, 4)],
    5: [(1, 3, 4, 4, 4), (2, 3, 3, 3, 3), (4, 3, 2, 2, 2), (4, 2, 2, 2, 2)],
}


@dataclass
class Case:
    """One op over inputs ``ins``: each ``(shape, dtype)`` with None for an ``Any`` dimension
    and a name for one ``Any`` shared by the inputs that name it (an int for a rank: all
    ``Any``); ``build(vars)`` is the op's call. ``grid`` lists the
    shape combinations to call it at (by default every combination of ``POOLS`` shapes
    that fits the static dimensions); ``ints`` is the exclusive upper bound of integer inputs."""

    op: str
    ins: Sequence
    build: Callable
    grid: list | None = None
    ints: int = 3

    def shapes(self) -> list[tuple]:
        specs = [_spec(i) for i in self.ins]
        if self.grid is not None:
            return [tuple(tuple(s) for s in combo) for combo in self.grid]
        pools = [[s for s in POOLS[len(shape)] if all(not isinstance(d, int) or d == g
                                                      for d, g in zip(shape, s, strict=True))]
                 or [tuple(d if isinstance(d, int) else 3 for d in shape)] for shape, _ in specs]
        return list(itertools.product(*pools))


@dataclass
class Difference:
    """The VM and the interpreter disagree on ``op`` at input ``shapes``: ``kind`` is
    ``"accepted"`` (the VM gave values where the interpreter raised), ``"refused"`` (the
    reverse), ``"mismatch"`` (other shapes or values) or ``"build"`` (the VM cannot compile it;
    ``untyped``: the interpreter cannot type the program either, e.g. a result whose rank
    depends on a run-time size)."""

    op: str
    shapes: tuple
    kind: str
    detail: str = field(default="")
    untyped: bool = field(default=False)

    def __str__(self) -> str:
        both = " (the interpreter cannot type it either)" if self.untyped else ""
        return f"{self.op} {self.shapes}: {self.kind}: {self.detail}{both}"


# the kinds of difference where the VM gives values the interpreter does not
SILENT = ("accepted", "mismatch")


def _spec(i) -> tuple[tuple, str]:
    pair = isinstance(i, tuple) and len(i) == 2 and isinstance(i[0], int | tuple) and \
        isinstance(i[1], str)  # (a (shape or rank, dtype) pair, else a shape or a rank)
    shape, dtype = i if pair else (i, "float32")
    if isinstance(shape, int):
        shape = (None,) * shape
    return tuple(shape), dtype


def _input(rng: np.random.Generator, shape: tuple, dtype: str, ints: int) -> np.ndarray:
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        return rng.integers(0, ints, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def check_case(case: Case, seed: int = 0, opt_level: int = 3,
               counts: dict | None = None) -> list[Difference]:
    """Every shape of ``case`` at which the VM does not do what the interpreter does;
    ``counts`` (when given) gets the executable's kernels with dynamic shapes: how many are one
    symbolic kernel and how many compile per shape (``kernels.dynamic_kernel_counts``)."""
    import minitvm as tvm
    from minitvm import relay
    from minitvm.runtime import vm as runtime_vm

    from .fuzz.differential import compare_values, flatten

    specs = [_spec(i) for i in case.ins]
    shared: dict = {}
    params = [relay.var(f"p{k}", shape=tuple(
        d if isinstance(d, int) else relay.Any() if d is None else
        shared.setdefault(d, relay.Any()) for d in shape), dtype=dtype)
        for k, (shape, dtype) in enumerate(specs)]
    mod = None
    try:
        mod = tvm.IRModule.from_expr(relay.Function(params, case.build(*params)))
        with tvm.transform.PassContext(opt_level=opt_level):
            exe = relay.vm.compile(mod, target="llvm")
        vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
        if counts is not None:
            from minitvm.relay.backend.vm.kernels import dynamic_kernel_counts

            counts.update(dynamic_kernel_counts(exe.kernels))
        ref_fn = relay.create_executor("debug", mod=mod).evaluate()
    except Exception as err:  # noqa: BLE001 - reported
        return [Difference(case.op, (), "build", f"{type(err).__name__}: "
                           f"{str(err).splitlines()[0][:200]}", _untyped(mod))]
    rng = np.random.default_rng(seed)
    found = []
    for shapes in case.shapes():
        args = [_input(rng, s, dt, case.ints) for s, (_, dt) in zip(shapes, specs, strict=True)]
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                want, why = flatten(ref_fn(*args)), None
            except Exception as err:  # noqa: BLE001 - the interpreter refuses these shapes
                want, why = None, f"{type(err).__name__}: {str(err)[:160]}"
            try:
                got, vm_why = flatten(vm.run(*[tvm.nd.array(a) for a in args])), None
            except Exception as err:  # noqa: BLE001 - the VM refuses them
                got, vm_why = None, f"{type(err).__name__}: {str(err)[:160]}"
        if want is None and got is not None:
            found.append(Difference(case.op, shapes, "accepted",
                                    f"VM gave {[g.shape for g in got]}; interpreter: {why}"))
        elif want is not None and got is None:
            found.append(Difference(case.op, shapes, "refused", f"VM: {vm_why}"))
        elif want is not None:
            diff = compare_values(want, got)
            if diff:
                found.append(Difference(case.op, shapes, "mismatch", diff))
    return found


def _untyped(mod) -> bool:
    """Whether the interpreter cannot build ``mod`` either (None: the program was not made)."""
    from minitvm import relay

    if mod is None:
        return True
    try:
        relay.create_executor("debug", mod=mod).evaluate()
    except Exception:  # noqa: BLE001 - its refusal is the answer
        return True
    return False


def _r():
    from minitvm import relay
    return relay


def _c(a, dtype="float32"):
    return _r().const(np.asarray(a, dtype=dtype))


def _rois(r):
    """Regions of image 0 at |r|: a box index out of range is a value, not a shape."""
    relay = _r()
    head = relay.strided_slice(r, [0], [1], axes=[1])
    return relay.concatenate([head * _c(0.0), relay.abs(relay.strided_slice(
        r, [1], [2 ** 31 - 1], axes=[1]))], axis=1)


def _ctc_greedy(lp, blank: int):
    """CTC greedy decoding of ``lp`` ``(T, N, C)`` as a dense ``(T, N)``: each frame's best
    class where it is no blank and not the previous frame's, else -1."""
    relay = _r()
    best = relay.argmax(lp, axis=2)
    prev = relay.concatenate([relay.full_like(relay.strided_slice(best, [0], [1], axes=[0]),
                                              _c(-1, "int32")),
                              relay.strided_slice(best, [0], [-1], axes=[0])], axis=0)
    keep = relay.logical_and(relay.not_equal(best, _c(blank, "int32")),
                             relay.not_equal(best, prev))
    return relay.where(keep, best, relay.full_like(best, _c(-1, "int32")))


_UNARY = ["abs", "exp", "negative", "sigmoid", "tanh", "sqrt", "floor", "round", "sign",
          "erf", "log", "rsqrt", "nn.relu", "copy", "zeros_like", "ones_like", "isnan"]
_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "mod",
           "floor_divide", "equal", "less", "greater_equal", "atan2"]
_INT_BINARY = ["bitwise_and", "left_shift", "right_shift"]
_BOOL_BINARY = ["logical_and", "logical_or", "logical_xor"]


def _unary(name):
    def build(x):
        relay = _r()
        f = {"nn.relu": relay.nn.relu}.get(name) or getattr(relay, name)
        return f(x)
    return Case(name, [2], build)


def _binary(name, dtype="float32", ranks=(3, 2)):
    def build(a, b):
        return getattr(_r(), name)(a, b)
    return Case(name, [(ranks[0], dtype), (ranks[1], dtype)], build)


def _bilinear_taps(x, ys, xs, mode="fast"):
    """Four bilinear taps of NHWC ``x`` at source coordinates ``ys`` / ``xs`` (floats: floor and
    ceil, negative ones wrapped in fast mode), each a take of rows then one of columns, weighted
    and summed, + 0.5: the fused multi-take kernel of TFLite's 8-bit resize (single-op cases
    miss what a kernel of many inlined takes does; LLVM miscompiled this one, jit's EVEX check)."""
    relay = _r()
    ints = [(relay.cast(relay.floor(c), "int64"), relay.cast(relay.ceil(c), "int64"))
            for c in (ys, xs)]
    wy = relay.reshape(ys - relay.floor(ys), [1, -1, 1, 1])
    wx = relay.reshape(xs - relay.floor(xs), [1, 1, -1, 1])
    one = relay.const(1.0)
    out = None
    for yi, a in zip(ints[0], (one - wy, wy), strict=True):
        rows = relay.take(x, yi, axis=1, mode=mode)
        for xi, b in zip(ints[1], (one - wx, wx), strict=True):
            tap = relay.take(rows, xi, axis=2, mode=mode) * (a * b)
            out = tap if out is None else out + tap
    return out + relay.const(0.5)


def _cases() -> dict[str, Case]:
    relay = _r()
    nn = relay.nn
    out: list[Case] = [_unary(n) for n in _UNARY]
    out += [_binary(n) for n in _BINARY]
    out += [_binary(n, "int32") for n in _INT_BINARY]
    out += [_binary(n, "bool") for n in _BOOL_BINARY]
    out += [
        # products: reduction dims
        Case("nn.dense", [2, 2], lambda x, w: nn.dense(x, w)),
        Case("nn.matmul", [2, 2], lambda x, w: nn.matmul(x, w)),
        Case("nn.matmul_tb", [2, 2], lambda x, w: nn.matmul(x, w, transpose_b=True)),
        Case("nn.batch_matmul", [3, 3], lambda x, y: nn.batch_matmul(x, y)),
        Case("nn.batch_matmul_nt", [3, 3],
             lambda x, y: nn.batch_matmul(x, y, transpose_b=False)),
        Case("einsum", [2, 2], lambda x, y: relay.einsum([x, y], "ij,jk->ik")),
        Case("einsum_batch", [3, 3], lambda x, y: relay.einsum([x, y], "bij,bjk->bik")),
        Case("einsum_ellipsis", [3, 2], lambda x, y: relay.einsum([x, y], "...ij,jk->...ik")),
        Case("einsum_diag_sum", [2], lambda x: relay.einsum([x], "ii->i")),
        # convolutions: channels, windows
        Case("nn.conv2d", [4, 4], lambda x, w: nn.conv2d(x, w)),
        Case("nn.conv2d_groups", [4, (4, 1, 3, 3)],
             lambda x, w: nn.conv2d(x, w, groups=4, channels=4, kernel_size=(3, 3)),
             grid=[((1, 4, 5, 5), (4, 1, 3, 3)), ((1, 3, 5, 5), (4, 1, 3, 3)),
                   ((1, 8, 5, 5), (4, 1, 3, 3)), ((2, 4, 2, 2), (4, 1, 3, 3))]),
        Case("nn.conv1d", [3, 3], lambda x, w: nn.conv1d(x, w)),
        Case("nn.conv3d", [5, 5], lambda x, w: nn.conv3d(x, w)),
        Case("nn.conv2d_transpose", [4, 4], lambda x, w: nn.conv2d_transpose(x, w)),
        Case("nn.conv3d_transpose", [5, 5], lambda x, w: nn.conv3d_transpose(x, w)),
        # per-channel parameters
        Case("nn.bias_add", [2, 1], lambda x, b: nn.bias_add(x, b)),
        Case("nn.prelu", [2, 1], lambda x, a: nn.prelu(x, a)),
        Case("nn.layer_norm", [2, 1, 1], lambda x, g, b: nn.layer_norm(x, g, b)),
        Case("nn.batch_norm", [4, 1, 1, 1, 1],
             lambda x, g, b, m, v: nn.batch_norm(x, g, b, m, v)[0],
             grid=[((1, 3, 2, 2), (3,), (3,), (3,), (3,)), ((1, 3, 2, 2), (4,), (3,), (3,), (3,)),
                   ((2, 4, 2, 2), (4,), (4,), (1,), (4,)), ((1, 3, 2, 2), (3,), (3,), (3,), (1,)),
                   ((1, 1, 2, 2), (4,), (4,), (4,), (4,)), ((2, 4, 1, 1), (4,), (4,), (4,), (4,))]),
        Case("nn.instance_norm", [3, 1, 1], lambda x, g, b: nn.instance_norm(x, g, b)),
        Case("nn.group_norm", [3, 1, 1], lambda x, g, b: nn.group_norm(x, g, b, num_groups=2),
             grid=[((2, 4, 3), (4,), (4,)), ((2, 3, 3), (3,), (3,)), ((2, 4, 3), (2,), (4,)),
                   ((1, 2, 5), (2,), (2,))]),
        # joins
        Case("concatenate", [2, 2], lambda x, y: relay.concatenate([x, y], axis=1)),
        Case("stack", [2, 2], lambda x, y: relay.stack([x, y], axis=0)),
        Case("where", [2, 2], lambda x, y: relay.where(x > _c(0.0), x, y)),
        Case("where_cond", [(2, "bool"), 2, 2], lambda c, x, y: relay.where(c, x, y),
             grid=[((4, 3), (4, 3), (4, 3)), ((4, 3), (2, 3), (4, 3)), ((4, 1), (4, 3), (1, 3)),
                   ((3, 4), (4, 3), (4, 3)), ((2, 2), (2, 2), (2, 3))]),
        Case("broadcast_to_like", [2, 2], lambda x, y: relay.broadcast_to_like(x, y)),
        Case("reshape_like", [2, 2], lambda x, y: relay.reshape_like(x, y)),
        Case("collapse_sum_like", [2, 2], lambda x, y: relay.collapse_sum_like(x, y)),
        Case("slice_like", [2, 2], lambda x, y: relay.slice_like(x, y)),
        Case("cast_like", [2, 2], lambda x, y: relay.cast_like(x, y)),
        # shape changes
        Case("reshape", [2], lambda x: relay.reshape(x, (-1, 2))),
        Case("reshape_fixed", [2], lambda x: relay.reshape(x, (2, 6))),
        Case("reshape_0", [3], lambda x: relay.reshape(x, (0, -1, 2))),
        Case("contrib_reverse_reshape", [3],
             lambda x: relay.reverse_reshape(x, (-1, 0))),
        Case("nn.batch_flatten", [3], lambda x: nn.batch_flatten(x)),
        Case("squeeze", [2], lambda x: relay.squeeze(x, axis=[1])),
        Case("expand_dims", [2], lambda x: relay.expand_dims(x, 1)),
        Case("transpose", [3], lambda x: relay.transpose(x, (2, 0, 1))),
        Case("broadcast_to", [2], lambda x: relay.broadcast_to(x, (4, 3))),
        Case("tile", [2], lambda x: relay.tile(x, (2, 1))),
        Case("repeat", [2], lambda x: relay.repeat(x, 2, axis=1)),
        Case("split", [2], lambda x: relay.split(x, 2, axis=0).astuple()),
        Case("split_indices", [2], lambda x: relay.split(x, [1, 3], axis=0).astuple()),
        Case("reverse", [2], lambda x: relay.reverse(x, axis=1)),
        Case("strided_slice", [2], lambda x: relay.strided_slice(x, [1], [3], axes=[0])),
        Case("strided_slice_step", [2],
             lambda x: relay.strided_slice(x, [0, 0], [4, 3], strides=[2, 1])),
        Case("nn.depth_to_space", [4], lambda x: nn.depth_to_space(x, 2),
             grid=[((1, 4, 2, 2),), ((1, 3, 2, 2),), ((1, 8, 1, 3),), ((2, 2, 2, 2),)]),
        Case("nn.space_to_depth", [4], lambda x: nn.space_to_depth(x, 2),
             grid=[((1, 1, 4, 4),), ((1, 2, 3, 4),), ((1, 1, 4, 5),), ((2, 3, 2, 2),)]),
        Case("nn.space_to_batch_nd", [4], lambda x: nn.space_to_batch_nd(x, [2, 2], [[0, 0], [0, 0]]),
             grid=[((1, 4, 4, 1),), ((1, 3, 4, 1),), ((2, 4, 5, 2),), ((1, 2, 2, 3),)]),
        Case("nn.batch_to_space_nd", [4], lambda x: nn.batch_to_space_nd(x, [2, 2], [[0, 0], [0, 0]]),
             grid=[((4, 2, 2, 1),), ((3, 2, 2, 1),), ((8, 1, 1, 2),), ((2, 2, 2, 1),)]),
        Case("nn.space_to_batch_nd_pad", [4],
             lambda x: nn.space_to_batch_nd(x, [2, 2], [[1, 1], [0, 1]]),
             grid=[((1, 4, 3, 1),), ((1, 3, 3, 1),), ((2, 2, 5, 2),), ((1, 4, 4, 3),)]),
        Case("nn.batch_to_space_nd_crop", [4],
             lambda x: nn.batch_to_space_nd(x, [2, 2], [[1, 0], [0, 1]]),
             grid=[((4, 2, 2, 1),), ((6, 2, 2, 1),), ((8, 1, 3, 2),), ((4, 1, 1, 1),)]),
        Case("nn.pad", [2], lambda x: nn.pad(x, ((1, 1), (0, 2)))),
        Case("nn.mirror_pad", [2], lambda x: nn.mirror_pad(x, ((1, 1), (2, 2)))),
        Case("nn.mirror_pad_sym", [2],
             lambda x: nn.mirror_pad(x, ((2, 2), (3, 3)), mode="SYMMETRIC")),
        Case("nn.dilate", [2], lambda x: nn.dilate(x, (2, 1))),
        Case("sliding_window", [2], lambda x: relay.sliding_window(x, 0, (2, 2), (1, 1))),
        Case("nn.upsampling", [4], lambda x: nn.upsampling(x, 2, 2)),
        # indexing
        Case("take", [2], lambda x: relay.take(x, _c([0, 2], "int32"), axis=0)),
        Case("take_data_idx", [2, (1, "int32")], lambda x, i: relay.take(x, i, axis=1),
             grid=[((4, 3), (2,)), ((4, 1), (3,)), ((2, 2), (1,))]),
        Case("gather", [2, (2, "int32")], lambda x, i: relay.gather(x, 1, i),
             grid=[((4, 3), (4, 2)), ((4, 3), (2, 2)), ((4, 3), (5, 2)), ((2, 3), (2, 3)),
                   ((4, 3), (4, 5))]),
        Case("gather_nd", [2, (2, "int32")], lambda x, i: relay.gather_nd(x, i),
             grid=[((4, 3), (2, 2)), ((4, 3), (1, 3)), ((4, 3), (3, 1))]),
        Case("gather_nd_index_rank", [2, (2, "int32")],
             lambda x, i: relay.gather_nd(x, i, index_rank=2),
             grid=[((4, 3), (2, 2)), ((4, 3), (1, 3)), ((4, 3), (3, 1)), ((2, 2), (2, 4))],
             ints=2),
        Case("gather_nd_r1", [1, (2, "int32")], lambda x, i: relay.gather_nd(x, i),
             grid=[((4,), (1, 3)), ((4,), (2, 3)), ((2,), (1, 2))], ints=2),
        Case("scatter_elements", [2, (2, "int32"), 2],
             lambda x, i, u: relay.scatter_elements(x, i, u, axis=0),
             grid=[((4, 3), (2, 3), (2, 3)), ((4, 3), (2, 3), (1, 3)), ((4, 3), (2, 3), (3, 3)),
                   ((4, 3), (2, 2), (2, 3)), ((4, 3), (5, 3), (5, 3))]),
        Case("scatter_nd", [2, (2, "int32"), 1],
             lambda x, i, u: relay.scatter_nd(x, i, u),
             grid=[((4, 3), (2, 2), (2,)), ((4, 3), (2, 2), (3,)), ((4, 3), (2, 2), (1,)),
                   ((4, 3), (3, 2), (2,))]),
        Case("adv_index", [2, (1, "int32"), (1, "int32")],
             lambda x, i, j: relay.adv_index([x, i, j]),
             grid=[((4, 3), (2,), (2,)), ((4, 3), (2,), (3,)), ((4, 3), (2,), (1,)),
                   ((4, 3), (3,), (2,))]),
        Case("matrix_set_diag", [2, 1], lambda x, d: relay.matrix_set_diag(x, d)),
        Case("sequence_mask", [2, (1, "int32")], lambda x, n: relay.sequence_mask(x, n),
             grid=[((4, 3), (3,)), ((4, 3), (4,)), ((4, 3), (1,)), ((2, 2), (3,))]),
        Case("reverse_sequence", [2, (1, "int32")],
             lambda x, n: relay.reverse_sequence(x, n, seq_axis=1, batch_axis=0),
             grid=[((4, 3), (4,)), ((4, 3), (3,)), ((4, 3), (1,)), ((2, 2), (2,))]),
        Case("one_hot", [(2, "int32")],
             lambda i: relay.one_hot(i, _c(1.0), _c(0.0), 4, -1, "float32")),
        Case("searchsorted", [1, 2], lambda s, v: relay.searchsorted(relay.sort(s), v),
             grid=[((3,), (4, 3)), ((4,), (2, 3))]),
        Case("searchsorted_nd", [2, 2], lambda s, v: relay.searchsorted(relay.sort(s), v)),
        # reductions and normalizations
        Case("sum", [3], lambda x: relay.sum(x, axis=1)),
        Case("mean", [3], lambda x: relay.mean(x, axis=(0, 2), keepdims=True)),
        # integer means: one symbolic kernel, a 64-bit sum, an empty axis's count taken as 1
        Case("mean_int", [(3, "int32")], lambda x: relay.mean(x, axis=(0, 2), keepdims=True),
             grid=[((2, 3, 4),), ((1, 3, 5),), ((0, 3, 4),), ((2, 3, 0),)], ints=50),
        Case("mean_int8", [(3, "int8")], lambda x: relay.mean(x, axis=[1]), ints=120,
             grid=[((2, 40, 3),), ((1, 7, 2),), ((2, 0, 3),)]),
        Case("argmax", [2], lambda x: relay.argmax(x, axis=1)),
        Case("variance", [2, 2], lambda x, m: relay.variance(x, axis=[1], keepdims=True) + m),
        Case("cumsum", [2], lambda x: relay.cumsum(x, axis=1)),
        Case("nn.softmax", [2], lambda x: nn.softmax(x)),
        Case("nn.log_softmax", [2], lambda x: nn.log_softmax(x)),
        Case("nn.lrn", [4], lambda x: nn.lrn(x, size=3)),
        Case("nn.cross_entropy", [2, 2], lambda x, y: nn.cross_entropy(x, y)),
        Case("nn.nll_loss", [2, (1, "int32"), 1], lambda p, t, w: nn.nll_loss(p, t, w), ints=2,
             grid=[((4, 3), (4,), (3,)), ((4, 3), (3,), (3,)), ((4, 3), (4,), (2,)),
                   ((2, 2), (2,), (2,))]),
        # pools
        Case("nn.max_pool2d", [4], lambda x: nn.max_pool2d(x, (3, 3))),
        Case("nn.avg_pool2d", [4], lambda x: nn.avg_pool2d(x, (4, 4), strides=(2, 2))),
        Case("nn.max_pool1d", [3], lambda x: nn.max_pool1d(x, (4,))),
        Case("nn.avg_pool3d", [5], lambda x: nn.avg_pool3d(x, (3, 3, 3))),
        Case("nn.global_avg_pool2d", [4], lambda x: nn.global_avg_pool2d(x)),
        Case("nn.adaptive_avg_pool2d", [4], lambda x: nn.adaptive_avg_pool2d(x, (2, 2))),
        Case("image.resize2d", [4], lambda x: relay.image.resize2d(x, (4, 4))),
        Case("nn.fifo_buffer", [2, 2], lambda x, b: nn.fifo_buffer(x, b, axis=0)),
        Case("trilu", [2], lambda x: relay.trilu(x, _c(0, "int32"), True)),
        # more ops, and variants of attributes
        Case("nn.conv2d_strided", [4, 4],
             lambda x, w: nn.conv2d(x, w, strides=(2, 2), padding=(1, 1), dilation=(2, 2))),
        Case("nn.conv2d_nhwc", [4, 4],
             lambda x, w: nn.conv2d(x, w, data_layout="NHWC", kernel_layout="HWIO"),
             grid=[((1, 5, 5, 3), (3, 3, 3, 4)), ((1, 5, 5, 3), (3, 3, 2, 4)),
                   ((2, 2, 2, 3), (3, 3, 3, 4)), ((1, 4, 4, 2), (1, 1, 2, 3))]),
        Case("nn.conv2d_groups_any", [4, 4], lambda x, w: nn.conv2d(x, w, groups=2),
             grid=[((1, 4, 5, 5), (4, 2, 3, 3)), ((1, 4, 5, 5), (4, 4, 3, 3)),
                   ((1, 6, 5, 5), (4, 2, 3, 3)), ((1, 4, 5, 5), (3, 2, 3, 3))]),
        Case("nn.conv2d_transpose_out_pad", [4, 4],
             lambda x, w: nn.conv2d_transpose(x, w, strides=(2, 2), output_padding=(1, 1))),
        Case("nn.leaky_relu", [2], lambda x: nn.leaky_relu(x, 0.1)),
        Case("nn.prelu_axis0", [2, 1], lambda x, a: nn.prelu(x, a, axis=0)),
        Case("clip", [2], lambda x: relay.clip(x, -0.5, 0.5)),
        Case("cast", [2], lambda x: relay.cast(x, "int32")),
        Case("full_like", [2], lambda x: relay.full_like(x, _c(2.0))),
        Case("sort", [2], lambda x: relay.sort(x, axis=0)),
        Case("argsort", [2], lambda x: relay.argsort(x, axis=1)),
        Case("topk", [2], lambda x: relay.topk(x, k=2, axis=1, ret_type="values")),
        Case("cumprod", [2], lambda x: relay.cumprod(x, axis=0, exclusive=True)),
        Case("prod", [3], lambda x: relay.prod(x, axis=2)),
        Case("argmin_keepdims", [3], lambda x: relay.argmin(x, axis=0, keepdims=True)),
        Case("all", [(2, "bool")], lambda x: relay.all(x, axis=1)),
        Case("mean_exclude", [3], lambda x: relay.mean(x, axis=[1], exclude=True)),
        Case("nn.softmax_axis0", [3], lambda x: nn.softmax(x, axis=0)),
        Case("nn.fast_softmax", [2], lambda x: nn.fast_softmax(x)),
        Case("concatenate3", [3, 3, 3], lambda x, y, z: relay.concatenate([x, y, z], axis=0),
             grid=[((1, 3, 4), (2, 3, 4), (1, 3, 4)), ((1, 3, 4), (2, 4, 3), (1, 3, 4)),
                   ((2, 3, 4), (2, 3, 4), (2, 3, 5)), ((1, 3, 1), (1, 3, 4), (1, 3, 4))]),
        Case("stack3", [1, 1, 1], lambda x, y, z: relay.stack([x, y, z], axis=1),
             grid=[((3,), (3,), (3,)), ((3,), (4,), (3,)), ((1,), (1,), (3,))]),
        Case("where_bcast3", [1, 2, 3], lambda c, x, y: relay.where(c > _c(0.0), x, y)),
        Case("add_rank_mix", [1, 3], lambda a, b: relay.add(a, b)),
        Case("nn.batch_matmul_bcast", [3, 3], lambda x, y: nn.batch_matmul(x, y),
             grid=[((1, 3, 4), (2, 5, 4)), ((2, 3, 4), (1, 5, 4)), ((2, 3, 4), (3, 5, 4)),
                   ((2, 3, 4), (2, 5, 3))]),
        Case("nn.dense_units", [(None, 3), 2], lambda x, w: nn.dense(x, w, units=4),
             grid=[((2, 3), (4, 3)), ((2, 3), (5, 3)), ((2, 3), (4, 2))]),
        Case("strided_slice_neg", [2],
             lambda x: relay.strided_slice(x, [-1, 0], [-5, 10], strides=[-1, 2])),
        Case("strided_slice_size", [2],
             lambda x: relay.strided_slice(x, [1, 0], [2, -1], slice_mode="size")),
        Case("take_wrap", [2], lambda x: relay.take(x, _c([0, 5, -1], "int32"), axis=1,
                                                    mode="wrap")),
        Case("take_batch", [2, (2, "int32")], lambda x, i: relay.take(x, i, axis=1, batch_dims=1),
             grid=[((4, 3), (4, 2)), ((4, 3), (2, 2)), ((4, 3), (5, 2)), ((1, 3), (1, 1))]),
        Case("reshape_minus2", [3], lambda x: relay.reshape(x, (-2,))),
        Case("reshape_minus3", [3], lambda x: relay.reshape(x, (-3, -2))),
        Case("reshape_minus4", [2], lambda x: relay.reshape(x, (-4, 2, -1, -2))),
        Case("split_axis1", [3], lambda x: relay.split(x, 2, axis=2).astuple()),
        Case("split_sections3", [2], lambda x: relay.split(x, 3, axis=1).astuple()),
        Case("tile_rank_up", [2], lambda x: relay.tile(x, (2, 1, 2))),
        Case("repeat_axis0", [3], lambda x: relay.repeat(x, 3, axis=0)),
        Case("expand_dims_end", [2], lambda x: relay.expand_dims(x, -1, 2)),
        Case("squeeze_all", [(None, 1, None)], lambda x: relay.squeeze(x)),
        Case("squeeze_neg", [3], lambda x: relay.squeeze(x, axis=[-1])),
        Case("broadcast_to_rank_up", [2], lambda x: relay.broadcast_to(x, (2, 4, 3))),
        Case("one_hot_axis0", [(1, "int32")],
             lambda i: relay.one_hot(i, _c(1.0), _c(0.0), 3, 0, "float32")),
        Case("layout_transform_nchw4c", [4], lambda x: relay.layout_transform(x, "NCHW",
                                                                              "NCHW4c"),
             grid=[((1, 4, 2, 2),), ((1, 8, 1, 3),), ((1, 3, 2, 2),), ((2, 6, 2, 2),)]),
        Case("layout_transform_back", [5], lambda x: relay.layout_transform(x, "NCHW4c",
                                                                            "NCHW"),
             grid=[((1, 1, 2, 2, 4),), ((1, 2, 2, 2, 3),), ((2, 1, 1, 1, 2),)]),
        Case("layout_transform_nhwc", [4], lambda x: relay.layout_transform(x, "NCHW", "NHWC")),
        Case("gather_nd_r2", [2, ((2, None), "int32")], lambda x, i: relay.gather_nd(x, i),
             grid=[((4, 3), (2, 2)), ((4, 3), (2, 5)), ((1, 1), (2, 3))], ints=1),
        Case("scatter_nd_r2", [2, ((2, None), "int32"), 1],
             lambda x, i, u: relay.scatter_nd(x, i, u, "update"),
             grid=[((4, 3), (2, 2), (2,)), ((4, 3), (2, 2), (3,)), ((4, 3), (2, 3), (1,))],
             ints=1),
        Case("nn.adaptive_max_pool1d", [3], lambda x: nn.adaptive_max_pool1d(x, 2)),
        Case("nn.adaptive_avg_pool3d", [5], lambda x: nn.adaptive_avg_pool3d(x, (2, 1, 2))),
        Case("nn.global_max_pool2d", [4], lambda x: nn.global_max_pool2d(x)),
        Case("nn.max_pool3d", [5], lambda x: nn.max_pool3d(x, (2, 2, 2), strides=(2, 2, 2))),
        Case("nn.avg_pool1d", [3], lambda x: nn.avg_pool1d(x, (3,), padding=(1,),
                                                           count_include_pad=True)),
        Case("nn.max_pool2d_ceil", [4], lambda x: nn.max_pool2d(x, (3, 3), (2, 2),
                                                                ceil_mode=True)),
        # (more than 25 taps, a column stride past 4: the accumulated, gathered forms)
        Case("nn.max_pool2d_wide", [4], lambda x: nn.max_pool2d(x, (5, 6), (1, 5),
                                                                 padding=(2, 2))),
        Case("nn.max_pool2d_nhwc", [4], lambda x: nn.max_pool2d(x, (3, 3), layout="NHWC")),
        Case("nn.upsampling3d", [5], lambda x: nn.upsampling3d(x, 2, 1, 2)),
        Case("image.resize1d", [3], lambda x: relay.image.resize1d(x, (5,))),
        Case("image.resize3d", [5], lambda x: relay.image.resize3d(x, (2, 3, 2))),
        Case("image.grid_sample", [4, 4], lambda x, g: relay.image.grid_sample(x, g),
             grid=[((1, 3, 4, 4), (1, 2, 3, 3)), ((2, 3, 4, 4), (1, 2, 3, 3)),
                   ((1, 3, 4, 4), (2, 2, 3, 3)), ((1, 3, 4, 4), (1, 3, 3, 3))]),
        Case("image.affine_grid", [3], lambda t: relay.image.affine_grid(t, (3, 4)),
             grid=[((1, 2, 3),), ((2, 2, 3),), ((1, 3, 3),), ((1, 2, 2),)]),
        Case("vision.roi_align", [4, 2],
             lambda x, r: relay.vision.roi_align(x, _rois(r), (2, 2), 1.0, 2),
             grid=[((1, 3, 6, 6), (2, 5)), ((1, 3, 6, 6), (2, 4)), ((1, 3, 6, 6), (2, 6))]),
        Case("vision.yolo_reorg", [4], lambda x: relay.vision.yolo_reorg(x, 2),
             grid=[((1, 4, 4, 4),), ((2, 8, 2, 6),), ((1, 3, 4, 4),), ((1, 4, 3, 4),),
                   ((1, 4, 4, 5),), ((1, 4, 0, 2),)]),
        Case("unravel_index", [(1, "int32")], lambda i: relay.unravel_index(i, _c([2, 3],
                                                                                  "int32"))),
        Case("invert_permutation", [(1, "int32")], lambda p: relay.invert_permutation(
            relay.argsort(relay.cast(p, "float32"))), ints=10),
        Case("meshgrid", [1, 1], lambda a, b: relay.meshgrid([a, b]).astuple()),
        Case("nn.lrn_axis3", [4], lambda x: nn.lrn(x, size=3, axis=3)),
        Case("nn.pad_value", [3], lambda x: nn.pad(x, ((0, 0), (1, 0), (2, 1)), pad_value=1.5)),
        Case("nn.cross_entropy_with_logits", [2, 2],
             lambda x, y: nn.cross_entropy_with_logits(x, y)),
        Case("nn.conv1d_transpose", [3, 3], lambda x, w: nn.conv1d_transpose(x, w, strides=(2,))),
        Case("nn.conv2d_depthwise_nhwc", [4, 4],
             lambda x, w: nn.conv2d(x, w, groups=3, data_layout="NHWC", kernel_layout="HWOI"),
             grid=[((1, 5, 5, 3), (3, 3, 3, 1)), ((1, 5, 5, 4), (3, 3, 3, 1)),
                   ((1, 5, 5, 3), (3, 3, 4, 1)), ((1, 2, 2, 3), (3, 3, 3, 1))]),
        Case("nn.matmul_ta", [2, 2], lambda x, w: nn.matmul(x, w, transpose_a=True)),
        Case("nn.batch_matmul_ta", [3, 3],
             lambda x, y: nn.batch_matmul(x, y, transpose_a=True, transpose_b=False)),
        Case("nn.prelu_nchw", [4, 1], lambda x, a: nn.prelu(x, a)),
        Case("matrix_set_diag_band", [2, 2],
             lambda x, d: relay.matrix_set_diag(x, d, k=(-1, 1)),
             grid=[((4, 3), (3, 3)), ((4, 3), (3, 2)), ((4, 3), (2, 3)), ((3, 3), (3, 3)),
                   ((4, 3), (3, 4))]),
        Case("sequence_mask_axis1", [2, (1, "int32")],
             lambda x, n: relay.sequence_mask(x, n, axis=1),
             grid=[((4, 3), (4,)), ((4, 3), (3,)), ((2, 2), (2,))]),
        Case("reverse_sequence_seq0", [2, (1, "int32")],
             lambda x, n: relay.reverse_sequence(x, n, seq_axis=0, batch_axis=1),
             grid=[((4, 3), (3,)), ((4, 3), (4,)), ((2, 2), (2,))], ints=2),
        Case("scatter_elements_add", [2, (2, "int32"), 2],
             lambda x, i, u: relay.scatter_elements(x, i, u, axis=1, reduction="add"), ints=2,
             grid=[((4, 3), (4, 2), (4, 2)), ((4, 3), (4, 2), (4, 1)), ((4, 3), (5, 2), (5, 2)),
                   ((2, 2), (2, 3), (2, 3))]),
        Case("where_rank_mix", [3, 1, 2], lambda c, x, y: relay.where(c > _c(0.0), x, y)),
        Case("stack_last", [2, 2], lambda x, y: relay.stack([x, y], axis=-1)),
        Case("concatenate_axis0", [2, 2], lambda x, y: relay.concatenate([x, y], axis=0)),
        Case("collapse_sum_to", [2], lambda x: relay.collapse_sum_to(x, (1, 3))),
        Case("reshape_like_lhs", [3, 2],
             lambda x, y: relay.reshape_like(x, y, lhs_begin=1, rhs_begin=0)),
        Case("broadcast_to_like_rank_up", [1, 2], lambda x, y: relay.broadcast_to_like(x, y)),
        Case("nn.upsampling_nhwc", [4], lambda x: nn.upsampling(x, 2, 1, layout="NHWC")),
        Case("nn.adaptive_avg_pool2d_nhwc", [4],
             lambda x: nn.adaptive_avg_pool2d(x, (2, 2), layout="NHWC")),
        Case("topk_k3", [2], lambda x: relay.topk(x, k=3, axis=0, ret_type="values")),
        Case("cumsum_exclusive", [2], lambda x: relay.cumsum(x, axis=0, exclusive=True)),
        Case("strided_slice_axes_end", [3],
             lambda x: relay.strided_slice(x, [1, 2], [10, 4], axes=[0, 2])),
        Case("split_neg_axis", [3], lambda x: relay.split(x, [1], axis=-1).astuple()),
        Case("tile_reps", [3], lambda x: relay.tile(x, (1, 2))),
        # inputs sharing a dynamic dim (a batch), for rules that need the same Any
        Case("nn.cross_entropy_shared", [("n", "c"), ("n", "c")],
             lambda x, y: nn.cross_entropy(x, y), grid=[((4, 3), (4, 3)), ((4, 3), (2, 3)),
                                                       ((4, 3), (4, 1)), ((1, 3), (1, 3))]),
        Case("nn.nll_loss_shared", [("n", None), (("n",), "int32"), 1],
             lambda p, t, w: nn.nll_loss(p, t, w), ints=2,
             grid=[((4, 3), (4,), (3,)), ((4, 3), (4,), (2,)), ((4, 3), (3,), (3,)),
                   ((2, 2), (2,), (4,))]),
        Case("nn.fifo_buffer_shared", [(None, "c"), (None, "c")],
             lambda x, b: nn.fifo_buffer(x, b, axis=0),
             grid=[((1, 3), (4, 3)), ((2, 3), (4, 3)), ((5, 3), (4, 3)), ((1, 3), (4, 2))]),
        Case("searchsorted_shared", [("n", None), ("n", None)],
             lambda s_, v: relay.searchsorted(relay.sort(s_), v),
             grid=[((2, 5), (2, 3)), ((2, 5), (3, 3)), ((1, 1), (1, 4))]),
        Case("nn.batch_matmul_shared", [("b", "m", "k"), ("b", "n", "k")],
             lambda x, y: nn.batch_matmul(x, y),
             grid=[((2, 3, 4), (2, 5, 4)), ((2, 3, 4), (1, 5, 4)), ((2, 3, 4), (2, 5, 3))]),
        # CTC over a run-time frame count (and batch, targets length): the loss's forward
        # variables, and greedy decoding (best class per frame, repeats and blanks dropped)
        Case("nn.ctc_log_alpha", [(None, 2, 5), ((2, 3), "int32"), ((2,), "int32"),
                                  ((2,), "int32")],
             lambda lp, t, il, tl: nn.ctc_log_alpha(nn.log_softmax(lp), t, il, tl, 0, 7),
             grid=[((4, 2, 5), (2, 3), (2,), (2,)), ((1, 2, 5), (2, 3), (2,), (2,)),
                   ((0, 2, 5), (2, 3), (2,), (2,)), ((9, 2, 5), (2, 3), (2,), (2,))], ints=4),
        # (lengths below 2: within every targets row; no targets at all with zero lengths)
        Case("nn.ctc_log_alpha_any", [(None, None, 5), ((None, None), "int32"),
                                      ((None,), "int32"), ((None,), "int32")],
             lambda lp, t, il, tl: nn.ctc_log_alpha(nn.log_softmax(lp), t, il, tl, 0, 9),
             grid=[((6, 3, 5), (3, 4), (3,), (3,)), ((1, 1, 5), (1, 1), (1,), (1,)),
                   ((6, 0, 5), (0, 2), (0,), (0,)), ((6, 3, 5), (2, 4), (3,), (3,)),
                   ((6, 3, 5), (3, 4), (2,), (3,)), ((6, 3, 5), (3, 4), (3,), (4,)),
                   ((0, 2, 5), (2, 1), (2,), (2,))], ints=2),
        Case("nn.ctc_log_alpha_concat", [(None, None, 5), ((None,), "int32"),
                                         ((None,), "int32"), ((None,), "int32")],
             lambda lp, t, il, tl: nn.ctc_log_alpha(lp, t, il, tl, 0, 7),
             grid=[((6, 3, 5), (6,), (3,), (3,)), ((1, 1, 5), (1,), (1,), (1,)),
                   ((6, 2, 5), (3,), (2,), (3,)), ((4, 2, 5), (2,), (1,), (2,))], ints=2),
        Case("nn.ctc_log_alpha_no_labels", [(None, None, 5), ((None, None), "int32"),
                                            ((None,), "int32"), ((None,), "int32")],
             lambda lp, t, il, tl: nn.ctc_log_alpha(lp, t, il, tl * _c(0, "int32"), 0, 5),
             grid=[((4, 2, 5), (2, 0), (2,), (2,)), ((4, 2, 5), (2, 3), (2,), (2,)),
                   ((1, 1, 5), (1, 0), (1,), (1,))]),
        Case("ctc_greedy_decode", [(None, 2, 5)], lambda lp: _ctc_greedy(lp, 0),
             grid=[((6, 2, 5),), ((1, 2, 5),), ((0, 2, 5),), ((3, 2, 5),)]),
        # dense factorizations (``topi.linalg``'s loop kernels) over a run-time batch of
        # matrices, or a run-time order: Cholesky of ``x x^T`` (positive definite), LU of ``x``
        Case("linalg.cholesky_factor", [(None, 4, 4)],
             lambda x: relay.op.linalg.cholesky_factor(nn.batch_matmul(x, x)),
             grid=[((3, 4, 4),), ((1, 4, 4),), ((0, 4, 4),), ((5, 4, 4),)]),
        Case("linalg.cholesky_order", [("b", "n", "n")],
             lambda x: relay.op.linalg.cholesky_factor(nn.batch_matmul(x, x)),
             grid=[((2, 3, 3),), ((1, 1, 1),), ((0, 2, 2),), ((2, 0, 0),), ((1, 5, 5),)]),
        Case("linalg.lu_factor", [(None, 4, 4)], lambda x: relay.op.linalg.lu_factor(x),
             grid=[((3, 4, 4),), ((1, 4, 4),), ((0, 4, 4),)]),
        Case("linalg.lu_factor_any", [3], lambda x: relay.op.linalg.lu_factor(x),
             grid=[((2, 3, 3),), ((1, 1, 1),), ((2, 3, 4),), ((1, 4, 3),), ((0, 2, 2),)]),
        Case("linalg.lu_solve", [(None, 4, 4), (None, 4, 2)],
             lambda a, b: relay.op.linalg.factored_solve(relay.op.linalg.lu_factor(a), b, "lu"),
             grid=[((3, 4, 4), (3, 4, 2)), ((1, 4, 4), (1, 4, 2)), ((0, 4, 4), (0, 4, 2)),
                   ((3, 4, 4), (2, 4, 2)), ((1, 4, 4), (3, 4, 2))]),
        Case("linalg.lu_solve_any", [3, 3],
             lambda a, b: relay.op.linalg.factored_solve(relay.op.linalg.lu_factor(a), b, "lu"),
             grid=[((2, 3, 3), (2, 3, 4)), ((1, 1, 1), (1, 1, 1)), ((2, 3, 3), (2, 2, 4)),
                   ((2, 3, 3), (1, 3, 4)), ((2, 3, 4), (2, 3, 1)), ((0, 2, 2), (0, 2, 1))]),
        Case("linalg.cholesky_solve", [("b", 3, 3), ("b", 3, None)],
             lambda a, b: relay.op.linalg.factored_solve(
                 relay.op.linalg.cholesky_factor(nn.batch_matmul(a, a)), b, "cholesky"),
             grid=[((2, 3, 3), (2, 3, 2)), ((1, 3, 3), (1, 3, 1)), ((2, 3, 3), (1, 3, 2)),
                   ((0, 3, 3), (0, 3, 2))]),
        Case("linalg.solve_lower", [(None, 3, 3), (None, 3, 2)],
             lambda a, b: relay.op.linalg.factored_solve(a, b, "lower"),
             grid=[((2, 3, 3), (2, 3, 2)), ((1, 3, 3), (1, 3, 2)), ((2, 3, 3), (3, 3, 2))]),
        Case("bilinear_taps", [(1, None, None, 4), 1, 1], _bilinear_taps,
             # (sizes past the standard normal coordinates' reach: fast mode has no bounds)
             grid=[((1, 6, 8, 4), (4,), (12,)), ((1, 7, 6, 4), (5,), (7,)),
                   ((1, 9, 6, 4), (1,), (9,)), ((1, 6, 7, 4), (3,), (1,))]),
        Case("bilinear_taps_clip", [(1, None, None, 4), 1, 1],
             lambda x, ys, xs: _bilinear_taps(x, ys, xs, "clip"),
             grid=[((1, 2, 4, 4), (4,), (12,)), ((1, 3, 5, 4), (5,), (7,))]),
        Case("linalg.solve_unit_upper", [3, 3],
             lambda a, b: relay.op.linalg.factored_solve(a, b, "unit_upper"),
             grid=[((2, 3, 3), (2, 3, 2)), ((1, 2, 2), (1, 2, 5)), ((2, 3, 3), (2, 2, 2)),
                   ((2, 4, 3), (2, 4, 2))]),
    ]
    return {c.op: c for c in out}


_CACHE: dict[str, Case] = {}


def cases() -> dict[str, Case]:
    """Every case of the sweep, by name (an op, or an op and a variant)."""
    if not _CACHE:
        _CACHE.update(_cases())
    return _CACHE


CASES = cases  # (built on first use: building needs Relay)

# a few cases that exercise each kind of condition, for CI
REPRESENTATIVE = ["nn.dense", "nn.batch_matmul", "nn.conv2d", "reshape", "split", "squeeze",
                  "concatenate", "broadcast_to_like", "slice_like", "nn.bias_add", "nn.prelu",
                  "gather", "sequence_mask", "reverse_sequence", "matrix_set_diag",
                  "nn.max_pool2d", "nn.depth_to_space", "scatter_nd"]


def check_op(name: str, seed: int = 0, counts: dict | None = None) -> list[Difference]:
    """The differences of case ``name`` (``counts``: see ``check_case``)."""
    return check_case(cases()[name], seed=seed, counts=counts)


def main(argv: list[str] | None = None) -> int:
    """Sweep the cases named by ``--ops`` (default: all); exit status 1 on a difference."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", nargs="*", help="case names (default: every case)")
    parser.add_argument("--list", action="store_true", help="list the case names")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(cases()))
        return 0
    names = args.ops or list(cases())
    bad, loud, untyped, per_shape = 0, [], [], []
    for name in names:
        start = time.perf_counter()
        counts: dict = {}
        found = check_op(name, args.seed, counts)
        n = len(cases()[name].shapes())
        kinds = f"{counts['symbolic']} symbolic {counts['specialized']} per-shape" \
            if counts else "not built"
        if counts.get("specialized"):
            per_shape.append(name)
        print(f"{name:28s} {n:3d} shapes  {len(found):3d} differences  "
              f"{time.perf_counter() - start:5.1f} s  kernels: {kinds}", flush=True)
        for d in found[:4]:
            print("    ", d)
        if any(d.kind in SILENT for d in found):
            bad += 1
        elif found and all(d.untyped for d in found):  # (both refuse the program: no VM gap)
            untyped.append(name)
        elif found:  # (the VM raises where the interpreter does not: an error, not silent)
            loud.append(name)
    agree = len(names) - bad - len(loud) - len(untyped)
    print(f"{agree}/{len(names)} cases agree; {len(loud)} raise where the interpreter does not "
          f"({', '.join(loud) or '-'}); {len(untyped)} neither the VM nor the interpreter can "
          f"type ({', '.join(untyped) or '-'}); {bad} give silent differences; "
          f"{len(per_shape)} compile a kernel per shape ({', '.join(per_shape) or '-'})")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
