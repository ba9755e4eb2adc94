"""One ``update_row`` call site's buffers and the row views it hands out, for both VMs.

A loop over a run-time length writes each step's row into a stacked result made before the
loop (Relax's ``vm.builtin.update_row``, Relay's ``UpdateRow``). A site writes in place only
into a buffer it made itself (its first write into any other buffer copies it: one copy per
loop run, O(row) a step after), and it may hand the kernel producing a step's row a view of
that row of its buffer as the kernel's output (where the VM's code proves no program value can
tell: ``row_outputs`` in Relax, ``vm.straight_line`` in Relay; both from ``may_hold``), so the row is already there when
the write comes and the write is skipped.

The site keeps weak references to the views it handed out: a row with a live view is not
handed out again, and a write into such a row (not of the view itself) copies the buffer
first, so a value read after its write keeps its bits. ``detach`` copies the live views in a
value leaving a function. The site's own buffers start at a 64-byte boundary and rows are
handed out only at 64-byte boundaries (a misaligned row made the kernels' vector loads and
stores split: a step's matmul reading it ran 2x slower).
"""

from __future__ import annotations

import weakref

import numpy as np

__all__ = ["ALIGN", "aligned_copy", "may_hold", "row_site"]

ALIGN = 64


def aligned_copy(data: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``data`` starting at a 64-byte boundary (a site's own buffers:
    their rows are handed to kernels as outputs)."""
    owner = np.empty(data.nbytes + ALIGN, np.uint8)
    out = np.ndarray(data.shape, data.dtype, owner, (-owner.ctypes.data) % ALIGN)
    out[...] = data
    return out


def may_hold(users: dict, start: int) -> set[int]:
    """The registers that may hold register ``start``'s value (or a tuple of it, a view of it)
    anywhere in a function, given ``users``: register -> the registers an instruction may then
    make hold its value (moves, tuples, views: each VM's own instruction set). The proofs of
    both VMs that no program value can tell a row view from a copy start from this; a
    worklist, linear in the edges (loops' back edges included)."""
    seen, work = {start}, [start]
    while work:
        for d in users.get(work.pop(), ()):
            if d not in seen:
                seen.add(d)
                work.append(d)
    return seen


def row_site(row_index):
    """``(write, row, view, detach, handed)`` of one call site. ``row_index(data, index)``
    converts an index the fast path does not take (or raises the VM's error).

    - ``write(data, row, index, copy=False) -> data'``: ``data[index] = row`` in place when
      ``data`` is this site's (and ``copy`` is false: the VM found another value holding it),
      else into an aligned copy the site then owns;
    - ``view(data, index, shape, dtype)``: ``data[index]`` as the row's output when ``data`` is
      the buffer this site wrote last and no live view of that row was handed out, else None;
      ``handed[0]`` is the view handed out last (a write of it is skipped);
    - ``row(alloc, size, shape, data, index)``: ``view`` or ``alloc(size, shape)`` (Relax's
      storage sites, whose allocator carries the dtype);
    - ``detach(value)``: ``value`` with the live views this site handed out (in tuples too)
      copied."""
    owned: dict = {}  # id(buffer) -> [weak reference, {row: its view's}, shape, dtype checked]
    last = None  # owned[...] of the buffer this site wrote last (most calls write it)
    handed = [None]  # the view handed out last (the generated code's test)
    nd = np.ndarray
    ref = weakref.ref

    def own(data):
        key = id(data)
        mine = owned[key] = [ref(data, lambda _, key=key: owned.pop(key, None)), {}, None, None]
        return mine

    def write(data, row, index, copy=False):
        nonlocal last
        k = index.item() if type(index) is nd and index.ndim == 0 else None
        if type(k) is not int or not 0 <= k < data.shape[0]:
            k = row_index(data, index)  # (another index's conversion, or the error)
        if copy:
            data = aligned_copy(data)
            last = own(data)
        elif last is None or last[0]() is not data or not data.flags.writeable:
            mine = owned.get(id(data))
            if mine is None or mine[0]() is not data or not data.flags.writeable:
                data = aligned_copy(data)
                mine = own(data)
            last = mine
        view = last[1].get(k)
        if view is not None:
            view = view()
            if view is row:
                return data  # (the kernel wrote the row itself)
            if view is not None:  # (a live value is that row: it keeps its bits)
                data = aligned_copy(data)
                last = own(data)
        data[k] = row
        return data

    def view(data, index, shape, dtype):
        handed[0] = None
        mine = last
        if mine is None or mine[0]() is not data or type(index) is not nd or index.ndim:
            return None
        if mine[2] is not shape or mine[3] is not dtype:  # (checked once a buffer)
            if data.shape[1:] != shape or data.dtype != dtype or data.ctypes.data % ALIGN or \
                    (data.nbytes // max(len(data), 1)) % ALIGN:
                return None
            mine[2], mine[3] = shape, dtype
        k = index.item()
        if type(k) is not int or not 0 <= k < len(data) or not data.flags.writeable:
            return None
        views = mine[1]
        old = views.get(k)
        if old is not None and old() is not None:
            return None  # (a live value is that row)
        if len(views) >= 64:  # (forget the dead ones now and then)
            for j in [j for j, w in views.items() if w() is None]:
                del views[j]
        out = handed[0] = data[k]
        views[k] = ref(out)
        return out

    def row(alloc, size, shape, data, index):
        out = view(data, index, shape, alloc.dtype)
        return out if out is not None else alloc(size, shape)

    def detach(value):
        handed[0] = None
        if type(value) is tuple:
            return tuple(detach(v) for v in value)  # (a returned tuple: a few fields)
        if type(value) is nd and value.base is not None:
            for mine in owned.values():
                if any(w() is value for w in mine[1].values()):
                    return value.copy()
        return value

    return write, row, view, detach, handed
