"""Structural equality and hashing: alpha-equivalence, free vars, DAGs, deep chains, messages."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir import assert_structural_equal, structural_equal, structural_hash
from minitvm.relay.expr import Call, Function, Let, Tuple, Var


def _fn(name):
    x = relay.var(name, shape=(2, 3))
    return Function([x], Tuple([x, x]))


def test_alpha_equivalent_functions_are_equal():
    a, b = _fn("x"), _fn("y")
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)


def test_free_vars_need_identity_unless_mapped():
    x, y = relay.var("x", shape=(1,)), relay.var("x", shape=(1,))
    assert not structural_equal(Tuple([x]), Tuple([y]))
    assert structural_equal(Tuple([x]), Tuple([y]), map_free_vars=True)
    assert structural_equal(Tuple([x]), Tuple([x]))


def test_inconsistent_binding_is_unequal():
    x, y = relay.var("x"), relay.var("y")
    a = Function([x, y], Tuple([x, y]))
    x2, y2 = relay.var("x"), relay.var("y")
    b = Function([x2, y2], Tuple([y2, x2]))
    assert not structural_equal(a, b)


def test_type_annotations_and_constants_compared():
    assert not structural_equal(_fn("x"), Function([relay.var("x", shape=(3, 2))],
                                                   relay.Tuple([])))
    c1, c2 = relay.const(np.ones(3, "float32")), relay.const(np.ones(3, "float32"))
    c3 = relay.const(np.zeros(3, "float32"))
    assert structural_equal(c1, c2) and structural_hash(c1) == structural_hash(c2)
    assert not structural_equal(c1, c3)
    assert not structural_equal(relay.const(1.0), relay.const(1, "int32"))


def test_let_binding_alpha_equivalence():
    def build(n):
        x = relay.var(n)
        return Let(x, relay.const(1.0), Tuple([x]))

    assert structural_equal(build("a"), build("b"))
    assert structural_hash(build("a")) == structural_hash(build("b"))


def test_module_equality_by_function_names():
    m1 = tvm.IRModule.from_expr(_fn("x"))
    m2 = tvm.IRModule.from_expr(_fn("z"))
    assert structural_equal(m1, m2)
    assert structural_hash(m1) == structural_hash(m2)


def test_failure_message_names_the_path():
    x = relay.var("x", shape=(2,))
    a = Function([x], Tuple([x, relay.const(1.0)]))
    y = relay.var("y", shape=(2,))
    b = Function([y], Tuple([y, relay.const(2.0)]))
    with pytest.raises(ValueError, match=r"root\.body\.fields\[1\].*constant values differ"):
        assert_structural_equal(a, b)


def _dag(depth):
    x = relay.var("x", shape=(1,))
    e = x
    for _ in range(depth):
        e = Tuple([e, e])
    return Function([x], e)


def test_dag_sharing_is_not_exponential():
    a, b = _dag(200), _dag(200)
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)


def _chain(n, name="x"):
    x = relay.var(name, shape=(1,))
    e = x
    for _ in range(n):
        e = Tuple([e])
    return Function([x], e)


def _let_chain(n, name="v"):
    vs = [relay.var(f"{name}{i}") for i in range(n)]
    body = vs[-1]
    for i in reversed(range(n)):
        body = Let(vs[i], relay.const(1.0) if i == 0 else vs[i - 1], body)
    return body


def test_deep_chains_at_default_recursion_limit():
    a, b = _chain(100_000, "a"), _chain(100_000, "b")
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)
    la, lb = _let_chain(100_000, "p"), _let_chain(100_000, "q")
    assert structural_equal(la, lb)
    assert structural_hash(la) == structural_hash(lb)


def test_call_attrs_compared():
    from minitvm.ir.attrs import make_attrs_class

    A = make_attrs_class("TestStructAttrs", [("axis", 0)])
    op = tvm.ir.Op.get  # noqa: F841
    x = relay.var("x")
    f = relay.GlobalVar("f")
    assert structural_equal(Call(f, [x], A(axis=1)), Call(f, [x], A(axis=1)))
    assert not structural_equal(Call(f, [x], A(axis=1)), Call(f, [x], A(axis=2)))
    assert isinstance(x, Var)


def test_hash_of_objects_that_refer_back_to_each_other_terminates():
    # a TE tensor and its placeholder op point at each other; a structure holding them is a cycle
    from minitvm import te

    x = te.placeholder((2, 3), "float32", name="x")
    y = te.placeholder((2, 3), "float32", name="x")
    assert structural_hash([x, x.op]) == structural_hash([y, y.op])
    z = te.placeholder((4, 3), "float32", name="x")
    assert structural_hash([x, x.op]) != structural_hash([z, z.op])


def test_prim_func_blocks_do_not_carry_te_tensors():
    # resize keeps its operand tensors in the compute's attrs for the TE-level schedule; a
    # PrimFunc built from it hashes in linear time and holds no piece of the TE graph
    from minitvm import te
    from minitvm.tir import stmt as S
    from minitvm.tir.stmt_functor import walk_stmts
    from minitvm.topi import image_resize

    x = te.placeholder((1, 2, 5, 4), "float32", name="x")
    y = image_resize.resize2d(x, (8, 7), "NCHW", "cubic", "half_pixel", "", -0.5, 0, 0.0,
                              [0.0] * 4, "float32")
    assert "operands" in y.op.attrs
    f = te.create_prim_func([x, y])
    blocks = [n for n in walk_stmts(f.body) if isinstance(n, S.Block)]
    assert blocks and all("operands" not in b.annotations for b in blocks)
    assert "resize" in blocks[-1].annotations
    assert structural_hash(f) == structural_hash(te.create_prim_func([x, y]))


def test_hash_agrees_with_equality_on_leaves():
    from minitvm import tir

    # equal values hash alike (an int and the IntImm TVM would make of it, 1 and 1.0, NaNs);
    # values that differ in one number hash apart, -1 and -2 too (Python hashes both as -2)
    assert structural_hash(relay.Tuple([])) == structural_hash(relay.Tuple([]))
    assert structural_hash((1, 2.0)) == structural_hash((1.0, tir.IntImm("int32", 2)))
    assert structural_hash([float("nan")]) == structural_hash([float("nan")])
    assert structural_equal([float("nan")], [float("nan")])
    hashes = {structural_hash(v) for v in ((-1,), (-2,), (1,), ("1",), (None,), ((1,),))}
    assert len(hashes) == 6
    assert structural_hash(tir.IntImm("int64", 3)) != structural_hash(tir.IntImm("int32", 3))


def test_parameters_of_other_shapes_hash_apart():
    # fused functions whose bodies match but whose parameters' types differ (a 1x1 conv over 64
    # or 256 channels) are unequal, and hash apart: the kernel caches bucket by this hash
    def conv(channels, name):
        x = relay.var(name, shape=(1, channels, 8, 8))
        w = relay.var("w", shape=(16, channels, 1, 1))
        return Function([x, w], relay.nn.relu(relay.nn.conv2d(x, w, kernel_size=(1, 1))))

    a, b, c = conv(64, "x"), conv(256, "x"), conv(64, "y")
    assert not structural_equal(a, b)
    assert structural_hash(a) != structural_hash(b)
    assert structural_equal(a, c) and structural_hash(a) == structural_hash(c)
    # the annotation counts where the variable is bound; its uses hash by its number only
    x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(2,))
    assert structural_hash(Function([x, y], Tuple([x, y]))) \
        != structural_hash(Function([x, y], Tuple([y, x])))


def test_relax_struct_info_and_symbolic_shapes_hash_like_equality():
    from minitvm import relax, tir

    def fn(rows, name):
        x = relax.Var(name, relax.TensorStructInfo((rows, 3), "float32"))
        return relax.Function([x], x, relax.TensorStructInfo((rows, 3), "float32"))

    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    assert structural_equal(fn(n, "x"), fn(m, "y"))  # symbolic sizes bound at the parameter
    assert structural_hash(fn(n, "x")) == structural_hash(fn(m, "y"))
    assert not structural_equal(fn(2, "x"), fn(4, "x"))
    assert structural_hash(fn(2, "x")) != structural_hash(fn(4, "x"))
    assert structural_hash(fn(2, "x")) == structural_hash(fn(2, "z"))


def test_shared_and_copied_subtrees_hash_alike():
    x = relay.var("x", shape=(1,))
    shared = relay.add(x, x)
    a = Function([x], Tuple([shared, shared]))
    y = relay.var("y", shape=(1,))
    b = Function([y], Tuple([relay.add(y, y), relay.add(y, y)]))
    assert structural_equal(a, b) and structural_hash(a) == structural_hash(b)


def test_hash_is_the_same_in_every_process():
    import os
    import subprocess
    import sys

    # this process against one child with another hash seed (a child costs a package import)
    code = ("from minitvm import relay; from minitvm.ir import structural_hash; "
            "x = relay.var('x', shape=(2, 3)); "
            "print(structural_hash(relay.Function([x], relay.nn.softmax(x, axis=-1))))")
    x = relay.var("x", shape=(2, 3))
    here = structural_hash(relay.Function([x], relay.nn.softmax(x, axis=-1)))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"  # never this process's
    env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=root)
    child = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True).stdout
    assert int(child) == here


def test_mismatch_paths_name_fields_indices_and_keys():
    from minitvm.ir.base import get_first_structural_mismatch

    x = relay.var("x", shape=(2,))
    a = Function([x], Tuple([x, relay.const(1.0)]))
    y = relay.var("y", shape=(2,))
    b = Function([y], Tuple([y, relay.const(2.0)]))
    pair = get_first_structural_mismatch(a, b)
    assert "body" in str(pair.lhs_path) and "fields" in str(pair.lhs_path)
    with pytest.raises(ValueError, match=r"root\['k'\]\[1\]: 2 vs 3"):
        assert_structural_equal({"k": (1, 2)}, {"k": (1, 3)})


def test_hash_contents_sets_the_hash_structural_hash_would_compute():
    import numpy as np

    import minitvm as tvm
    from minitvm.ir.structural import hash_contents, structural_hash
    from minitvm.relay import const

    rng = np.random.default_rng(0)
    shapes = [(512, 256), (300, 700), (8,), (1024, 129), (3, 3)]  # > 1 MB in all: threads
    arrays = [tvm.nd.array(rng.standard_normal(s).astype("float32")) for s in shapes]
    copies = [tvm.nd.array(a.numpy().copy()) for a in arrays]
    for threads in (1, 2, 3):
        for a in arrays:
            a._content_hash = None
        hash_contents(arrays, threads)
        assert all(a._content_hash is not None for a in arrays)
        for a, c in zip(arrays, copies, strict=True):
            c._content_hash = None
            assert structural_hash(const(a)) == structural_hash(const(c))
    assert len({a._content_hash for a in arrays}) == len(arrays)


def test_float_leaves_equal_within_tvm_tolerance():
    # TVM compares doubles within 1e-9: an epsilon read back from a float32 constant
    # (9.999999747e-06) equals the 1e-5 literal; 1e-5 and 1e-3 differ; ints stay exact
    from minitvm import tir

    eps32 = float(np.float32(1e-5))
    x = relay.var("x", shape=(1, 4))
    stats = [relay.var(n, shape=(4,)) for n in "gbmv"]
    assert eps32 != 1e-5
    assert structural_equal(relay.nn.batch_norm(x, *stats, epsilon=eps32)[0],
                            relay.nn.batch_norm(x, *stats, epsilon=1e-5)[0])
    assert not structural_equal(relay.nn.batch_norm(x, *stats, epsilon=1e-3)[0],
                                relay.nn.batch_norm(x, *stats, epsilon=1e-5)[0])
    assert structural_equal(tir.FloatImm("float32", eps32), tir.FloatImm("float32", 1e-5))
    assert not structural_equal(tir.FloatImm("float32", 2e-9), tir.FloatImm("float32", 0.0))
    assert not structural_equal([10**12], [10**12 + 1])
    assert not structural_equal([True], [1.0 + 1e-12])
    with pytest.raises(ValueError, match="1e-05 vs 0.001"):
        assert_structural_equal([1e-5], [1e-3])
