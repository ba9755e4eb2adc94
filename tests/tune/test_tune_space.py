"""The declared knob spaces: keys per workload, defaults equal to the untuned schedule."""

from __future__ import annotations

import pickle

import pytest
from tune_helpers import BATCH_MATMUL, CONV, DENSE, MATMUL

from minitvm.relay.backend.te_compiler import build_te
from minitvm.relay.transform.pipeline import optimize
from minitvm.schedule import (
    LoweringOptions,
    conv_direct,
    conv_lanes,
    gemm,
    gemm_kernel,
    lower_te,
)
from minitvm.schedule.knobs import KnobTable, Space, key_text, select, space_of, use_knobs
from minitvm.transform.context import PassContext
from minitvm.tune.task import _primitive_calls
from minitvm.tune.workload import workload_program


def _stage_and_script(key, table=None):
    """The anchor stage of workload ``key`` and the PrimFunc text lowered with ``table``."""
    mod, _ = workload_program(key)
    with PassContext(opt_level=3):
        opt, _ = optimize(mod, "llvm", None)
    func = _primitive_calls(opt["main"])[0].op
    inputs, consts, outputs = build_te(func)
    # (the weight, a constant of the workload, is passed prepacked as a build passes it)
    weight = frozenset({1}) if key[0] in ("dense", "matmul", "conv2d_nchw") else frozenset()
    prim, _ = lower_te(list(inputs) + [c[0] for c in consts], outputs, "k", prepack=weight,
                       options=LoweringOptions(knobs=table))
    return outputs[0], prim.script()


def test_dense_space_declared():
    t, _ = _stage_and_script(DENSE)
    key, space = space_of(t, LoweringOptions())
    assert key == DENSE
    assert set(space.names) == {"impl", "mr", "nr", "mc", "min_work", "gemv_split"}
    assert space.size() > 100
    # the defaults are the constants the schedule used before it was tunable (the ISA's tile,
    # its width halved where the half divides N = 48 and the whole does not)
    mr, nr = gemm_kernel.default_tile()[0], gemm._dense_nr(DENSE[2])
    assert space.default() == {"impl": "generated", "mr": mr, "nr": nr,
                               "mc": gemm_kernel.default_mc(),
                               "min_work": gemm.DENSE_PARALLEL_MIN_WORK,
                               "gemv_split": gemm_kernel.GEMV_SPLIT}


def test_conv2d_space_declared():
    t, _ = _stage_and_script(CONV)
    key, space = space_of(t, LoweringOptions())
    assert key == CONV
    mr, nr = conv_direct.default_tile()
    direct = {"impl": "direct", "mr": mr, "nr": nr, "min_macs": conv_direct.PARALLEL_MIN_MACS,
              "unroll_kw": True}
    default = space.default()
    assert {k: default[k] for k in direct} == direct
    if conv_lanes.supported(t):  # (ENABLED, both ISAs: conv_lanes computes it; its knobs)
        assert set(default) - set(direct) == {"lanes_order", "lanes_cblock", "lanes_sums",
                                              "lanes_parts", "lanes_unroll_kx", "lanes_width",
                                              "lanes_direct", "lanes_rowstore"}
        assert all(len(space.values(k)) == 1 for k in direct if k != "impl")
        assert space.values("lanes_order") == ("channels", "bands")
    else:
        assert set(default) == set(direct)
    assert "im2col" not in space.values("impl")  # BLAS is not allowed by these options
    _, blas_space = space_of(t, LoweringOptions(blas=True))
    assert "im2col" in blas_space.values("impl")


@pytest.mark.parametrize("key", [DENSE, CONV, MATMUL, BATCH_MATMUL],
                         ids=["dense", "conv2d", "matmul", "batch_matmul"])
def test_default_knobs_reproduce_the_untuned_schedule(key):
    t, untuned = _stage_and_script(key)
    _, space = space_of(t, LoweringOptions())
    assert space_of(t, LoweringOptions())[0] == key
    _, explicit = _stage_and_script(key, KnobTable({key_text(key): space.default()}))
    assert explicit == untuned
    # and a non-default knob changes the kernel text (the kernel caches key on it)
    name = next(k for k in ("mr", "lanes_order") if len(space.values(k) if k in space.names
                                                         else ()) > 1)
    other = dict(space.default(), **{name: next(v for v in space.values(name)
                                                if v != space.default()[name])})
    _, tuned = _stage_and_script(key, KnobTable({key_text(key): other}))
    assert tuned != untuned


def test_knobs_outside_the_space_are_ignored():
    t, untuned = _stage_and_script(DENSE)
    bad = KnobTable({key_text(DENSE): {"mr": 1000, "nr": 16}})
    # the whole entry falls back
    assert select(LoweringOptions(knobs=bad), t)["mr"] == gemm_kernel.default_tile()[0]
    _, script = _stage_and_script(DENSE, bad)
    assert script == untuned


def test_knob_table_hash_pickle_and_tracing():
    a = KnobTable({"k": {"mr": 4}})
    b = KnobTable({"k": {"mr": 4}})
    assert a == b and hash(a) == hash(b)
    assert LoweringOptions(knobs=a) == LoweringOptions(knobs=b)
    assert LoweringOptions(knobs=a) != LoweringOptions()
    assert pickle.loads(pickle.dumps(a)) == a
    tr1, tr2 = KnobTable(trace=True), KnobTable(trace=True)
    assert tr1 != tr2  # a tracing table never shares kernels with another build
    t, _ = _stage_and_script(DENSE)
    select(LoweringOptions(knobs=tr1), t)
    assert list(tr1.seen) == [key_text(DENSE)]


def test_use_knobs_reaches_lowering_options():
    from minitvm.backend.options import lowering_options
    from minitvm.schedule.knobs import builtin_table

    table = KnobTable({"k": {"mr": 4}})
    assert lowering_options().knobs is builtin_table()  # outside: the built-in table, if any
    with use_knobs(table):
        assert lowering_options().knobs is table
    with use_knobs(None):
        assert lowering_options().knobs is None
    assert lowering_options().knobs is builtin_table()


def test_space_errors():
    with pytest.raises(ValueError, match="defaults"):
        Space.of({"a": 1}, b=(1, 2))
    space = Space.of({"a": 1}, a=(2, 3))
    assert space.values("a") == (1, 2, 3)
    with pytest.raises(ValueError, match="not among the declared values"):
        space.validate({"a": 7})
    with pytest.raises(KeyError, match="no knob 'b'"):
        space.validate({"b": 1})
