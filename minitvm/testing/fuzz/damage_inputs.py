"""Damaged run-time inputs for built modules: the graph executor, the Relay VM (static and with
``Any`` batch), the Relax VM (a symbolic batch shared by two parameters) and ``minitvm run``.

Every target computes ``relu(x + y) * z`` for x: (B, 3, 4) float32, y: (4,) float32, z: (B, 3, 1)
int32. A case draws, per input, a good array, a harmless variant (a strided, reversed, Fortran,
unaligned, read-only, big-endian, zero-stride view; an NDArray) or a damaged one (wrong shape,
rank, dtype; 0-size dims; non-arrays), or damages the call (too few / many / misnamed inputs).
The oracle: a call with inputs of the declared ranks and exact sizes (symbols consistent; ``Any``
dims broadcastable) must give numpy's answer on the values cast to the declared dtypes; anything
else must raise a clear error naming the input (or the function, for a wrong count).
"""

from __future__ import annotations

import multiprocessing.util
import os
import random
import shutil
import tempfile

import numpy as np

from .damage import DamageCase, Wrong

__all__ = ["cases", "TARGETS"]

# name -> (dims, dtype); an int is fixed, "n" is the symbol, None is Any (free per input)
_STATIC = [("x", (2, 3, 4), "float32"), ("y", (4,), "float32"), ("z", (2, 3, 1), "int32")]
_SYMBOLIC = [("x", ("n", 3, 4), "float32"), ("y", (4,), "float32"), ("z", ("n", 3, 1), "int32")]
_ANY = [("x", (None, 3, 4), "float32"), ("y", (4,), "float32"), ("z", (None, 3, 1), "int32")]
TARGETS = {"graph_executor": _STATIC, "relay_vm": _STATIC, "relay_vm_any": _ANY,
           "relax_vm": _SYMBOLIC, "cli_run": _STATIC}
_BUILT: dict = {}


def _reference(x, y, z):
    return (np.maximum(x + y, 0) * z.astype("float32")).astype("float32")


# ------------------------------------------------------------------ building (once per worker)
def _relay_func(params):
    from ... import relay

    vs = [relay.var(n, shape=tuple(relay.Any() if d is None else d for d in dims), dtype=dt)
          for n, dims, dt in params]
    x, y, z = vs
    body = relay.multiply(relay.nn.relu(relay.add(x, y)), relay.cast(z, "float32"))
    return relay.Function(vs, body)


def _build(target: str):
    if target in _BUILT:
        return _BUILT[target]
    import minitvm as tvm
    from minitvm import relay

    if target == "graph_executor":
        from minitvm.contrib import graph_executor

        lib = relay.build(tvm.IRModule.from_expr(_relay_func(_STATIC)), target="llvm")
        built = (lib, graph_executor)
    elif target in ("relay_vm", "relay_vm_any"):
        from minitvm.runtime import vm as rvm

        params = _STATIC if target == "relay_vm" else _ANY
        exe = relay.vm.compile(tvm.IRModule.from_expr(_relay_func(params)), target="llvm")
        built = rvm.VirtualMachine(exe, tvm.cpu())
    elif target == "relax_vm":
        built = _relax_vm()
    else:
        built = _cli_library()
    _BUILT[target] = built
    return built


def _relax_vm():
    import minitvm as tvm
    from minitvm import relax
    from minitvm.relax import BlockBuilder, Var
    from minitvm.relax import op as R
    from minitvm.relax.struct_info import TensorStructInfo
    from minitvm.tir import Var as TirVar

    n = TirVar("n", "int64")
    vs = [Var(name, TensorStructInfo([n if d == "n" else d for d in dims], dt))
          for name, dims, dt in _SYMBOLIC]
    x, y, z = vs
    bb = BlockBuilder()
    with bb.function("main", vs):
        with bb.dataflow():
            s = bb.emit(R.nn.relu(R.add(x, y)))
            gv = bb.emit_output(R.multiply(s, R.astype(z, "float32")))
        bb.emit_func_output(gv)
    return relax.VirtualMachine(relax.build(bb.get(), target="llvm"), tvm.cpu())


def _cli_library() -> str:
    """A graph-executor library written by ``minitvm compile`` from Relay (no ONNX needed)."""
    import minitvm as tvm
    from minitvm import relay

    d = tempfile.mkdtemp(prefix="damage_cli_")
    # removed when this (worker) process ends: multiprocessing runs its finalizers then,
    # where a worker never reaches atexit
    multiprocessing.util.Finalize(None, shutil.rmtree, args=(d, True), exitpriority=0)
    lib = relay.build(tvm.IRModule.from_expr(_relay_func(_STATIC)), target="llvm")
    path = os.path.join(d, "model.tar")
    lib.export_library(path)
    return path


# ------------------------------------------------------------------ values
def _shape_for(dims, n: int, rng: random.Random) -> tuple:
    return tuple(n if d == "n" else (rng.choice([n, n, 1]) if d is None else d) for d in dims)


def _good(shape, dtype, nrng):
    if dtype == "int32":
        return nrng.integers(-3, 4, size=shape).astype(dtype)
    return nrng.standard_normal(shape).astype(dtype)


def _variant(kind: str, shape, dtype, nrng):
    """A harmless (exact shape and dtype) or damaged value of ``kind``."""
    import minitvm as tvm

    g = _good(shape, dtype, nrng)
    big = tuple(2 * s for s in shape)
    if kind in ("good", "zero_stride"):
        return g
    if kind == "strided":
        base = _good(big, dtype, nrng) if shape else g
        return base[tuple(slice(None, None, 2) for _ in shape)] if shape else g
    if kind == "negative_stride":
        return g[tuple(slice(None, None, -1) for _ in shape)] if shape else g
    if kind == "fortran":
        return np.asfortranarray(g)
    if kind == "transposed_view":
        return np.ascontiguousarray(g.T).T
    if kind == "unaligned":
        raw = np.zeros(g.nbytes + 1, np.uint8)
        a = raw[1:].view(g.dtype).reshape(g.shape)
        a[...] = g
        return a
    if kind == "read_only":
        g.flags.writeable = False
        return g
    if kind == "big_endian":
        return g.astype(g.dtype.newbyteorder(">"))
    if kind == "zero_stride" and g.size:
        return np.broadcast_to(g.reshape(-1)[:1].reshape((1,) * len(shape)), shape)
    if kind == "ndarray":
        return tvm.nd.array(g)
    if kind == "list":
        return g.tolist()
    if kind == "dim_plus_one":
        s = list(shape)
        s[nrng.integers(len(s))] += 1
        return _good(tuple(s), dtype, nrng)
    if kind == "dim_zero":
        s = list(shape)
        s[nrng.integers(len(s))] = 0
        return _good(tuple(s), dtype, nrng)
    if kind == "rank_plus":
        return _good(shape + (1,), dtype, nrng)
    if kind == "rank_minus":
        return _good(shape[1:], dtype, nrng)
    if kind == "scalar":
        return _good((), dtype, nrng)
    if kind == "huge_dim":
        return np.zeros((1 << 20,) + shape[1:], dtype)[:0] if shape else g
    if kind.startswith("dtype_"):
        dt = kind[6:]
        if dt == "str":
            return g.astype(str)
        if dt == "object":
            return g.astype(object)
        return g.astype(dt)
    if kind == "ndarray_float16":
        return tvm.nd.array(g.astype("float16"))
    return {"none": None, "string": "abc", "bytes": b"\x00\x01", "dict": {"a": 1},
            "float": 1.5, "int": 3, "tuple": (1, 2), "object": object()}[kind]


_HARMLESS = ["good", "strided", "negative_stride", "fortran", "transposed_view", "unaligned",
             "read_only", "big_endian", "zero_stride", "ndarray"]
_DAMAGED = ["dim_plus_one", "dim_zero", "rank_plus", "rank_minus", "scalar", "huge_dim",
            "dtype_float64", "dtype_float16", "dtype_int64", "dtype_int32", "dtype_float32",
            "dtype_bool", "dtype_complex64", "dtype_uint8", "dtype_str", "dtype_object", "list",
            "ndarray_float16", "none", "string", "bytes", "dict", "float", "int", "tuple",
            "object"]


def _admissible(params, values) -> list | None:
    """The values cast to the declared dtypes when the call is valid, else None. A value of
    another dtype that casts within its kind (float64 -> float32, a list of ints) may be taken
    or refused; one that does not (float -> int, complex -> float, str) must be refused."""
    out, syms, shapes = [], {}, []
    for (_, dims, dt), v in zip(params, values, strict=True):
        if v is None or isinstance(v, str | bytes | dict | float | int | tuple) or not (
                isinstance(v, np.ndarray | list) or hasattr(v, "numpy")):
            return None
        a = v.numpy() if hasattr(v, "numpy") else np.asarray(v)
        if a.dtype != np.dtype(dt) and not (a.dtype.kind in "biuf" and np.can_cast(
                a.dtype, dt, "same_kind")):
            return None
        if a.ndim != len(dims):
            return None
        for d, s in zip(dims, a.shape, strict=True):
            if isinstance(d, int) and d != s:
                return None
            if d == "n" and syms.setdefault("n", s) != s:
                return None
        shapes.append(a.shape)
        out.append(np.asarray(a, dtype=dt))
    try:
        np.broadcast_shapes(*[s for s in shapes if len(s) == 3])
    except ValueError:
        return None
    return out


def _exact(params, values) -> bool:
    """Whether every value already has its declared dtype (then a refusal is a finding)."""
    for (_, _, dt), v in zip(params, values, strict=True):
        a = v.numpy() if hasattr(v, "numpy") else v
        if not isinstance(a, np.ndarray) or a.dtype != np.dtype(dt):
            return False
    return True


def _check(got, want) -> None:
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-6):
        raise Wrong(f"accepted: output {got.shape} differs from numpy's {want.shape} "
                    f"(max diff {np.max(np.abs(got - want)) if got.shape == want.shape else '-'})")


# ------------------------------------------------------------------ calling each target
def _call(target: str, mode: str, names: list, values: list):
    """Feed ``values`` (for ``names``) to ``target`` by ``mode``; the output."""
    import minitvm as tvm

    if target == "graph_executor":
        lib, graph_executor = _build(target)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        if mode == "kwargs":
            m.run(**dict(zip(names, values, strict=True)))
        elif mode == "index":
            for k, (name, v) in enumerate(zip(names, values, strict=True)):
                m.set_input(["x", "y", "z"].index(name) if name in "xyz" else k + 7, v)
            m.run()
        else:
            for name, v in zip(names, values, strict=True):
                m.set_input(name, v)
            m.run()
        return m.get_output(0)
    if target in ("relay_vm", "relay_vm_any", "relax_vm"):
        vm = _build(target)
        if target == "relax_vm":
            if mode == "kwargs":
                vm.set_input("main", **dict(zip(names, values, strict=True)))
                vm.invoke_stateful("main")
                return vm.get_outputs("main")
            return vm["main"](*values)
        if mode == "kwargs":
            return vm.invoke("main", **dict(zip(names, values, strict=True)))
        return vm.run(*values) if mode == "run" else vm.invoke("main", *values)
    return _cli_run(names, values)


def _cli_run(names, values):
    with tempfile.TemporaryDirectory(prefix="damage_in_") as d:
        return _cli_run_in(d, names, values)


def _cli_run_in(d: str, names, values):
    from .damage import run_cli

    path = _build("cli_run")
    argv = ["run", path, "-o", os.path.join(d, "out.npz")]
    for k, (name, v) in enumerate(zip(names, values, strict=True)):
        f = os.path.join(d, f"in{k}.npy")
        if isinstance(v, bytes | str):
            with open(f, "wb") as fh:
                fh.write(v if isinstance(v, bytes) else v.encode())
        else:
            a = v.numpy() if hasattr(v, "numpy") else v
            np.save(f, np.asarray(a) if not isinstance(a, dict) else np.array(a, dtype=object),
                    allow_pickle=True)
        argv += ["--input", f"{name}={f}"]
    code, err = run_cli(argv)
    if code != 0:
        raise ValueError(f"minitvm run exited {code}: {err.strip()[-600:]}")
    return np.load(os.path.join(d, "out.npz"))["arr_0"]


def _make_case(target: str, rng: random.Random, index: int) -> DamageCase:
    params = TARGETS[target]
    nrng = np.random.default_rng(rng.randrange(1 << 30))
    n = rng.choice([1, 2, 5]) if target in ("relax_vm", "relay_vm_any") else 2
    names = [p[0] for p in params]
    values, bad, kinds, culprits = [], [], [], []
    roll = rng.random()
    modes = {"graph_executor": ["set", "kwargs", "index"], "relay_vm": ["invoke", "run",
             "kwargs"], "relay_vm_any": ["invoke", "kwargs"], "relax_vm": ["call", "kwargs"],
             "cli_run": ["cli"]}[target]
    mode = rng.choice(modes)
    for name, dims, dt in params:
        shape = _shape_for(dims, n, rng)
        if target in ("relay_vm_any", "relax_vm") and name == "z" and rng.random() < 0.25:
            # a batch that may not broadcast (Any) or contradicts x's n (Relax)
            shape = (rng.choice([1, 3, 0]),) + shape[1:]
            culprits += ["x", "z"]
        kind = "good"
        if roll < 0.85 and rng.random() < 0.5:
            kind = rng.choice(_HARMLESS if rng.random() < 0.4 else _DAMAGED)
        if target == "cli_run" and kind in ("ndarray_float16", "object", "dict", "tuple"):
            kind = "dtype_float64"
        values.append(_variant(kind, shape, dt, nrng))
        if kind != "good":
            bad.append(name)
            kinds.append(f"{name}:{kind}")
    label = "values"
    if 0.85 <= roll < 0.9 and target != "cli_run":  # (minitvm run: a missing one is random)
        k = rng.randrange(3)
        del names[k], values[k]
        label = "too_few"
    elif 0.9 <= roll < 0.95:
        names.append("w")
        values.append(_good((2,), "float32", nrng))
        label = "too_many"
    elif roll >= 0.95:
        k = rng.randrange(3)
        bad.append(names[k])
        names[k] = names[k] + "_typo"
        bad.append(names[k])
        label = "misnamed"
    name = f"{target}#{index} {mode} {label} {' '.join(kinds) or 'good'}"
    positional = mode in ("invoke", "run", "call")
    where = bad + culprits
    expect = tuple(f"'{b}'" for b in where) + tuple(f"param={b}" for b in where) + \
        tuple(f"{b}:" for b in where) + tuple(f" {b} " for b in where) + tuple(
        f"--input {b}" for b in where)
    if label in ("too_few", "too_many"):
        expect = ("main", "input", "argument")
    elif positional and bad:
        # positional values are known by position: the parameter's name or its index
        expect += tuple(f"argument {names.index(b)}" for b in bad if b in names)
    if target == "relax_vm":  # (a size contradicting an earlier parameter's: names this one)
        expect += ("bound earlier",) if bad or culprits else ()
    if target == "relay_vm_any":
        expect += ("in `multiply(",)  # (the Any batches meet first at the multiply)

    def run():
        want_vals = None
        if label == "values" or (label == "misnamed" and not positional):
            want_vals = _admissible(params, values) if label == "values" else None
        try:
            got = _call(target, mode, names, values)
        except Exception:
            if want_vals is not None and _exact(params, values):
                raise Wrong("a valid call was refused") from None
            raise
        if label == "misnamed" and positional:
            want_vals = _admissible(params, values)
        if want_vals is None:
            raise Wrong(f"accepted: {label} inputs {[type(v).__name__ for v in values]}")
        _check(got, _reference(*want_vals))

    return DamageCase(f"inputs/{target}/{label}", name, run, expect)


def cases(seed: int, n: int) -> list[DamageCase]:
    """``n`` damaged calls spread over the targets (deterministic in ``seed``)."""
    rng = random.Random(seed)
    targets = [t for t in TARGETS if t != "cli_run"]
    # (one case in 25 runs `minitvm run` in its own process: a second each, or more)
    return [_make_case("cli_run" if i % 25 == 24 else targets[i % len(targets)], rng, i)
            for i in range(n)]
