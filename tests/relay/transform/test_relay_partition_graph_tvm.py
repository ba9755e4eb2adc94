"""PartitionGraph against TVM v0.19's expected programs (test_pass_partition_graph.py's
structural cases, restated): function names ``tvmgen_default_<compiler>_<function>_<region id>``
with TVM's region numbering, the four attributes, constant binding, tuple outputs flattened,
several outputs, duplicate outputs, the ``relay.ext.<compiler>.optimize`` hook; plus numerics."""

from __future__ import annotations

import numpy as np
import pytest
from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform
from minitvm.relay.build_module import bind_params_by_name
from minitvm.relay.op.annotation import compiler_begin as cb
from minitvm.relay.op.annotation import compiler_end as ce
from minitvm.relay.testing.temp_op_attr import TempOpAttr


def _ext(func, compiler, name):
    """``func`` with the attributes PartitionGraph gives an external function."""
    for key, value in (("Primitive", tvm.tir.IntImm("int32", 1)),
                       ("Inline", tvm.tir.IntImm("int32", 1)),
                       ("Compiler", compiler), ("global_symbol", name)):
        func = func.with_attr(key, value)
    return func


def _annotate_ops(mod, ops, compiler):
    """Wrap every call of an op in ``ops``: its arguments in compiler_begin, itself in
    compiler_end (the per-op annotator TVM's tests use)."""

    class Annotate(relay.ExprMutator):
        def visit_call(self, call):
            if isinstance(call.op, tvm.ir.Op) and call.op.name in ops:
                args = [cb(self.visit(a), compiler) for a in call.args]
                return ce(relay.Call(call.op, args, call.attrs, call.type_args), compiler)
            return super().visit_call(call)

    out = tvm.IRModule()
    for gv, fn in mod.functions.items():
        out[gv] = Annotate().visit(fn)
    return out


def _same(got, expected):
    tvm.ir.assert_structural_equal(got, transform.InferType()(expected), map_free_vars=True)


def _log_exp_concat(a, b):
    add = a + b
    return relay.concatenate([relay.log(add), relay.exp(add)], axis=0)


def _fused_log_exp(shape, arg):
    p0 = relay.var("p0", shape=shape)
    fused = relay.Function([p0], relay.concatenate([relay.log(p0), relay.exp(p0)], axis=0))
    return relay.Call(fused.with_attr("Primitive", tvm.tir.IntImm("int32", 1)), [arg])


@pytest.mark.parametrize("compiler,mangled", [("ccompiler", "ccompiler"),
                                              ("unsanitary-name++", "unsanitary_name__")])
def test_one_op_offloaded_rest_fused(compiler, mangled):
    x, y = relay.var("x", shape=(8, 8)), relay.var("y", shape=(8, 8))
    before = tvm.IRModule.from_expr(relay.Function([x, y], _log_exp_concat(x, y)))
    part = transform.PartitionGraph()(_annotate_ops(before, {"add", "subtract"}, compiler))
    got = transform.FuseOps(2)(part)

    name = f"tvmgen_default_{mangled}_main_0"
    x0, y0 = relay.var("x0", shape=(8, 8)), relay.var("y0", shape=(8, 8))
    exp = tvm.IRModule()
    gv = relay.GlobalVar(name)
    exp[gv] = _ext(relay.Function([x0, y0], x0 + y0), compiler, name)
    exp["main"] = relay.Function([x, y], _fused_log_exp((8, 8), relay.Call(gv, [x, y])))
    _same(got, exp)
    assert part[name].get_attr("Compiler") == compiler
    check_numerics(before, part)


def test_each_function_names_its_regions():
    mod = tvm.IRModule()
    x, y = relay.var("x", shape=(8, 8)), relay.var("y", shape=(8, 8))
    a, b = relay.var("a", shape=(16, 16)), relay.var("b", shape=(16, 16))
    mod["main"] = relay.Function([x, y], _log_exp_concat(x, y))
    mod["subfunction"] = relay.Function([a, b], _log_exp_concat(a, b))
    got = transform.FuseOps(2)(transform.PartitionGraph()(_annotate_ops(mod, {"add"},
                                                                        "ccompiler")))
    exp = tvm.IRModule()
    for fname, (p, q), shape in (("main", (x, y), (8, 8)), ("subfunction", (a, b), (16, 16))):
        name = f"tvmgen_default_ccompiler_{fname}_0"
        p0, q0 = relay.var("p0", shape=shape), relay.var("q0", shape=shape)
        gv = relay.GlobalVar(name)
        exp[gv] = _ext(relay.Function([p0, q0], p0 + q0), "ccompiler", name)
        exp[fname] = relay.Function([p, q], _fused_log_exp(shape, relay.Call(gv, [p, q])))
    _same(got, exp)


def _bn_vars(suffix=""):
    shape = relay.TensorType((16,), "float32")
    return [relay.var(n + suffix, shape) for n in ("bn_gamma", "bn_beta", "bn_mean", "bn_var")]


def test_region_ids_count_every_begin():
    # TVM opens a region at every compiler_begin and merges them: conv2d keeps id 0 (its two
    # begins were regions 0 and 1), batch_norm's first begin is region 2.
    data = relay.var("data", relay.TensorType((1, 3, 8, 8), "float32"))
    weight = relay.var("weight", relay.TensorType((16, 3, 3, 3), "float32"))
    bn = _bn_vars()
    conv = relay.nn.conv2d(data, weight, kernel_size=(3, 3), channels=16, padding=(1, 1))
    out = relay.nn.batch_norm(conv, *bn).astuple()
    before = transform.InferType()(tvm.IRModule.from_expr(relay.Function([data, weight, *bn],
                                                                           out)))
    got = transform.PartitionGraph()(_annotate_ops(before, {"nn.batch_norm", "nn.conv2d"},
                                                   "test_compiler"))

    exp = tvm.IRModule()
    d0 = relay.var("data0", relay.TensorType((1, 16, 8, 8), "float32"))
    bn1 = _bn_vars("1")
    g_bn = relay.GlobalVar("tvmgen_default_test_compiler_main_2")
    exp[g_bn] = _ext(relay.Function([d0, *bn1], relay.nn.batch_norm(d0, *bn1).astuple()),
                     "test_compiler", g_bn.name_hint)
    d1 = relay.var("data1", relay.TensorType((1, 3, 8, 8), "float32"))
    w1 = relay.var("weight1", relay.TensorType((16, 3, 3, 3), "float32"))
    g_conv = relay.GlobalVar("tvmgen_default_test_compiler_main_0")
    exp[g_conv] = _ext(relay.Function([d1, w1], relay.nn.conv2d(
        d1, w1, kernel_size=(3, 3), channels=16, padding=(1, 1))), "test_compiler",
        g_conv.name_hint)
    exp["main"] = relay.Function([data, weight, *bn],
                                 g_bn(g_conv(data, weight), *bn))
    _same(got, exp)
    check_numerics(before, got, rtol=1e-4, atol=1e-4)


def test_constant_input_is_bound_into_the_function():
    ones = np.ones((8, 8), "float32")
    x, y = relay.var("x", shape=(8, 8)), relay.var("y", shape=(8, 8))
    f = bind_params_by_name(relay.Function([x, y], relay.log(x + y)), {"x": tvm.nd.array(ones)})
    before = tvm.IRModule.from_expr(f)
    got = transform.PartitionGraph()(_annotate_ops(before, {"add"}, "ccompiler"))

    y0 = relay.var("y0", shape=(8, 8))
    gv = relay.GlobalVar("tvmgen_default_ccompiler_main_0")
    exp = tvm.IRModule()
    exp[gv] = _ext(relay.Function([y0], relay.const(ones) + y0), "ccompiler", gv.name_hint)
    exp["main"] = relay.Function([y], relay.log(relay.Call(gv, [y])))
    _same(got, exp)
    check_numerics(before, got)

    kept = transform.PartitionGraph(bind_constants=False)(_annotate_ops(before, {"add"},
                                                                        "ccompiler"))
    x0 = relay.var("x0", shape=(8, 8))
    exp2 = tvm.IRModule()
    exp2[gv] = _ext(relay.Function([x0, y0], x0 + y0), "ccompiler", gv.name_hint)
    exp2["main"] = relay.Function([y], relay.log(relay.Call(gv, [relay.const(ones), y])))
    _same(kept, exp2)
    check_numerics(before, kept)


def test_several_outputs_become_a_tuple():
    data = relay.var("data", relay.TensorType((1, 3, 8, 8), "float32"))
    weight = relay.var("weight", relay.TensorType((16, 3, 3, 3), "float32"))
    bn = _bn_vars()
    t = "test_target"
    conv = relay.nn.conv2d(cb(data, t), cb(weight, t), kernel_size=(3, 3), channels=16,
                           padding=(1, 1))
    bno = relay.nn.batch_norm(conv, *[cb(v, t) for v in bn])
    body = relay.Tuple((ce(relay.nn.relu(bno[0]), t), relay.abs(ce(bno[1], t)),
                        relay.abs(ce(bno[2], t))))
    before = tvm.IRModule.from_expr(relay.Function([data, weight, *bn], body))
    got = transform.PartitionGraph()(before)

    ps = [relay.var(f"test_target_0_i{i}", v.type_annotation)
          for i, v in enumerate([data, weight, *bn])]
    c = relay.nn.conv2d(ps[0], ps[1], kernel_size=(3, 3), channels=16, padding=(1, 1))
    b = relay.nn.batch_norm(c, *ps[2:])
    gv = relay.GlobalVar("tvmgen_default_test_target_main_0")
    exp = tvm.IRModule()
    exp[gv] = _ext(relay.Function(ps, relay.Tuple((relay.nn.relu(b[0]), b[1], b[2]))), t,
                   gv.name_hint)
    call = gv(data, weight, *bn)
    exp["main"] = relay.Function([data, weight, *bn], relay.Tuple((
        relay.TupleGetItem(call, 0), relay.abs(relay.TupleGetItem(call, 1)),
        relay.abs(relay.TupleGetItem(call, 2)))))
    _same(got, exp)


def test_one_region_with_single_and_shared_outputs():
    t = "test_target"
    data = relay.var("data", shape=(10, 10))
    o1 = relay.abs(cb(data, t))
    e2 = ce(o1, t)
    e3 = ce(relay.nn.relu(o1), t)
    body = ce(relay.add(cb(e3, t), cb(relay.tanh(e2), t)), t)
    before = tvm.IRModule.from_expr(relay.Function([data], body))
    got = transform.PartitionGraph()(transform.InferType()(before))

    exp = tvm.IRModule()
    i0 = relay.var("test_target_0_i0", shape=(10, 10))
    a = relay.abs(i0)
    g0 = relay.GlobalVar("tvmgen_default_test_target_main_0")
    exp[g0] = _ext(relay.Function([i0], relay.Tuple((relay.nn.relu(a), a))), t, g0.name_hint)
    j0, j1 = relay.var("test_target_1_i0", shape=(10, 10)), relay.var("j1", shape=(10, 10))
    g1 = relay.GlobalVar("tvmgen_default_test_target_main_1")
    exp[g1] = _ext(relay.Function([j0, j1], relay.add(j0, j1)), t, g1.name_hint)
    out = g0(data)
    exp["main"] = relay.Function([data], g1(relay.TupleGetItem(out, 0),
                                            relay.tanh(relay.TupleGetItem(out, 1))))
    _same(got, exp)
    check_numerics(before, got)


def _sub_log_mul():
    x, y, z = (relay.var(n, shape=(8, 8)) for n in "xyz")
    add = x + y
    f = relay.Function([x, y, z], relay.log(add) * (add - z))
    return tvm.IRModule.from_expr(f), (x, y, z)


def test_output_used_twice_same_region():
    before, (x, y, z) = _sub_log_mul()
    ann = _annotate_ops(before, {"subtract", "log", "multiply"}, "ccompiler")
    got = transform.PartitionGraph()(transform.MergeCompilerRegions()(ann))
    x0, y0 = relay.var("x0", shape=(8, 8)), relay.var("y0", shape=(8, 8))
    gv = relay.GlobalVar("tvmgen_default_ccompiler_main_0")
    exp = tvm.IRModule()
    exp[gv] = _ext(relay.Function([x0, y0], relay.log(x0) * (x0 - y0)), "ccompiler",
                   gv.name_hint)
    exp["main"] = relay.Function([x, y, z], relay.Call(gv, [x + y, z]))
    _same(got, exp)
    check_numerics(before, got)


def test_output_used_twice_different_regions():
    before, (x, y, z) = _sub_log_mul()
    ann = _annotate_ops(before, {"subtract", "log"}, "ccompiler")
    got = transform.PartitionGraph()(transform.MergeCompilerRegions()(ann))
    i0 = relay.var("i0", shape=(8, 8))
    x0, y0 = relay.var("x0", shape=(8, 8)), relay.var("y0", shape=(8, 8))
    g0 = relay.GlobalVar("tvmgen_default_ccompiler_main_0")
    g1 = relay.GlobalVar("tvmgen_default_ccompiler_main_1")
    exp = tvm.IRModule()
    exp[g0] = _ext(relay.Function([i0], relay.log(i0)), "ccompiler", g0.name_hint)
    exp[g1] = _ext(relay.Function([x0, y0], x0 - y0), "ccompiler", g1.name_hint)
    add = x + y
    exp["main"] = relay.Function([x, y, z], relay.Call(g0, [add]) * relay.Call(g1, [add, z]))
    _same(got, exp)
    check_numerics(before, got)


def _yes(expr):
    return True


def test_duplicate_outputs_one_result():
    target = "test_duplicate_outputs"
    data = relay.var("data", shape=(10, 10))
    x = relay.abs(data)
    before = tvm.IRModule.from_expr(relay.Function(
        [data], relay.Tuple([relay.nn.relu(x), relay.tanh(x), relay.log(x)])))
    with TempOpAttr("abs", "target." + target, _yes):
        got = tvm.transform.Sequential([transform.AnnotateTarget(target),
                                        transform.MergeCompilerRegions(),
                                        transform.PartitionGraph()])(before)
    i0 = relay.var(target + "_0_i0", shape=(10, 10))
    gv = relay.GlobalVar(f"tvmgen_default_{target}_main_0")
    exp = tvm.IRModule()
    exp[gv] = _ext(relay.Function([i0], relay.abs(i0)), target, gv.name_hint)
    out = gv(data)
    exp["main"] = relay.Function([data], relay.Tuple([relay.nn.relu(out), relay.tanh(out),
                                                      relay.log(out)]))
    _same(got, exp)
    check_numerics(before, got)


def test_duplicate_merge_and_tuple_get_item():
    target = "test_duplicate_merge_and_tuplegetitem"
    data = relay.var("data", shape=(10, 10))
    bn = [relay.var(n) for n in ("bn_gamma", "bn_beta", "bn_mean", "bn_var")]
    x = relay.nn.batch_norm(data, *bn)
    mean = x[1]  # one projection used twice
    before = transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [data, *bn], relay.Tuple([relay.nn.relu(x[0]), relay.tanh(mean), relay.log(mean)]))))
    with TempOpAttr("nn.batch_norm", "target." + target, _yes), \
            TempOpAttr("nn.relu", "target." + target, _yes):
        got = tvm.transform.Sequential([transform.AnnotateTarget(target),
                                        transform.MergeCompilerRegions(),
                                        transform.PartitionGraph()])(before)
    ps = [relay.var(target + "_0_i0", shape=(10, 10))] + \
        [relay.var(f"{target}_0_i{i}") for i in range(1, 5)]
    n0 = relay.nn.batch_norm(*ps)
    gv = relay.GlobalVar(f"tvmgen_default_{target}_main_0")
    exp = tvm.IRModule()
    exp[gv] = _ext(relay.Function(ps, relay.Tuple([relay.nn.relu(n0[0]), n0[1]])), target,
                   gv.name_hint)
    out = gv(data, *bn)
    o1 = relay.TupleGetItem(out, 1)
    exp["main"] = relay.Function([data, *bn], relay.Tuple([relay.TupleGetItem(out, 0),
                                                           relay.tanh(o1), relay.log(o1)]))
    _same(got, exp)


def test_tuple_output_is_flattened():
    target = "test_flatten_tuple_output"
    a = relay.var("a", shape=(10, 10), dtype="uint8")
    parts = relay.split(a, 2)
    first_abs = relay.abs(relay.TupleGetItem(parts.astuple(), 0))
    before = transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [a], relay.Tuple((relay.concatenate(parts, 0), relay.nn.relu(first_abs))))))
    with TempOpAttr("split", "target." + target, _yes), \
            TempOpAttr("abs", "target." + target, _yes):
        got = tvm.transform.Sequential([transform.AnnotateTarget(target),
                                        transform.MergeCompilerRegions(),
                                        transform.PartitionGraph()])(before)
    i0 = relay.var(target + "_0_i0", shape=(10, 10), dtype="uint8")
    sp = relay.split(i0, 2).astuple()
    gv = relay.GlobalVar(f"tvmgen_default_{target}_main_0")
    exp = tvm.IRModule()
    exp[gv] = _ext(relay.Function([i0], relay.Tuple((
        relay.TupleGetItem(sp, 0), relay.TupleGetItem(sp, 1),
        relay.abs(relay.TupleGetItem(sp, 0))))), target, gv.name_hint)
    out = gv(a)
    exp["main"] = relay.Function([a], relay.Tuple((
        relay.concatenate(relay.Tuple((relay.TupleGetItem(out, 0), relay.TupleGetItem(out, 1))),
                          0), relay.nn.relu(relay.TupleGetItem(out, 2)))))
    _same(got, exp)
    check_numerics(before, got)


def test_end_around_a_tuple():
    a, b = relay.var("a", shape=(10, 10)), relay.var("b", shape=(10, 10))
    ba, bb = cb(a, "ccompiler"), cb(b, "ccompiler")
    before = transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [a, b], ce(relay.Tuple((relay.add(ba, bb), relay.subtract(ba, bb))), "ccompiler"))))
    got = transform.PartitionGraph()(before)
    a0, b0 = relay.var("a0", shape=(10, 10)), relay.var("b0", shape=(10, 10))
    gv = relay.GlobalVar("tvmgen_default_ccompiler_main_0")
    exp = tvm.IRModule()
    exp[gv] = _ext(relay.Function([a0, b0], relay.Tuple((a0 + b0, a0 - b0))), "ccompiler",
                   gv.name_hint)
    out = gv(a, b)
    exp["main"] = relay.Function([a, b], relay.Tuple((relay.TupleGetItem(out, 0),
                                                      relay.TupleGetItem(out, 1))))
    _same(got, exp)
    check_numerics(before, got)


def test_external_optimize_hook_runs():
    def fold(mod):
        return transform.FoldConstant()(mod)

    tvm.register_func("relay.ext.test_target_h13.optimize", fold, override=True)
    x = relay.var("x", shape=(2, 2))
    y0, y1 = relay.var("y0", shape=(2, 2)), relay.var("y1", shape=(2, 2))
    t = "test_target_h13"
    f = relay.Function([x, y0, y1], ce(cb(y0, t) + cb(y1, t), t) * x)
    c = np.ones((2, 2), "float32")
    f = bind_params_by_name(f, {"y0": tvm.nd.array(c), "y1": tvm.nd.array(c)})
    got = transform.PartitionGraph()(transform.InferType()(tvm.IRModule.from_expr(f)))
    body = got[f"tvmgen_default_{t}_main_0"].body
    assert isinstance(body, relay.Constant)
    np.testing.assert_allclose(body.data.numpy(), np.full((2, 2), 2.0))
