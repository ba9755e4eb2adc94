"""The Relax native entry packs a plan's intermediate storages into one arena by liveness
(``native_entry._pack_intermediates``): no two tensors alive at once share bytes, and the
results equal the unpacked plan's and numpy's."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.runtime.native_plan import root
from minitvm.runtime.relax_vm import native_entry

WIDTHS = (16, 64, 8, 48, 16)


def _chain_module():
    """main(x: (n, 16)): matmuls through widths 64, 8, 48, 16, each relu'd, and a concat of
    the first and last activations; weights as constants."""
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((a, b)).astype("float32") * 0.3
          for a, b in zip(WIDTHS, WIDTHS[1:], strict=False)]
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, WIDTHS[0]], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = x
            for w in ws:
                h = bb.emit(relax.op.nn.relu(relax.op.matmul(h, relax.const(w))))
            y = bb.emit(relax.op.concat([x, h], axis=1))
            gv = bb.emit_output(relax.op.multiply(y, relax.const(np.float32(2.0))))
        bb.emit_func_output(gv)
    return bb.get(), ws


def _ref(ws, x):
    h = x
    for w in ws:
        h = np.maximum(h @ w, 0)
    return np.concatenate([x, h], axis=1) * 2


@pytest.fixture(scope="module")
def built():
    mod, ws = _chain_module()
    return relax.build(mod, "llvm"), ws


def _record(ex, x, pack: bool, monkeypatch, seen=None):
    monkeypatch.setattr(native_entry, "PACK_ARENA", pack)
    if seen is not None:
        real = native_entry._pack_intermediates

        def spy(steps, touched, keep, const_ids):
            out = real(steps, touched, keep, const_ids)
            seen.append(([s[1] for s in steps], touched, out))
            return out

        monkeypatch.setattr(native_entry, "_pack_intermediates", spy)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    vm["main"](x)  # records the plan
    return vm


def test_packed_plan_matches_unpacked_and_numpy(built, monkeypatch):
    ex, ws = built
    rng = np.random.default_rng(1)
    for rows in (1, 5, 33):
        x = rng.standard_normal((rows, WIDTHS[0])).astype("float32")
        packed = _record(ex, x, True, monkeypatch)
        plain = _record(ex, x, False, monkeypatch)
        for _ in range(2):  # replayed through the plans
            got = packed["main"](x).numpy()
            np.testing.assert_array_equal(got, plain["main"](x).numpy())
            np.testing.assert_allclose(got, _ref(ws, x), rtol=1e-5, atol=1e-5)


def test_live_tensors_never_share_arena_bytes(built, monkeypatch):
    ex, _ = built
    seen = []
    x = np.random.default_rng(2).standard_normal((7, WIDTHS[0])).astype("float32")
    _record(ex, x, True, monkeypatch, seen)
    refs, touched, keep = seen[0]
    arena = root(keep[-1])
    lo, hi = arena.ctypes.data, arena.ctypes.data + arena.nbytes
    # each tensor in the arena: its bytes, the step writing it and the last step reading it
    lives = {}
    in_arena = 0
    for t, ((spans, _arrays, kernel), step_refs) in enumerate(zip(touched, refs, strict=True)):
        wr = native_entry._written(kernel)
        for q, (ptr, n) in enumerate(spans):
            if not n or step_refs[q][0] != "fixed" or not lo <= ptr < hi:
                continue
            in_arena += 1
            if q in wr:
                lives[(ptr, n, t)] = t
            else:
                writer = max(k for (p, m, k) in lives if (p, m) == (ptr, n) and k <= t)
                lives[(ptr, n, writer)] = t
    assert in_arena >= 6 and len(lives) >= 4  # the activations all moved into the arena
    items = sorted(lives.items(), key=lambda kv: kv[0][2])
    for i, ((p1, n1, a1), b1) in enumerate(items):
        for (p2, n2, a2), b2 in items[i + 1:]:
            if p1 < p2 + n2 and p2 < p1 + n1:  # sharing bytes: one dead before the other
                assert b1 < a2 or b2 < a1, (p1, n1, a1, b1, p2, n2, a2, b2)
