"""Relax programs written the way TVM users write them (TVMScript modules, BlockBuilder,
packed functions, visitors), built with ``relax.build`` and run at several shapes against numpy;
and the errors a user meets (bad TVMScript, arguments that contradict the signature), each a
clear error naming what is wrong."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te, tir, topi
from minitvm.relax.expr_functor import PyExprVisitor, visitor
from minitvm.relax.vm.codegen import VMCodeGenError
from minitvm.script import from_source
from minitvm.script.parser.error import ParserError

SHAPE = tvm.runtime.ShapeTuple


def _vm(mod):
    return relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())


# ---------------------------------------------------------------------------- programs
CALL_TIR_RESHAPE = '''
@I.ir_module
class Mod:
    @T.prim_func
    def add_one(a: T.handle, b: T.handle):
        T.func_attr({"tir.noalias": True})
        n = T.int64()
        m = T.int64()
        A = T.match_buffer(a, (n, m), "float32")
        B = T.match_buffer(b, (n, m), "float32")
        for i, j in T.grid(n, m):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)

    @R.function
    def main(x: R.Tensor(("n", "m"), "float32"), y: R.Tensor(("m",), "float32")):
        n = T.int64()
        m = T.int64()
        cls = Mod
        with R.dataflow():
            a = R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((n, m), "float32"))
            b = R.add(a, y)
            c = R.reshape(b, (n * m,))
            d = R.concat((c, c), axis=0)
            e = R.reshape(d, R.shape([n * 2, m]))
            R.output(e)
        return e
'''


def test_call_tir_of_a_user_prim_func_with_two_symbolic_dims():
    vm = _vm(from_source(CALL_TIR_RESHAPE))
    for n, m in [(1, 1), (3, 5), (6, 8)]:
        x = np.random.rand(n, m).astype("float32")
        y = np.random.rand(m).astype("float32")
        ref = np.concatenate([(x + 1 + y).reshape(-1)] * 2).reshape(n * 2, m)
        np.testing.assert_allclose(vm["main"](x, y).numpy(), ref, rtol=1e-6)


def test_if_on_a_tensor_condition_calls_and_tuples():
    mod = from_source('''
@I.ir_module
class CF:
    @R.function
    def helper(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        return R.multiply(x, R.const(2.0, "float32"))

    @R.function
    def main(c: R.Tensor((), "bool"), x: R.Tensor(("n",), "float32"),
             y: R.Tensor(("n",), "float32")):
        cls = CF
        if c:
            r = cls.helper(x)
        else:
            r = R.subtract(x, y)
        t = (r, y)
        return (t[0], R.add(t[0], t[1]))
''')
    vm = _vm(mod)
    for n in (1, 5):
        x = np.random.rand(n).astype("float32")
        y = np.random.rand(n).astype("float32")
        for c in (True, False):
            r0, r1 = vm["main"](np.array(c), x, y)
            want = x * 2 if c else x - y
            np.testing.assert_allclose(r0.numpy(), want, rtol=1e-6)
            np.testing.assert_allclose(r1.numpy(), want + y, rtol=1e-6)


def test_if_condition_that_is_not_a_scalar_is_a_clear_error():
    vm = _vm(from_source('''
@I.ir_module
class M:
    @R.function
    def main(c: R.Tensor(("k",), "bool"), x: R.Tensor((2,), "float32")):
        if c:
            y = x
        else:
            y = R.add(x, x)
        return y
'''))
    np.testing.assert_allclose(vm["main"](np.array([False]), np.ones(2, "float32")).numpy(),
                               [2, 2])
    with pytest.raises(ValueError, match=r"condition of an if must be a scalar.*shape \(2,\)"):
        vm["main"](np.array([True, False]), np.ones(2, "float32"))


def test_slice_of_a_symbolic_axis_keeps_its_shape():
    """x[:n * 2] of an axis of length n * 2 + m is n * 2 long: the parameters' shape variables
    are known not negative (the sum is then buildable, not of unknown shape)."""
    mod = from_source('''
@I.ir_module
class Mod:
    @T.prim_func(private=True)
    def pad(a: T.handle, b: T.handle, m: T.int64):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n * 2 + m,), "float32")
        for i in range(n * 2 + m):
            with T.block("B"):
                vi = T.axis.spatial(n * 2 + m, i)
                B[vi] = T.if_then_else(vi < n * 2, A[vi % n], T.float32(-1))

    @R.function
    def main(x: R.Tensor(("n",), "float32"), s: R.Shape(["m"])):
        n = T.int64()
        m = T.int64()
        cls = Mod
        y = R.concat((x, x), axis=0)
        z = R.call_tir(cls.pad, (x,), out_sinfo=R.Tensor((n * 2 + m,), "float32"),
                       tir_vars=R.shape([m]))
        zz = R.strided_slice(z, axes=[0], begin=[0], end=[n * 2])
        w = R.add(y, zz)
        return (w, z)
''')
    main = mod["main"]
    n = main.params[0].struct_info.shape.values[0]
    w_sinfo = main.ret_struct_info.fields[0]
    tvm.ir.assert_structural_equal(w_sinfo, relax.TensorStructInfo([n * 2], "float32"))
    vm = _vm(mod)
    for n_, m_ in [(1, 0), (4, 3)]:
        x = np.random.rand(n_).astype("float32")
        w, z = vm["main"](x, SHAPE([m_]))
        np.testing.assert_allclose(w.numpy(), np.concatenate([x, x]) * 2, rtol=1e-6)
        np.testing.assert_allclose(z.numpy(), np.concatenate([x, x, -np.ones(m_, "float32")]))


def test_recursive_loop_over_a_tuple_argument():
    vm = _vm(from_source('''
@I.ir_module
class Loop:
    @R.function
    def loop(i: R.Tensor((), "int32"), n: R.Tensor((), "int32"),
             acc: R.Tensor(("k",), "float32")) -> R.Tensor(("k",), "float32"):
        cls = Loop
        cond = R.less(i, n)
        if cond:
            acc2 = R.add(acc, R.const(1.0, "float32"))
            i2 = R.add(i, R.const(1, "int32"))
            r = cls.loop(i2, n, acc2)
        else:
            r = acc
        return r

    @R.function
    def main(tup: R.Tuple(R.Tensor(("k",), "float32"), R.Tensor((), "int32"))):
        cls = Loop
        return cls.loop(R.const(0, "int32"), tup[1], tup[0])
'''))
    for k, steps in [(1, 0), (3, 5)]:
        out = vm["main"]((np.zeros(k, "float32"), np.array(steps, "int32")))
        np.testing.assert_allclose(out.numpy(), np.full(k, steps, "float32"))


def test_local_function_is_lifted_by_build():
    """relax.build lifts a local ``@R.function`` itself (the VM runs module functions)."""
    vm = _vm(from_source('''
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n",), "float32")):
        @R.function
        def addk(z: R.Tensor(("k",), "float32")) -> R.Tensor(("k",), "float32"):
            k = T.int64()
            return R.add(z, R.const(10.0, "float32"))
        t = addk(x)
        return t
'''))
    for n in (1, 4):
        x = np.random.rand(n).astype("float32")
        np.testing.assert_allclose(vm["main"](x).numpy(), x + 10, rtol=1e-6)


def test_call_dps_packed_user_function_gets_ndarrays():
    """A registered packed function receives NDArrays (``copyfrom`` into the DPS outputs, as
    TVM's examples write them) and may return one."""

    def split2(x, a, b):
        h = x.shape[0] // 2
        a.copyfrom(x.numpy()[:h])
        b.copyfrom(x.numpy()[h:])

    tvm.register_func("test_user_programs.split2", split2, override=True)
    tvm.register_func("test_user_programs.cumsum",
                      lambda x: tvm.nd.array(np.cumsum(x.numpy())), override=True)
    vm = _vm(from_source('''
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n",), "float32")):
        n = T.int64()
        with R.dataflow():
            ab = R.call_dps_packed("test_user_programs.split2", (x,),
                                   out_sinfo=[R.Tensor((n // 2,), "float32"),
                                              R.Tensor((n - n // 2,), "float32")])
            b = ab[1]
            c = R.call_pure_packed("test_user_programs.cumsum", b,
                                   sinfo_args=R.Tensor((n - n // 2,), "float32"))
            d = R.add(c, R.const(1.0, "float32"))
            R.output(ab, d)
        return (ab[0], d)
'''))
    for n in (2, 7):
        x = np.arange(n, dtype="float32")
        a, d = vm["main"](x)
        np.testing.assert_allclose(a.numpy(), x[:n // 2])
        np.testing.assert_allclose(d.numpy(), np.cumsum(x[n // 2:]) + 1)


def test_block_builder_with_add_func_emit_te_and_top_level_call_tir():
    """``relax.call_tir`` (and the other call_* helpers) are in the relax namespace, as in
    TVM; a TE-made PrimFunc added with ``add_func`` and a topi reduction run at two sizes."""
    n = tir.Var("n", "int64")
    a = te.placeholder((n, 4), name="A")
    b = te.compute((n, 4), lambda i, j: a[i, j] * 2.0 + 1.0, name="B")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo([n, 4], "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.add_func(te.create_prim_func([a, b]), "affine")
            y = bb.emit(relax.call_tir(gv, (x,), relax.TensorStructInfo([n, 4], "float32")))
            z = bb.emit_te(lambda t: topi.sum(t, axis=1), y, primfunc_name_hint="rowsum")
            out = bb.emit_output(relax.op.multiply(z, relax.const(0.5, "float32")))
        bb.emit_func_output(out)
    vm = _vm(bb.get())
    for rows in (1, 9):
        xv = np.random.rand(rows, 4).astype("float32")
        np.testing.assert_allclose(vm["main"](xv).numpy(), (xv * 2 + 1).sum(1) / 2, rtol=1e-5)
    for name in ("call_tir", "call_tir_inplace", "call_pure_packed", "call_dps_packed",
                 "extern", "register_pipeline", "get_default_pipeline", "convert_to_expr"):
        assert hasattr(relax, name), name
    assert isinstance(relax.extern("f"), relax.ExternFunc)
    assert isinstance(relax.convert_to_expr((1.5, "s")), relax.Tuple)


def test_visitor_whose_init_does_not_call_super():
    @visitor
    class CountCalls(PyExprVisitor):
        def __init__(self):  # TVM's decorated visitors need not call super().__init__()
            self.calls = 0

        def visit_call_(self, call):
            self.calls += 1
            super().visit_call_(call)

    mod = from_source(CALL_TIR_RESHAPE)
    counter = CountCalls()
    counter.visit_expr(mod["main"])
    assert counter.calls == 5


# ---------------------------------------------------------------------------- errors
def test_call_tir_output_contradicting_the_prim_funcs_symbolic_dim():
    """out_sinfo (n + 1, 4) for a PrimFunc whose output is (n, 4), n bound by its input: a
    clear error at the kernel's entry, not a partly written result."""
    vm = _vm(from_source('''
@I.ir_module
class M:
    @T.prim_func
    def double(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, 4), "float32")
        B = T.match_buffer(b, (n, 4), "float32")
        for i, j in T.grid(n, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)

    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        n = T.int64()
        cls = M
        y = R.call_tir(cls.double, (x,), out_sinfo=R.Tensor((n + 1, 4), "float32"))
        return y
'''))
    with pytest.raises(ValueError, match=r"kernel 'double': argument 1 dimension 0 must be "
                                         r"n = 3 .*got 4"):
        vm["main"](np.ones((3, 4), "float32"))


def test_arguments_contradicting_the_signature():
    vm = _vm(from_source('''
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n", "m"), "float32"), y: R.Tensor(("m", "n"), "float32"),
             z: R.Tensor(("n + 1",), "float32")):
        with R.dataflow():
            a = R.add(x, R.permute_dims(y))
            b = R.sum(a, axis=1)
            c = R.concat((b, R.zeros(R.shape([1]), "float32")), axis=0)
            d = R.add(c, z)
            R.output(d)
        return d
'''))
    f = np.float32
    x, y, z = np.ones((2, 3), f), np.ones((3, 2), f), np.ones(3, f)
    np.testing.assert_allclose(vm["main"](x, y, z).numpy(), [7, 7, 1])
    with pytest.raises(ValueError, match=r"param=x.*expected a tensor of rank 2, got rank 3"):
        vm["main"](np.ones((2, 3, 1), f), y, z)
    with pytest.raises(ValueError, match=r"param=x.*expected dtype float32, got float64"):
        vm["main"](x.astype("float64"), y, z)
    with pytest.raises(ValueError, match=r"param=y.*dimension 1 is 3 but the annotation "
                                         r"requires 2"):
        vm["main"](x, np.ones((3, 3), f), z)
    with pytest.raises(ValueError, match=r"param=z.*dimension 0 is 4 but the annotation "
                                         r"requires 3"):
        vm["main"](x, y, np.ones(4, f))
    with pytest.raises(TypeError, match=r"main\(\) takes 3 arguments"):
        vm["main"](x, y)


def test_op_of_unknown_shape_left_by_legalize_names_the_reason():
    mod = from_source('''
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n",), "float32"), y: R.Tensor(("m",), "float32")):
        with R.dataflow():
            z = R.add(x, y)
            R.output(z)
        return z
''')
    with pytest.raises(VMCodeGenError, match=r"relax.add is not lowered.*shape and dtype known "
                                             r"at compile time.*R.match_cast"):
        relax.build(mod, "llvm")


@pytest.mark.parametrize("src, message", [
    ('''
@R.function
def main(x: R.Tensor((2,), "flaot32")):
    return x
''', r"unknown data type 'flaot32'"),
    ('''
@R.function
def main(x: R.Tensor((3, -2), "float32")):
    return x
''', r"dimension -2 is negative"),
    ('''
@R.function
def main(x: R.Tensor((3,), "float32")):
    with R.dataflow():
        y = R.add(x, x)
        z = R.add(y, y)
        R.output(z)
    return y
''', r"name 'y' is not defined here: it is a dataflow variable .*R.output"),
    ('''
@T.prim_func
def f(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32")):
    for i in range(4):
        B[i] = A[i, 0]
''', r"buffer 'B' is 2-dimensional .* indexed with 1 indices"),
])
def test_malformed_tvmscript_is_a_clear_parser_error(src, message):
    with pytest.raises(ParserError, match=message):
        from_source(src)


def test_nn_module_with_two_symbolic_dims_and_a_user_pass_sequence():
    """An nn.Module (embedding, layer norm, linear, gelu, softmax) exported with symbolic batch
    and sequence, through the passes users chain, built once and run at two shapes."""
    from minitvm.relax.frontend import nn

    class Block(nn.Module):
        def __init__(self):
            self.emb = nn.Embedding(11, 8)
            self.ln = nn.LayerNorm(8)
            self.fc = nn.Linear(8, 8)

        def forward(self, x, ids):
            h = self.ln(x + self.emb(ids))
            return nn.softmax(nn.gelu(self.fc(h)), axis=-1)

    mod, params = Block().export_tvm({"forward": {
        "x": nn.spec.Tensor(("b", "s", 8), "float32"),
        "ids": nn.spec.Tensor(("b", "s"), "int32")}})
    seq = tvm.transform.Sequential([
        relax.transform.CanonicalizeBindings(), relax.transform.DeadCodeElimination(),
        relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
        relax.transform.FuseOps(), relax.transform.FuseTIR()])
    vm = _vm(seq(mod))
    rng = np.random.default_rng(0)
    pv = {k: rng.standard_normal(p.shape).astype(p.dtype) for k, p in params}
    from math import erf, sqrt
    gelu = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / sqrt(2))))
    for b, s in [(1, 1), (2, 5)]:
        x = rng.standard_normal((b, s, 8)).astype("float32")
        ids = rng.integers(0, 11, (b, s)).astype("int32")
        out = vm["forward"](x, ids, *[pv[k] for k, _ in params]).numpy()
        h = x + pv["emb.weight"][ids]
        h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5)
        h = gelu((h * pv["ln.weight"] + pv["ln.bias"]) @ pv["fc.weight"].T + pv["fc.bias"])
        e = np.exp(h - h.max(-1, keepdims=True))
        np.testing.assert_allclose(out, e / e.sum(-1, keepdims=True), rtol=1e-4, atol=1e-5)
