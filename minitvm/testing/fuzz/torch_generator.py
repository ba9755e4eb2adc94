"""Random small PyTorch programs for the importer differential fuzzer (``torch_differential``).

A program is the Python source of an ``nn.Module.forward``: a few lines, each one torch op
drawn from a grammar (elementwise unary / binary ops with broadcasting and type promotion over
float32 / float16 / bfloat16 / int64 / int32 / bool, Python and 0-d scalar operands; reductions; slicing
and gathers; views and joins; matmuls, convolutions and pools; normalizations, scans and
orderings; in-place updates). Each candidate line is run eagerly while the program grows and is
kept only if torch accepts it, so every program is valid PyTorch. Inputs and weights lie on a
coarse grid (multiples of 0.5) so sums and products are exact and ties are real ties; values
that went through inexact arithmetic are never compared, ordered, or cast to integers, so an
index or mask depends on no rounding. bfloat16 values come from casts (numpy, so an input,
holds no bfloat16) and a bfloat16 output is returned widened (``.float()``, exact). Needs the
optional ``torch`` package.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field

import numpy as np

__all__ = ["TorchProgram", "generate_torch_program", "build_module", "program_from_source"]

_FLOATS = ("float32", "float16")
_INTS = ("int64", "int32")
_DTYPES = _FLOATS * 3 + _INTS * 2 + ("bool",)
_LIMIT = {"float16": 256.0, "bfloat16": 64.0}  # largest magnitude a value may reach (float16's grid stays exact)
_DEFAULT_LIMIT = 4096.0


@dataclass
class TorchProgram:
    """One generated program: ``source`` (the forward), weights, inputs and eager outputs."""

    seed: int
    source: str
    weights: dict = field(default_factory=dict)  # name -> torch tensor (buffers of the module)
    feeds: dict = field(default_factory=dict)  # name -> numpy array, in argument order
    expected: list = field(default_factory=list)  # eager outputs as numpy arrays
    features: set = field(default_factory=set)  # op families used (coverage)
    inplace: bool = False  # the program mutates a value in place
    parts: list = field(default_factory=list)  # the programs merged into this one, if any
    exported: dict = field(default_factory=dict)  # artifacts made once: its ONNX file, ORT's

    def text(self) -> str:
        """The source and the inputs, for a report."""
        feeds = "\n".join(f"# {k}: {v.dtype}{list(v.shape)} {v.ravel()[:12].tolist()}"
                          for k, v in self.feeds.items())
        ws = "\n".join(f"# self.{k}: {str(v.dtype)[6:]}{list(v.shape)} "
                       f"{v.flatten()[:8].tolist()}" for k, v in self.weights.items())
        return f"{self.source}\n{ws}\n{feeds}".rstrip()


def build_module(prog: TorchProgram):
    """The ``nn.Module`` whose forward is ``prog.source`` (weights as buffers)."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    namespace = {"torch": torch, "F": F}
    exec(compile(prog.source, f"<torch fuzz seed {prog.seed}>", "exec"), namespace)  # noqa: S102

    class Fuzzed(torch.nn.Module):
        forward = namespace["forward"]

    m = Fuzzed()
    for k, v in prog.weights.items():
        m.register_buffer(k, v.clone())
    return m.eval()


def program_from_source(source: str, feeds: dict, weights: dict | None = None,
                        seed: int = -1) -> TorchProgram:
    """A program written by hand (a regression case): ``source`` defines ``forward``; the
    eager outputs on ``feeds`` (numpy arrays, in argument order) are filled in."""
    import torch

    prog = TorchProgram(seed, source, dict(weights or {}),
                        {k: np.asarray(v) for k, v in feeds.items()})
    with torch.no_grad():
        outs = build_module(prog)(*[torch.from_numpy(v.copy()) for v in prog.feeds.values()])
    prog.expected = [o.numpy().copy() for o in (outs if isinstance(outs, tuple) else (outs,))]
    return prog


class _Val:
    __slots__ = ("name", "t", "exact")

    def __init__(self, name, t, exact):
        self.name, self.t, self.exact = name, t, exact


def _grid(rng: np.random.Generator, shape, dtype: str):
    if dtype == "bool":
        return np.asarray(rng.integers(0, 2, size=shape).astype(bool))
    if dtype in _INTS:
        return np.asarray(rng.integers(-4, 5, size=shape).astype(dtype))
    return np.asarray((rng.integers(-4, 5, size=shape) * 0.5).astype(dtype))


class _Gen:
    """State while one program grows: the values so far, weights, inputs, lines."""

    def __init__(self, seed: int):
        import torch

        self.torch = torch
        self.seed = seed
        self.r = random.Random(seed)
        self.nr = np.random.default_rng(seed)
        self.vals: list[_Val] = []
        self.lines: list[str] = []
        self.inputs: list[str] = []
        self.feeds: dict = {}
        self.weights: dict = {}
        self.features: set = set()
        self.inplace = False
        self.ns = {"torch": torch, "F": torch.nn.functional}

    # -- operands ----------------------------------------------------------------------------
    def new_input(self, shape, dtype) -> _Val:
        dtype = "float32" if dtype == "bfloat16" else dtype  # (numpy holds no bfloat16)
        name = f"x{len(self.inputs)}"
        arr = _grid(self.nr, shape, dtype)
        self.inputs.append(name)
        self.feeds[name] = arr
        v = _Val(name, self.torch.from_numpy(arr.copy()), True)
        self.vals.append(v)
        return v

    def weight(self, shape, dtype="float32", lo=-2, hi=2) -> str:
        name = f"w{len(self.weights)}"
        wide = "float32" if dtype == "bfloat16" else dtype  # (numpy holds no bfloat16)
        arr = (self.nr.integers(lo * 2, hi * 2 + 1, size=shape) * 0.5).astype(wide) \
            if wide in _FLOATS else self.nr.integers(lo, hi + 1, size=shape).astype(wide)
        self.weights[name] = self.torch.from_numpy(arr).to(getattr(self.torch, dtype))
        return f"self.{name}"

    def index_const(self, shape, high) -> str:
        name = f"w{len(self.weights)}"
        self.weights[name] = self.torch.from_numpy(
            self.nr.integers(0, high, size=shape).astype("int64"))
        return f"self.{name}"

    def pick(self, pred=lambda v: True, exact=False) -> _Val | None:
        c = [v for v in self.vals if pred(v) and (v.exact or not exact)]
        if not c:
            return None
        # prefer recent values so programs chain
        return c[-1] if self.r.random() < 0.5 else self.r.choice(c)

    def partner(self, a: _Val, exact=False) -> tuple[str, str]:
        """A second operand for ``a``: another value that broadcasts, a fresh input of a
        broadcastable shape, a Python int / float, or a 0-d tensor; (text, kind)."""
        r = self.r.random()
        shape = list(a.t.shape)
        if r < 0.15:
            return str(self.r.choice([-3, -2, -1, 1, 2, 3])), "int"
        if r < 0.3:
            return str(self.r.choice([-2.5, -1.5, -0.5, 0.5, 1.5, 2.0])), "float"
        if r < 0.4:
            dt = self.r.choice(_DTYPES)
            return self.new_input((), dt).name, "0-d " + dt
        if r < 0.65:
            b = self.pick(lambda v: v is not a and _broadcasts(shape, list(v.t.shape)), exact)
            if b is not None:
                return b.name, "value"
        bshape = [1 if self.r.random() < 0.3 else d for d in shape]
        if bshape and self.r.random() < 0.3:
            bshape = bshape[self.r.randint(0, len(bshape)):]
        dt = self.r.choice(_DTYPES) if self.r.random() < 0.6 else str(a.t.dtype)[6:]
        return self.new_input(tuple(bshape), dt).name, "input " + dt

    # -- candidate lines ---------------------------------------------------------------------
    def try_line(self, expr: str, feature: str, exact: bool, outputs: int = 1,
                 inplace: bool = False) -> bool:
        """Run ``expr`` eagerly on the current values; keep it as a new line when it works."""
        env = dict(self.ns)
        env.update({v.name: v.t for v in self.vals})
        env["self"] = _Weights(self.weights)
        try:
            with np.errstate(all="ignore"):
                out = eval(expr, env)  # noqa: S307 - generated from the grammar
        except Exception:  # noqa: BLE001 - torch refused the candidate: draw another
            return False
        outs = list(out) if outputs > 1 else [out]
        if not all(isinstance(o, self.torch.Tensor) for o in outs):
            return False
        for o in outs:
            if o.dtype not in _torch_dtypes() or o.numel() == 0 or o.numel() > 4096:
                return False
            if o.dtype.is_floating_point:
                lim = _LIMIT.get(str(o.dtype)[6:], _DEFAULT_LIMIT)
                fin = o[o.isfinite()].double()
                if fin.numel() and float(fin.abs().max()) > lim:
                    return False
                if not bool(o.isfinite().all()):
                    exact = False
            elif o.dtype != self.torch.bool and o.numel() and int(o.abs().max()) > 1 << 20:
                return False
        names = [f"v{len(self.vals) + k}" for k in range(len(outs))]
        self.lines.append(f"    {', '.join(names)} = {expr}")
        for n, o in zip(names, outs, strict=True):
            self.vals.append(_Val(n, o, exact))
        self.features.add(feature)
        self.inplace |= inplace
        return True


class _Weights:
    def __init__(self, w):
        self.__dict__.update(w)


@functools.cache
def _torch_dtypes() -> frozenset:
    """The dtypes a generated value may have (torch is imported on first use: it is optional)."""
    import torch

    return frozenset({torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                      torch.bool})


def _broadcasts(a: list, b: list) -> bool:
    for x, y in zip(reversed(a), reversed(b), strict=False):
        if x != y and x != 1 and y != 1:
            return False
    return len(b) <= len(a) + 1


def _dt(v: _Val) -> str:
    return str(v.t.dtype)[6:]


def _is_float(v: _Val) -> bool:
    return v.t.dtype.is_floating_point


# -- the grammar: each rule tries to add one line --------------------------------------------

_UNARY = {
    "neg": ("torch.neg({a})", True), "abs": ("torch.abs({a})", True),
    "relu": ("torch.relu({a})", True), "sigmoid": ("torch.sigmoid({a})", False),
    "tanh": ("torch.tanh({a})", False), "exp": ("torch.exp(torch.clamp({a}, max=4))", False),
    "floor": ("torch.floor({a})", True), "ceil": ("torch.ceil({a})", True),
    "round": ("torch.round({a})", True), "trunc": ("torch.trunc({a})", True),
    "sign": ("torch.sign({a})", True), "sqrt": ("torch.sqrt(torch.abs({a}))", False),
    "log": ("torch.log(torch.abs({a}) + 1)", False), "rsqrt": ("torch.rsqrt({a} * {a} + 1)", False),
    "square": ("torch.square({a})", True), "bitwise_not": ("torch.bitwise_not({a})", True),
    "logical_not": ("torch.logical_not({a})", True), "half_scale": ("{a} * 0.5", True),
    "gelu": ("F.gelu({a})", False), "silu": ("F.silu({a})", False),
    "leaky_relu": ("F.leaky_relu({a}, 0.25)", True), "hardtanh": ("F.hardtanh({a}, -1.5, 2.0)", True),
    "erf": ("torch.erf({a})", False), "elu": ("F.elu({a})", False),
    "clamp": ("torch.clamp({a}, {lo}, {hi})", True), "clamp_min": ("{a}.clamp(min={lo})", True),
    "round_decimals": ("torch.round({a}, decimals=1)", False),
}


def _unary(g: _Gen) -> bool:
    name = g.r.choice(list(_UNARY))
    text, exact = _UNARY[name]
    a = g.pick(exact=name in ("floor", "ceil", "round", "trunc", "sign"))
    if a is None:
        return False
    lo = g.r.choice(["-1", "-0.5", "0", "1"])
    hi = g.r.choice(["1.5", "2", "3"])
    if name == "clamp" and not _is_float(a) and g.r.random() < 0.7:
        lo, hi = lo.split(".")[0], hi.split(".")[0]
    return g.try_line(text.format(a=a.name, lo=lo, hi=hi), "unary " + name, exact and a.exact)


_BINARY = {
    "add": ("{a} + {b}", True), "sub": ("{a} - {b}", True), "mul": ("{a} * {b}", True),
    "add_alpha": ("torch.add({a}, {b}, alpha=2)", True),
    "div": ("{a} / ({bpos})", False), "floordiv": ("torch.div({a}, {bpos}, rounding_mode='floor')", True),
    "truncdiv": ("torch.div({a}, {bpos}, rounding_mode='trunc')", True),
    "floordiv_op": ("{a} // ({bpos})", True),
    "remainder": ("torch.remainder({a}, {bpos})", True), "fmod": ("torch.fmod({a}, {bpos})", True),
    "maximum": ("torch.maximum({a}, {b})", True), "minimum": ("torch.minimum({a}, {b})", True),
    "max_scalar": ("torch.max({a}, {b})", True),
    "pow": ("torch.pow({a}, {e})", True), "rpow": ("torch.pow(2, {a})", False),
    "eq": ("{a} == {b}", True), "ne": ("{a} != {b}", True), "lt": ("{a} < {b}", True),
    "le": ("torch.le({a}, {b})", True), "gt": ("{a} > {b}", True), "ge": ("{a} >= {b}", True),
    "logical_and": ("torch.logical_and({a}, {b})", True),
    "logical_or": ("torch.logical_or({a}, {b})", True),
    "logical_xor": ("torch.logical_xor({a}, {b})", True),
    "bitwise_and": ("{a} & {b}", True), "bitwise_or": ("{a} | {b}", True),
    "bitwise_xor": ("{a} ^ {b}", True), "atan2": ("torch.atan2({a}, {b})", False),
    "where": ("torch.where({a} > 0, {a}, {b})", True),
    "rsub": ("{b} - {a}", True), "rdiv": ("{s} / ({a}.abs() + 1)", False),
}
_COMPARES = ("eq", "ne", "lt", "le", "gt", "ge", "where", "maximum", "minimum", "max_scalar",
             "floordiv", "truncdiv", "floordiv_op", "remainder", "fmod")


def _binary(g: _Gen) -> bool:
    name = g.r.choice(list(_BINARY))
    text, exact = _BINARY[name]
    ordered = name in _COMPARES
    a = g.pick(exact=ordered)
    if a is None:
        return False
    b, kind = g.partner(a, exact=ordered)
    if ordered and kind == "value" and not next(v for v in g.vals if v.name == b).exact:
        return False
    sign = g.r.choice(["", "-"])
    bpos = (f"{sign}({b}.abs() + 1)" if not b.lstrip("-").replace(".", "").isdigit()
            else str(abs(float(b)) if "." in b else abs(int(b))))
    e = g.r.choice(["2", "3", "0.5", "-1", "2.0"])
    if name == "pow" and e in ("0.5", "-1"):
        exact = False
    if name == "pow" and e in ("0.5",):
        text = "torch.pow(torch.abs({a}), {e})"
    if name == "pow" and e == "-1":
        text = "torch.pow(torch.abs({a}) + 1, {e})"
    s = g.r.choice(["3", "1.5", "-2"])
    exact_b = kind != "value" or next(v for v in g.vals if v.name == b).exact
    return g.try_line(text.format(a=a.name, b=b, bpos=bpos, e=e, s=s),
                      f"binary {name} {kind}", exact and a.exact and exact_b)


def _dims(g: _Gen, rank: int) -> int:
    d = g.r.randrange(rank)
    return d - rank if g.r.random() < 0.4 else d


def _reduce(g: _Gen) -> bool:
    a = g.pick(lambda v: v.t.dim() > 0)
    if a is None:
        return False
    rank = a.t.dim()
    kd = g.r.choice(["True", "False"])
    d = _dims(g, rank)
    op = g.r.choice(["sum", "mean", "amax", "amin", "prod", "max_dim", "min_dim", "argmax",
                     "argmin", "any", "all", "std", "var", "logsumexp", "sum_multi", "sum_all",
                     "argmax_flat", "sum_dtype", "max_all", "norm", "count_nonzero", "mean_multi"])
    exact = a.exact
    if op in ("argmax", "argmin", "max_dim", "min_dim", "argmax_flat", "amax", "amin", "max_all"):
        if not a.exact:
            return False
    if op == "sum_multi" or op == "mean_multi":
        dims = sorted(g.r.sample(range(rank), g.r.randint(1, rank)))
        dims = [x - rank if g.r.random() < 0.3 else x for x in dims]
        expr = f"{a.name}.{op[:-6]}(dim={tuple(dims)}, keepdim={kd})"
    elif op == "sum_all":
        expr = f"{a.name}.sum()"
    elif op == "max_all":
        expr = f"torch.max({a.name})"
    elif op == "argmax_flat":
        expr = f"torch.argmax({a.name})"
    elif op == "sum_dtype":
        expr = f"torch.sum({a.name}, {d}, dtype=torch.float32)"
    elif op in ("max_dim", "min_dim"):
        return g.try_line(f"torch.{op[:3]}({a.name}, {d}, keepdim={kd})", "reduce " + op, exact,
                          outputs=2)
    elif op in ("std", "var"):
        corr = g.r.choice([0, 1])
        expr = f"torch.{op}({a.name}, dim={d}, correction={corr}, keepdim={kd})"
        exact = False
    elif op == "logsumexp":
        expr = f"torch.logsumexp({a.name}, {d}, keepdim={kd})"
        exact = False
    elif op == "norm":
        expr = f"torch.linalg.vector_norm({a.name}, 2, dim={d}, keepdim={kd})"
        exact = False
    elif op == "count_nonzero":
        expr = f"torch.count_nonzero({a.name}, dim={d})"
    else:
        expr = f"torch.{op}({a.name}, {d}, keepdim={kd})" if op not in ("any", "all") or \
            g.r.random() < 0.7 else f"{a.name}.{op}()"
    if op == "mean":
        exact = False
    return g.try_line(expr, "reduce " + op, exact)


def _slice_text(g: _Gen, n: int) -> str:
    start = g.r.choice([None, 0, 1, -1, -2, -n, n - 1, -n - 2])
    stop = g.r.choice([None, n, -1, 2, n + 3, -n + 1])
    step = g.r.choice([None, 1, 2, 3])
    s = ("" if start is None else str(start)) + ":" + ("" if stop is None else str(stop))
    return s + ("" if step is None else f":{step}")


def _index(g: _Gen) -> bool:
    a = g.pick(lambda v: v.t.dim() > 0)
    if a is None:
        return False
    shape = list(a.t.shape)
    rank = len(shape)
    op = g.r.choice(["slice", "slice", "int", "ellipsis", "index_select", "gather", "masked_fill",
                     "narrow", "take_along", "adv_index", "select_neg", "where_scalar", "flip",
                     "roll"])
    d = _dims(g, rank)
    n = shape[d]
    if op == "slice":
        parts = [_slice_text(g, s) for s in shape[: g.r.randint(1, rank)]]
        expr = f"{a.name}[{', '.join(parts)}]"
    elif op == "int":
        expr = f"{a.name}[{g.r.randrange(-shape[0], shape[0])}]"
    elif op == "ellipsis":
        expr = f"{a.name}[..., {_slice_text(g, shape[-1])}]"
    elif op == "select_neg":
        expr = f"{a.name}.select({d}, {g.r.randrange(-n, n)})"
    elif op == "index_select":
        idx = g.index_const((g.r.randint(1, 4),), n)
        expr = f"torch.index_select({a.name}, {d}, {idx})"
    elif op in ("gather", "take_along"):
        ishape = [g.r.randint(1, s) for s in shape]
        ishape[d] = g.r.randint(1, 4)
        idx = g.index_const(tuple(ishape), n)
        expr = (f"torch.gather({a.name}, {d}, {idx})" if op == "gather"
                else f"torch.take_along_dim({a.name}, {idx}, dim={d})")
    elif op == "masked_fill":
        m = g.pick(lambda v: v.t.dtype == g.torch.bool and _broadcasts(shape, list(v.t.shape))
                   and v.t.dim() <= rank)
        mask = m.name if m is not None else g.new_input(
            tuple(1 if g.r.random() < 0.3 else s for s in shape), "bool").name
        val = g.r.choice(["-1.5", "2", "0", "-3"]) if _is_float(a) else g.r.choice(["-1", "7"])
        expr = f"{a.name}.masked_fill({mask}, {val})"
    elif op == "narrow":
        start = g.r.randrange(-n, n)
        length = g.r.randint(1, n - (start % n))
        expr = f"torch.narrow({a.name}, {d}, {start}, {length})"
    elif op == "adv_index":
        idx = g.index_const((g.r.randint(1, 3),), shape[0])
        expr = f"{a.name}[{idx}]"
    elif op == "flip":
        expr = f"torch.flip({a.name}, ({d},))"
    elif op == "roll":
        expr = f"torch.roll({a.name}, {g.r.randint(-3, 3)}, {d})"
    else:
        expr = f"torch.where({a.name} > 0, {a.name}, {g.r.choice(['0.5', '-1', '2'])})"
        if not a.exact:
            return False
    return g.try_line(expr, "index " + op, a.exact)


def _factor(g: _Gen, n: int) -> list[int]:
    out = []
    while n > 1 and len(out) < 3:
        ds = [k for k in range(2, n + 1) if n % k == 0]
        k = g.r.choice(ds)
        out.append(k)
        n //= k
    return out or [1]


def _shape(g: _Gen) -> bool:
    a = g.pick()
    if a is None:
        return False
    shape = list(a.t.shape)
    rank = len(shape)
    op = g.r.choice(["view", "reshape", "permute", "transpose", "flatten", "unsqueeze", "squeeze",
                     "expand", "repeat", "cat", "stack", "split", "chunk", "t", "contiguous_view",
                     "unbind", "movedim", "view_neg", "unflatten"])
    if rank == 0 and op not in ("view", "reshape", "unsqueeze", "expand", "stack", "cat"):
        op = "unsqueeze"
    n = int(np.prod(shape)) if shape else 1
    if op in ("view", "reshape", "view_neg"):
        new = _factor(g, n)
        g.r.shuffle(new)
        if op == "view_neg":
            new[g.r.randrange(len(new))] = -1
        call = "view" if op != "reshape" else "reshape"
        return g.try_line(f"{a.name}.{call}({', '.join(map(str, new))})", "shape " + op, a.exact)
    if op == "permute":
        p = list(range(rank))
        g.r.shuffle(p)
        p = [x - rank if g.r.random() < 0.3 else x for x in p]
        return g.try_line(f"{a.name}.permute({', '.join(map(str, p))})", "shape permute", a.exact)
    if op in ("transpose", "movedim"):
        d0, d1 = _dims(g, rank), _dims(g, rank)
        fn = "transpose" if op == "transpose" else "movedim"
        return g.try_line(f"torch.{fn}({a.name}, {d0}, {d1})", "shape " + op, a.exact)
    if op == "t":
        return g.try_line(f"{a.name}.mT", "shape mT", a.exact)
    if op == "flatten":
        s, e = sorted([_dims(g, rank), _dims(g, rank)], key=lambda x: x % rank)
        return g.try_line(f"torch.flatten({a.name}, {s}, {e})", "shape flatten", a.exact)
    if op == "unflatten":
        d = _dims(g, rank)
        f = _factor(g, shape[d])
        return g.try_line(f"{a.name}.unflatten({d}, {tuple(f)})", "shape unflatten", a.exact)
    if op == "unsqueeze":
        d = g.r.randint(-rank - 1, rank)
        return g.try_line(f"{a.name}.unsqueeze({d})", "shape unsqueeze", a.exact)
    if op == "squeeze":
        ones = [k for k, s in enumerate(shape) if s == 1]
        if ones and g.r.random() < 0.6:
            d = g.r.choice(ones)
            return g.try_line(f"{a.name}.squeeze({d - rank if g.r.random() < 0.5 else d})",
                              "shape squeeze", a.exact)
        return g.try_line(f"{a.name}.squeeze()", "shape squeeze all", a.exact)
    if op == "expand":
        new = [g.r.choice([2, 3]) if s == 1 else (-1 if g.r.random() < 0.5 else s) for s in shape]
        if g.r.random() < 0.4:
            new = [2] + new
        return g.try_line(f"{a.name}.expand({', '.join(map(str, new))})", "shape expand", a.exact)
    if op == "repeat":
        reps = [g.r.choice([1, 1, 2, 3]) for _ in range(rank + g.r.choice([0, 0, 1]))]
        return g.try_line(f"{a.name}.repeat({', '.join(map(str, reps)) or '1'})", "shape repeat",
                          a.exact)
    if op in ("cat", "stack"):
        d = _dims(g, max(rank, 1)) if op == "cat" else g.r.randint(-rank - 1, rank)
        others = [v for v in g.vals if v is not a and list(v.t.shape) == shape]
        if op == "cat" and rank:
            others += [v for v in g.vals if v is not a and v.t.dim() == rank and all(
                x == y for k, (x, y) in enumerate(zip(v.t.shape, shape, strict=True))
                if k != d % rank)]
        b = g.r.choice(others) if others and g.r.random() < 0.7 else None
        if b is None:
            new = list(shape)
            if op == "cat" and rank:
                new[d] = g.r.randint(1, 3)
            b = g.new_input(tuple(new), g.r.choice([_dt(a), _dt(a), *_DTYPES]))
        items = [a.name, b.name] if g.r.random() < 0.7 else [a.name, b.name, a.name]
        return g.try_line(f"torch.{op}([{', '.join(items)}], {d})", f"shape {op}",
                          a.exact and b.exact)
    if op in ("split", "chunk", "unbind"):
        d = _dims(g, rank)
        n = shape[d]
        if op == "unbind":
            if n > 4:
                return False
            return g.try_line(f"torch.unbind({a.name}, {d})", "shape unbind", a.exact, outputs=n)
        if op == "split":
            size = g.r.randint(1, max(1, n))
            k = -(-n // size)
            if k > 4:
                return False
            return g.try_line(f"torch.split({a.name}, {size}, {d})", "shape split", a.exact,
                              outputs=k)
        c = g.r.randint(1, 3)
        k = len(a.t.chunk(c, d))
        return g.try_line(f"torch.chunk({a.name}, {c}, {d})", "shape chunk", a.exact, outputs=k)
    return False


def _float_value(g: _Gen, min_rank: int):
    return g.pick(lambda v: _is_float(v) and v.t.dim() >= min_rank)


def _nn(g: _Gen) -> bool:
    op = g.r.choice(["matmul", "matmul_vals", "bmm", "linear", "conv1d", "conv2d", "max_pool1d",
                     "max_pool2d", "avg_pool2d", "adaptive_avg", "avg_pool1d", "mv", "einsum"])
    if op in ("matmul", "linear", "mv", "einsum"):
        a = _float_value(g, 1)
        if a is None:
            return False
        k = a.t.shape[-1]
        dt = _dt(a)
        if op == "linear":
            o = g.r.randint(1, 5)
            w = g.weight((o, k), dt)
            b = g.weight((o,), dt) if g.r.random() < 0.6 else "None"
            return g.try_line(f"F.linear({a.name}, {w}, {b})", "nn linear", a.exact)
        if op == "mv":
            if a.t.dim() != 2:
                return False
            return g.try_line(f"torch.mv({a.name}, {g.weight((k,), dt)})", "nn mv", a.exact)
        if op == "einsum":
            if a.t.dim() != 2:
                return False
            return g.try_line(f"torch.einsum('ij,jk->ik', {a.name}, {g.weight((k, 3), dt)})",
                              "nn einsum", a.exact)
        shape = (k,) if g.r.random() < 0.25 else (k, g.r.randint(1, 4))
        if g.r.random() < 0.2 and a.t.dim() >= 2:
            shape = tuple(a.t.shape[-3:-2]) + (k, 2)
        return g.try_line(f"torch.matmul({a.name}, {g.weight(shape, dt)})", "nn matmul",
                          a.exact)
    if op in ("matmul_vals", "bmm"):
        a = _float_value(g, 2 if op == "matmul_vals" else 3)
        if a is None or (op == "bmm" and a.t.dim() != 3):
            return False
        bshape = list(a.t.shape[:-2]) + [a.t.shape[-1], g.r.randint(1, 4)]
        if op == "matmul_vals" and g.r.random() < 0.3:
            bshape = bshape[-2:]
        b = g.new_input(tuple(bshape), _dt(a))
        fn = "torch.matmul" if op == "matmul_vals" else "torch.bmm"
        return g.try_line(f"{fn}({a.name}, {b.name})", "nn " + op, a.exact)
    if op in ("conv1d", "max_pool1d", "avg_pool1d"):
        a = g.pick(lambda v: _is_float(v) and v.t.dim() == 3)
        if a is None:
            a = g.new_input((g.r.randint(1, 2), g.r.randint(1, 4), g.r.randint(3, 9)),
                            g.r.choice(_FLOATS))
        c = a.t.shape[1]
        k, s, p, dl = g.r.randint(1, 3), g.r.randint(1, 2), g.r.randint(0, 1), g.r.randint(1, 2)
        if op == "conv1d":
            groups = g.r.choice([x for x in (1, 2, c) if c % x == 0])
            o = groups * g.r.randint(1, 2)
            w = g.weight((o, c // groups, k), _dt(a))
            b = g.weight((o,), _dt(a)) if g.r.random() < 0.5 else "None"
            pad = g.r.choice([str(p), "'same'"]) if s == 1 else str(p)
            return g.try_line(f"F.conv1d({a.name}, {w}, {b}, stride={s}, padding={pad}, "
                              f"dilation={dl}, groups={groups})", "nn conv1d", a.exact)
        if op == "max_pool1d":
            return g.try_line(f"F.max_pool1d({a.name}, {k + 1}, {s}, {p}, dilation={dl}, "
                              f"ceil_mode={g.r.choice([True, False])})", "nn max_pool1d", a.exact)
        return g.try_line(f"F.avg_pool1d({a.name}, {k + 1}, {s}, {p}, "
                          f"ceil_mode={g.r.choice([True, False])}, "
                          f"count_include_pad={g.r.choice([True, False])})", "nn avg_pool1d",
                          False)
    a = g.pick(lambda v: _is_float(v) and v.t.dim() == 4)
    if a is None:
        a = g.new_input((g.r.randint(1, 2), g.r.randint(1, 4), g.r.randint(3, 7),
                         g.r.randint(3, 7)), g.r.choice(_FLOATS))
    c = a.t.shape[1]
    k = (g.r.randint(1, 3), g.r.randint(1, 3))
    s, p = g.r.randint(1, 2), g.r.randint(0, 1)
    if op == "conv2d":
        groups = g.r.choice([x for x in (1, 2, c) if c % x == 0])
        o = groups * g.r.randint(1, 2)
        w = g.weight((o, c // groups) + k, _dt(a))
        b = g.weight((o,), _dt(a)) if g.r.random() < 0.5 else "None"
        dl = g.r.randint(1, 2)
        return g.try_line(f"F.conv2d({a.name}, {w}, {b}, stride={s}, padding={p}, dilation={dl}, "
                          f"groups={groups})", "nn conv2d", a.exact)
    if op == "max_pool2d":
        return g.try_line(f"F.max_pool2d({a.name}, {(k[0] + 1, k[1])}, {s}, {p}, "
                          f"ceil_mode={g.r.choice([True, False])})", "nn max_pool2d", a.exact)
    if op == "avg_pool2d":
        return g.try_line(f"F.avg_pool2d({a.name}, {(k[0] + 1, k[1])}, {s}, {p}, "
                          f"ceil_mode={g.r.choice([True, False])}, "
                          f"count_include_pad={g.r.choice([True, False])})", "nn avg_pool2d",
                          False)
    return g.try_line(f"F.adaptive_avg_pool2d({a.name}, ({g.r.randint(1, 3)}, "
                      f"{g.r.randint(1, 3)}))", "nn adaptive_avg_pool2d", False)


def _misc(g: _Gen) -> bool:
    op = g.r.choice(["softmax", "log_softmax", "layer_norm", "cumsum", "sort", "topk", "argsort",
                     "cast", "cast", "cumprod", "tril", "softmax_dtype", "group_norm"])
    a = g.pick(lambda v: v.t.dim() > 0)
    if a is None:
        return False
    rank = a.t.dim()
    d = _dims(g, rank)
    if op in ("softmax", "log_softmax"):
        return g.try_line(f"F.{op}({a.name}, {d})", "misc " + op, False)
    if op == "softmax_dtype":
        return g.try_line(f"torch.softmax({a.name}, {d}, dtype=torch.float32)",
                          "misc softmax_dtype", False)
    if op == "layer_norm":
        k = g.r.randint(1, min(rank, 2))
        ns = tuple(a.t.shape[-k:])
        w = g.weight(ns, _dt(a)) if g.r.random() < 0.5 and _is_float(a) else "None"
        b = g.weight(ns, _dt(a)) if g.r.random() < 0.5 and _is_float(a) else "None"
        return g.try_line(f"F.layer_norm({a.name}, {ns}, {w}, {b})", "misc layer_norm", False)
    if op == "group_norm":
        if rank < 2:
            return False
        c = a.t.shape[1]
        gr = g.r.choice([x for x in (1, 2, c) if c % x == 0])
        return g.try_line(f"F.group_norm({a.name}, {gr})", "misc group_norm", False)
    if op in ("cumsum", "cumprod"):
        return g.try_line(f"torch.{op}({a.name}, {d})", "misc " + op, a.exact)
    if op == "tril":
        if rank < 2:
            return False
        return g.try_line(f"torch.tril({a.name}, {g.r.randint(-1, 1)})", "misc tril", a.exact)
    if op == "cast":
        to = g.r.choice(["float32", "float16", "bfloat16", "bfloat16", "int64", "int32", "bool"])
        if to in _INTS and _is_float(a) and not a.exact:
            return False
        form = g.r.choice([f".to(torch.{to})", {"float32": ".float()", "float16": ".half()",
                                                "bfloat16": ".bfloat16()",
                                                "int64": ".long()", "int32": ".int()",
                                                "bool": ".bool()"}[to]])
        return g.try_line(f"{a.name}{form}", f"misc cast {_dt(a)}->{to}", a.exact)
    if not a.exact:
        return False
    desc = g.r.choice(["True", "False"])
    if op == "sort":
        return g.try_line(f"torch.sort({a.name}, dim={d}, descending={desc}, stable=True)",
                          "misc sort", True, outputs=2)
    if op == "argsort":
        return g.try_line(f"torch.argsort({a.name}, dim={d}, descending={desc}, stable=True)",
                          "misc argsort", True)
    k = g.r.randint(1, a.t.shape[d])
    # (topk's order among equal values is unspecified: only its values are compared)
    return g.try_line(f"torch.topk({a.name}, {k}, dim={d}, largest={desc})[0]", "misc topk",
                      True)


def _inplace(g: _Gen) -> bool:
    a = g.pick(lambda v: v.name.startswith("v") and v.t.dim() > 0 and not _overlaps(v.t))
    if a is None:
        return False
    op = g.r.choice(["add_", "mul_", "clamp_", "relu_", "masked_fill_", "setitem", "iadd_slice",
                     "fill_slice", "copy_"])
    shape = list(a.t.shape)
    if op in ("add_", "mul_"):
        b, _ = g.partner(a, exact=True)
        line = f"{a.name}.{op}({b})"
    elif op == "clamp_":
        line = f"{a.name}.clamp_(min={g.r.choice(['-1', '0'])}, max={g.r.choice(['1', '2'])})"
    elif op == "relu_":
        line = f"torch.relu_({a.name})"
    elif op == "masked_fill_":
        m = g.new_input(tuple(shape), "bool")
        line = f"{a.name}.masked_fill_({m.name}, {g.r.choice(['-1', '3'])})"
    elif op == "copy_":
        b = g.new_input(tuple(1 if g.r.random() < 0.3 else s for s in shape),
                        g.r.choice(_DTYPES))
        line = f"{a.name}.copy_({b.name})"
    else:
        sl = _slice_text(g, shape[0]) if op != "setitem" else str(g.r.randrange(-shape[0],
                                                                              shape[0]))
        if op == "iadd_slice":
            # (a statement: the value is updated and named again below)
            return _inplace_statement(g, a, f"{a.name}[{sl}] += {g.r.choice(['1', '2'])}")
        return _inplace_statement(g, a, f"{a.name}[{sl}] = {g.r.choice(['0', '-1', '2'])}")
    return g.try_line(line, "inplace " + op.rstrip("_"), a.exact, inplace=True)


def _overlaps(t) -> bool:
    """Whether tensor ``t`` repeats a memory element (an ``expand``ed view): a write into it
    has no defined answer (eager's depends on its loop order), so none is generated."""
    return any(st == 0 and n > 1 for n, st in zip(t.shape, t.stride(), strict=True))


def _inplace_statement(g: _Gen, a: _Val, stmt: str) -> bool:
    if _overlaps(a.t):
        return False
    env = dict(g.ns)
    env.update({v.name: v.t for v in g.vals})
    env["self"] = _Weights(g.weights)
    try:
        exec(stmt, env)  # noqa: S102 - generated from the grammar
    except Exception:  # noqa: BLE001 - torch refused: draw another
        return False
    g.lines.append(f"    {stmt}")
    g.features.add("inplace setitem")
    g.inplace = True
    return True


def _view_write(g: _Gen) -> bool:
    """A view of a value (``reshape`` / ``flatten`` / ``view`` / ``contiguous`` / ``t`` /
    ``unsqueeze``: views where the strides allow, or ``expand``, read after the source is
    written), an in-place write through it (or into the source), then the source read again
    (``clone``): the write must reach every alias, and only the aliases."""
    a = g.pick(lambda v: v.name.startswith("v") and v.t.dim() > 0, exact=True)
    if a is None:
        return False
    shape = list(a.t.shape)
    n = int(np.prod(shape))
    kind = g.r.choice(["reshape", "flatten", "view", "contiguous", "t", "unsqueeze", "expand",
                       "flatten_part"])
    view = {"reshape": f"{a.name}.reshape(-1)", "flatten": f"torch.flatten({a.name})",
            "view": f"{a.name}.view({', '.join(map(str, _factor(g, n)))})",
            "contiguous": f"{a.name}.contiguous()", "t": f"{a.name}.mT",
            "unsqueeze": f"{a.name}.unsqueeze(0)",
            "expand": f"{a.name}.expand(2, {', '.join(map(str, shape))})",
            "flatten_part": f"torch.flatten({a.name}, 0, {len(shape) - 1 - (len(shape) > 1)})"}
    if kind == "t" and len(shape) < 2 or not g.try_line(view[kind], "view " + kind, True):
        return False
    v = g.vals[-1]
    target = a if kind == "expand" else v
    if _overlaps(target.t):
        return False
    write = g.r.choice(["add_", "mul_", "relu_", "setitem", "fill_slice", "copy_"])
    if write in ("add_", "mul_"):
        ok = g.try_line(f"{target.name}.{write}({g.r.choice(['1', '-2', '0.5'])})",
                        f"inplace via {kind}", True, inplace=True)
    elif write == "relu_":
        ok = g.try_line(f"torch.relu_({target.name})", f"inplace via {kind}", True, inplace=True)
    elif write == "copy_":
        src = g.new_input(tuple(target.t.shape[1:]), g.r.choice(_DTYPES))
        ok = g.try_line(f"{target.name}.copy_({src.name})", f"inplace via {kind}", True,
                        inplace=True)
    else:
        m = target.t.shape[0]
        at = str(g.r.randrange(-m, m)) if write == "setitem" else _slice_text(g, m)
        ok = _inplace_statement(g, target, f"{target.name}[{at}] = {g.r.choice(['0', '3'])}")
    return ok and g.try_line(f"{a.name}.clone()", "view read source", True)


def _scatter_pad(g: _Gen) -> bool:
    """Scatters and ``index_put`` (distinct indices unless accumulating), padding in every
    mode, interpolation, einsum forms, comparison chains, integer division by negative
    divisors, ``cumprod``, ``min`` / ``max`` with a dim (values and first indices)."""
    a = g.pick(lambda v: v.t.dim() > 0)
    if a is None:
        return False
    shape = list(a.t.shape)
    rank = len(shape)
    d = _dims(g, rank)
    op = g.r.choice(["scatter", "scatter_add", "scatter_reduce", "index_put", "index_put_acc",
                     "pad", "interpolate", "einsum", "compare_chain", "int_divmod", "cumprod",
                     "max_dim_idx", "index_add", "nan_inf"])
    if op in ("scatter", "scatter_add", "scatter_reduce"):
        ishape = [g.r.randint(1, x) for x in shape]
        # (scatter without accumulation writes distinct positions: a permutation's prefix)
        k = min(ishape[d], shape[d])
        ishape[d] = k
        perm = np.stack([g.nr.permutation(shape[d])[:k] for _ in range(int(np.prod(ishape)) // k)],
                        -1).reshape([k] + ishape[:d % rank] + ishape[d % rank + 1:])
        name = f"w{len(g.weights)}"
        g.weights[name] = g.torch.from_numpy(np.moveaxis(perm, 0, d % rank).astype("int64"))
        src = g.new_input(tuple(ishape), _dt(a))
        if op == "scatter":
            expr = f"torch.scatter({a.name}, {d}, self.{name}, {src.name})"
        elif op == "scatter_add":
            expr = f"torch.scatter_add({a.name}, {d}, self.{name}, {src.name})"
        else:
            red = g.r.choice(["sum", "prod", "amax", "amin", "mean"])
            expr = (f"torch.scatter_reduce({a.name}, {d}, self.{name}, {src.name}, '{red}', "
                    f"include_self={g.r.choice([True, False])})")
        return g.try_line(expr, "scatter " + op, a.exact and op != "scatter_reduce" or
                          a.exact and "mean" not in expr)
    if op in ("index_put", "index_put_acc", "index_add"):
        k = g.r.randint(1, shape[0])
        pos = g.nr.permutation(shape[0])[:k] if op == "index_put" else \
            g.nr.integers(0, shape[0], size=k)
        name = f"w{len(g.weights)}"
        g.weights[name] = g.torch.from_numpy(pos.astype("int64"))
        vals = g.new_input(tuple([k] + shape[1:]), _dt(a))
        if op == "index_add":
            return g.try_line(f"torch.index_add({a.name}, 0, self.{name}, {vals.name})",
                              "scatter index_add", a.exact)
        acc = op == "index_put_acc"
        return g.try_line(f"{a.name}.index_put((self.{name},), {vals.name}, accumulate={acc})",
                          "scatter " + op, a.exact)
    if op == "pad":
        mode = g.r.choice(["constant", "reflect", "replicate", "circular"])
        k = 1 if mode == "constant" else g.r.randint(1, min(3, rank - 1) if rank > 1 else 1)
        pads = []
        for x in shape[::-1][:k]:
            hi = x - 1 if mode == "reflect" else x if mode == "circular" else 2
            pads += [g.r.randint(-1 if mode == "constant" else 0, max(0, min(hi, 2)))
                     for _ in range(2)]
        extra = f", value={g.r.choice(['0.5', '-2'])}" if mode == "constant" else ""
        return g.try_line(f"F.pad({a.name}, {tuple(pads)}, mode='{mode}'{extra})",
                          "pad " + mode, a.exact)
    if op == "interpolate":
        if rank not in (3, 4) or not _is_float(a):
            return False
        mode = g.r.choice(["nearest", "nearest-exact", "linear" if rank == 3 else "bilinear"])
        size = tuple(g.r.randint(1, 2 * x) for x in shape[2:])
        ac = f", align_corners={g.r.choice([True, False])}" if "linear" in mode else ""
        how = f"size={size}" if g.r.random() < 0.6 else f"scale_factor={g.r.choice([2, 0.5])}"
        return g.try_line(f"F.interpolate({a.name}, {how}, mode='{mode}'{ac})",
                          "resize " + mode, a.exact and "linear" not in mode)
    if op == "einsum":
        if not _is_float(a):
            return False
        letters = "abcd"[:rank]
        form = g.r.choice(["perm", "trace", "reduce", "outer", "pair"])
        if form == "perm":
            out = list(letters)
            g.r.shuffle(out)
            return g.try_line(f"torch.einsum('{letters}->{''.join(out)}', {a.name})",
                              "einsum perm", a.exact)
        if form == "trace" and rank >= 2 and shape[-1] == shape[-2]:
            spec = letters[:-1] + letters[-2]
            return g.try_line(f"torch.einsum('{spec}->{letters[:-1]}', {a.name})",
                              "einsum diagonal", a.exact)
        if form == "reduce":
            return g.try_line(f"torch.einsum('{letters}->{letters[0]}', {a.name})",
                              "einsum reduce", a.exact)
        b = g.new_input(tuple(shape[-1:]) + (g.r.randint(1, 3),), _dt(a))
        if form == "outer":
            return g.try_line(f"torch.einsum('{letters},ez->{letters}ez', {a.name}, {b.name})",
                              "einsum outer", a.exact)
        return g.try_line(f"torch.einsum('{letters},{letters[-1]}z->{letters[:-1]}z', "
                          f"{a.name}, {b.name})", "einsum contract", a.exact)
    if op == "compare_chain":
        if not a.exact:
            return False
        b, _ = g.partner(a, exact=True)
        lo = g.r.choice(["-1", "0", "0.5"])
        return g.try_line(f"(({lo} < {a.name}) & ({a.name} <= {b})) | ({a.name} == {b})",
                          "binary compare chain", True)
    if op == "int_divmod":
        if _is_float(a) or not a.exact:
            return False
        den = g.r.choice(["-3", "-2", "2", "3"])
        fn = g.r.choice([f"torch.div({a.name}, {den}, rounding_mode='floor')",
                         f"torch.div({a.name}, {den}, rounding_mode='trunc')",
                         f"torch.remainder({a.name}, {den})", f"torch.fmod({a.name}, {den})",
                         f"{a.name} % {den}", f"{a.name} // {den}"])
        return g.try_line(fn, "binary int divmod", True)
    if op == "cumprod":
        return g.try_line(f"torch.cumprod(torch.clamp({a.name}, -2, 2), {d})", "misc cumprod",
                          a.exact)
    if op == "max_dim_idx":
        if not a.exact:
            return False
        fn = g.r.choice(["max", "min"])
        return g.try_line(f"torch.{fn}({a.name}, {d}, keepdim={g.r.choice([True, False])})",
                          f"reduce {fn} with indices", True, outputs=2)
    if not _is_float(a) or not a.exact:
        return False
    # (values torch defines at NaN / infinity: masks, replacement, propagation)
    special = g.new_input(tuple(shape), _dt(a))
    special.t.view(-1)[:: max(1, special.t.numel() // 3)] = g.torch.tensor(
        g.r.choice([float("nan"), float("inf"), -float("inf")]), dtype=special.t.dtype)
    g.feeds[special.name] = special.t.numpy().copy()
    special.exact = False
    fn = g.r.choice([f"torch.nan_to_num({special.name}, nan=0.0, posinf=7.0, neginf=-7.0)",
                     f"torch.isnan({special.name}) | torch.isinf({special.name})",
                     f"torch.where(torch.isfinite({special.name}), {special.name}, {a.name})",
                     f"torch.maximum({special.name}, {a.name})",
                     f"torch.clamp({special.name}, -1, 1)",
                     f"{special.name} > {a.name}", f"torch.sign({special.name})",
                     f"torch.isposinf({special.name})"])
    return g.try_line(fn, "nan_inf", True)


_RULES = ((_unary, 3), (_binary, 5), (_reduce, 3), (_index, 3), (_shape, 4), (_nn, 2),
          (_misc, 3), (_inplace, 1), (_view_write, 2),
          (_scatter_pad, 3))


def _first_input(g: _Gen) -> None:
    rank = g.r.choice([1, 2, 2, 3, 3, 4])
    shape = tuple(g.r.randint(1, 5) for _ in range(rank))
    g.new_input(shape, g.r.choice(_DTYPES))


def _widened(v: _Val) -> str:
    """An output's text: a bfloat16 value widened to float32 (exact) for numpy."""
    return f"{v.name}.float()" if str(v.t.dtype) == "torch.bfloat16" else v.name


def generate_torch_program(seed: int, max_lines: int = 6) -> TorchProgram:
    """A random valid program for ``seed`` (deterministic) with its eager outputs."""
    import torch

    with torch.no_grad():
        g = _Gen(seed)
        _first_input(g)
        rules, weights = zip(*_RULES, strict=True)
        want = g.r.randint(2, max_lines)
        tries = 0
        while len(g.lines) < want and tries < 60:
            tries += 1
            n_in, n_vals, n_w = len(g.inputs), len(g.vals), dict(g.weights)
            n_lines = len(g.lines)
            if not g.r.choices(rules, weights)[0](g):  # drop what the refused candidate made
                for name in g.inputs[n_in:]:
                    del g.feeds[name]
                del g.inputs[n_in:]
                del g.vals[n_vals:]
                del g.lines[n_lines:]
                g.weights = n_w
        produced = [v for v in g.vals if v.name.startswith("v")]
        if not produced:
            return generate_torch_program(seed + 1_000_003, max_lines)
        outs = [produced[-1]] + g.r.sample(produced[:-1], min(len(produced) - 1,
                                                              g.r.randint(0, 2)))
        src = [f"def forward(self, {', '.join(g.inputs)}):", *g.lines,
               f"    return ({', '.join(_widened(v) for v in outs)},)"]
        prog = TorchProgram(seed, "\n".join(src) + "\n", g.weights, g.feeds,
                            features=g.features, inplace=g.inplace)
        prog.features |= {"dtype " + str(v.dtype) for v in g.feeds.values()}
        m = build_module(prog)
        prog.expected = [o.detach().numpy().copy() for o in
                         m(*[torch.from_numpy(v.copy()) for v in prog.feeds.values()])]
    return prog
