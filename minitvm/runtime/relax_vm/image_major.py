"""Image-major order of a native plan's kernels: at one thread, consecutive loops over the
same images run image by image (every kernel of the run on image 0, then on image 1, ...)
instead of kernel by kernel.

A Relax kernel over a symbolic batch is a loop over its images (``schedule.batch_loop``), so a
plan at batch ``n`` runs each kernel on all ``n`` images before the next kernel starts: each
intermediate is written for the whole batch and read back after it, from L3 where a batch of
them does not fit in L2 (SqueezeNet's first conv writes 3.1 MB an image, which its max pool
reads). Run image by image, a kernel reads what the one before it wrote for that image while it
is still in cache, as at batch 1. Each kernel runs once per image with a batch of one, its
batched arrays moved by that image's offset (``native_entry._image_steps``), and the tensors
that live only within a run (``run_locals``) move to a scratch of one image, reused by every
image (as the plan at batch 1 reuses its storages every call), instead of ``n`` images' bytes.

The reordering runs kernel ``t`` on image ``i`` before an earlier kernel ``s`` on a later image
``j``; a run is cut where such a pair would touch the same bytes with either writing (the
memory plan reuses storage across the batch-order steps; the scratch's tensors conflict with
nothing). A kernel joins a run only when it is a loop over the run's images (spec
``image_var``) whose batched arrays are whole 64-byte lines an image, which writes no unbatched
array, and which is worth it (``MIN_ARRAY_BYTES``, ``MAX_WEIGHT_SHARE``). With several threads
the batch order stays (``native_entry._Plan.address``): its kernels spread the images over the
pool.

One thread, batch 4, thread CPU time, 15 interleaved rounds, batch order -> image-major (ONNX
Runtime = 1): SqueezeNet 1.111 -> 1.056, Xception-mini 1.098 -> 1.017, det_postprocess 1.181
-> 1.134, pix2pix 1.025 -> 0.990, ResNet-18 0.906 -> 0.884, ResNet-D 0.944 -> 0.928.
"""

from __future__ import annotations

import bisect

ENABLED = True  # (plans recorded while False keep the batch order alone: A/B timing)
MAX_IMAGES = 64  # batches of more images keep the kernel-by-kernel order (record time)
# a kernel joins a run when one of its batched arrays holds at least this many bytes for the
# batch (the L2 of a core: smaller tensors stay in cache between kernels in batch order too;
# Conv-TasNet's hundreds of small kernels, 1 MB a tensor, ran 4-10% slower image by image) ...
MIN_ARRAY_BYTES = 2 << 20
# ... and its unbatched arrays (weights, read again for every image in image-major order, where
# in batch order they stay in cache across the images) hold at most this share of its batched
# bytes for one image, or FREE_WEIGHT_BYTES (a ResNet-18 with every kernel image by image ran
# 4-9% slower: its later convs read 2.4-9.4 MB of weights for 0.1-0.4 MB of an image)
MAX_WEIGHT_SHARE = 1.0
FREE_WEIGHT_BYTES = 1 << 20


_WRITTEN: dict = {}  # id(spec) -> (spec, positions): a recording asks once per kernel call
_WRITTEN_MAX = 4096


def written(kernel) -> frozenset:
    """The positions, among ``kernel.pack``'s arrays, of the buffers the kernel writes;
    remembered per kernel spec (a 100,000-call recording asked 400,000 times for a few
    kernels' answers)."""
    spec = kernel.spec
    hit = _WRITTEN.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    bufs = [k for k, p in enumerate(spec["params"]) if p[0] == "buf"]
    out = frozenset(bufs.index(k) for k in spec.get("written", ()) if k in bufs)
    if len(_WRITTEN) >= _WRITTEN_MAX:
        _WRITTEN.clear()
    _WRITTEN[id(spec)] = (spec, out)
    return out


def image_positions(kernel) -> list:
    """The positions, among ``kernel.pack``'s arrays, of the buffers batched by its image loop
    (their leading dimension is the symbolic batch; every other one is static)."""
    bufs = [p for p in kernel.spec["params"] if p[0] == "buf"]
    return [k for k, p in enumerate(bufs) if p[3] and p[3][0] == -1]


def image_spans(step, touch, split=None):
    """``(images, batched, unbatched)`` of a plan step that can run image by image, else None:
    ``batched`` the ``(address, bytes, written, distance to image 1, ref position)`` of each
    batched array's image 0, ``unbatched`` the ``(address, bytes)`` of the rest (read only).
    ``split`` is ``(ref, bytes an image, images)`` for a concatenation's producer, whose part
    ``ref`` is strided by an image of the concatenation (``native_entry._concats_in_place``)."""
    spans, arrays, kernel = touch
    at = kernel.spec.get("image_var")
    if at is None:
        return None
    n = step[2][at]
    batched = set(image_positions(kernel))
    wr = written(kernel)
    if not batched or not 2 <= n <= MAX_IMAGES or any(r not in batched for r in wr):
        return None
    if any(arrays[r].nbytes % n or (arrays[r].nbytes // n) % 64 for r in batched):
        return None
    act = sum(arrays[r].nbytes for r in batched)
    weights = sum(a.nbytes for r, a in enumerate(arrays) if r not in batched)
    if max(arrays[r].nbytes for r in batched) < MIN_ARRAY_BYTES or \
            weights > max(MAX_WEIGHT_SHARE * act / n, FREE_WEIGHT_BYTES):
        return None
    q, per = (split[0], split[1]) if split is not None else (None, 0)
    moved, fixed = [], []
    for r, (addr, _nbytes) in enumerate(spans):
        size = arrays[r].nbytes
        if r in batched:
            moved.append((addr, size // n, r in wr, per if r == q else size // n, r))
        elif size:
            fixed.append((addr, size))
    return n, moved, fixed


class _Run:
    """The accesses of a run of steps reordered image-major: each step's batched spans per
    image and its unbatched reads, indexed by address for the conflict test. The refs in
    ``private`` (``run_locals``: moved to the run's own scratch) conflict with nothing."""

    def __init__(self, images: int, private=()):
        self.images = images
        self.private = private
        self.moved: list = []  # sorted (address, end, image, written)
        self.fixed: list = []  # sorted (address, end)
        self.longest = [0, 0]  # the longest span in each list

    def _near(self, table: list, longest: int, lo: int, hi: int):
        start = bisect.bisect_left(table, (lo - longest + 1,))
        for k in range(start, bisect.bisect_left(table, (hi,))):
            if table[k][1] > lo:
                yield table[k]

    def _shared(self, spans, k):
        return [m for m in spans[1] if (k, m[4]) not in self.private]

    def conflicts(self, spans, k) -> bool:
        """Would step ``k`` (its ``image_spans``: ``spans``) run on image ``i`` before a run's
        step on a later image touch the same bytes, either of them writing?"""
        n, _, fixed = spans
        for addr, nbytes, wr, stride, _ in self._shared(spans, k):
            for i in range(n):
                lo, hi = addr + i * stride, addr + i * stride + nbytes
                for _, _, j, wj in self._near(self.moved, self.longest[0], lo, hi):
                    if j > i and (wr or wj):
                        return True
                if wr and i < n - 1 and any(self._near(self.fixed, self.longest[1], lo, hi)):
                    return True  # (an earlier step reads it on every image)
        for addr, nbytes in fixed:  # read on every image: a later image's earlier write
            for _, _, j, wj in self._near(self.moved, self.longest[0], addr, addr + nbytes):
                if wj and j > 0:
                    return True
        return False

    def add(self, spans, k) -> None:
        n, _, fixed = spans
        for addr, nbytes, wr, stride, _ in self._shared(spans, k):
            for i in range(n):
                bisect.insort(self.moved, (addr + i * stride, addr + i * stride + nbytes, i, wr))
            self.longest[0] = max(self.longest[0], nbytes)
        for addr, nbytes in fixed:
            bisect.insort(self.fixed, (addr, addr + nbytes))
            self.longest[1] = max(self.longest[1], nbytes)


def _arrange(run: list, spans: dict, steps: list, touched: list) -> list:
    """``[(steps, run_locals)]``: ``run`` (consecutive steps of one batch) cut where running
    it image-major would reorder conflicting accesses (``_Run.conflicts``), the tensors local
    to each part left out of the test (they move to the part's scratch)."""
    pending, done = [run], []
    while pending:
        cand = pending.pop()
        private = run_locals(cand, spans, steps, touched) if len(cand) > 1 else {}
        acc = _Run(spans[cand[0]][0], private)
        cut = None
        for pos, k in enumerate(cand):
            if pos and acc.conflicts(spans[k], k):
                cut = pos
                break
            acc.add(spans[k], k)
        if cut is None:
            done.append((cand, private))
        else:
            pending += [cand[cut:], cand[:cut]]
    return sorted(done, key=lambda part: part[0][0])


def _covered(intervals: list, lo: int, hi: int) -> bool:
    """Do ``intervals`` ``[(lo, hi)]`` together cover ``[lo, hi)``?"""
    for a, b in sorted(intervals):
        if a > lo:
            return False
        lo = max(lo, b)
        if lo >= hi:
            return True
    return lo >= hi


def _dead_after(touched: list, last: int, lo: int, hi: int) -> bool:
    """Is every byte of ``[lo, hi)`` written after step ``last`` before any step reads it?"""
    done: list = []
    for spans, _arrays, kernel in touched[last + 1:]:
        wr = written(kernel)
        hits = [(q, max(lo, a), min(hi, a + n)) for q, (a, n) in enumerate(spans)
                if n and a < hi and lo < a + n]
        if any(q not in wr and not _covered(done, a, b) for q, a, b in hits):
            return False
        done += [(a, b) for q, a, b in hits if q in wr]
        if _covered(done, lo, hi):
            return True
    return True


def run_locals(run: list, spans: dict, steps: list, touched: list) -> dict:
    """The batched intermediates of ``run`` (step indices) that live only within it:
    ``{(k, ref): (first, last, bytes an image)}`` for each ref of a run step ``k`` to such a
    tensor, with the positions in ``run`` of the tensor's first and last use. Such a tensor
    is written whole by the step that first touches its bytes in the run (a whole write
    starts a new tensor where the memory plan reuses bytes), no step touches its bytes
    otherwise than whole while it lives, and every later step writes its bytes before it reads
    them. Run image by image, it needs one image's bytes, reused by every image."""
    lives: dict = {}  # (address, bytes) -> [[(position, written, per image, k, refs)]]
    bad = set()
    for pos, k in enumerate(run):
        n, moved, fixed = spans[k]
        refs = steps[k][1]
        bad.update(fixed)  # (read whole on every image)
        by_span: dict = {}
        for _addr, nbytes, wr, stride, r in moved:
            sp = touched[k][0][r]
            if refs[r][0] != "fixed" or stride != nbytes or sp[1] != nbytes * n:
                bad.add(sp)
                continue
            prev = by_span.get(sp)
            by_span[sp] = (prev[0] and wr if prev else wr, nbytes, [*(prev[2] if prev else ()), r])
        for sp, (wr, nbytes, rs) in by_span.items():
            segs = lives.setdefault(sp, [])
            if wr or not segs:  # (a whole write: a new tensor in these bytes)
                segs.append([])
            segs[-1].append((pos, wr, nbytes, k, rs))
    out = {}
    for sp, segs in lives.items():
        if sp in bad:
            continue
        lo, hi = sp[0], sp[0] + sp[1]
        for used in segs:
            if not used[0][1]:
                continue  # (read before the run writes it: its value comes from before)
            first, last = used[0][0], used[-1][0]
            if any(other != sp and other[0] < hi and lo < other[0] + other[1]
                   for k in run[first:last + 1] for other in touched[k][0]):
                continue  # (a step touches part of its bytes while it lives)
            if _dead_after(touched, run[last], lo, hi):
                for _pos, _wr, nbytes, k, rs in used:
                    out.update({(k, r): (first, last, nbytes) for r in rs})
    return out


def place(locals_: dict) -> tuple[dict, int]:
    """(``{key: offset}``, bytes) of a scratch holding each tensor of ``run_locals`` (one
    image of it) at a 64-byte-aligned offset, two tensors sharing bytes only when their
    positions in the run do not overlap."""
    placed: dict = {}  # (first, last, bytes) -> offset
    for first, last, nbytes in sorted(set(locals_.values())):
        live = sorted((o, o + b) for (f, la, b), o in placed.items() if f <= last and first <= la)
        off = 0
        for a, b in live:
            if off + nbytes <= a:
                break
            off = max(off, -(-b // 64) * 64)
        placed[(first, last, nbytes)] = off
    return ({key: placed[v] for key, v in locals_.items()},
            max((o + b for (_, _, b), o in placed.items()), default=0))


def image_major(steps: list, touched: list, split: dict, expand, scratch) -> list | None:
    """``steps`` in image-major order where runs of two or more steps allow it (see the module
    docstring), or None when no run does. ``split`` maps a concatenation producer's step to
    ``(ref, bytes an image, images)``; ``expand(k, images)`` gives step ``k`` as one step per
    image (``native_entry._image_steps``), and ``expand(k, None)`` step ``k`` in batch order.
    Intermediates living only within a run (``run_locals``) move to ``scratch(bytes)``, the
    address of new memory the plan keeps, one image's worth reused by every image."""
    if not ENABLED:
        return None
    order: list = []  # step index, or a list of consecutive steps of one batch
    spans = {}
    for k, step in enumerate(steps):
        spans[k] = image_spans(step, touched[k], split.get(k))
        if spans[k] is None:
            order.append(k)
        elif order and isinstance(order[-1], list) and spans[order[-1][0]][0] == spans[k][0]:
            order[-1].append(k)
        else:
            order.append([k])
    out, any_run = [], False
    for item in order:
        if not isinstance(item, list):
            out.extend(expand(item, None))
            continue
        for run, private in _arrange(item, spans, steps, touched):
            if len(run) == 1:
                out.extend(expand(run[0], None))
                continue
            any_run = True
            offsets, nbytes = place(private)
            base = scratch(nbytes) if nbytes else 0
            per = []
            for k in run:
                moved = {r: ("fixed", base + offsets[k, r], 0)
                         for r in range(len(steps[k][1])) if (k, r) in offsets}
                per.append([(a, [moved.get(r, ref) for r, ref in enumerate(refs)], kv, name)
                            for a, refs, kv, name in expand(k, spans[k][0])])
            out.extend(per[s][i] for i in range(spans[run[0]][0]) for s in range(len(per)))
    return out if any_run else None
