"""In-place concatenation in the Relax VM's native entry (native_entry._concats_in_place): at a
call shape where a concatenation's parts are contiguous pieces of its output, the kernels that
produce the parts write into the output and the concatenation step is dropped."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.transform.legalize_ops.manipulate import CONCAT_AXIS_ATTR
from minitvm.runtime.relax_vm import native_entry
from minitvm.runtime.relax_vm.native_entry import RECORD

_RNG = np.random.default_rng(0)
W = {k: _RNG.standard_normal(s).astype("float32") for k, s in
     {"w0": (8, 32), "w1": (32, 16), "w2": (32, 16), "w3": (32, 4), "w4": (16, 4),
      "v1": (8, 16), "v2": (8, 16)}.items()}


def _module(kind: str):
    """main(x: (n, 8)) with a concatenation (axis 1) of two matmuls, then a matmul of it.

    ``shared``: the parts are products of an intermediate h = x @ w0 (the block memory plan
    may give the concatenation h's bytes); ``args``: of x itself; ``reread``: as ``shared``,
    with the first part read again after the concatenation (a second output)."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 8], "float32"))
    bb = relax.BlockBuilder()

    def mm(a, w):
        return bb.emit(relax.op.matmul(a, relax.const(W[w])))

    with bb.function("main", [x]):
        with bb.dataflow():
            if kind == "args":
                a, b = mm(x, "v1"), mm(x, "v2")
            else:
                h = mm(x, "w0")
                a, b = mm(h, "w1"), mm(h, "w2")
            c = bb.emit(relax.op.concat([a, b], axis=1))
            y = mm(c, "w3")
            out = bb.emit_output(relax.Tuple([y, mm(a, "w4")]) if kind == "reread" else y)
        bb.emit_func_output(out)
    return bb.get()


def _ref(kind: str, x):
    if kind == "args":
        a, b = x @ W["v1"], x @ W["v2"]
    else:
        h = x @ W["w0"]
        a, b = h @ W["w1"], h @ W["w2"]
    y = np.concatenate([a, b], axis=1) @ W["w3"]
    return (y, a @ W["w4"]) if kind == "reread" else y


@pytest.fixture(scope="module", params=["shared", "args", "reread"])
def built(request):
    return request.param, relax.build(_module(request.param), "llvm")


def _plan_names(vm, x) -> list:
    nf = vm._native["main"]
    assert nf.try_call((tvm.nd.array(x),)) is not RECORD
    (key,) = [k for k in nf.plans if k == (x.shape,)]
    return nf.plans[key].names


def test_legalized_concatenation_is_marked_and_its_spec_carries_the_axis(built):
    mod = relax.transform.LegalizeOps()(_module("shared"))
    marked = [f for f in mod.functions.values() if isinstance(f, tir.PrimFunc)
              and f.attrs is not None and CONCAT_AXIS_ATTR in dict(f.attrs.items())]
    assert len(marked) == 1 and int(dict(marked[0].attrs.items())[CONCAT_AXIS_ATTR]) == 1
    _, ex = built
    axes = {name: spec.get("concat_axis") for name, (_, spec) in ex.kernels.items()}
    assert [a for name, a in axes.items() if name.startswith("concatenate")] == [1]
    assert all(a is None for name, a in axes.items() if "matmul" in name)


def test_in_place_at_batch_one_copy_otherwise_same_numbers(built):
    kind, ex = built
    vm = relax.VirtualMachine(ex, tvm.cpu())
    interp = relax.VirtualMachine(ex, tvm.cpu())
    interp.native_entry = False
    rng = np.random.default_rng(1)
    for rows in (1, 3, 1, 3):
        x = rng.standard_normal((rows, 8)).astype("float32")
        want = _ref(kind, x)
        for _ in range(2):  # the first call at a shape records the plan, the second replays it
            got = vm["main"](x)
            outs = [g.numpy() for g in got] if kind == "reread" else [got.numpy()]
            ref = list(want) if kind == "reread" else [want]
            for o, r in zip(outs, ref, strict=True):
                np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-4)
        base = interp["main"](x)
        base = [b.numpy() for b in base] if kind == "reread" else [base.numpy()]
        for o, b in zip(outs, base, strict=True):
            np.testing.assert_array_equal(o, b)
        names = _plan_names(vm, x)
        concats = [n for n in names if n.startswith("concatenate")]
        # rows > 1: the parts interleave in the output; "reread": a part is read afterwards
        assert len(concats) == (0 if rows == 1 and kind != "reread" else 1), (kind, names)


def test_profile_and_outputs_fresh_per_call_in_place(built):
    kind, ex = built
    if kind == "reread":
        pytest.skip("the concatenation stays a step")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    xs = [np.random.default_rng(k).standard_normal((1, 8)).astype("float32") for k in range(3)]
    vm["main"](xs[0])
    outs = [vm["main"](x) for x in xs]  # held together: each call's own output
    for x, o in zip(xs, outs, strict=True):
        np.testing.assert_allclose(o.numpy(), _ref(kind, x), rtol=1e-4, atol=1e-4)
    report = vm.profile("main", tvm.nd.array(xs[0]))
    assert report.native and not any(n.startswith("concatenate") for n in report.rows)


def test_output_moves_to_a_fresh_buffer_only_when_its_bytes_are_in_use(built, monkeypatch):
    """``shared``: the block memory plan gives the concatenation the bytes of h, which the
    producers still read, so the output moves to a fresh buffer; ``args``: it stays. (Seen
    with the intermediates left where they are: packed, the fresh buffer joins the arena.)"""
    kind, ex = built
    if kind == "reread":
        pytest.skip("the concatenation stays a step")
    monkeypatch.setattr(native_entry, "PACK_ARENA", False)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    x = np.ones((1, 8), "float32")
    vm["main"](x)
    (plan,) = vm._native["main"].plans.values()
    fresh = [a for a in plan.keep if a.dtype == np.uint8 and a.nbytes == 1 * 32 * 4 + 64]
    assert len(fresh) == (1 if kind == "shared" else 0)


def test_exported_library_keeps_the_mark(built, tmp_path):
    kind, ex = built
    path = str(tmp_path / "lib.zip")
    ex.export_library(path)
    vm = relax.VirtualMachine(tvm.runtime.load_module(path), tvm.cpu())
    x = np.random.default_rng(2).standard_normal((1, 8)).astype("float32")
    got = vm["main"](x)
    got = got[0].numpy() if kind == "reread" else got.numpy()
    want = _ref(kind, x)
    np.testing.assert_allclose(got, want[0] if kind == "reread" else want, rtol=1e-4,
                               atol=1e-4)
    concats = [n for n in _plan_names(vm, x) if n.startswith("concatenate")]
    assert len(concats) == (1 if kind == "reread" else 0)
