"""relay.analysis as TVM v0.19 defines it, part 2: type-variable collection (free, bound, all),
unmatched_cases, get_calibration_data, AnnotatedRegionSet, all_dtypes and
extract_intermdeiate_expr — TVM's documented behaviour restated in our words, plus deep programs
at the default recursion limit."""

from __future__ import annotations

import inspect
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.analysis import (
    AnnotatedRegionSet,
    all_dtypes,
    all_type_vars,
    bound_type_vars,
    free_type_vars,
    get_calibration_data,
    unmatched_cases,
)
from minitvm.relay.op.annotation import compiler_begin, compiler_end
from minitvm.relay.prelude import Prelude

W = relay.PatternWildcard
N = 100_000


def test_default_recursion_limit():
    assert sys.getrecursionlimit() <= 1500


# --- type variables ---------------------------------------------------------------------


def test_free_type_vars_of_a_let_whose_variable_is_annotated():
    tp = relay.TypeVar("")
    x = relay.Var("x", relay.TupleType([tp, relay.TensorType([], "int32")]))
    assert free_type_vars(relay.Let(x, relay.Var("y"), x)) == [tp]


def test_bound_type_vars_of_types_and_functions():
    a, b, c = relay.TypeVar("a"), relay.TypeVar("b"), relay.TypeVar("c")
    assert bound_type_vars(relay.FuncType([a], b, [a, b])) == [a, b]
    assert bound_type_vars(relay.FuncType([], c, [a])) == [a]
    assert bound_type_vars(relay.TupleType([a, b, c])) == []
    assert bound_type_vars(relay.Function([], relay.Tuple([]), type_params=[a, b])) == [a, b]
    assert bound_type_vars(relay.Function([], relay.Tuple([]), c)) == []
    x = relay.Var("x", a)
    assert bound_type_vars(relay.Let(x, relay.Tuple([]), x)) == []
    inner = relay.Function([], relay.Tuple([]), type_params=[b, c])
    assert bound_type_vars(relay.Let(x, inner, x)) == [b, c]


def test_all_type_vars_in_first_occurrence_order():
    a, b, c = relay.TypeVar("a"), relay.TypeVar("b"), relay.TypeVar("c")
    assert all_type_vars(relay.FuncType([b], c, [a])) == [a, b, c]
    assert all_type_vars(relay.FuncType([], relay.TupleType([a, b, c]), [])) == [a, b, c]
    w, x, y, z = relay.Var("w"), relay.Var("x", a), relay.Var("y", b), relay.Var("z", c)
    assert all_type_vars(relay.Function([x], y, b, [a])) == [a, b]
    assert all_type_vars(relay.Function([x], relay.Let(y, x, z))) == [a, b, c]
    tup = relay.Function([], relay.Tuple([x, y, z]), ret_type=relay.TupleType([a, b, c]))
    assert all_type_vars(tup) == [a, b, c]
    assert all_type_vars(relay.Function([w], relay.Tuple([]), type_params=[a, b, c])) == [a, b, c]
    assert all_type_vars(relay.Function([w], w)) == []


def test_free_type_vars_exclude_the_bound_ones():
    a, b = relay.TypeVar("a"), relay.TypeVar("b")
    x, y = relay.Var("x", a), relay.Var("y", b)
    assert free_type_vars(relay.Function([x], y, b, [a])) == [b]
    # a function type's parameters are bound inside it
    assert free_type_vars(relay.FuncType([a], b, [a])) == [b]


def test_return_type_is_not_read_and_call_type_args_come_after_operands():
    """As TVM's walk: a function's return type is not visited; a call's type arguments are read
    after its operator and arguments."""
    a, b, c = relay.TypeVar("a"), relay.TypeVar("b"), relay.TypeVar("c")
    f = relay.Var("f", relay.FuncType([c], c, [c]))
    x = relay.Var("x", b)
    call = relay.Call(f, [x], None, [a])
    assert all_type_vars(call) == [c, b, a]
    assert free_type_vars(call) == [b, a]
    assert all_type_vars(relay.Function([], relay.Tuple([]), relay.TupleType([a]))) == []


def test_constructor_type_vars_are_bound_by_their_adt():
    mod = tvm.IRModule()
    p = Prelude(mod)
    c = relay.TypeVar("c")
    e = p.cons(relay.Var("q", c), p.nil())
    (adt_var,) = mod.type_definitions[mod.get_global_type_var("List")].type_vars
    assert free_type_vars(e, mod) == [c]
    assert bound_type_vars(e, mod) == [adt_var]
    assert all_type_vars(e, mod) == [adt_var, c]
    with pytest.raises(ValueError, match="Cons.*pass the module"):
        free_type_vars(e)


def test_type_vars_of_a_100000_deep_chain():
    a = relay.TypeVar("a")
    x = relay.Var("x", a)
    e = x
    for _ in range(N):
        e = relay.Tuple([e])
    assert free_type_vars(e) == [a] and all_type_vars(e) == [a]
    t = a
    for _ in range(N):
        t = relay.TupleType([t])
    assert free_type_vars(t) == [a]


# --- unmatched_cases -----------------------------------------------------------------------


def _box_module():
    mod = tvm.IRModule()
    box = relay.GlobalTypeVar("box")
    a = relay.TypeVar("a")
    ctor = relay.Constructor("box", [a], box)
    mod[box] = relay.TypeData(box, [a], [ctor])
    return mod, ctor


def test_no_clause_leaves_everything_unmatched():
    v = relay.Var("v")
    (only,) = unmatched_cases(relay.Match(v, []))
    assert isinstance(only, relay.PatternWildcard)


def test_a_wildcard_or_a_variable_matches_everything():
    v, w = relay.Var("v"), relay.Var("w")
    assert unmatched_cases(relay.Match(v, [relay.Clause(W(), v)])) == []
    assert unmatched_cases(relay.Match(v, [relay.Clause(relay.PatternVar(w), w)])) == []


def test_single_constructor_adt_is_covered_even_when_nested():
    mod, box = _box_module()
    v = relay.Var("v")
    one = relay.PatternConstructor(box, [W()])
    assert unmatched_cases(relay.Match(v, [relay.Clause(one, v)]), mod) == []
    nested = relay.PatternConstructor(box, [relay.PatternConstructor(box, [one])])
    assert unmatched_cases(relay.Match(v, [relay.Clause(nested, v)]), mod) == []


def test_too_specific_list_match_misses_nil_and_singletons():
    mod = tvm.IRModule()
    Prelude(mod)
    _, cons, nil = mod.get_type("List")
    v = relay.Var("v")
    two_or_more = relay.PatternConstructor(cons, [W(), relay.PatternConstructor(cons, [W(), W()])])
    missing = unmatched_cases(relay.Match(v, [relay.Clause(two_or_more, v)]), mod)
    assert len(missing) == 2
    shapes = sorted(
        (m.constructor.name_hint,
         tuple(getattr(getattr(q, "constructor", None), "name_hint", "_") for q in m.patterns))
        for m in missing)
    assert shapes == [("Cons", ("_", "Nil")), ("Nil", ())]
    covered = relay.Match(v, [relay.Clause(two_or_more, v), relay.Clause(W(), v)])
    assert unmatched_cases(covered, mod) == []


def test_missing_constructor_in_the_middle_of_a_tuple():
    mod = tvm.IRModule()
    p = Prelude(mod)
    _, some, none = mod.get_type("Option")
    v = relay.Var("v")
    clauses = [
        relay.Clause(relay.PatternTuple([relay.PatternConstructor(some, [W()]), W()]), v),
        relay.Clause(relay.PatternTuple([relay.PatternConstructor(none), relay.PatternConstructor(
            none)]), v),
    ]
    (missing,) = unmatched_cases(relay.Match(v, clauses), mod)
    assert isinstance(missing, relay.PatternTuple)
    first, second = missing.patterns
    assert first.constructor is none and second.constructor is some
    assert p is not None


def test_unmatched_cases_of_a_deep_pattern():
    """A constructor pattern deeper than the recursion limit allows recursing. The search is
    quadratic in the pattern depth, as TVM's (its answer is depth+1 patterns up to depth deep),
    so the test lowers the limit to 250 frames above this one and nests 400 deep: a walk
    recursing once per level would overflow, at a seventh of the cost of 1,100 under the
    default limit of 1,000."""
    mod = tvm.IRModule()
    Prelude(mod)
    _, zero, succ = mod.get_type("nat")
    depth = 400
    pat = relay.PatternConstructor(zero)
    for _ in range(depth):
        pat = relay.PatternConstructor(succ, [pat])
    v = relay.Var("v")
    missing_then_any = relay.Match(v, [relay.Clause(pat, v), relay.Clause(W(), v)])
    default_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 250)
    try:
        missing = unmatched_cases(relay.Match(v, [relay.Clause(pat, v)]), mod)
        also_missing = unmatched_cases(missing_then_any, mod)
    finally:
        sys.setrecursionlimit(default_limit)
    assert len(missing) == depth + 1  # zero, succ(zero), ..., and the depth+1 successors
    assert also_missing == []


def test_unmatched_cases_of_a_100000_wide_tuple_pattern():
    v = relay.Var("v")
    wide = relay.PatternTuple([W() for _ in range(N)])
    assert unmatched_cases(relay.Match(v, [relay.Clause(wide, v)])) == []


def test_unmatched_cases_bad_input():
    with pytest.raises(TypeError, match="relay.Match"):
        unmatched_cases(relay.Var("v"))
    mod, box = _box_module()
    m = relay.Match(relay.Var("v"), [relay.Clause(relay.PatternConstructor(box, [W()]), relay.Var(
        "v"))])
    with pytest.raises(ValueError, match="box.*module"):
        unmatched_cases(m)


# --- get_calibration_data -----------------------------------------------------------------


def _two_external_functions():
    mod = tvm.IRModule()
    x0, y0 = relay.var("x0", shape=(8, 8)), relay.var("y0", shape=(8, 8))
    g0 = relay.GlobalVar("g0")
    mod[g0] = relay.Function([x0, y0], relay.Tuple((x0 + y0, x0 - y0))).with_attr(
        "Compiler", "test_graph")
    x1, y1 = relay.var("x1", shape=(8, 8)), relay.var("y1", shape=(8, 8))
    g1 = relay.GlobalVar("g1")
    mod[g1] = relay.Function([x1, y1], x1 - y1).with_attr("Compiler", "test_graph")
    x, y, z = (relay.var(n, shape=(8, 8)) for n in "xyz")
    c0 = relay.Call(g0, [x, y])
    mod["main"] = relay.Function([x, y, z], relay.Call(g1, [relay.TupleGetItem(c0, 0), z]))
    return relay.transform.InferType()(mod), g0, g1


def test_calibration_data_of_two_external_functions():
    mod, g0, g1 = _two_external_functions()
    xd, yd, zd = (np.random.rand(8, 8).astype("float32") for _ in range(3))
    data = get_calibration_data(mod, {"x": xd, "y": yd, "z": zd})
    assert set(data) == {g0, g1}
    for gv in (g0, g1):
        assert len(data[gv]["inputs"]) == len(mod[gv].params)
    assert len(data[g0]["outputs"]) == 2 and len(data[g1]["outputs"]) == 1
    np.testing.assert_allclose(data[g0]["inputs"][0].numpy(), xd)
    np.testing.assert_allclose(data[g0]["inputs"][1].numpy(), yd)
    np.testing.assert_allclose(data[g0]["outputs"][0].numpy(), xd + yd, rtol=1e-6)
    np.testing.assert_allclose(data[g0]["outputs"][1].numpy(), xd - yd, rtol=1e-6)
    np.testing.assert_allclose(data[g1]["inputs"][0].numpy(), xd + yd, rtol=1e-6)
    np.testing.assert_allclose(data[g1]["inputs"][1].numpy(), zd)
    np.testing.assert_allclose(data[g1]["outputs"][0].numpy(), xd + yd - zd, rtol=1e-6)
    # the input module keeps its Compiler attributes
    assert mod[g0].get_attr("Compiler") == "test_graph"


def test_calibration_without_external_functions_is_empty():
    x = relay.var("x", shape=(2,))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], x + x)))
    assert get_calibration_data(mod, {"x": np.ones(2, "float32")}) == {}


def test_calibration_after_a_100000_deep_chain():
    a = relay.var("a", shape=(2,))
    g = relay.GlobalVar("ext")
    mod = tvm.IRModule()
    mod[g] = relay.Function([a], a * a).with_attr("Compiler", "test_graph")
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(N):
        e = relay.negative(e)
    mod["main"] = relay.Function([x], relay.Call(g, [e]))
    mod = relay.transform.InferType()(mod)
    data = get_calibration_data(mod, {"x": np.array([2.0, 3.0], "float32")})
    np.testing.assert_allclose(data[g]["inputs"][0].numpy(), [2.0, 3.0])
    np.testing.assert_allclose(data[g]["outputs"][0].numpy(), [4.0, 9.0])


# --- AnnotatedRegionSet ---------------------------------------------------------------------


def _check_region(regions, target, args, nodes, rets):
    region = regions.get_region(args[0])
    assert region is not None and region.target == target
    assert set(region.args) == set(args)
    assert set(region.nodes) == set(nodes)
    assert set(region.rets) == set(rets)


def _ops():
    return relay.op.get("annotation.compiler_begin"), relay.op.get("annotation.compiler_end")


def test_region_set_of_a_diamond():
    data = relay.var("data", shape=(10, 10))
    cb_1 = compiler_begin(data, "test_target")
    o_1 = relay.abs(cb_1)
    ce_1, ce_2 = compiler_end(o_1, "test_target"), compiler_end(o_1, "test_target")
    cb_2 = compiler_begin(ce_1, "test_target")
    o_2 = relay.nn.relu(cb_2)
    ce_3 = compiler_end(o_2, "test_target")
    cb_d = compiler_begin(ce_2, "default")
    t = relay.tanh(cb_d)
    ce_d = compiler_end(t, "default")
    cb_3, cb_4 = compiler_begin(ce_3, "test_target"), compiler_begin(ce_d, "test_target")
    o_3 = relay.add(cb_3, cb_4)
    ce_4 = compiler_end(o_3, "test_target")
    regions = AnnotatedRegionSet(relay.Function([data], ce_4), *_ops())
    assert len(regions) == 4
    _check_region(regions, "test_target", [cb_1], [cb_1, o_1, ce_1, ce_2], [ce_1, ce_2])
    _check_region(regions, "test_target", [cb_2], [cb_2, o_2, ce_3], [ce_3])
    _check_region(regions, "default", [cb_d], [cb_d, t, ce_d], [ce_d])
    _check_region(regions, "test_target", [cb_3, cb_4], [cb_3, cb_4, o_3, ce_4], [ce_4])
    assert regions.get_region(data) is None
    assert sorted(r.id for r in regions.regions) == [0, 1, 2, 3]


def test_region_set_of_a_100000_node_region():
    x = relay.var("x", shape=(2,))
    begin = compiler_begin(x, "ccompiler")
    e = begin
    for _ in range(N):
        e = relay.negative(e)
    end = compiler_end(e, "ccompiler")
    regions = AnnotatedRegionSet(end, *_ops())
    (region,) = regions.regions
    assert region.args == [begin] and region.rets == [end]
    assert len(region.nodes) == N + 2


def test_region_set_rejects_other_ops():
    with pytest.raises(ValueError, match="compiler_begin"):
        AnnotatedRegionSet(relay.var("x"), relay.op.get("add"), relay.op.get("subtract"))


# --- all_dtypes -----------------------------------------------------------------------------


def test_all_dtypes_of_a_typed_function():
    x = relay.var("x", shape=(2,), dtype="int8")
    body = relay.cast(x, "float32") + relay.const(1.0, "float32")
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], body)))
    assert all_dtypes(mod["main"]) == {"int8", "float32"}
    y = relay.var("y", shape=(2,), dtype="int8")
    untyped = relay.Function([y], relay.cast(y, "float32"))
    assert all_dtypes(untyped) == set()  # nodes not type-checked add nothing


def test_all_dtypes_of_a_100000_deep_chain():
    x = relay.var("x", shape=(2,), dtype="float16")
    e = x
    for _ in range(N):
        e = relay.negative(e)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], e)))
    assert all_dtypes(mod["main"]) == {"float16"}


# --- extract_intermdeiate_expr ------------------------------------------------------------


def _conv_module():
    x, w1, w2 = relay.var("x", shape=(1, 1, 5, 1)), relay.var("w1"), relay.var("w2")
    c0 = relay.nn.conv2d(x, w1, padding=(1, 1), channels=1, kernel_size=(3, 3))
    c1 = relay.nn.conv2d(c0, w2, padding=(1, 1), channels=1, kernel_size=(3, 3))
    parts = relay.split(relay.add(c0, c1), indices_or_sections=1)
    out = relay.add(parts[0], relay.const(1.0))
    return tvm.IRModule.from_expr(relay.Function([x, w1, w2], out)), (x, w1, w2, c0, c1)


def test_extract_intermediate_expr_by_its_printed_number():
    """TVM's documented example: id 1 is `%1 = nn.conv2d(%0, %w2)`; its free variables become
    the new main's parameters."""
    mod, (x, w1, w2, c0, c1) = _conv_module()
    got = relay.analysis.extract_intermdeiate_expr(mod, 1)
    tvm.ir.assert_structural_equal(got["main"], relay.Function([x, w1, w2], c1))
    last = relay.analysis.extract_intermdeiate_expr(mod, 4)["main"].body
    assert isinstance(last, relay.TupleGetItem) and last.index == 0
    with pytest.raises(ValueError, match="out of range.*ids 0..5"):
        relay.analysis.extract_intermdeiate_expr(mod, 6)


def test_extract_intermediate_expr_of_a_100000_deep_chain():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(N):
        e = relay.negative(e)
    mod = tvm.IRModule.from_expr(relay.Function([x], e))
    got = relay.analysis.extract_intermdeiate_expr(mod, 2)["main"]
    assert got.body.args[0].args[0].args[0] is x


# --- through install_as_tvm ---------------------------------------------------------------


def test_names_reachable_as_tvm_relay_analysis():
    import minitvm.compat

    minitvm.compat.install_as_tvm()
    import tvm as real_name  # the alias install_as_tvm registers

    ana = real_name.relay.analysis
    for name in ("free_type_vars", "bound_type_vars", "all_type_vars", "unmatched_cases",
                 "get_calibration_data", "AnnotatedRegionSet", "all_dtypes", "CallGraph",
                 "extract_intermdeiate_expr",
                 "list_op_freqs", "cpu"):
        assert callable(getattr(ana, name)), name
    assert ana.annotated_regions.AnnotatedRegionSet is AnnotatedRegionSet
    assert callable(real_name.relay.testing.make_nat_expr)
