"""``topi.nn_te.matmul`` (Relax's legalization of ``R.matmul``) and the GEMM raising
(``gemm_tag``): a batched product is recognised whether a unit batch axis is read at index 0
or at the output's (unit) axis variable. The second form is what a symbolic batch leaves: its
function is scheduled once per image (batch 1, ``batch_loop.per_image``), and before this the
per-image ``[1, 64, 256] @ [1, 256, 256]`` stayed a plain loop nest (``(n, 64, 256) @ (n, 256,
256)`` took 4.5 ms at n=1 against 0.08 ms with a static batch). Numerics against numpy through
``relax.build``."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.relax import transform
from minitvm.schedule import batch_loop, raise_blocks
from minitvm.schedule.raise_patterns import gemm_tag
from minitvm.topi import nn_te


def _placeholders(sa, sb):
    a = te.placeholder(tuple(tir.IntImm("int64", d) for d in sa), name="a")
    b = te.placeholder(tuple(tir.IntImm("int64", d) for d in sb), name="b")
    return a, b


def _matmul_module(sa, sb):
    x = relax.Var("x", relax.TensorStructInfo(sa, "float32"))
    y = relax.Var("y", relax.TensorStructInfo(sb, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.matmul(x, y))
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.parametrize("sa,sb,tag", [
    ((1, 8, 16), (1, 16, 12), "batch_matmul"),  # a batch of one on both sides
    ((3, 8, 16), (3, 16, 12), "batch_matmul"),
    ((1, 8, 16), (16, 12), "matmul"),           # rank-3 activations times a weight
    ((1, 4, 8, 16), (1, 4, 16, 12), "batch_matmul"),  # attention heads, batch 1
    ((1, 1, 8, 16), (1, 1, 16, 12), "batch_matmul"),
    ((2, 8, 16), (16, 12), "matmul"),
])
def test_matmul_stage_is_raised_as_gemm(sa, sb, tag):
    a, b = _placeholders(sa, sb)
    got, attrs = gemm_tag(nn_te.matmul(a, b))
    assert got == tag
    assert attrs["operands"] == (a, b)


@pytest.mark.parametrize("sa,sb", [
    ((1, 64, 256), (1, 256, 256)),
    ((1, 5, 7), (1, 7, 3)),
    ((1, 5, 7), (4, 7, 3)),     # A's unit batch broadcast
    ((4, 5, 7), (1, 7, 3)),     # B's unit batch broadcast
    ((1, 2, 5, 7), (1, 2, 7, 3)),
    ((1, 5, 7), (7, 3)),
])
def test_matmul_numerics(sa, sb):
    rng = np.random.default_rng(0)
    vm = relax.VirtualMachine(relax.build(_matmul_module(sa, sb), "llvm"), tvm.cpu())
    a = rng.standard_normal(sa).astype("float32")
    b = rng.standard_normal(sb).astype("float32")
    got = vm["main"](tvm.nd.array(a), tvm.nd.array(b)).numpy()
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-5, atol=1e-4)


# ---------------------------------------------------------------- both forms of a unit axis
def _i64(v):
    return tir.IntImm("int64", v)


def _stage(sa, sb, a_lead, b_lead, out_lead, transpose_b=False):
    """``sum_k a[a_lead.., i, k] * b[b_lead.., k, j]`` over an output of leading extents
    ``out_lead``; the ``*_lead`` entries are "v" (the output's axis variable) or 0."""
    a = te.placeholder(tuple(_i64(d) for d in sa), name="a")
    b = te.placeholder(tuple(_i64(d) for d in sb), name="b")
    n = sb[-2] if transpose_b else sb[-1]
    k = te.reduce_axis((_i64(0), _i64(sa[-1])), name="k")

    def body(*i):
        lead, (r, c) = i[:-2], i[-2:]

        def idx(spec):
            off = len(lead) - len(spec)
            return [lead[off + q] if s == "v" else _i64(0) for q, s in enumerate(spec)]

        bi = [*idx(b_lead), c, k] if transpose_b else [*idx(b_lead), k, c]
        return te.sum(a[(*idx(a_lead), r, k)] * b[tuple(bi)], axis=k)

    shape = tuple(_i64(d) for d in (*out_lead, sa[-2], n))
    return te.compute(shape, body, name="matmul"), a, b


@pytest.mark.parametrize("sa,sb,a_lead,b_lead,out_lead,tag", [
    ((1, 8, 16), (1, 16, 12), ["v"], ["v"], [1], "batch_matmul"),  # a raised batch-1 image
    ((1, 8, 16), (1, 16, 12), [0], ["v"], [1], "batch_matmul"),
    ((1, 8, 16), (1, 16, 12), ["v"], [0], [1], "batch_matmul"),
    ((1, 8, 16), (3, 16, 12), [0], ["v"], [3], "batch_matmul"),    # A broadcast
    ((3, 8, 16), (1, 16, 12), ["v"], [0], [3], "batch_matmul"),    # B broadcast
    ((1, 4, 8, 16), (1, 4, 16, 12), [0, "v"], ["v", "v"], [1, 4], "batch_matmul"),
    ((1, 1, 8, 16), (1, 1, 16, 12), [0, "v"], ["v", 0], [1, 1], "batch_matmul"),
    ((1, 8, 16), (16, 12), [0], [], [1], "matmul"),
    ((1, 8, 16), (16, 12), ["v"], [], [1], "matmul"),
])
def test_unit_batch_axis_read_either_way(sa, sb, a_lead, b_lead, out_lead, tag):
    for tb in (False, True):
        sbt = (*sb[:-2], sb[-1], sb[-2]) if tb else sb
        t, a, b = _stage(sa, sbt, a_lead, b_lead, out_lead, transpose_b=tb)
        got, attrs = gemm_tag(t)
        assert got == tag
        assert attrs["operands"] == (a, b) and attrs["transpose_b"] is tb


@pytest.mark.parametrize("sa,sb,a_lead,b_lead,out_lead", [
    ((3, 8, 16), (3, 16, 12), [0], ["v"], [3]),      # index 0 on an axis of extent 3
    ((1, 8, 16), (3, 16, 12), ["v"], ["v"], [3]),    # a unit axis read at an axis of 3
    ((2, 4, 8, 16), (1, 4, 16, 12), ["v", "v"], [0, "v"], [2, 4]),  # rank 4: no broadcast
    ((1, 4, 8, 16), (1, 4, 16, 12), ["v", 0], ["v", "v"], [1, 4]),  # 0 on an axis of 4
    ((1, 8, 16), (16, 12), [0], [], [3]),            # A's rows broadcast: not flattened rows
    ((1, 8, 16), (1, 16, 12), [0], [0], [3]),        # both sides broadcast
])
def test_other_batch_reads_are_not_gemms(sa, sb, a_lead, b_lead, out_lead):
    t, _, _ = _stage(sa, sb, a_lead, b_lead, out_lead)
    assert gemm_tag(t) == ("", {})


def _raised_tags(func) -> list[str]:
    """The op tags of ``func``'s stages raised to TE as ``optimize_prim_func`` raises them: a
    symbolic batch's function first cut down to one image (``batch_loop.per_image``: its unit
    batch axis then read at the output's axis variable)."""
    n = batch_loop.batch_var(func)
    image = batch_loop.per_image(func, n) if n is not None else None
    one = image[0] if image is not None else func
    _, stmts = raise_blocks.unwrap_root(one)
    return [raise_blocks.raise_nest(raise_blocks.analyze_nest(st), raise_blocks.placeholder_for)
            .op.tag for st in stmts]


def test_raised_nest_of_unit_batch_is_tagged():
    mod = transform.LegalizeOps()(_matmul_module((1, 8, 16), (1, 16, 12)))
    assert _raised_tags(mod["matmul"]) == ["batch_matmul"]


@pytest.mark.parametrize("sa,sb", [
    (("n", 64, 256), ("n", 256, 256)),
    (("n", 48, 16), ("n", 16, 40)),
    (("n", 5, 7), (1, 7, 3)),    # B's unit batch broadcast over a symbolic batch
    (("n", 2, 24, 16), ("n", 2, 16, 20)),
])
@pytest.mark.parametrize("n", [1, 3])
def test_symbolic_batch_numerics_and_gemm(sa, sb, n):
    v = tir.Var("n", "int64")
    sym = lambda s: tuple(v if d == "n" else d for d in s)  # noqa: E731
    mod = _matmul_module(sym(sa), sym(sb))
    assert _raised_tags(transform.LegalizeOps()(mod)["matmul"]) == ["batch_matmul"]
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    rng = np.random.default_rng(1)
    conc = lambda s: tuple(n if d == "n" else d for d in s)  # noqa: E731
    a = rng.standard_normal(conc(sa)).astype("float32")
    b = rng.standard_normal(conc(sb)).astype("float32")
    got = vm["main"](tvm.nd.array(a), tvm.nd.array(b)).numpy()
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-5, atol=1e-4)
