"""A toy second dialect on the shared core, written as a new user would (minitvm/ untouched):
its own nodes, hooks, text format and IR property, then the core's structural equality, IRModule
(beside Relay), passes, instruments, debug tools, NumericalBisect and diagnostics, unchanged."""

import io
import os
import re
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.instrument import NumericalBisect, PrintAfterChange
from minitvm.ir import IRModule, assert_structural_equal, structural_equal, structural_hash
from minitvm.ir.diagnostics import describe_expr, render_program
from minitvm.ir.dialect import find_hook, parse_module_text, register_hook, register_text_format
from minitvm.ir.expr import BaseFunc, GlobalVar, RelayExpr
from minitvm.ir.node import node_operands
from minitvm.transform import PassContext, Sequential, check_property, module_pass
from minitvm.transform.properties import PropertyError, register_property
from minitvm.transform.registry import register_pass, unregister_pass


# ------------------------------------------------------------------------------------ nodes
class ToyExpr(RelayExpr):
    __slots__ = ()

    def __init__(self, *values):
        super().__init__()
        for name, v in zip(self._node_fields, values):
            setattr(self, name, v)


class ToyVar(ToyExpr):
    __slots__ = ("name_hint",)
    _node_compare, _node_fields = "var", ()  # equal when bound at the same place

    def __init__(self, name):
        super().__init__()
        self.name_hint = name


class ToyConst(ToyExpr):
    __slots__ = ("value",)
    _node_fields = ("value",)


class ToyAdd(ToyExpr):
    __slots__ = ("a", "b")
    _node_fields = _node_operands = ("a", "b")
    op, text = staticmethod(np.add), "add"


class ToyMul(ToyAdd):
    __slots__ = ()
    op, text = staticmethod(np.multiply), "mul"


class ToyCall(ToyExpr):
    __slots__ = ("callee", "args")
    _node_fields, _node_operands = ("callee", "args"), ("*args",)


class ToyFunc(BaseFunc):
    __slots__ = ("params", "body")
    _node_fields, _node_binders = ("params", "body"), frozenset({"params"})
    _node_operands = ("*params", "body")

    def __init__(self, params, body):
        super().__init__()
        self.params, self.body, self.attrs = list(params), body, None


# ------------------------------------------------------------------- printing and parsing
def _text(e, annotate=None):
    note = annotate(e) if annotate else ""
    if isinstance(e, ToyVar):
        return f"%{e.name_hint}{note}"
    if isinstance(e, ToyConst):
        return f"{float(e.value)!r}{note}"
    if isinstance(e, ToyFunc):
        return f"toy fn({', '.join(map(_text, e.params))}) {{ {_text(e.body, annotate)} }}"
    head = f"@{e.callee.name_hint}" if isinstance(e, ToyCall) else e.text
    return f"{head}({', '.join(_text(c, annotate) for c in node_operands(e))}){note}"


def _module_text(mod, *_args, **_kw):
    """Toy functions as ``toy def``; another dialect's function with its own printer."""
    return "\n".join(f"toy def @{gv.name_hint}{_text(f)[len('toy fn'):]}"
                     if isinstance(f, ToyFunc) else f"@{gv.name_hint} = {f}"
                     for gv, f in sorted(mod.functions.items(), key=lambda kv: kv[0].name_hint))


_TOKEN = re.compile(r"\s*(-?\d+\.\d*(?:e-?\d+)?|[%@]?\w+|[(){},])")


def _parse_toy(text):
    toks, pos, gvars, mod = _TOKEN.findall(text), [0], {}, IRModule()

    def take(expect=None):
        pos[0] += 1
        assert expect in (None, toks[pos[0] - 1]), (toks[pos[0] - 1], expect)
        return toks[pos[0] - 1]

    def seq(item):
        take("(")
        out = [] if toks[pos[0]] == ")" else [item()]
        while take() == ",":
            out.append(item())
        return out

    def expr(scope):
        t = take()
        if t[0] == "%":
            return scope[t[1:]]
        if t[0] == "@":
            return ToyCall(gvars.setdefault(t[1:], GlobalVar(t[1:])), seq(lambda: expr(scope)))
        if t in ("add", "mul"):
            return (ToyAdd if t == "add" else ToyMul)(*seq(lambda: expr(scope)))
        return ToyConst(float(t))

    def func():
        params = seq(lambda: ToyVar(take()[1:]))
        take("{")
        body = expr({p.name_hint: p for p in params})
        take("}")
        return ToyFunc(params, body)

    while pos[0] < len(toks):
        take("toy")
        if take() == "fn":
            return func()
        name = take()[1:]
        mod[gvars.setdefault(name, GlobalVar(name))] = func()
    return mod


# -------------------------------------------------------------------- the dialect's hooks
def _walk(root):
    seen, stack = set(), [root]
    while stack:
        e = stack.pop()
        if id(e) not in seen:
            seen.add(id(e))
            yield e
            stack.extend(reversed(node_operands(e)))


def _from_expr(expr, functions=None, type_defs=None):
    if not isinstance(expr, ToyFunc):  # close over the free variables, in order of use
        expr = ToyFunc(list({id(e): e for e in _walk(expr) if isinstance(e, ToyVar)}.values()),
                       expr)
    mod = IRModule(functions, type_defs)
    mod["main"] = expr
    return mod


def _postorder(root, combine):
    """``combine(node, operand results)`` bottom-up over a DAG, with an explicit stack."""
    done, stack = {}, [(root, False)]
    while stack:
        e, ready = stack.pop()
        if id(e) in done:
            continue
        if ready:
            done[id(e)] = combine(e, [done[id(c)] for c in node_operands(e)])
        else:
            stack.append((e, True))
            stack.extend((c, False) for c in node_operands(e))
    return done[id(root)]


def _run(mod, fn, args):
    env = {id(p): np.asarray(a, "float64") for p, a in zip(fn.params, args)}

    def value(e, ops):
        if isinstance(e, ToyVar | ToyConst):
            return env[id(e)] if isinstance(e, ToyVar) else np.float64(e.value)
        return _run(mod, mod[e.callee], ops) if isinstance(e, ToyCall) else e.op(*ops)

    return _postorder(fn.body, value)


def _evaluate(mod, inputs, entry="main"):
    return [_run(mod, mod[entry], inputs)]


def _well_formed(gv, fn, limit=5):
    bound = {id(p) for p in fn.params}
    return [f"in @{gv.name_hint}: %{e.name_hint} is used but never bound" for e in _walk(fn.body)
            if isinstance(e, ToyVar) and id(e) not in bound][:limit]


for _cls in (ToyExpr, ToyFunc):
    register_hook("str", _cls, _text)
    register_hook("astext", _cls, lambda e, show_meta_data=True, annotate=None: _text(e))
    register_hook("script", _cls, lambda e, **kw: _text(e))
    register_hook("annotated_text", _cls, _text)
    register_hook("describe", _cls, lambda e: f"toy {type(e).__name__[3:].lower()}")
    register_hook("from_expr", _cls, _from_expr)
    register_hook("call", _cls, ToyCall)
for _name in ("module_str", "module_astext", "module_script"):
    register_hook(_name, ToyFunc, _module_text)
register_hook("file_suffix", ToyFunc, lambda mod: ".toy")
register_hook("evaluate", ToyFunc, _evaluate)
register_hook("input_specs", ToyFunc, lambda f: [(p.name_hint, (), "float32") for p in f.params])
register_hook("well_formed", ToyFunc, _well_formed)
register_text_format("toy", lambda text: text.lstrip().startswith("toy "), _parse_toy)


def _foldable(e):
    return isinstance(e, ToyAdd) and isinstance(e.a, ToyConst) and isinstance(e.b, ToyConst)


def _check_folded(mod, deep=False):
    for gv, f in mod.functions.items():
        bad = next((e for e in _walk(f) if _foldable(e)), None) if isinstance(f, ToyFunc) else None
        if bad is not None:
            return f"in @{gv.name_hint}: {_text(bad)} can be folded"
    return None


register_property("toy_folded", _check_folded, establish="ToyFoldConstant")


# ---------------------------------------------------------------------------------- passes
def _rewrite(mod, visit):
    """Rebuild every toy function bottom-up with ``visit(node) -> node``."""
    def rebuild(e, ops):
        if any(o is not c for o, c in zip(ops, node_operands(e))):
            e = ToyCall(e.callee, ops) if isinstance(e, ToyCall) else type(e)(*ops)
        return visit(e)

    for gv, f in list(mod.functions.items()):
        body = _postorder(f.body, rebuild) if isinstance(f, ToyFunc) else None
        if body is not None and body is not f.body:
            mod[gv] = ToyFunc(f.params, body)
    return mod


def toy_fold():
    return module_pass(lambda mod, ctx: _rewrite(mod, lambda e: ToyConst(e.op(e.a.value, e.b.value))
                                                 if _foldable(e) else e), name="ToyFoldConstant")


def toy_break():  # deliberately wrong: every add becomes a mul
    return module_pass(lambda mod, ctx: _rewrite(
        mod, lambda e: ToyMul(e.a, e.b) if type(e) is ToyAdd else e), name="ToyBreak")


@module_pass(name="ToyBoom")  # module level, so that a crash reproducer finds it again
def toy_boom(mod, ctx):
    raise RuntimeError(f"boom on {mod['main']}")


@pytest.fixture
def toy_passes():
    register_pass("ToyFoldConstant", toy_fold, override=True)
    yield
    unregister_pass("ToyFoldConstant")


def program():
    """main(x, y) = double(x) * (1 + 2) + y, double(z) = z + z."""
    x, y, z, double = ToyVar("x"), ToyVar("y"), ToyVar("z"), GlobalVar("double")
    mod = IRModule({double: ToyFunc([z], ToyAdd(z, z))})
    mod["main"] = ToyFunc([x, y], ToyAdd(ToyMul(double(x), ToyAdd(ToyConst(1.0), ToyConst(2.0))),
                                         y))
    return mod


def _fn(names, c):
    params = [ToyVar(n) for n in names]
    return ToyFunc(params, ToyAdd(ToyMul(params[0], ToyConst(c)), params[-1]))


# ----------------------------------------------------------------------------------- tests
def test_structural_equality_hash_and_mismatch_path():
    a, b = _fn("xy", 2.0), _fn("pq", 2.0)
    assert structural_equal(a, b) and structural_hash(a) == structural_hash(b)
    assert_structural_equal(a, b)
    assert not structural_equal(a, _fn("xy", 3.0))
    assert structural_hash(a) != structural_hash(_fn("xy", 3.0))
    with pytest.raises(ValueError, match=r"root\.body\.a\.b\.value: 2\.0 vs 3\.0") as err:
        assert_structural_equal(a, _fn("xy", 3.0))
    assert "toy fn(%x, %y) { add(mul(%x, 2.0), %y) }" in str(err.value)
    x = ToyVar("x")  # swapping the uses of two params is not a renaming
    assert not structural_equal(a, ToyFunc([x, ToyVar("y")], ToyAdd(ToyMul(x, ToyConst(2.0)), x)))
    assert not structural_equal(ToyAdd(ToyVar("x"), ToyConst(1.0)),  # free vars: by identity
                                ToyAdd(ToyVar("x"), ToyConst(1.0)))


def test_text_format_roundtrip_and_mixed_module():
    mod = program()
    text = str(mod)
    assert text.splitlines()[1] == "toy def @main(%x, %y) { add(mul(@double(%x), add(1.0, 2.0)), %y) }"
    assert mod.astext() == mod.script() == text
    assert_structural_equal(parse_module_text(text), mod)
    assert structural_hash(parse_module_text(text)) == structural_hash(mod)
    assert_structural_equal(parse_module_text(str(mod["main"])), mod["main"])
    rx = relay.var("x", shape=(2,))
    relay_text = str(relay.Function([rx], relay.add(rx, rx)))
    assert "add(%x, %x)" in relay_text and "Tensor[(2), float32]" in relay_text
    relay_fn = relay.Function([rx], relay.add(rx, rx))
    for mixed in (IRModule({"relay_fn": relay_fn}), IRModule()):  # Relay's printer, then toy's
        mixed.update(program())
        mixed["relay_fn"] = relay_fn
        assert str(mixed["main"]).startswith("toy fn(%x, %y) { add(mul(@double(%x)")
        assert str(mixed["relay_fn"]) == relay_text
        assert "add(mul(@double(%x), add(1.0, 2.0)), %y)" in str(mixed)
        assert "add(%x, %x)" in str(mixed)
        assert structural_equal(mixed, mixed.shallow_copy()) and not structural_equal(mixed, mod)
    assert find_hook("str", relay.Function) is not _text  # Relay nodes keep Relay's hooks
    assert find_hook("evaluate", relay.Function) is not _evaluate


def test_from_expr_and_global_calls():
    f = _fn("ab", 4.0)
    assert IRModule.from_expr(f)["main"] is f
    x = ToyVar("x")
    closed = IRModule.from_expr(ToyMul(x, x))["main"]
    assert isinstance(closed, ToyFunc) and closed.params == [x]
    call = GlobalVar("f")(x, ToyConst(1.0))
    assert isinstance(call, ToyCall) and str(call) == "@f(%x, 1.0)"
    np.testing.assert_allclose(_evaluate(program(), [3.0, 1.0]), [19.0])


def test_module_pass_sequential_printir_and_instruments(capsys):
    changes = io.StringIO()
    seq = Sequential([toy_fold(), tvm.transform.PrintIR("folded"), toy_fold()])
    with PassContext(instruments=[PrintAfterChange(file=changes)]):
        out = seq(program())
    assert "mul(@double(%x), 3.0)" in str(out) and "add(1.0, 2.0)" in str(program())
    assert "PrintIR(folded):\ntoy def @double" in capsys.readouterr().err
    assert "*** IR changed by pass ToyFoldConstant ***" in changes.getvalue()
    assert "+toy def @main(%x, %y) { add(mul(@double(%x), 3.0), %y) }" in changes.getvalue()
    assert check_property("toy_folded", program()) == "in @main: add(1.0, 2.0) can be folded"
    assert check_property("toy_folded", out) is None
    with PassContext(config={"testing.immutable_module": True}):
        seq(program())  # the passes copy the module


def test_property_contract(toy_passes):
    seen = []

    @module_pass(name="ToyNeedsFolded", needs=["toy_folded"])
    def consumer(mod, ctx):
        seen.append(check_property("toy_folded", mod))
        return mod

    consumer(program())  # the manager runs the registered establisher ToyFoldConstant first
    assert seen == [None]
    liar = module_pass(lambda mod, ctx: mod, name="ToyLiar", establishes=["toy_folded"])
    with PassContext(config={"transform.verify_each": True}):
        with pytest.raises(PropertyError, match="ToyLiar.*toy_folded.*can be folded"):
            liar(program())


def test_verify_each_ir_dumps_and_crash_reproducer(tmp_path):
    @module_pass(name="ToyLeak")
    def leak(mod, ctx):
        mod["main"] = ToyFunc([], ToyVar("ghost"))
        return mod

    with PassContext(config={"transform.verify_each": True, "transform.crash_reproducer": False}):
        with pytest.raises(tvm.transform.WellFormedError, match="%ghost is used but never bound"):
            leak(program())
    with PassContext(config={"transform.dump_ir_dir": str(tmp_path / "dumps")}):
        Sequential([toy_fold()])(program())
    (dump,) = os.listdir(tmp_path / "dumps")
    assert dump.endswith("ToyFoldConstant.toy")
    assert "mul(@double(%x), 3.0)" in str(parse_module_text((tmp_path / "dumps" / dump).read_text()))
    with PassContext(config={"transform.reproducer_dir": str(tmp_path)}):
        with pytest.raises(RuntimeError) as err:
            toy_boom(program())
    assert err.value.reproducer.endswith(".toy")
    with pytest.raises(RuntimeError, match=re.escape(f"boom on {program()['main']}")):
        tvm.transform.reproduce(err.value.reproducer)  # the module comes back from toy text


def test_numerical_bisect_finds_the_wrong_pass():
    calls = []

    def evaluator(mod, inputs, entry):
        calls.append(entry)
        return _evaluate(mod, inputs, entry)

    for kwargs in ({}, {"inputs": [np.float32(1.5), np.float32(-2.0)]}, {"evaluator": evaluator}):
        bisect = NumericalBisect(**kwargs)
        with PassContext(instruments=[bisect]):
            Sequential([toy_fold(), toy_break(), toy_fold()])(program())
        assert bisect.report().startswith("first pass whose outputs differ: #2 ToyBreak")
    assert calls == ["main"] * 3  # the reference, after ToyFoldConstant, after ToyBreak


def test_diagnostics_use_the_dialect_hooks():
    x, y = ToyVar("x"), ToyVar("y")
    bad = ToyMul(x, ToyConst(0.0))
    assert describe_expr(bad) == "toy mul"
    lines = render_program(ToyFunc([x, y], ToyAdd(bad, y)), bad, "multiplies by zero").splitlines()
    assert "mul(%x, 0.0) /* error: multiplies by zero */" in lines[0]
    assert lines[1].strip() == "^^^ the error is here"


def test_deep_chain_at_default_recursion_limit():
    assert sys.getrecursionlimit() <= 10_000

    def chain(last):
        x = ToyVar("x")
        e = x
        for i in range(100_000):
            e = ToyAdd(e, ToyConst(last if i == 0 else 1.0))
        return ToyFunc([x], e)

    a, b, c = chain(1.0), chain(1.0), chain(2.0)
    assert structural_equal(a, b) and structural_hash(a) == structural_hash(b)
    assert not structural_equal(a, c)
