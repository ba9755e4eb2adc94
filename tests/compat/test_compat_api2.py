"""TVM names found missing by running TVM-style code under ``install_as_tvm()`` (issue 13,
second round): ``tvm.error`` / ``tvm.TVMError``, ``tvm._ffi``, parameter dictionaries as bytes,
``relay.ty`` / ``relay.function`` / ``relay.base`` and ``relay.ShapeVar``,
``relay.data_dep_optimization``, ``ChangeBatch`` on a model-zoo network, and the
``max_function_args`` of TVM's target kinds."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm.compat import install_as_tvm

install_as_tvm()

import tvm  # noqa: E402
from tvm import relay  # noqa: E402


def test_error_classes_and_ffi_paths():
    import tvm._ffi
    from tvm.error import DiagnosticError, OpNotImplemented, TVMError

    assert tvm.TVMError is TVMError and issubclass(TVMError, RuntimeError)
    assert issubclass(DiagnosticError, TVMError) and issubclass(OpNotImplemented, TVMError)
    with pytest.raises(NotImplementedError):
        raise OpNotImplemented("conv4d")

    @tvm._ffi.register_func("h13.twice", override=True)
    def twice(x):
        return 2 * x

    assert tvm._ffi.get_global_func("h13.twice")(4) == 8
    assert tvm.get_global_func("h13.twice") is twice
    assert tvm._ffi.get_global_func("h13.absent", allow_missing=True) is None

    @tvm._ffi.register_object("h13.Thing")
    class Thing:
        pass

    assert Thing._type_key == "h13.Thing"


def test_param_dict_round_trip(tmp_path):
    params = {"w": tvm.nd.array(np.arange(6, dtype="float32").reshape(2, 3)),
              "idx": np.array([1, 2], "int64")}
    blob = relay.save_param_dict(params)
    back = tvm.runtime.load_param_dict(blob)
    assert sorted(back) == ["idx", "w"] and isinstance(back["w"], tvm.nd.NDArray)
    np.testing.assert_array_equal(back["w"].numpy(), params["w"].numpy())
    assert back["idx"].dtype == "int64"
    path = str(tmp_path / "p.params")
    tvm.runtime.save_param_dict_to_file(params, path)
    assert sorted(tvm.runtime.load_param_dict_from_file(path)) == ["idx", "w"]
    with pytest.raises(ValueError, match="not a parameter archive"):
        relay.load_param_dict(b"garbage")
    with pytest.raises(TypeError, match="must be str"):
        relay.save_param_dict({1: np.zeros(1)})


def test_params_bytes_load_into_graph_executor():
    from tvm.contrib import graph_executor

    x = relay.var("x", shape=(2,))
    w = relay.var("w", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], x * w))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, "llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.load_params(relay.save_param_dict({"w": np.array([3.0, 4.0], "float32")}))
    m.set_input("x", np.array([1.0, 2.0], "float32"))
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), [3.0, 8.0])


def test_relay_module_paths():
    from tvm.relay.base import Span
    from tvm.relay.function import Function, FunctionWithFields
    from tvm.relay.ty import ShapeVar, TensorType, TypeKind

    assert Function is relay.Function and TensorType is relay.TensorType
    assert Span is tvm.ir.Span
    s = relay.ShapeVar("n")
    assert isinstance(s, relay.TypeVar) and s.kind == TypeKind.ShapeVar
    assert ShapeVar is relay.ShapeVar
    x = relay.var("x", shape=(3,))
    f = relay.Function([x], relay.abs(x))
    g = FunctionWithFields(f, body=relay.negative(x))
    assert g.body.op.name == "negative" and g.params[0] is x
    assert FunctionWithFields(f) is f
    assert "abs" in tvm.relay.base.astext(f)


def test_data_dep_optimization_reachable_by_tvm_path():
    from tvm.relay.data_dep_optimization import bsr_dense, simplify_fc_transpose

    assert callable(bsr_dense.convert) and callable(simplify_fc_transpose.convert)
    from tvm.relay.analysis import sparse_dense

    assert sparse_dense.SparseAnalysisResult._fields == ("weight_name", "weight_shape")


def test_change_batch_on_resnet_like_tvm():
    from tvm.relay import testing, transform

    net, _ = testing.resnet.get_workload(num_layers=18, image_shape=(3, 32, 32))
    new = transform.ChangeBatch({net["main"].params[0]: 0}, batch_size=7)(net)
    assert new["main"].checked_type.ret_type == relay.TensorType((7, 1000))
    assert new["main"].params[0].type_annotation.shape[0] == 7


def test_target_max_function_args():
    assert tvm.target.Target("metal").max_function_args == 31
    assert tvm.target.Target("opencl").max_function_args == 128
    assert tvm.target.Target("llvm").max_function_args == 0


def test_minitvm_attribute_names():
    assert minitvm.error is minitvm.runtime.error and minitvm._ffi is minitvm.runtime.ffi


def _types():
    from tvm.relay.type_functor import TypeFunctor  # noqa: F401

    tv = relay.TypeVar("a")
    tt = relay.TensorType((2, 3), "float32")
    gtv = relay.GlobalTypeVar("List")
    ctor = relay.Constructor("Cons", [tv, relay.TypeCall(gtv, [tv])], gtv)
    return [tv, relay.IncompleteType(), tt, relay.FuncType([tt, tv], tt, [tv]),
            relay.TupleType([tt, relay.TupleType([])]), relay.RefType(tt), gtv,
            relay.TypeCall(gtv, [tt]), relay.TypeData(gtv, [tv], [ctor])]


@pytest.mark.parametrize("index", range(9))
def test_type_functor_visitor_mutator(index):
    from tvm.relay.type_functor import TypeFunctor, TypeMutator, TypeVisitor

    typ = _types()[index]
    with pytest.raises(NotImplementedError):
        TypeFunctor().visit(typ)
    TypeVisitor().visit(typ)
    tvm.ir.assert_structural_equal(TypeMutator().visit(typ), typ, map_free_vars=True)


def test_type_mutator_rewrites_dtypes():
    from tvm.relay.type_functor import TypeMutator, TypeVisitor

    class ToHalf(TypeMutator):
        def visit_tensor_type(self, tt):
            return relay.TensorType(tt.shape, "float16")

    ft = relay.FuncType([relay.TensorType((2,)), relay.TupleType([relay.TensorType((3,))])],
                        relay.TensorType((2,)))
    want = relay.FuncType([relay.TensorType((2,), "float16"),
                           relay.TupleType([relay.TensorType((3,), "float16")])],
                          relay.TensorType((2,), "float16"))
    tvm.ir.assert_structural_equal(ToHalf().visit(ft), want)

    class Count(TypeVisitor):
        def __init__(self):
            super().__init__()
            self.n = 0

        def visit_tensor_type(self, tt):
            self.n += 1

    c = Count()
    c.visit(ft)
    assert c.n == 3
    with pytest.raises(TypeError, match="not a Relay type"):
        TypeVisitor().visit(relay.var("x"))


def _call_graph_module():
    mod = tvm.IRModule({})
    x0 = relay.var("x0", shape=(2, 3))
    mod["fn0"] = relay.Function([x0], relay.add(x0, x0))
    gv0 = mod.get_global_var("fn0")
    x1 = relay.var("x1", shape=(2, 3))
    mod["fn1"] = relay.Function([x1], relay.add(x1, relay.Call(gv0, [x1])))
    gv1 = mod.get_global_var("fn1")
    x2 = relay.var("x2", shape=(2, 3))
    mod["main"] = relay.Function([x2], relay.add(relay.Call(gv0, [x2]),
                                                  relay.Call(gv1, [relay.Call(gv0, [x2])])))
    return mod, gv0, gv1


def test_call_graph_counts():
    from tvm.relay.analysis.call_graph import CallGraph

    mod, gv0, gv1 = _call_graph_module()
    cg = relay.analysis.CallGraph(mod)
    assert CallGraph is relay.analysis.CallGraph and cg.module is mod
    main = mod.get_global_var("main")
    assert [cg.global_call_count(g) for g in (gv0, gv1, main)] == [0, 1, 2]
    assert [cg.ref_count(g) for g in (gv0, gv1, main)] == [2, 1, 0]
    assert not cg.is_recursive(gv0)
    assert "fn0" in cg.print_var("fn0") and "main calls fn1" in str(cg)
    with pytest.raises(KeyError, match="nope"):
        cg.ref_count("nope")


def test_call_graph_recursion():
    mod = tvm.IRModule({})
    gv = relay.GlobalVar("sum_up")
    i = relay.var("i", shape=(), dtype="int32")
    one = relay.const(1, "int32")
    body = relay.If(relay.equal(i, relay.const(0, "int32")), one,
                    relay.add(i, relay.Call(gv, [relay.subtract(i, one)])))
    mod[gv] = relay.Function([i], body, relay.TensorType((), "int32"))
    cg = relay.analysis.CallGraph(mod)
    assert cg.is_recursive(gv) and cg.ref_count(gv) == 1 and cg.global_call_count(gv) == 1


def test_while_loop_runs_in_interpreter_and_vm():
    i = relay.var("i", shape=(), dtype="int32")
    acc = relay.var("acc", shape=(), dtype="int32")
    one = relay.const(1, "int32")
    loop = relay.loops.while_loop(lambda i, acc: relay.less(i, relay.const(10, "int32")),
                                  [i, acc], lambda i, acc: [relay.add(i, one), relay.add(acc, i)])
    assert isinstance(loop, relay.Let) and isinstance(loop.value, relay.Function)
    assert [p.name_hint for p in loop.value.params] == ["i", "acc"]
    out = relay.TupleGetItem(loop(relay.const(0, "int32"), relay.const(0, "int32")), 1)
    mod = tvm.IRModule.from_expr(relay.Function([], out))
    for kind in ("debug", "vm"):
        assert relay.create_executor(kind, mod=mod, target="llvm").evaluate()().numpy() == 45


def test_annotate_spans_points_into_the_printed_text():
    x = relay.var("x", shape=(3, 4))
    c = relay.const(np.ones((3, 4), "float32"))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x + c)))
    got = relay.transform.AnnotateSpans()(mod)
    tvm.ir.assert_structural_equal(got, relay.transform.InferType()(mod))
    span = got["main"].body.span
    assert span is not None and span.source_name.name == "GeneratedSource" and span.line > 1
    assert relay.transform.AnnotateSpans().info.name == "AnnotateSpans"


def test_type_relation_name():
    from tvm.ir.type import TypeRelation

    assert relay.TypeRelation is TypeRelation
