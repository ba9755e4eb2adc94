"""Regression tests (Relax II fixes): DeadCodeElimination elides ``lv = f(..); gv = lv`` into
``gv = f(..)`` (what FuseTIR's output relies on); the lowering passes share one module-pass
helper (``lower_utils.function_rewrite_pass``)."""

import sys

import numpy as np
from relax_pass_util import T, assert_equal, assert_same_results

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax import transform as rt
from minitvm.relax.transform.dead_code_elimination import elide_intermediate_dataflow_vars
from minitvm.relax.transform.lower_utils import function_rewrite_pass
from minitvm.transform.stats import add_stat_sink, remove_stat_sink


class collect_stats:  # noqa: N801 - used like a function
    """The statistics recorded inside the block, summed by name."""

    def __enter__(self):
        self.stats: dict = {}
        add_stat_sink(self._sink)
        return self.stats

    def _sink(self, name, count):
        self.stats[name] = self.stats.get(name, 0) + count

    def __exit__(self, *exc):
        remove_stat_sink(self._sink)
        return False


def _module(fn, n_params=1):
    xs = [relax.Var(f"x{k}", T(2, 3)) for k in range(n_params)]
    bb = relax.BlockBuilder()
    with bb.function("main", xs):
        bb.emit_func_output(fn(bb, *xs))
    return bb.get()


def test_dce_elides_output_alias_of_intermediate():
    def before(bb, x):
        with bb.dataflow():
            a = bb.emit(R.add(x, x))
            lv = bb.emit(R.exp(a))
            gv = bb.emit_output(lv)
        return gv

    def expected(bb, x):
        with bb.dataflow():
            a = bb.emit(R.add(x, x))
            gv = bb.emit_output(R.exp(a))
        return gv

    mod = _module(before)
    after = rt.DeadCodeElimination()(mod)
    assert_equal(after, _module(expected))
    assert_same_results(mod, after, "main", np.random.rand(2, 3).astype("float32"))


def test_dce_keeps_alias_when_intermediate_used_elsewhere():
    def before(bb, x):
        with bb.dataflow():
            lv = bb.emit(R.exp(x))
            gv = bb.emit_output(lv)  # lv also feeds gv2: the alias stays
            gv2 = bb.emit_output(R.add(lv, x))
        return relax.Tuple([gv, gv2])

    mod = _module(before)
    assert_equal(rt.DeadCodeElimination()(mod), mod)

    def twice(bb, x):
        with bb.dataflow():
            lv = bb.emit(R.exp(x))
            gv = bb.emit_output(lv)
            gv2 = bb.emit_output(lv)  # two aliases of one value: kept
        return relax.Tuple([gv, gv2])

    mod = _module(twice)
    assert_equal(rt.DeadCodeElimination()(mod), mod)


def test_dce_elision_counts_in_stats():
    def before(bb, x):
        with bb.dataflow():
            lv = bb.emit(R.exp(x))
            gv = bb.emit_output(lv)
        return gv

    with collect_stats() as stats:
        rt.DeadCodeElimination()(_module(before))
    assert stats.get("bindings removed") == 1, stats


def test_dce_elision_large_block():
    n = 100_000
    x = relax.Var("x", T(2, 3))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            v = x
            for _ in range(n):
                v = bb.emit(R.exp(v))
            gv = bb.emit_output(v)
        bb.emit_func_output(gv)
    func = bb.get()["main"]
    assert sys.getrecursionlimit() <= 10_000
    new, count = elide_intermediate_dataflow_vars(func)
    assert count == 1
    binds = new.body.blocks[0].bindings
    assert len(binds) == n and binds[-1].var is gv


def _count_exps(func, mod):
    """A rewrite for the helper: counts the exp calls without changing the function."""
    n = sum(1 for blk in func.body.blocks for b in blk.bindings
            if isinstance(b.value, relax.Call) and getattr(b.value.op, "name", "") == "relax.exp")
    return func, n


def test_function_rewrite_pass_records_and_keeps():
    def body(bb, x):
        with bb.dataflow():
            lv = bb.emit(R.exp(x))
            gv = bb.emit_output(R.exp(lv))
        return gv

    mod = _module(body)
    p = function_rewrite_pass(_count_exps, "CountExps", "exps counted")
    assert p.info.name == "CountExps" and p.info.opt_level == 0
    with collect_stats() as stats:
        out = p(mod)
    assert_equal(out, mod)
    assert stats.get("exps counted") == 2, stats
    # a module without Relax functions is left alone (and nothing is counted)
    empty = tvm.IRModule({})
    with collect_stats() as stats:
        assert not p(empty).functions
    assert not stats


def test_lowering_passes_use_the_helper():
    names = {rt.CallTIRRewrite(): "CallTIRRewrite", rt.LowerAllocTensor(): "LowerAllocTensor",
             rt.VMBuiltinLower(): "VMBuiltinLower", rt.KillAfterLastUse(): "KillAfterLastUse"}
    for p, name in names.items():
        assert p.info.name == name and p.info.opt_level == 0
