"""A dynamic-shape kernel bound to one call site's input shapes (``BoundCall``).

A Relay VM ``InvokePacked`` of a kernel with ``Any`` dimensions (``SymbolicKernel`` or
``ShapeSpecializer``) looks up, at every call, the specialization or the size variables of its
inputs' shapes, the packed copies of its weights and the output shapes. In a loop (an RNN over a
run-time length) the same call site sees the same shapes and the same weights at every step, so
the VM keeps the result of that lookup per call site: ``kernel.bind(inputs)`` returns a
``BoundCall`` that reruns exactly the same native call (same kernel, same size variables, same
packed weights, fresh outputs) while the inputs keep their shapes, dtypes and identities of the
packed weights, and returns None otherwise (the VM then binds again). Call sites of one kernel
that bind equal inputs share one binding (``BindingCache``); a site in a loop gets a copy of its
own before it keeps outputs.

A symbolic kernel (size variables, no tuple-reading entry of its own) is called through the
tuple trampoline (``relax_vm.kernel.call_trampoline``: the data pointers read in native code),
not through a ctypes pointer array built from ``ndarray.ctypes.data`` per array. In a loop
(``keep_outputs``: a call site of a function that jumps back) each output keeps its last two
arrays and writes one again once nothing else refers to it (the step before's, dead by then),
instead of a fresh array a step.
"""

from __future__ import annotations

import ctypes
import functools
import math
import sys

import numpy as np

from ....runtime import threadpool
from ....runtime.checked_call import checked_call_routine, checked_call_table
from ....runtime.py_layout import LAYOUT_OK
from ....runtime.relax_vm.kernel import GIL_RELEASE_ELEMS, call_trampoline

__all__ = ["BoundCall", "BindingCache"]

_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)


class BoundCall:
    """``call(inputs) -> outputs | None``: the native call of one kernel at the input shapes it
    was bound to; None when ``inputs`` differ from them (shape, dtype, layout, or a packed
    weight's identity)."""

    __slots__ = ("shapes", "dtypes", "packs", "consts", "outs", "fast", "entry", "kvars",
                 "address", "tramp", "kept", "matches", "run", "into")

    def __init__(self, inputs: list, packs: list, consts: tuple, outs: list, fast=None,
                 address: int | None = None, kvars=None):
        self.shapes = tuple(a.shape for a in inputs)
        self.dtypes = tuple(a.dtype for a in inputs)
        # (position, the argument, its packed copy the kernel reads instead)
        self.packs = tuple(packs)
        self.consts = tuple(consts)
        self.outs = tuple(outs)  # (shape, dtype) of each output, allocated per call
        self.fast = fast  # the kernel's tuple-reading entry, when it has one
        self.entry = _ENTRY(address) if fast is None else None
        self.kvars = kvars  # the kernel's int64 size arguments (a symbolic kernel's)
        self.address = address
        # (the GIL released around a large call, as the ctypes entry did)
        big = sum(a.size for a in inputs) + sum(math.prod(s) for s, _ in outs) > \
            GIL_RELEASE_ELEMS
        self.tramp = call_trampoline()[big] if fast is None and LAYOUT_OK else None
        self.kept: list | None = None  # per output, its last two arrays (keep_outputs)
        self.matches = _matcher(self.shapes, self.dtypes, self.packs)
        # ``into(inputs, outputs)`` where the native checks are available (else None)
        self.into = None
        # ``run(inputs)``: the call in one generated frame (``__call__`` where there is none)
        self.run = _generated_call(self)

    def copy(self) -> BoundCall:
        """A binding of its own with the same call (the generated code shared), for a call site
        that will keep its outputs (``keep_outputs``) while others share this one."""
        other = object.__new__(BoundCall)
        for name in BoundCall.__slots__:
            setattr(other, name, getattr(self, name))
        return other

    def keep_outputs(self) -> None:
        """Reuse outputs across calls once they are dead (a call site in a loop)."""
        self.kept = [[None, None] for _ in self.outs]
        self.run = _generated_call(self)

    def _outputs(self) -> list:
        kept = self.kept
        if kept is None:
            return [np.empty(s, dtype=d) for s, d in self.outs]
        outs = []
        for pair, (s, d) in zip(kept, self.outs):
            # an array nothing else refers to: the pair's reference and getrefcount's argument
            if pair[1] is not None and sys.getrefcount(pair[1]) == 2:
                a = pair[1]
            else:
                a = np.empty(s, dtype=d)
            pair[1] = pair[0]
            pair[0] = a
            outs.append(a)
        return outs

    def __call__(self, inputs: list) -> list | None:
        if len(inputs) != len(self.shapes) or not self.matches(*inputs):
            return None
        arrays = list(inputs)
        for pos, _, packed in self.packs:
            arrays[pos] = packed
        outs = self._outputs()
        nthreads = threadpool.get_num_threads()
        if self.fast is not None:
            self.fast((*arrays, *self.consts, *outs), nthreads)
        elif self.tramp is not None:
            every = (*arrays, *self.consts, *outs)
            self.tramp(every, len(every), self.address, self.kvars, nthreads)
        else:
            arrays += self.consts
            arrays += outs
            ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
            self.entry(ptrs, self.kvars, nthreads)
        return outs


class BindingCache:
    """Per kernel: the binding last made for each input signature, handed to the next call site
    that binds the same shapes, dtypes, packed weights and size values. A binding that keeps no
    outputs holds no state of its call site, so sites may share it; a 100,000-site chain of one
    kernel generated and compiled 100,000 equal bindings (two thirds of its VM run)."""

    __slots__ = ("_last",)

    LIMIT = 64  # signatures held per kernel (a dynamic model sees a few shapes per kernel)

    def __init__(self):
        self._last: dict = {}

    def bind(self, inputs: list, packs: list, consts: tuple, outs: list, fast=None,
             address: int | None = None, kvars=None) -> BoundCall:
        """``BoundCall(inputs, packs, ...)``, or the equal one made before (see the class)."""
        key = (tuple(a.shape for a in inputs), tuple(a.dtype for a in inputs), address)
        bc = self._last.get(key)
        if bc is not None and bc.kept is None and bc.fast is fast and bc.kvars is kvars and \
                _same(bc.packs, packs) and _same(bc.consts, consts) and bc.outs == tuple(outs):
            return bc
        bc = BoundCall(inputs, packs, consts, outs, fast, address, kvars)
        if len(self._last) >= self.LIMIT:
            self._last.clear()
        self._last[key] = bc
        return bc


def _same(held: tuple, given) -> bool:
    """Whether two sequences hold the same objects, element for element (packs' tuples of a
    position, a weight and its packed copy compared field by field): weights by identity."""
    return len(held) == len(given) and all(
        a is b or (type(a) is tuple and type(b) is tuple and len(a) == len(b) and
                   all(x is y or (type(x) is int and x == y) for x, y in zip(a, b)))
        for a, b in zip(held, given))


def _matcher(shapes: tuple, dtypes: tuple, packs: tuple):
    """A function of the inputs: whether they are contiguous arrays of these shapes and dtypes,
    the packed weights' sources the same arrays (one generated function, no loop; its code
    compiled once per text, ``_code``)."""
    env: dict = {"ND": np.ndarray}
    conds = []
    for k, (shape, dtype) in enumerate(zip(shapes, dtypes)):
        env[f"s{k}"], env[f"d{k}"] = shape, dtype
        conds.append(f"type(a{k}) is ND and a{k}.shape == s{k} and a{k}.dtype == d{k} and "
                     f"a{k}.flags.c_contiguous")
    for pos, src, _ in packs:
        env[f"p{pos}"] = src
        conds.append(f"a{pos} is p{pos}")
    names = ", ".join(f"a{k}" for k in range(len(shapes)))
    source = f"def matches({names}):\n    return {' and '.join(conds) or 'True'}"
    exec(_code(source, "<relay vm bound call matcher>"), env)  # noqa: S102
    return env["matches"]


def _generated_call(bc: BoundCall):
    """``bc.__call__`` as one generated function of the inputs (the checks of ``_matcher``, the
    packed weights, ``_outputs``' reuse of dead outputs, the native call, inlined: a loop makes
    this call every step); ``bc.__call__`` itself for the ctypes pointer-array entry."""
    if bc.fast is None and bc.tramp is None:
        return bc.__call__
    env: dict = {"ND": np.ndarray, "empty": np.empty, "refs": sys.getrefcount, "pool": threadpool,
                 "fast": bc.fast, "tramp": bc.tramp, "addr": bc.address, "kvars": bc.kvars}
    conds = []
    for k, (shape, dtype) in enumerate(zip(bc.shapes, bc.dtypes, strict=True)):
        env[f"s{k}"], env[f"d{k}"] = shape, dtype
        conds.append(f"type(a{k}) is ND and a{k}.shape == s{k} and a{k}.dtype == d{k} and "
                     f"a{k}.flags.c_contiguous")
    for pos, src, packed in bc.packs:
        env[f"p{pos}"], env[f"q{pos}"] = src, packed
        conds.append(f"a{pos} is p{pos}")
    n = len(bc.shapes)
    lines = ["def run(inputs):", f"    if len(inputs) != {n}:", "        return None"]
    if n:
        lines.append(f"    {', '.join(f'a{k}' for k in range(n))}, = inputs")
    if conds:
        lines += [f"    if not ({' and '.join(conds)}):", "        return None"]
    for pos, _, _ in bc.packs:
        lines.append(f"    a{pos} = q{pos}")
    for j, (shape, dtype) in enumerate(bc.outs):
        env[f"os{j}"], env[f"od{j}"] = shape, dtype
        if bc.kept is None:
            lines.append(f"    o{j} = empty(os{j}, dtype=od{j})")
            continue
        env[f"k{j}"] = bc.kept[j]
        # free: referenced by the pair, ``o<j>`` and getrefcount's argument only
        lines += [f"    o{j} = k{j}[1]",
                  f"    if o{j} is None or refs(o{j}) != 3:",
                  f"        o{j} = empty(os{j}, dtype=od{j})",
                  f"    k{j}[1] = k{j}[0]",
                  f"    k{j}[0] = o{j}"]
    for c, value in enumerate(bc.consts):
        env[f"c{c}"] = value
    every = [f"a{k}" for k in range(n)] + [f"c{c}" for c in range(len(bc.consts))] + \
        [f"o{j}" for j in range(len(bc.outs))]
    tup = f"({', '.join(every)}{',' if len(every) == 1 else ''})"
    if bc.fast is not None:
        lines.append(f"    fast({tup}, pool.get_num_threads())")
    else:
        lines.append(f"    tramp({tup}, {len(every)}, addr, kvars, pool.get_num_threads())")
    lines.append(f"    return [{', '.join(f'o{j}' for j in range(len(bc.outs)))}]")
    exec(_code("\n".join(lines), "<relay vm bound call>"), env)  # noqa: S102
    slow = env["run"]
    native = _native_checked_call(bc, slow)
    return slow if native is None else native


@functools.lru_cache(maxsize=1024)
def _code(source: str, filename: str):
    """The compiled code object of a generated call's ``source``: the text names its values
    (inputs, weights, tables) through the ``env`` it is run in, so call sites of one kernel
    and shape share it; each site only runs it in its own ``env``. Compiling the text anew
    for every site was two thirds of a 100,000-call program's VM setup."""
    return compile(source + "\n", filename, "exec")


def _native_checked_call(bc: BoundCall, slow):
    """The bound call with its checks in native code (``runtime.checked_call``): the shapes,
    dtypes and contiguity of the inputs (and of the weights and outputs it adds) checked and
    the kernel run in one ctypes call, on the bound size values; the weights' identities and
    the outputs' reuse stay here. A call the routine refuses goes to ``slow`` (the same call
    with its checks in Python: None when the inputs do not match). None when the routine is
    not available or an input is not an array."""
    routine = checked_call_routine()
    if routine is None or not bc.address or (bc.fast is None and bc.tramp is None):
        return None
    consts = [c for c in bc.consts if type(c) is np.ndarray]
    if len(consts) != len(bc.consts):
        return None
    params = [(d, list(s)) for s, d in zip(bc.shapes, bc.dtypes, strict=True)]
    for pos, _, packed in bc.packs:  # (the kernel reads the packed copy there)
        if type(packed) is not np.ndarray:
            return None
        params[pos] = (packed.dtype, list(packed.shape))
    params += [(c.dtype, list(c.shape)) for c in consts]
    params += [(d, list(s)) for s, d in bc.outs]
    # the GIL released or not as the trampoline or the tuple entry was chosen (by sizes)
    big = bc.tramp is call_trampoline()[1] if bc.fast is None else \
        not type(bc.fast)._flags_ & ctypes._FUNCFLAG_PYTHONAPI
    fixed = ctypes.addressof(bc.kvars) if bc.kvars is not None else 0
    table = checked_call_table(bc.address, params, [], [], -1 if big else 1 << 62, fixed)
    if table is None:
        return None
    env: dict = {"refs": sys.getrefcount, "pool": threadpool, "chk": routine, "empty": np.empty,
                 "tab": ctypes.addressof(table), "table": table, "kvars": bc.kvars,
                 "slow": slow}
    n = len(bc.shapes)
    lines = ["def run(inputs):", f"    if len(inputs) != {n}:", "        return None"]
    if n:
        lines.append(f"    {', '.join(f'a{k}' for k in range(n))}, = inputs")
    if bc.packs:
        conds = []
        for pos, src, packed in bc.packs:
            env[f"p{pos}"], env[f"q{pos}"] = src, packed
            conds.append(f"a{pos} is p{pos}")
        lines += [f"    if not ({' and '.join(conds)}):", "        return None"]
        lines += [f"    a{pos} = q{pos}" for pos, _, _ in bc.packs]
    for j, (shape, dtype) in enumerate(bc.outs):
        env[f"os{j}"], env[f"od{j}"] = shape, dtype
        if bc.kept is None:
            lines.append(f"    o{j} = empty(os{j}, dtype=od{j})")
        else:
            env[f"k{j}"] = bc.kept[j]
            lines += [f"    o{j} = k{j}[1]",
                      f"    if o{j} is None or refs(o{j}) != 3:",
                      f"        o{j} = empty(os{j}, dtype=od{j})"]
    for c, value in enumerate(consts):
        env[f"c{c}"] = value
    every = [f"a{k}" for k in range(n)] + [f"c{c}" for c in range(len(consts))] + \
        [f"o{j}" for j in range(len(bc.outs))]
    lines += [f"    if chk(({', '.join(every)},), tab, pool.get_num_threads()):",
              "        return slow(inputs)"]
    if bc.kept is not None:  # (the output made the newest of its pair once the call ran)
        for j in range(len(bc.outs)):
            lines += [f"    k{j}[1] = k{j}[0]", f"    k{j}[0] = o{j}"]
    lines.append(f"    return [{', '.join(f'o{j}' for j in range(len(bc.outs)))}]")
    exec(_code("\n".join(lines), "<relay vm bound call (native checks)>"), env)  # noqa: S102
    bc.into = _native_call_into(bc, env, n, consts)
    return env["run"]


def _native_call_into(bc: BoundCall, env: dict, n: int, consts: list):
    """``into(inputs, outputs) -> outputs | None``: the bound call writing the given outputs,
    every argument's shape, dtype and contiguity checked by the native routine (None, the
    kernel not run, when one does not match); ``env``: ``_native_checked_call``'s names."""
    lines = ["def into(inputs, outs):", f"    if len(inputs) != {n} or len(outs) != "
             f"{len(bc.outs)}:", "        return None"]
    if n:
        lines.append(f"    {', '.join(f'a{k}' for k in range(n))}, = inputs")
    if bc.packs:
        conds = [f"a{pos} is p{pos}" for pos, _, _ in bc.packs]
        lines += [f"    if not ({' and '.join(conds)}):", "        return None"]
        lines += [f"    a{pos} = q{pos}" for pos, _, _ in bc.packs]
    outs = [f"o{j}" for j in range(len(bc.outs))]
    if outs:
        lines.append(f"    {', '.join(outs)}, = outs")
    every = [f"a{k}" for k in range(n)] + [f"c{c}" for c in range(len(consts))] + outs
    lines += [f"    if chk(({', '.join(every)},), tab, pool.get_num_threads()):",
              "        return None", "    return outs"]
    exec(_code("\n".join(lines), "<relay vm bound call into>"), env)  # noqa: S102
    return env["into"]
