"""Native loops: a VM loop whose step is only kernel calls, moves and row writes, run to its end
in one native call (shared by the VMs).

A loop over a run-time length (an RNN's step) runs a few kernels a step; driven from Python
each step also pays the VM's per-instruction work (bindings' checks, output reuse, the row
write's checks), about as long as the kernels themselves. A VM translates such a loop (its
head to its jump back) into *loop ops*, a small dialect-neutral list:

- ``("fresh", dst, shape, dtype[, size, offset])``: a new array a step (a storage made for one
  tensor; ``shape`` / ``size`` may be ``("reg", r)``, the value register ``r`` holds; with a
  ``size`` the tensor must fit ``size[0]`` bytes from ``offset``);
- ``("call", address, kvars, args, news)``: kernel ``fn(void** args, int64* kvars, nthreads)``
  on ``args`` (``("reg", r, want)`` read, ``want`` None or the ``(shape, dtype)`` it must have;
  ``("pack", r, source, packed)``: ``packed`` read where ``r`` holds ``source``; ``("val", x)``:
  an array; ``("out", r)``: written, a ``fresh`` array of this step) then ``news`` (``(dst,
  shape, dtype)``: outputs made a step). ``kvars``: an address, or ``f(values) -> (vars,
  buffer positions) | None`` worked out from the arguments (arrays as shape-only stand-ins);
- ``("move", dst, src)``, ``("set", dst, value)``, ``("kill", regs)``;
- ``("row", dst, data, row, index)``: the VM's row write ``data[index] = row`` (in place into a
  buffer the loop made, a copy of ``data`` first when it is not that buffer);
- ``("exit", a, b, when_equal, exit_id)``: leave when ``R[a] == R[b]`` (``b`` may be
  ``("imm", v)``) is ``when_equal``;
- ``("back",)``: the jump back, the last op.

``NativeLoop.run`` checks the ops on the registers' values at the loop head by running them
symbolically (values as objects, as *this step's or an earlier step's* output of a site, as a
version of a row buffer): every kernel input has the shape and dtype its kernel was bound to,
every value read (and every value held where the loop may leave) is still intact — each site
has two buffers used in turn, so a value must be read before its site runs twice more — and
the symbolic state repeats after a few steps (so the checks hold at every later step). Then it
lays the ops out as int64 words and runs them in ``mtvm_native_loop`` (LLVM, JIT-compiled once
per process, the GIL released) until an exit is taken: the values, kernels and order of the
VM's own loop, with the same bits. A row index out of range hands the step back to the VM
(its own error); a loop the checks refuse stays with the VM (the refusal kept for that look of
the registers).

A hand-over costs less than one step in Python, so a VM hands a loop over from its first head
(``PYTHON_STEPS``): a run whose key and registers' look are the last run's (one generated guard)
gathers the live arrays into a tuple, allocates the arena and makes one native call, which
fills in the slots (the arrays' data pointers read from the tuple) and the registers; back in
Python only the registers read after the exit (``read_after``) get arrays.
"""

from __future__ import annotations

import math
from operator import itemgetter

import numpy as np

from .native_loop_ir import loop_runner_address
from .native_plan import data_address
from .py_layout import LAYOUT_OK

__all__ = ["DECLINED", "PYTHON_STEPS", "TRIES", "TRY_LATER", "NativeLoop", "head_try_lines",
           "loop_region", "loop_runner_address", "read_after"]

#: the steps a VM runs in Python before it hands a loop to the native loop (at the next loop
#: head). None: a hand-over costs about 10 us (a guard of the registers' look, the live
#: arrays gathered, an arena, one native call, the registers written back), less than one step
#: in Python (20-45 us: its kernels' checks, the row write's), so even a one-step loop gains;
#: a zero-step one pays the hand-over. A Relay loop's first step still runs in Python when its
#: dynamic kernels are not bound yet at these shapes (the native loop is tried at the next
#: head). Both VMs' generated code reads it when made.
PYTHON_STEPS = 0
#: a VM's loop entry's answers besides an exit pc: try again at a later head (a dynamic kernel
#: not bound yet, a refusal that may pass with another run's shapes) / the VM redoes this step
TRY_LATER, DECLINED = -1, -2
#: the loop heads a run tries the native loop at (the first step binds the kernels, and binds
#: them anew when an earlier run's shapes differ)
TRIES = 2
STEPS_CHECKED = 6  # symbolic steps; the state after the 4th and the 6th must agree
ALIGN = 64

_BACK, _FRESH, _MOVE, _SET, _CALL, _ROW, _EXIT = range(7)

_SCALAR_CODES = {np.dtype(np.int8): 1, np.dtype(np.int16): 2, np.dtype(np.int32): 3,
                 np.dtype(np.int64): 4, np.dtype(np.uint8): 5, np.dtype(np.bool_): 5,
                 np.dtype(np.uint16): 6, np.dtype(np.uint32): 7, np.dtype(np.uint64): 8}

def loop_region(code: list, targets: dict, goto, if_) -> tuple[int, int] | None:
    """``(head, back)`` of the one loop in VM ``code`` that may run natively, else None:
    ``targets`` maps each jump's pc to the pcs it may go to (an ``if_``'s fall-through
    included), ``goto`` / ``if_`` are the VM's opcodes. One jump back (a ``goto``); nothing
    outside jumps into the loop's middle; inside, a ``goto`` only to the next pc and an
    ``if_`` only between its fall-through and somewhere outside (the loop's exits)."""
    backs = [pc for pc, ts in targets.items() if any(t <= pc for t in ts)]
    if len(backs) != 1 or code[backs[0]][0] != goto:
        return None
    back = backs[0]
    head = targets[back][0]
    for pc, ts in targets.items():
        inside = head <= pc <= back
        if not inside and any(head < t <= back for t in ts):
            return None  # (a jump into the middle of the loop)
        if inside and pc != back:
            if code[pc][0] == goto and ts[0] != pc + 1:
                return None
            if code[pc][0] == if_ and not (pc + 1 in ts and any(not head <= t <= back
                                                                 for t in ts)):
                return None
    return head, back


def head_try_lines(pc: int, ind: str, call: str, load: list[str] = (),
                   store: list[str] = ()) -> list[str]:
    """The lines of a VM's generated Python that try the native loop at loop head ``pc``
    (``native_on`` tries left, after ``native_wait`` Python steps): ``load`` before ``x =
    call``, ``store`` after it, then on at exit pc ``x`` when it is one. Both VMs' share."""
    body = [*load, f"x = {call}", f"native_on = native_on - 1 if x == {TRY_LATER} else 0",
            *store, "if x >= 0:", "    pc = x"]
    return [f"        if pc == {pc} and native_on:", f"{ind}if native_wait:",
            f"{ind}    native_wait -= 1", f"{ind}else:", *(f"{ind}    {b}" for b in body)]


def read_after(starts: list[int], successors, reads) -> list[frozenset]:
    """Per pc in ``starts`` (a loop's exits), the registers an instruction reachable from it
    may read (``successors(pc)``, ``reads(pc)``: a VM's): those a native run must hand back
    when it leaves there; the others it may drop (nothing reads them). A worklist per exit."""
    out = []
    for start in starts:
        seen, work, regs = {start}, [start], set()
        while work:
            pc = work.pop()
            regs.update(reads(pc))
            for t in successors(pc):
                if t not in seen:
                    seen.add(t)
                    work.append(t)
        out.append(frozenset(regs))
    return out


class _Refused(Exception):
    """The symbolic run found a step the native loop would not do as the VM does."""


class _Symbolic:
    """The symbolic run of loop ops on the head's registers: checks each step and lays the
    ops out as words (one list a step: they must agree)."""

    def __init__(self, regs: list):
        self.objs: list = []  # slot -> Python object
        self.slot_ids: dict = {}
        self.sites: dict = {}  # fresh site -> (shape, dtype)
        self.rows: dict = {}  # row site -> (shape, dtype) of its buffer
        self.cur: dict = {}  # (site, parity) -> the step that made its buffer's value
        self.version: dict = {}  # row site -> its buffer's version
        # (each register at the head its own slot, its index: a layout fits any run whose
        # registers look the same, whichever of them are one array)
        self.objs = list(regs)
        self.state = [None if v is None else ("o", r) for r, v in enumerate(regs)]

    def slot(self, obj) -> int:
        s = self.slot_ids.get(id(obj))
        if s is None:
            s = self.slot_ids[id(obj)] = len(self.objs)
            self.objs.append(obj)
        return s

    def valid(self, v) -> bool:
        if v is None or v[0] == "o":
            return True
        if v[0] == "b":
            return self.cur.get((v[1], v[2] & 1)) == v[2]
        return self.version.get(v[1]) == v[2]

    def meta(self, v):
        """``(shape, dtype)`` of an array value, None for anything else."""
        if v is None:
            return None
        if v[0] == "o":
            a = self.objs[v[1]]
            if type(a) is not np.ndarray or not a.flags.c_contiguous:
                return None
            return a.shape, a.dtype
        return (self.sites if v[0] == "b" else self.rows)[v[1]]

    def read(self, r: int):
        v = self.state[r]
        if v is None or not self.valid(v):
            raise _Refused(f"register {r} read when gone")
        return v

    def scalar(self, r: int) -> tuple[int, int, int]:
        """(kind, value, code) of a scalar operand: an int's value, or a one-element integer
        array's register and dtype code."""
        v = self.read(r)
        if v[0] == "o" and type(self.objs[v[1]]) in (int, bool):
            return 0, int(self.objs[v[1]]), 0
        m = self.meta(v)
        if m is None or math.prod(m[0]) != 1 or m[1] not in _SCALAR_CODES:
            raise _Refused("a branch or an index on a value that is not an integer scalar")
        return 1, r, _SCALAR_CODES[m[1]]

    def step(self, ops: list, t: int) -> list:
        """Run one step of ``ops`` symbolically (step ``t``); its words."""
        words: list = []
        st = self.state
        for op in ops:
            kind = op[0]
            if kind == "fresh":
                dst, shape, dtype = op[1:4]
                site = ("f", id(op))
                shape = self.value(shape)
                if len(op) > 4 and not self._fits(self.value(op[4]), op[5], shape, dtype):
                    raise _Refused("a tensor that does not fit its storage")
                self._made(site, shape, dtype, t)
                st[dst] = ("b", site, t)
                words += [_FRESH, dst, site, 0]  # (the slots filled in once known)
            elif kind == "call":
                _, address, kvars, args, news = op
                entries = []
                if callable(kvars):  # (the kernel's own checks and vars, from the shapes)
                    kvars, args = self._kernel_vars(kvars, args)
                for a in args:
                    if a[0] == "val":
                        if type(a[1]) is not np.ndarray:
                            raise _Refused("a kernel argument that is not an array")
                        entries.append(("fixed", self.slot(a[1])))
                        continue
                    v = self.read(a[1])
                    if a[0] == "pack":
                        if v[0] != "o" or self.objs[v[1]] is not a[2]:
                            raise _Refused("a bound kernel's weight is another array")
                        entries.append(("fixed", self.slot(a[3])))
                    elif a[0] == "out":
                        if v[0] != "b" or v[2] != t:
                            raise _Refused("a kernel writes a value not made this step")
                        entries.append(("reg", a[1]))
                    else:
                        m = self.meta(v)
                        if m is None or a[2] is not None and m != (tuple(a[2][0]),
                                                                   np.dtype(a[2][1])):
                            raise _Refused("a kernel input's shape or dtype changed")
                        entries.append(("reg", a[1]))
                for j, (dst, shape, dtype) in enumerate(news):
                    site = ("n", id(op), j)
                    self._made(site, shape, dtype, t)
                    st[dst] = ("b", site, t)
                    words += [_FRESH, dst, site, 0]
                    entries.append(("reg", dst))
                words += [_CALL, address, kvars, len(entries), *entries]
            elif kind == "move":
                st[op[1]] = st[op[2]]
                words += [_MOVE, op[1], op[2]]
            elif kind == "set":
                s = self.slot(op[2])
                st[op[1]] = ("o", s)
                words += [_SET, op[1], ("fixed", s)]
            elif kind == "kill":
                for r in op[1]:
                    st[r] = None
                    words += [_SET, r, -1]
            elif kind == "row":
                _, dst, data, row, index = op
                dm, rm = self.meta(self.read(data)), self.meta(self.read(row))
                if dm is None or rm is None or not dm[0] or dm[0][1:] != rm[0] or \
                        dm[1] != rm[1]:
                    raise _Refused("a row write of another shape or dtype")
                u = id(op)
                if self.rows.setdefault(u, dm) != dm:
                    raise _Refused("a row write into data of another shape")
                ik = self.scalar(index)
                self.version[u] = self.version.get(u, -1) + 1
                st[dst] = ("r", u, self.version[u])
                rowbytes = math.prod(rm[0]) * rm[1].itemsize
                words += [_ROW, dst, data, row, *ik, ("row", u), dm[0][0], rowbytes]
            elif kind == "exit":
                _, a, b, when_equal, exit_id = op
                ka = self.scalar(a)
                kb = (0, int(b[1]), 0) if type(b) is tuple else self.scalar(b)
                if not all(self.valid(v) for v in st):
                    raise _Refused("a value held where the loop may leave is gone")
                words += [_EXIT, *ka, *kb, int(when_equal), exit_id]
            elif kind == "back":
                if not all(self.valid(v) for v in st):
                    raise _Refused("a value held at the loop head is gone")
                words.append(_BACK)
            else:
                raise _Refused(f"loop op {kind!r}")
        return words

    def value(self, x):
        """``x``, or the Python value register ``x[1]`` holds for ``("reg", r)``."""
        if type(x) is tuple and len(x) == 2 and x[0] == "reg":
            v = self.read(x[1])
            if v[0] != "o":
                raise _Refused("a shape or size that is a tensor")
            return self.objs[v[1]]
        return x

    @staticmethod
    def _fits(size, offset: int, shape, dtype) -> bool:
        try:
            return int(size[0]) >= offset + math.prod(shape) * np.dtype(dtype).itemsize
        except (TypeError, ValueError, IndexError):
            return False

    def _kernel_vars(self, fn, args: list) -> tuple[int, list]:
        """``fn(views) -> (vars, buffer positions) | None`` on the arguments' values (arrays
        as shape-only stand-ins): the vars' slot, and the buffer arguments read."""
        views = []
        for a in args:
            if a[0] == "val":
                views.append(a[1])
                continue
            v = self.read(a[1])
            m = self.meta(v)
            if m is None:
                views.append(self.objs[v[1]] if v[0] == "o" else None)
            else:
                base = np.empty(1, m[1])
                strides = [m[1].itemsize] * len(m[0])
                for d in range(len(m[0]) - 2, -1, -1):
                    strides[d] = strides[d + 1] * max(m[0][d + 1], 1)
                views.append(np.lib.stride_tricks.as_strided(base, m[0], strides))
        got = fn(views)
        if got is None:
            raise _Refused("a kernel's checks do not hold on these shapes")
        kv, positions = got
        arr = np.array(kv if kv else [0], np.int64)
        key = ("kv", tuple(arr.tolist()))
        s = self.slot_ids.get(key)
        if s is None:
            s = self.slot_ids[key] = len(self.objs)
            self.objs.append(arr)
        return ("kv", s), [args[k] for k in positions]

    def _made(self, site, shape, dtype, t: int) -> None:
        m = (tuple(shape), np.dtype(dtype))
        if self.sites.setdefault(site, m) != m:
            raise _Refused("a site makes arrays of another shape")
        self.cur[(site, t & 1)] = t

    def normal(self, t: int):
        """The state after step ``t`` relative to ``t`` (equal states repeat)."""
        def rel(v):
            if v is None or v[0] == "o":
                return v
            if v[0] == "b":
                return ("b", v[1], t - v[2])
            return ("r", v[1], self.version[v[1]] - v[2])
        return (tuple(rel(v) for v in self.state),
                frozenset((site, t - it) for site, it in self.cur.items()))


_HASHED = (int, float, bool, str, type(None), np.dtype)


def _key_of(x, held: list):
    """A hashable stand-in for loop op field ``x``: plain values as themselves, tuples and
    lists field by field, anything else by identity (kept alive in ``held``)."""
    if type(x) in _HASHED:
        return x
    if isinstance(x, tuple | list):  # (a shape value too: a tuple of its own type)
        return (type(x), *(_key_of(y, held) for y in x))
    held.append(x)
    return ("id", id(x))


def _live_in(ops: list, nreg: int) -> tuple[list[int], list[int]]:
    """The registers ``ops`` may read before writing them in a step (the head's values the
    symbolic run sees; the others it overwrites first), and those it may write (the others
    keep their head's value). Conservative: every register an op names, but those a step
    writes before any op reads them."""
    written: set[int] = set()
    live: set[int] = set()

    def reads(*rs):
        live.update(r for r in rs if type(r) is int and r not in written)

    for op in ops:
        kind = op[0]
        if kind == "fresh":
            for x in op[2::2]:
                if type(x) is tuple and len(x) == 2 and x[0] == "reg":
                    reads(x[1])
            written.add(op[1])
        elif kind == "call":
            reads(*(a[1] for a in op[3] if a[0] in ("reg", "pack", "out")))
            written.update(d for d, _, _ in op[4])
        elif kind == "move":
            reads(op[2])
            written.add(op[1])
        elif kind in ("set", "kill"):
            written.update(op[1] if kind == "kill" else (op[1],))
        elif kind == "row":
            reads(*op[2:5])
            written.add(op[1])
        elif kind == "exit":
            reads(op[1], op[2])
    return sorted(r for r in live if 0 <= r < nreg), sorted(r for r in written if 0 <= r < nreg)


def _head_key(v, watched: set):
    """What the symbolic run sees of a head register's value ``v``."""
    if type(v) is np.ndarray:
        return (v.shape, v.dtype, v.flags.c_contiguous, id(v) if id(v) in watched else 0)
    if type(v) in _HASHED or (isinstance(v, tuple) and all(type(d) is int for d in v)):
        return (type(v), v)
    return ("id", id(v))


class NativeLoop:
    """``run(regs, ops, nthreads) -> exit id``: loop ops run natively to an exit, ``regs``
    (the VM's registers at the loop head) updated to the values there; -1 and ``regs`` as at
    the head of the step where a row index was out of range (the VM reruns it); None, ``regs``
    untouched, when the symbolic checks refuse the loop (``why`` says why). A layout is kept
    per ops and look of the registers (shapes, dtypes, the values of ints and shapes, the
    identity of the weights the ops test), so a later run at the same shapes only runs. The
    layout an ops key used last is tried first through its guard (the look of the registers
    tested in one generated expression, no key built): then a run is the guard, the live
    arrays gathered, an arena allocated and one native call, which fills in the addresses."""

    __slots__ = ("why", "steps", "_layouts", "_ops", "_last", "_keep", "_hot")

    def __init__(self, keep: list | None = None):
        self.why = ""
        self.steps = 0  # the steps the last run made natively
        self._layouts: dict = {}
        self._ops: dict = {}  # ops key -> (registers read first, written, weights tested)
        self._last: dict = {}  # ops key -> the layout it ran last
        # per exit id, the registers read after leaving there (``read_after``): a register
        # written in the loop and not among them is dropped, not made an array (None: all kept)
        self._keep = keep
        # (the ops key, guard and layout of the last run: a run with an equal key tries them
        # before any hashing)
        self._hot: tuple | None = None

    def run(self, regs: list, ops, nthreads: int, ops_key=None) -> int | None:
        """``ops``: the loop ops, or a function making them (called only when no layout of
        ``ops_key`` is kept). ``ops_key``: values that determine ``ops`` for this loop, a
        cheaper key than the ops themselves (a VM's bindings, its loop-invariant shapes):
        hashable ones by value (objects without a value equality by identity, kept alive by
        the cache), others field by field (``_key_of``)."""
        self.why, self.steps = "", 0
        hot = self._hot
        if hot is not None and ops_key is not None and hot[0] == ops_key and hot[1](regs):
            return self._run(regs, hot[2], nthreads)  # (the key and look of the last run)
        raw_key = None  # (a hashable key, compared by value in the hot path)
        held: list = []
        if ops_key is None:
            ops = ops() if callable(ops) else ops
            ops_key = _key_of(ops, held)
        else:
            try:
                hash(ops_key)
                raw_key, ops_key = ops_key, ("h", ops_key)
            except TypeError:
                ops_key = _key_of(ops_key, held)
        last = self._last.get(ops_key)
        if last is not None and last.guard is not None and last.guard(regs):
            self._hot = (raw_key, last.guard, last) if raw_key is not None else None
            return self._run(regs, last, nthreads)
        if not LAYOUT_OK:
            self.why = "this interpreter's object layout is not the one the native run reads"
            return None
        info = self._ops.get(ops_key)
        if info is None:
            ops = ops() if callable(ops) else ops
            watched = {id(a[2]) for op in ops if op[0] == "call" for a in op[3]
                       if a[0] == "pack"}
            info = self._ops[ops_key] = (*_live_in(ops, len(regs)), watched)
        live, written, watched = info
        key = (ops_key, tuple([_head_key(regs[r], watched) for r in live]))
        layout = self._layouts.get(key)
        if type(layout) is tuple:  # (refused at this look before: refused again, no checks)
            self.why = layout[0]
            return None
        if layout is None:
            ops = ops() if callable(ops) else ops
            sym = _Symbolic(regs)
            try:
                if not ops or ops[-1] != ("back",):
                    raise _Refused("the ops do not end in the jump back")
                steps, normals = [], []
                for t in range(STEPS_CHECKED):
                    steps.append(sym.step(ops, t))
                    normals.append(sym.normal(t))
                if any(w != steps[0] for w in steps):
                    raise _Refused("the steps lay out differently")
                if normals[-1] != normals[-3]:
                    raise _Refused("the symbolic state does not repeat")
            except _Refused as e:
                layout = self.why = str(e)
            if len(self._layouts) >= 8:
                self._layouts.clear()
                self._ops.clear()
                self._last.clear()
                self._hot = None
                self._ops[ops_key] = info
            if type(layout) is str:
                self._layouts[key] = (layout, held)
                return None
            layout = self._layouts[key] = _layout(sym, steps[0], regs, live, written, watched,
                                                  held)
        self._last[ops_key] = layout
        self._hot = None if raw_key is None or layout.guard is None else \
            (raw_key, layout.guard, layout)
        return self._run(regs, layout, nthreads)

    def _run(self, regs: list, lay: _Layout, nthreads: int) -> int:
        """Run a laid-out step on ``regs``, this run's buffers in one fresh arena (64-byte
        boundaries; an array made only for a buffer a register holds at the end); ``regs``
        from the result. Only the registers the step reads at the head need an address (the
        native entry reads them), only those it writes a new value (the others' slots are
        their own: their head's values). The slots' and scratch words' arrays are the
        layout's, taken from its pool for the run (a run in another thread takes others)."""
        try:
            ptrs, scratch, at_ptrs, at_scratch = lay.pool.pop()
        except IndexError:
            ptrs, scratch = lay.ptrs0.copy(), np.zeros(lay.scratch_words, np.int64)
            at_ptrs, at_scratch = data_address(ptrs), data_address(scratch)
        arena = np.empty(lay.arena_bytes + ALIGN, np.uint8)
        try:
            rc = loop_runner_address()(
                lay.at_prog, lay.at_head, at_ptrs, at_scratch, lay.take(regs), arena, nthreads)
            words = scratch.tolist()
        finally:
            lay.pool.append((ptrs, scratch, at_ptrs, at_scratch))
        if rc < -1:
            raise RuntimeError("native loop: bad op word (a bug in the layout)")
        nreg, base = lay.nreg, lay.base
        self.steps = words[2 * nreg]
        final = words[nreg:2 * nreg] if rc == -1 else words
        start = words[lay.start_at]
        old = regs[:]
        extras, buffers = lay.extras, lay.buffers
        made: dict = {}
        keep = self._keep[rc] if rc >= 0 and self._keep is not None else None
        for r in lay.written:
            s = final[r]
            if s < 0 or (keep is not None and r not in keep):
                regs[r] = None
            elif s < nreg:  # (a head's value: of a register written, or of one kept)
                regs[r] = old[s]
            elif s < base:
                regs[r] = extras[s - nreg]
            else:
                a = made.get(s)
                if a is None:
                    shape, dtype, offset = buffers[s - base]
                    a = made[s] = np.ndarray(shape, dtype, arena, start + offset)
                regs[r] = a
        return rc


#: the most live registers a layout's guard tests in one generated expression (more: the key)
GUARD_MAX = 64


class _Layout:
    """A checked step laid out: its words and header (``mtvm_native_loop_go``'s), the extra
    objects, the buffers (``(shape, dtype, arena offset)``), the guard of the registers' look
    it was made for, and a pool of slot / scratch arrays for runs."""

    __slots__ = ("held", "written", "nreg", "base", "prog", "head", "at_prog", "at_head",
                 "extras", "buffers", "arena_bytes", "ptrs0", "scratch_words", "start_at",
                 "take", "guard", "pool")


def gather(regs):
    """``f(registers) -> tuple`` of the values in ``regs``, in order (``itemgetter``'s loop in C
    where it returns a tuple: two registers or more); the Relay VM's call sites use it too."""
    if len(regs) >= 2:
        return itemgetter(*regs)
    if regs:
        r = regs[0]
        return lambda values: (values[r],)
    return lambda values: ()


def _guard(regs: list, live: list[int], watched: set, held: list):
    """``f(registers) -> bool``: whether the registers ``live`` look as they do now, as
    ``_head_key`` sees them (arrays by shape, dtype, contiguity and, for ``watched`` ones,
    identity; ints, shapes and the like by value; other objects by identity), in one generated
    expression; None for more than ``GUARD_MAX`` live registers (the key is built then)."""
    if len(live) > GUARD_MAX:
        return None
    env: dict = {"ND": np.ndarray}
    conds = []
    for k, r in enumerate(live):
        v = regs[r]
        x = f"R[{r}]"
        if type(v) is np.ndarray:
            env[f"s{k}"], env[f"d{k}"] = v.shape, v.dtype
            c = f"type({x}) is ND and {x}.shape == s{k} and {x}.dtype == d{k} and " \
                f"{x}.flags.c_contiguous == {v.flags.c_contiguous}"
            if id(v) in watched:
                env[f"w{k}"] = v
                held.append(v)
                c += f" and {x} is w{k}"
        elif v is None:
            c = f"{x} is None"
        elif type(v) in _HASHED or (isinstance(v, tuple) and all(type(d) is int for d in v)):
            env[f"t{k}"], env[f"v{k}"] = type(v), v
            c = f"type({x}) is t{k} and {x} == v{k}"
        else:
            env[f"o{k}"] = v
            held.append(v)
            c = f"{x} is o{k}"
        conds.append(f"({c})")
    return eval(f"lambda R: {' and '.join(conds) or 'True'}", env)  # noqa: S307


def _layout(sym: _Symbolic, words: list, regs: list, live: list[int], written: list[int],
            watched: set, held: list) -> _Layout:
    """The layout of a checked step (``words``, one step's) for registers looking as ``regs``
    do: the slots are the registers' (``nreg``), the extra objects' (constants, weights,
    vars), then each fresh site's two buffers and each row site's one, in one arena at
    64-byte boundaries. The header tells the native entry the registers, the live arrays
    (their slots filled from a tuple of them), the table's width and the buffers' offsets."""
    nreg = len(regs)
    extras = sym.objs[nreg:]
    buffers, pairs, owns = [], {}, {}
    base = len(sym.objs)
    for site, m in sym.sites.items():
        pairs[site] = (base + len(buffers), base + len(buffers) + 1)
        buffers += [m, m]
    for u, m in sym.rows.items():
        owns[u] = base + len(buffers)
        buffers.append(m)
    flat, widest, k = [], 0, 0
    while k < len(words):
        w = words[k]
        if w == _FRESH:
            flat += [_FRESH, words[k + 1], *pairs[words[k + 2]]]
            k += 4
        elif w == _CALL:
            n = words[k + 3]
            widest = max(widest, n)
            kv = words[k + 2]
            flat += [_CALL, words[k + 1], sym.objs[kv[1]].ctypes.data if type(kv) is tuple
                     else kv, n]
            flat += [e[1] if e[0] == "reg" else -1 - e[1] for e in words[k + 4:k + 4 + n]]
            k += 4 + n
        elif w == _SET:
            v = words[k + 2]
            flat += [_SET, words[k + 1], v[1] if type(v) is tuple else v]
            k += 3
        elif w == _ROW:
            flat += [*words[k:k + 7], owns[words[k + 7][1]], *words[k + 8:k + 10]]
            k += 10
        else:
            size = {_BACK: 1, _MOVE: 3, _EXIT: 9}[w]
            flat += words[k:k + size]
            k += size
    offsets, top = [], 0
    for shape, dtype in buffers:
        offsets.append(top)
        top += -(-max(math.prod(shape) * dtype.itemsize, 1) // ALIGN) * ALIGN
    arrays = [r for r in live if type(regs[r]) is np.ndarray]  # (their slots: per run)
    wmax = max(widest, 1)
    lay = _Layout()
    lay.held, lay.written, lay.nreg, lay.base = held, written, nreg, base
    lay.prog = np.array(flat, np.int64)
    lay.head = np.array([nreg, len(arrays), wmax, len(buffers), base, *arrays, *offsets],
                        np.int64)
    lay.at_prog, lay.at_head = data_address(lay.prog), data_address(lay.head)
    lay.extras = extras
    lay.buffers = [(tuple(shape), dtype, off)
                   for (shape, dtype), off in zip(buffers, offsets, strict=True)]
    lay.arena_bytes = top
    lay.ptrs0 = np.zeros(len(sym.objs) + len(buffers), np.uint64)
    lay.ptrs0[nreg:len(sym.objs)] = [data_address(a) if type(a) is np.ndarray else 0
                                     for a in extras]
    # the registers' slots, their snapshot at a step's head, the step count, a call's table,
    # the arena's first aligned byte
    lay.start_at = 2 * nreg + 1 + wmax
    lay.scratch_words = lay.start_at + 1
    lay.take = gather(arrays)
    lay.guard = _guard(regs, live, watched, held)
    lay.pool = []
    return lay
