"""Calling a native kernel from the Relax VM with nothing but its *spec* (a JSON-able record of
its parameters), so that an exported executable runs without the compiler.

A spec: ``{"params": [["buf", dtype, ndim, dims] | ["scalar", dtype]], "vars": [["scalar", k]
| ["dim", k, d]]}`` — ``dims`` holds each dimension's constant or -1 when symbolic; ``vars`` says
where each scalar argument of the machine entry comes from (a scalar parameter, or dimension
``d`` of buffer parameter ``k``). The entry takes ``(void** buffers, int64* vars, int32
threads)``; static kernels also have a ``_py`` entry that reads the argument tuple directly.
"""

from __future__ import annotations

import ctypes
import struct
import threading

import numpy as np

from .. import threadpool
from ..checked_call import checked_call_routine, checked_call_table
from ..py_layout import ARRAY_DATA_OFFSET, LAYOUT_OK, TUPLE_ITEMS_OFFSET

_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
_PY_ENTRY = ctypes.PYFUNCTYPE(None, ctypes.py_object, ctypes.c_int32)
_PY_ENTRY_NOGIL = ctypes.CFUNCTYPE(None, ctypes.py_object, ctypes.c_int32)
_ND = np.ndarray
GIL_RELEASE_ELEMS = 1 << 16  # kernels touching more elements than this release the GIL

# Calls a kernel entry on the data pointers of the numpy arrays in a tuple: the interpreter's
# way into a kernel with symbolic dimensions, without a ctypes array of pointers per call.
_CALL_IR = f"""
define void @mtvm_relax_call_kernel(ptr %tup, i64 %n, ptr %fn, ptr %vars, i32 %nth) {{
entry:
  %ptrs = alloca ptr, i64 %n
  %any = icmp sgt i64 %n, 0
  br i1 %any, label %loop, label %call
loop:
  %i = phi i64 [ 0, %entry ], [ %inext, %loop ]
  %ib = mul i64 %i, 8
  %ioff = add i64 %ib, {TUPLE_ITEMS_OFFSET}
  %itemp = getelementptr i8, ptr %tup, i64 %ioff
  %item = load ptr, ptr %itemp
  %datap = getelementptr i8, ptr %item, i64 {ARRAY_DATA_OFFSET}
  %data = load ptr, ptr %datap
  %slot = getelementptr ptr, ptr %ptrs, i64 %i
  store ptr %data, ptr %slot
  %inext = add i64 %i, 1
  %more = icmp slt i64 %inext, %n
  br i1 %more, label %loop, label %call
call:
  call void %fn(ptr %ptrs, ptr %vars, i32 %nth)
  ret void
}}
"""
_CALL_ARGS = (ctypes.py_object, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
_CALL = None
_CALL_LOCK = threading.Lock()




def call_trampoline() -> tuple[object, object]:
    """(GIL-holding, GIL-releasing) ctypes functions of ``mtvm_relax_call_kernel``:
    JIT-compiled once per process."""
    global _CALL
    with _CALL_LOCK:
        if _CALL is None:
            from .. import jit

            compiled = jit.compile_ir(_CALL_IR, "mtvm_relax_call_kernel", opt=2)
            _CALL = (compiled, ctypes.PYFUNCTYPE(None, *_CALL_ARGS)(compiled.address),
                     ctypes.CFUNCTYPE(None, *_CALL_ARGS)(compiled.address))
        return _CALL[1], _CALL[2]


def kernel_spec(signature) -> dict:
    """The spec of a compiled kernel from its ``KernelSignature`` (compiler side helper; reads
    only plain attributes)."""
    bufs = dict(signature.buffers)
    params, where = [], {}
    for k, p in enumerate(signature.params):
        if p in bufs:
            b = bufs[p]
            dims = [int(d.value) if hasattr(d, "value") and not hasattr(d, "name") else -1
                    for d in b.shape]
            params.append(["buf", b.dtype, len(b.shape), dims])
            for d, dim in enumerate(b.shape):
                if hasattr(dim, "name") and id(dim) not in where:
                    where[id(dim)] = ["dim", k, d]
        else:
            params.append(["scalar", p.dtype])
            where[id(p)] = ["scalar", k]
    vars_ = []
    for v in signature.vars:
        if id(v) not in where:
            raise ValueError(f"kernel {signature.name!r}: symbolic variable {v.name!r} is not a "
                             "dimension of any buffer parameter (it cannot be passed)")
        vars_.append(where[id(v)])
    written = [k for k, p in enumerate(signature.params)
               if p in bufs and id(bufs[p]) in signature.written]
    # every other symbolic dimension is checked against the values bound above (``B`` of
    # shape ``(n, 4)`` when ``A`` bound ``n``; ``(n * 2 + m,)``), as TVM's packed-API entry does
    checks = []
    for k, p in enumerate(signature.params):
        for d, dim in enumerate(bufs[p].shape if p in bufs else ()):
            if hasattr(dim, "name"):
                if where.get(id(dim)) == ["dim", k, d]:
                    continue
            elif type(dim).__name__ == "IntImm":
                continue
            enc = _encode_dim(dim, where)
            if enc is not None:
                checks.append([k, d, enc, str(dim)])
    return {"params": params, "vars": vars_, "written": written, "checks": checks}


_DIM_OPS = {"Add": "+", "Sub": "-", "Mul": "*", "FloorDiv": "//", "FloorMod": "%",
            "Div": "//", "Mod": "%", "Min": "min", "Max": "max"}


def _encode_dim(e, where: dict):
    """A dimension expression as JSON-able nested lists over the places its variables are
    bound (``["at", "dim", k, d]``); None when it uses anything else (not checked)."""
    if hasattr(e, "name"):
        at = where.get(id(e))
        return None if at is None else ["at", *at]
    kind = type(e).__name__
    if kind == "IntImm":
        return int(e.value)
    if kind == "Cast":
        return _encode_dim(e.value, where)
    op = _DIM_OPS.get(kind)
    if op is None:
        return None
    a, b = _encode_dim(e.a, where), _encode_dim(e.b, where)
    return None if a is None or b is None else [op, a, b]


def _dim_source(e) -> str:
    """Python source computing an encoded dimension from the arguments ``a0, a1...`` (a zero
    divisor gives -1, never a valid dimension, as in ``_eval_dim``)."""
    if isinstance(e, int):
        return str(e)
    if e[0] == "at":
        return f"a{e[2]}.shape[{e[3]}]" if e[1] == "dim" else f"int(a{e[2]})"
    a, b = _dim_source(e[1]), _dim_source(e[2])
    if e[0] in ("//", "%"):
        return f"{'fd' if e[0] == '//' else 'fm'}({a}, {b})"
    if e[0] in ("min", "max"):
        return f"{e[0]}({a}, {b})"
    return f"({a} {e[0]} {b})"


def _eval_dim(e, args) -> int:
    """Value of an encoded dimension for the call's arguments (sizes are not negative, so
    truncating and flooring division agree)."""
    if isinstance(e, int):
        return e
    if e[0] == "at":
        a = args[e[2]]
        return int(getattr(a, "_data", a).shape[e[3]]) if e[1] == "dim" else int(a)
    a, b = _eval_dim(e[1], args), _eval_dim(e[2], args)
    op = e[0]
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op in ("//", "%"):
        if b == 0:
            return -1  # never a valid dimension: reported as a mismatch
        return a // b if op == "//" else a % b
    return min(a, b) if op == "min" else max(a, b)


_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_UINT_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
_CMP = ("<", "<=", ">", ">=", "==", "!=")


def _wrap(bits: int):
    """Python ints wrapped as a ``bits``-bit two's complement integer (the machine's add)."""
    lo, hi, mask, half = -(1 << (bits - 1)), (1 << (bits - 1)) - 1, (1 << bits) - 1, \
        1 << (bits - 1)
    return lambda x: x if lo <= x <= hi else ((x + half) & mask) - half


def _scalar_source(e, params: list, env: dict) -> str | None:
    """Python source of a scalar kernel's expression node (``relax.vm.scalar_kernel``) over
    the arguments ``a<k>``; None for anything it does not know (the spec is data: only these
    forms become code)."""
    if not isinstance(e, list) or len(e) < 3 or not isinstance(e[1], str):
        return None
    op, dtype, rest = e[0], e[1], e[2:]
    if dtype != "bool" and dtype not in _INT_BITS and dtype not in _UINT_BITS:
        return None
    if op == "const" and len(rest) == 1 and type(rest[0]) is int:
        return repr(bool(rest[0])) if dtype == "bool" else repr(rest[0])
    if op == "load" and len(rest) == 1 and type(rest[0]) is int and \
            0 <= rest[0] < len(params) and params[rest[0]][1] == dtype:
        return f"a{rest[0]}.item()"
    subs = [_scalar_source(a, params, env) for a in rest]
    if any(s is None for s in subs):
        return None
    if op == "not" and len(subs) == 1:
        return f"(not {subs[0]})"
    if op == "cast" and len(subs) == 1:
        if dtype == "bool":
            return f"({subs[0]} != 0)"
        return _wrapped(f"int({subs[0]})", dtype, env)
    if len(subs) != 2:
        return None
    a, b = subs
    if op in _CMP or op in ("and", "or"):
        return f"({a} {op} {b})" if op in _CMP or dtype == "bool" else None
    if op in ("min", "max"):
        return f"{op}({a}, {b})"
    if op in ("+", "-", "*") and dtype != "bool":
        return _wrapped(f"({a} {op} {b})", dtype, env)
    return None


def _wrapped(src: str, dtype: str, env: dict) -> str:
    if dtype in _UINT_BITS:
        return f"({src} & {(1 << _UINT_BITS[dtype]) - 1})"
    env[f"w{_INT_BITS[dtype]}"] = _wrap(_INT_BITS[dtype])
    return f"w{_INT_BITS[dtype]}({src})"


def _scalar_call(name: str, spec: dict, native):
    """The kernel as Python when its spec has a scalar expression (``spec["scalar"]``): checks
    every argument as the native fast path does (and that the output is writable), computes
    with Python ints and stores the result; anything else goes to ``native``. None when there
    is no expression, or no fast native path to fall back to."""
    scalar, params = spec.get("scalar"), spec["params"]
    if not isinstance(scalar, dict) or native is None or \
            any(p[0] != "buf" or p[2] != 0 for p in params):
        return None
    out, env = scalar.get("out"), {"ND": _ND, "native": native}
    expr = _scalar_source(scalar.get("expr"), params, env)
    if expr is None or type(out) is not int or not 0 <= out < len(params) or \
            scalar["expr"][1] != params[out][1]:
        return None
    conds = []
    for k, p in enumerate(params):
        env[f"d{k}"] = np.dtype(p[1])
        conds.append(f"type(a{k}) is ND and a{k}.dtype is d{k} and a{k}.ndim == 0")
    conds.append(f"a{out}.flags.writeable")
    names = ", ".join(f"a{k}" for k in range(len(params)))
    src = (f"def call(*args):\n    if len(args) == {len(params)}:\n"
           f"        {names}, = args\n"
           f"        if {' and '.join(conds)}:\n"
           f"            a{out}[()] = {expr}\n            return None\n"
           f"    return native(*args)\n")
    exec(compile(src, f"<relax scalar kernel {name}>", "exec"), env)  # noqa: S102
    return env["call"]


class NativeKernel:
    """A callable kernel: ``k(*arrays_and_scalars)``; checks kinds, dtypes, ranks and constant
    dimensions, then calls the machine code."""

    __slots__ = ("name", "spec", "compiled", "direct", "_entry", "_py", "_fast", "_nbuf",
                 "_bufpos", "_dtypes", "_vars", "_float_vars", "_nparams", "_checks", "_sym",
                 "_table")

    def __init__(self, name: str, spec: dict, compiled):
        self.name = name
        self.spec = spec
        self.compiled = compiled  # keeps the machine code alive
        self._entry = _ENTRY(compiled.address)
        params = spec["params"]
        self._nparams = len(params)
        self._bufpos = [k for k, p in enumerate(params) if p[0] == "buf"]
        self._nbuf = len(self._bufpos)
        self._dtypes = [np.dtype(p[1]) for p in params]
        self._vars = [tuple(v) for v in spec["vars"]]
        self._checks = spec.get("checks", [])
        self._float_vars = [params[v[1]][1].startswith("float") if v[0] == "scalar" else False
                            for v in self._vars]
        self._py = None
        self._fast = None
        py_address = getattr(compiled, "py_address", 0)
        if py_address and not self._vars and all(p[0] == "buf" and -1 not in p[3]
                                                 for p in params):
            conds, env, elems = [], {"ND": _ND}, 0
            for k, p in enumerate(params):
                env[f"d{k}"], env[f"s{k}"] = np.dtype(p[1]), tuple(p[3])
                elems += int(np.prod(p[3], dtype=np.int64))
                conds.append(f"type(a{k}) is ND and a{k}.dtype is d{k} and a{k}.shape == s{k}"
                             f" and a{k}.flags.c_contiguous")
            args = ", ".join(f"a{k}" for k in range(len(params)))
            self._fast = eval(f"lambda {args}: {' and '.join(conds) or 'True'}", env)  # noqa: S307
            self._py = (_PY_ENTRY_NOGIL if elems > GIL_RELEASE_ELEMS else _PY_ENTRY)(py_address)
            # the same as ``__call__`` in one frame, for callers that hold it (generated code)
            env.update(py=self._py, pool=threadpool, checked=self._call_checked)
            src = (f"def call(*args):\n    if len(args) == {len(params)}:\n"
                   f"        {f'{args}, = args' if params else 'pass'}\n"
                   f"        if {' and '.join(conds) or 'True'}:\n"
                   f"            py(args, pool.get_num_threads())\n            return None\n"
                   f"    return checked(args)\n")
            exec(compile(src, f"<relax kernel {name}>", "exec"), env)  # noqa: S102
            self.direct = env["call"]
        scalar = _scalar_call(name, spec, self.direct if self._fast is not None else None)
        if scalar is not None:
            self.direct = scalar
        self._sym = None
        if self._fast is None and LAYOUT_OK and params and self._bufpos and \
                not any(self._float_vars):
            self._sym = self._symbolic_call()
        if self._fast is None and scalar is None:
            self.direct = self._sym if self._sym is not None else self.__call__
        self._table = None
        if scalar is None and (self._fast is not None or self._sym is not None):
            native = self._native_checked(self.direct)
            if native is not None:
                self.direct = native

    def _native_checked(self, slow):
        """``direct`` with its argument checks in native code (``runtime.checked_call``): one
        ctypes call checks and runs the kernel (without the GIL past the same size as
        before); an argument that does not fit goes to ``slow`` (the checks in Python, the
        errors). None when a parameter is not a buffer or a check is not a dimension's
        equality."""
        params = self.spec["params"]
        if any(p[0] != "buf" for p in params) or any(v[0] != "dim" for v in self._vars):
            return None
        checks = []
        for k, d, enc, _text in self._checks:
            if not (isinstance(enc, list) and len(enc) == 4 and enc[:2] == ["at", "dim"]):
                return None
            checks.append((k, d, enc[2], enc[3]))
        routine = checked_call_routine()
        if routine is None:
            return None
        table = checked_call_table(self.compiled.address, [(p[1], p[3]) for p in params],
                                   [(v[1], v[2]) for v in self._vars], checks,
                                   GIL_RELEASE_ELEMS)
        if table is None:
            return None
        self._table = table  # (the routine reads it: alive as long as the kernel)
        env = {"chk": routine, "tab": ctypes.addressof(table), "pool": threadpool,
               "slow": slow}
        src = ("def call(*args):\n    if chk(args, tab, pool.get_num_threads()):\n"
               "        return slow(*args)\n")
        exec(compile(src, f"<relax kernel {self.name} (native checks)>", "exec"), env)  # noqa: S102
        return env["call"]

    def __call__(self, *args):
        if self._fast is not None and len(args) == self._nparams and self._fast(*args):
            self._py(args, threadpool.get_num_threads())
            return None
        if self._sym is not None:
            self._sym(*args)
            return None
        self._call_checked(args)
        return None

    def _symbolic_call(self):
        """Generated code for a kernel with symbolic dimensions or integer scalar parameters
        (call_tir's ``tir_vars``, which may arrive as one trailing shape value): checks kinds,
        dtypes, ranks, constant dimensions and the dimension relations in one expression,
        then calls the entry through the tuple trampoline on the buffers; anything else takes
        ``_call_checked`` (which raises the errors)."""
        env = {"ND": _ND, "V": ctypes.c_int64 * max(1, len(self._vars)), "pool": threadpool,
               "checked": self._call_checked, "INT": int,
               "fd": lambda a, b: -1 if b == 0 else a // b,
               "fm": lambda a, b: -1 if b == 0 else a % b}
        conds, size = [], []
        for k, p in enumerate(self.spec["params"]):
            a = f"a{k}"
            if p[0] != "buf":  # an integer scalar: a Python int (a shape value's field)
                conds.append(f"type({a}) is INT")
                continue
            env[f"d{k}"] = self._dtypes[k]
            conds.append(f"type({a}) is ND and {a}.dtype is d{k} and {a}.ndim == {p[2]}")
            conds.extend(f"{a}.shape[{d}] == {w}" for d, w in enumerate(p[3]) if w != -1)
            conds.append(f"{a}.flags.c_contiguous")
            size.append(f"{a}.size")
        for k, d, enc, _text in self._checks:
            conds.append(f"a{k}.shape[{d}] == {_dim_source(enc)}")
        kvars = ", ".join(f"a{v[1]}" if v[0] == "scalar" else f"a{v[1]}.shape[{v[2]}]"
                          for v in self._vars)
        names = ", ".join(f"a{k}" for k in range(self._nparams))
        bufs = "".join(f"a{k}, " for k in self._bufpos)
        gil, nogil = call_trampoline()
        env.update(gil=gil, nogil=nogil, addr=self.compiled.address)
        expand = ""
        if self.spec["params"][-1][0] == "scalar":  # tir_vars as one trailing shape value
            expand = ("    if args and isinstance(args[-1], tuple):\n"
                      "        args = (*args[:-1], *args[-1])\n")
        # the vars array: a spare one (pop and append are atomic under the GIL; a call that
        # raises drops its array) filled in place, cheaper than a new ctypes array a call
        env["spare"] = []
        fill = "".join(f"    v[{i}] = {e}\n" for i, e in enumerate(kvars.split(", "))) \
            if kvars else ""
        src = (f"def call(*args):\n{expand}"
               f"    if len(args) != {self._nparams}:\n"
               f"        return checked(args)\n"
               f"    {names}, = args\n"
               f"    if not ({' and '.join(conds)}):\n"
               f"        return checked(args)\n"
               f"    run = nogil if {' + '.join(size)} > {GIL_RELEASE_ELEMS} else gil\n"
               + (f"    v = spare.pop() if spare else V()\n{fill}" if kvars else "") +
               f"    run(({bufs}), {self._nbuf}, addr, "
               f"{'v' if kvars else 'None'}, pool.get_num_threads())\n"
               + ("    spare.append(v)\n" if kvars else ""))
        exec(compile(src, f"<relax kernel {self.name}>", "exec"), env)  # noqa: S102
        return env["call"]

    def _call_checked(self, args) -> None:
        arrays, vals = self.pack(args)
        cptrs = (ctypes.c_void_p * max(1, len(arrays)))(*(a.ctypes.data for a in arrays))
        cvars = (ctypes.c_int64 * max(1, len(vals)))(*vals)
        self._entry(cptrs, cvars, threadpool.get_num_threads())

    def pack(self, args) -> tuple[list, list]:
        """Check ``args`` and return (the buffer arguments as numpy arrays, in order; the i64
        values of the entry's ``vars``, floats as their double bit pattern)."""
        fast = self._fast
        if fast is not None and not self._checks and len(args) == self._nparams and \
                fast(*args):
            # every parameter a buffer of a constant shape, and ``args`` plain arrays of those
            # shapes and dtypes: the checks below would pass, with no vars (a recording packs
            # every call of a 100,000-call function)
            return list(args), []
        params = self.spec["params"]
        if args and isinstance(args[-1], tuple) and params and params[-1][0] == "scalar":
            # call_tir's tir_vars arrive as one shape value: its ints are the scalar params
            args = (*args[:-1], *args[-1])
        if len(args) != len(params):
            raise ValueError(f"kernel {self.name!r} expects {len(params)} arguments, got "
                             f"{len(args)}")
        arrays = []
        for k, (a, p) in enumerate(zip(args, params, strict=True)):
            if p[0] != "buf":
                continue
            data = getattr(a, "_data", a)
            if not isinstance(data, np.ndarray):
                raise ValueError(f"kernel {self.name!r}: argument {k} must be a tensor, got "
                                 f"{type(a).__name__}")
            if data.dtype != self._dtypes[k] or data.ndim != p[2]:
                raise ValueError(f"kernel {self.name!r}: argument {k} must be a {p[2]}-d "
                                 f"{p[1]} tensor, got shape {data.shape} {data.dtype}")
            for d, want in enumerate(p[3]):
                if want != -1 and data.shape[d] != want:
                    raise ValueError(f"kernel {self.name!r}: argument {k} dimension {d} must "
                                     f"be {want}, got {data.shape[d]}")
            if not data.flags.c_contiguous:
                raise ValueError(f"kernel {self.name!r}: argument {k} must be C-contiguous")
            arrays.append(data)
        for k, d, enc, text in self._checks:
            want = _eval_dim(enc, args)
            got = getattr(args[k], "_data", args[k]).shape[d]
            if got != want:
                raise ValueError(f"kernel {self.name!r}: argument {k} dimension {d} must be "
                                 f"{text} = {want} (from the other arguments), got {got}")
        vals = []
        for (kind, *where), is_float in zip(self._vars, self._float_vars, strict=True):
            if kind == "scalar":
                x = args[where[0]]
                x = x.item() if isinstance(x, np.ndarray) else x
                if is_float:
                    vals.append(struct.unpack("<q", struct.pack("<d", float(x)))[0])
                else:
                    vals.append(int(x))
            else:
                a = args[where[0]]
                vals.append(int(getattr(a, "_data", a).shape[where[1]]))
        return arrays, vals

    def __repr__(self):
        return f"NativeKernel({self.name!r})"
