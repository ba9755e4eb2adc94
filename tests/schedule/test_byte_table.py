"""8-bit elementwise stages that are a function of one byte (``schedule/byte_table.py``): the
lookup-table activations of quantized TFLite models (``take(table, cast(x, int32) - lo)`` and a
requantization) become a 256-entry table and 64-lane lookups (``tir.byte_lut256``), equal to
numpy for int8 and uint8 data, with a tail of under 64 elements and over several parallel tasks;
also through the lane-by-lane code that hosts without AVX-512 VBMI get. Small stages, stages that
do not gather, and stages that read a second tensor keep their plain loop."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.codegen.llvm import byte_lut
from minitvm.contrib import graph_executor
from minitvm.schedule import byte_table
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts


@pytest.fixture
def fresh_kernels():
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


@pytest.fixture
def tables_here(monkeypatch, request):
    """The table schedule on: with ``vpermi2b`` where the host has VBMI, else (and when the
    test asks for ``lane_by_lane``) the codegen's lane-by-lane lookup."""
    monkeypatch.setattr(byte_table, "applies", lambda: True)
    if getattr(request, "param", False) or not byte_lut.host_vbmi():
        monkeypatch.setattr(byte_lut, "host_vbmi", lambda: False)


def _lut_graph(shape, dtype, table, lo, extra=None):
    x = relay.var("x", shape=shape, dtype=dtype)
    y = relay.take(relay.const(table), relay.subtract(relay.cast(x, "int32"),
                                                      relay.const(lo, "int32")),
                   axis=0, mode="fast")
    y = relay.cast(relay.add(relay.cast(y, "int16"), relay.const(3, "int16")), "uint8")
    args = [x]
    if extra is not None:  # a second tensor read elementwise: not a function of one byte
        z = relay.var("z", shape=shape, dtype="uint8")
        y = relay.add(y, z)
        args.append(z)
    return tvm.IRModule.from_expr(relay.Function(args, y))


def _build(mod):
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target="llvm")


def _run(lib, **inputs):
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in inputs.items():
        m.set_input(k, v)
    m.run()
    return m.get_output(0).numpy()


def _lookups(lib) -> list:
    return [e for k in lib.get_lib().kernels.values() for s in walk_stmts(k.prim_func.body)
            if isinstance(s, S.BufferStore) for e in post_order(s.value)
            if isinstance(e, E.Call) and e.op_name == "tir.byte_lut256"]


def _data(shape, dtype, seed=0):
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max + 1, shape).astype(dtype)


@pytest.mark.parametrize("tables_here", [False, True], indirect=True,
                         ids=["host", "lane_by_lane"])
@pytest.mark.parametrize("shape,dtype", [((128, 1024), "int8"), ((3, 1000, 7), "uint8"),
                                         ((1, 40000), "int8")])
def test_lut_activation_is_a_table_lookup_matching_numpy(shape, dtype, tables_here,
                                                          fresh_kernels):
    lo = -128 if dtype == "int8" else 0
    table = _data((256,), "int8", 1)
    lib = _build(_lut_graph(shape, dtype, table, lo))
    (look,) = _lookups(lib)
    # one lookup of 64 lanes inside a vectorized loop of 64
    loops = [s for k in lib.get_lib().kernels.values() for s in walk_stmts(k.prim_func.body)
             if isinstance(s, S.For) and s.kind == S.ForKind.VECTORIZED]
    assert any(int(s.extent.value) == byte_table.LANES and any(
        e is look for e in post_order(s.body.value)) for s in loops
        if isinstance(s.body, S.BufferStore))
    x = _data(shape, dtype)
    ref = (table[x.astype(int) - lo].astype("int16") + 3).astype("uint8")
    np.testing.assert_array_equal(_run(lib, x=x), ref)


def test_small_non_gathering_and_two_input_stages_keep_their_loops(tables_here,
                                                                    fresh_kernels):
    table = _data((256,), "int8", 2)
    small = _build(_lut_graph((4, 100), "int8", table, -128))
    assert not _lookups(small)
    x = _data((4, 100), "int8")
    np.testing.assert_array_equal(_run(small, x=x),
                                  (table[x.astype(int) + 128].astype("int16") + 3)
                                  .astype("uint8"))
    two = _build(_lut_graph((64, 256), "int8", table, -128, extra=True))
    assert not _lookups(two)
    x, z = _data((64, 256), "int8"), _data((64, 256), "uint8", 3)
    want = ((table[x.astype(int) + 128].astype("int16") + 3).astype("uint8") + z)
    np.testing.assert_array_equal(_run(two, x=x, z=z), want)
    # a requantization alone (no table read): the plain vector loop is as fast
    y = relay.var("x", shape=(64, 256), dtype="int8")
    q = relay.cast(relay.clip(relay.round(relay.multiply(relay.cast(y, "float32"),
                                                         relay.const(0.5))), -128, 127), "int8")
    plain = _build(tvm.IRModule.from_expr(relay.Function([y], q)))
    assert not _lookups(plain)


def test_lookup_rejects_other_widths():
    from llvmlite import ir

    mod = ir.Module()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), []), "f")
    bld = ir.IRBuilder(fn.append_basic_block())
    v16 = ir.Constant(ir.VectorType(ir.IntType(8), 16), [0] * 16)
    with pytest.raises(ValueError, match="64-lane vectors of bytes"):
        byte_lut.emit(bld, None, v16, v16, v16, v16, v16)
