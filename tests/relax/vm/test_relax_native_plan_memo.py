"""The native entry's recording shortcuts (big60) give the full path's plan: each array placed
once (root, span, ref) where every use walked to its root again, and the arena packing
rewriting the refs its first scan found where it searched every ref twice. A reference of the
full packing runs on a copy of the same recording: steps, spans and kept arrays are equal."""

import numpy as np

import minitvm as tvm
from minitvm import relax, te
from minitvm.runtime.native_plan import arena_offsets, root
from minitvm.runtime.relax_vm import native_entry
from minitvm.runtime.relax_vm.image_major import written


def _pack_full(steps, touched, keep, const_ids):
    """The arena packing with every ref searched in both passes (the full path)."""
    import bisect

    roots = {id(r): r for r in map(root, keep) if id(r) not in const_ids and r.nbytes}
    spans = sorted((r.ctypes.data, r.nbytes, rid) for rid, r in roots.items())
    starts = [s for s, _, _ in spans]
    first, last, wrote = {}, {}, set()
    for t, (tspans, _arrays, kernel) in enumerate(touched):
        wr = written(kernel)
        for q, (ptr, n) in enumerate(tspans):
            i = bisect.bisect_right(starts, ptr) - 1
            if not n or steps[t][1][q][0] != "fixed" or i < 0 or \
                    ptr + n > spans[i][0] + spans[i][1]:
                continue
            first.setdefault(i, t)
            last[i] = t
            if q in wr:
                wrote.add(i)
    moved = sorted(wrote)
    if len(moved) < 2:
        return keep
    offsets, total = arena_offsets([(spans[i][1], first[i], last[i]) for i in moved])
    buf, base = native_entry._aligned_buffer(total)
    to = {i: base + off for i, off in zip(moved, offsets, strict=True)}
    for t, (tspans, _arrays, _kernel) in enumerate(touched):
        refs = list(steps[t][1])
        for q, (kind, ptr, b) in enumerate(refs):
            i = bisect.bisect_right(starts, ptr) - 1
            if kind == "fixed" and i in to and ptr < spans[i][0] + spans[i][1]:
                refs[q] = ("fixed", to[i] + ptr - spans[i][0], b)
                tspans[q] = (refs[q][1], tspans[q][1])
        steps[t] = (steps[t][0], refs, *steps[t][2:])
    gone = {spans[i][2] for i in moved}
    return [a for a in keep if id(root(a)) not in gone] + [buf]


def _add(a, b):
    return te.compute(a.shape, lambda i: a[i] + b[i], name="add")


def _chain(length=6):
    x = relax.Var("x", relax.TensorStructInfo([8], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            # (opaque kernels: fusion leaves one call per step)
            v = bb.emit_te(_add, x, x, primfunc_attrs={"op_pattern": 8})
            w = bb.emit_te(_add, v, x, primfunc_attrs={"op_pattern": 8})
            for _ in range(length - 2):
                v, w = w, bb.emit_te(_add, w, v, primfunc_attrs={"op_pattern": 8})
            gv = bb.emit_output(w)
        bb.emit_func_output(gv)
    return bb.get()


def test_arena_packing_equals_the_full_search(monkeypatch):
    buffers = {}
    real_buffer = native_entry._aligned_buffer

    def same_buffer(nbytes):  # (both packings get the same arena: addresses comparable)
        if nbytes not in buffers:
            buffers[nbytes] = real_buffer(nbytes)
        return buffers[nbytes]

    monkeypatch.setattr(native_entry, "_aligned_buffer", same_buffer)
    real = native_entry._pack_intermediates
    compared = []

    def spy(steps, touched, keep, const_ids):
        s2 = [(st[0], list(st[1]), *st[2:]) for st in steps]
        t2 = [(list(sp), arrays, kernel) for sp, arrays, kernel in touched]
        full = _pack_full(s2, t2, list(keep), const_ids)
        out = real(steps, touched, keep, const_ids)
        assert steps == s2 and [t[0] for t in touched] == [t[0] for t in t2]
        assert [id(a) for a in out] == [id(a) for a in full]
        compared.append((len(steps), out is not keep))  # (storages moved into an arena)
        return out

    monkeypatch.setattr(native_entry, "_pack_intermediates", spy)
    ex = relax.build(_chain(), "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    a = np.arange(8, dtype="float32")
    out = vm["main"](a).numpy()
    assert compared and compared[0][0] >= 6 and compared[0][1]
    # x+x=2a, then a Fibonacci of sums: 2a, 3a, 5a, 8a, 13a, 21a
    np.testing.assert_allclose(out, a * 21)
    np.testing.assert_allclose(vm["main"](a).numpy(), a * 21)  # (the recorded plan)


def test_roots_are_what_walking_to_the_root_gives():
    base = np.zeros(64, "float32")
    views = [base[8:16], base[8:16][2:4], base.reshape(8, 8)[1], np.ones(3)]
    memo = {id(views[0]): (views[0], base)}  # one known, the others walked to
    assert [id(r) for r in native_entry._roots(views, memo)] == [id(root(v)) for v in views]
