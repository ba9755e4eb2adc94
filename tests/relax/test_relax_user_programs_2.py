"""More Relax programs written as TVM users write them, and the bugs they found: a nested
tuple argument of a fused function (FuseTIR), ``vi = T.axis.remap("S", [i])`` with one axis,
the return struct info of a function whose result shape is a shape variable bound in its
body, ``relax.frontend.torch.from_fx``, and ``relax.transform.ToMixedPrecision``. Each
program is built once and run at two or more shapes against numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.script import from_source

SHAPE = tvm.runtime.ShapeTuple


def _vm(mod):
    return relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())


def _roundtrip(mod):
    """Print with the metadata section and parse back: the same module."""
    again = from_source(mod.script(show_meta=True))
    tvm.ir.assert_structural_equal(mod, again)
    return again


# ---------------------------------------------------------------- FuseTIR: nested tuple args
FUSED_NESTED_TUPLE = '''
@I.ir_module
class Before:
    @T.prim_func(private=True)
    def add(a: T.Buffer((T.int64(2),), "float32"), b: T.Buffer((T.int64(2),), "float32"),
            c: T.Buffer((T.int64(2),), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": True})
        for i in range(T.int64(2)):
            with T.block("c"):
                vi = T.axis.remap("S", [i])
                c[vi] = a[vi] + b[vi]

    @R.function(private=True)
    def fused_add(t: R.Tuple(R.Tensor((2,), "float32"),
                             R.Tuple(R.Tensor((2,), "float32"), R.Tensor((2,), "float32")))
                  ) -> R.Tensor((2,), "float32"):
        R.func_attr({"Primitive": 1})
        cls = Before
        with R.dataflow():
            inner = t[1]
            a = inner[0]
            b = inner[1]
            gv = R.call_tir(cls.add, (a, b), out_sinfo=R.Tensor((2,), "float32"))
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((2,), "float32"), y: R.Tensor((2,), "float32")
             ) -> R.Tensor((2,), "float32"):
        cls = Before
        with R.dataflow():
            t = (x, (y, x))
            d = cls.fused_add(t)
            R.output(d)
        return d
'''

FUSED_NESTED_TUPLE_EXPECTED = '''
@I.ir_module
class Expected:
    @T.prim_func(private=True)
    def fused_add(t_0: T.Buffer((T.int64(2),), "float32"), t_1: T.Buffer((T.int64(2),), "float32"),
                  t_2: T.Buffer((T.int64(2),), "float32"),
                  c_intermediate: T.Buffer((T.int64(2),), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        for i in range(T.int64(2)):
            with T.block("c"):
                vi = T.axis.spatial(T.int64(2), i)
                T.reads(t_1[vi], t_2[vi])
                T.writes(c_intermediate[vi])
                c_intermediate[vi] = t_1[vi] + t_2[vi]

    @R.function
    def main(x: R.Tensor((2,), "float32"), y: R.Tensor((2,), "float32")
             ) -> R.Tensor((2,), "float32"):
        cls = Expected
        with R.dataflow():
            t = (x, (y, x))
            lv = t[0]
            lv1 = t[1]
            lv2 = lv1[0]
            lv3 = lv1[1]
            d = R.call_tir(cls.fused_add, (lv, lv2, lv3), out_sinfo=R.Tensor((2,), "float32"))
            R.output(d)
        return d
'''


def test_fuse_tir_flattens_a_nested_tuple_argument():
    """A fused function taking ``(a, (b, c))`` gets one buffer per tensor; the call site passes
    the three tensors (it emitted get-items 0..2 of the outer tuple, out of range, before)."""
    after = relax.transform.FuseTIR()(from_source(FUSED_NESTED_TUPLE))
    tvm.ir.assert_structural_equal(after, from_source(FUSED_NESTED_TUPLE_EXPECTED))
    vm = _vm(after)
    x, y = np.array([1, 2], "float32"), np.array([10, 20], "float32")
    np.testing.assert_allclose(vm["main"](x, y).numpy(), y + x)


def test_split_parts_in_a_nested_tuple_through_the_default_pipeline():
    mod = from_source('''
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n", 12), "float32")):
        with R.dataflow():
            parts = R.split(x, indices_or_sections=3, axis=1)
            a = parts[0]
            t = (a, (parts[1], parts[2]))
            inner = t[1]
            d = R.nn.relu(R.add(R.multiply(a, inner[0]), inner[1]))
            R.output(d, t)
        return (d, t)
''')
    vm = _vm(mod)
    rng = np.random.default_rng(0)
    for n in (1, 4):
        x = rng.standard_normal((n, 12)).astype("float32")
        d, t = vm["main"](x)
        a, b, c = x[:, :4], x[:, 4:8], x[:, 8:]
        # a*b + c may be one fused multiply-add: allow its single rounding near cancellation
        np.testing.assert_allclose(d.numpy(), np.maximum(a * b + c, 0), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(t[1][0].numpy(), b)
        np.testing.assert_allclose(t[1][1].numpy(), c)


# ---------------------------------------------------------------- TVMScript: one-axis remap
def test_one_axis_remap_binds_a_single_name():
    """``vi = T.axis.remap("S", [i])`` (TVM's tutorials write it so) binds ``vi``; it was
    bound to the remap object and failed as a buffer index."""
    mod = from_source('''
@I.ir_module
class M:
    @T.prim_func
    def scale(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in range(n):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi] * T.float32(3)

    @R.function
    def main(x: R.Tensor(("n",), "float32")):
        n = T.int64()
        cls = M
        y = R.call_tir(cls.scale, (x,), out_sinfo=R.Tensor((n,), "float32"))
        return y
''')
    block = mod["scale"].body.block.body.body.block
    assert [iv.var.name for iv in block.iter_vars] == ["vi"]
    assert block.iter_vars[0].iter_type == tir.IterVar.DataPar
    _roundtrip(mod)
    vm = _vm(mod)
    for n in (1, 6):
        x = np.random.rand(n).astype("float32")
        np.testing.assert_allclose(vm["main"](x).numpy(), x * 3, rtol=1e-6)


# ---------------------------------------------------------------- shape variables in results
def test_result_shaped_by_a_shape_variable_of_the_body():
    """``y = R.full(s2, ...)`` with ``s2`` bound in the body: the function's return struct info
    keeps the rank and dtype only (``s2`` is out of scope there, as TVM's normalizer erases
    it); the printed text named ``s2`` in the signature and did not parse back."""
    mod = from_source('''
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n", "m"), "float32"), k: R.Prim("int64")):
        n = T.int64()
        m = T.int64()
        s = R.shape_of(x)
        s2 = R.shape([n * m, n + 1])
        y = R.full(s2, R.const(2.5, "float32"), "float32")
        z = R.arange(R.prim_value(0), R.prim_value(n * 3), R.prim_value(2), "int64")
        return (s, s2, y, z, k)
''')
    ret = mod["main"].ret_struct_info
    tvm.ir.assert_structural_equal(ret.fields[2], relax.TensorStructInfo(ndim=2,
                                                                         dtype="float32"))
    assert ret.fields[1].values is not None  # the shape value itself stays known
    _roundtrip(mod)
    vm = _vm(mod)
    for n, m in [(2, 3), (5, 1)]:
        s, s2, y, z, k = vm["main"](np.zeros((n, m), "float32"), 7)
        assert tuple(s) == (n, m) and tuple(s2) == (n * m, n + 1)
        np.testing.assert_allclose(y.numpy(), np.full((n * m, n + 1), 2.5))
        np.testing.assert_allclose(z.numpy(), np.arange(0, n * 3, 2))
        assert int(k) == 7


def test_block_builder_function_result_shaped_by_a_local_shape_variable():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        s = bb.emit(relax.ShapeExpr([n * 2]))
        y = bb.emit(relax.op.full(s, relax.const(1.5, "float32"), "float32"))
        assert y.struct_info.shape.same_as(s)  # R.full keeps the shape variable
        z = bb.emit(relax.op.add(y, relax.op.concat([x, x], axis=0)))
        bb.emit_func_output(relax.Tuple([y, z]))
    mod = bb.get()
    unknown = relax.TensorStructInfo(ndim=1, dtype="float32")
    tvm.ir.assert_structural_equal(mod["main"].ret_struct_info,
                                   relax.TupleStructInfo([unknown, unknown]))
    vm = _vm(mod)
    for k in (1, 3):
        v = np.random.rand(k).astype("float32")
        y, z = vm["main"](v)
        np.testing.assert_allclose(y.numpy(), np.full(2 * k, 1.5))
        np.testing.assert_allclose(z.numpy(), np.concatenate([v, v]) + 1.5)


# ---------------------------------------------------------------- odd ops a user tries
def test_negative_strides_scatter_and_take_of_a_constant_index_tensor():
    mod = from_source('''
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), idx: R.Tensor(("k",), "int64"),
             ind2: R.Tensor(("n", 2), "int64"), upd: R.Tensor(("n", 2), "float32")):
        with R.dataflow():
            a = R.strided_slice(x, axes=[1], begin=[1], end=[8], strides=[2])
            b = R.strided_slice(x, axes=[0, 1], begin=[-1, 7], end=[-100, -100],
                                strides=[-1, -3])
            c = R.take(x, idx, axis=0)
            d = R.scatter_elements(x, ind2, upd, axis=1)
            e = R.take(x, R.const([[0, 7], [3, 3]], "int32"), axis=1)
            R.output(a, b, c, d, e)
        return (a, b, c, d, e)
''')
    _roundtrip(mod)
    vm = _vm(mod)
    rng = np.random.default_rng(3)
    for n, k in [(2, 3), (5, 1)]:
        x = rng.random((n, 8), dtype="float32")
        idx = rng.integers(0, n, k).astype("int64")
        ind2 = np.stack([rng.permutation(8)[:2] for _ in range(n)]).astype("int64")
        upd = rng.random((n, 2), dtype="float32")
        a, b, c, d, e = vm["main"](x, idx, ind2, upd)
        np.testing.assert_allclose(a.numpy(), x[:, 1:8:2])
        np.testing.assert_allclose(b.numpy(), x[-1::-1, 7::-3])
        np.testing.assert_allclose(c.numpy(), x[idx])
        ref = x.copy()
        np.put_along_axis(ref, ind2, upd, axis=1)
        np.testing.assert_allclose(d.numpy(), ref)
        np.testing.assert_allclose(e.numpy(), x[:, [[0, 7], [3, 3]]])


def test_float16_and_int8_matmul_with_out_dtype():
    vm = _vm(from_source('''
@I.ir_module
class M:
    @R.function
    def main(a: R.Tensor(("n", 8), "float16"), b: R.Tensor((8, 5), "float16"),
             c: R.Tensor(("n", 8), "int8"), d: R.Tensor((8, 5), "int8")):
        with R.dataflow():
            x = R.matmul(a, b, out_dtype="float32")
            y = R.matmul(c, d, out_dtype="int32")
            R.output(x, y)
        return (x, y)
'''))
    rng = np.random.default_rng(4)
    for n in (1, 7):
        a = rng.standard_normal((n, 8)).astype("float16")
        b = rng.standard_normal((8, 5)).astype("float16")
        c = rng.integers(-128, 128, (n, 8)).astype("int8")
        d = rng.integers(-128, 128, (8, 5)).astype("int8")
        x, y = vm["main"](a, b, c, d)
        assert x.dtype == "float32" and y.dtype == "int32"
        np.testing.assert_allclose(x.numpy(), a.astype("float32") @ b.astype("float32"),
                                   rtol=1e-3, atol=1e-3)
        np.testing.assert_array_equal(y.numpy(), c.astype("int32") @ d.astype("int32"))


# ---------------------------------------------------------------- ToMixedPrecision
AMP_BEFORE = '''
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor(("n", 3, 8, 8), "float32"), w: R.Tensor((4, 3, 3, 3), "float32"),
             w2: R.Tensor((4,), "float32")):
        with R.dataflow():
            y = R.nn.conv2d(x, w, padding=[1, 1, 1, 1], out_dtype="float32")
            z = R.nn.relu(y)
            a = R.add(z, R.const(0.5, "float32"))
            b = R.permute_dims(a, [0, 2, 3, 1])
            c = R.add(b, w2)
            d = R.nn.softmax(c, axis=-1)
            R.output(d, a)
        return (d, a)
'''

AMP_EXPECTED = '''
@I.ir_module
class Expected:
    @R.function
    def main(x: R.Tensor(("n", 3, 8, 8), "float32"), w: R.Tensor((4, 3, 3, 3), "float32"),
             w2: R.Tensor((4,), "float32")):
        n = T.int64()
        with R.dataflow():
            lv = R.astype(x, dtype="float16")
            lv1 = R.astype(w, dtype="float16")
            y = R.nn.conv2d(lv, lv1, padding=[1, 1, 1, 1], out_dtype="float32")
            lv2 = R.astype(y, dtype="float16")
            z = R.nn.relu(lv2)
            lv3 = R.add(z, R.const(0.5, "float16"))
            a = R.astype(lv3, dtype="float32")
            b = R.permute_dims(lv3, axes=[0, 2, 3, 1])
            lv4 = R.astype(b, dtype="float32")
            c = R.add(lv4, w2)
            d = R.nn.softmax(c, axis=-1)
            R.output(a, d)
        return (d, a)
'''


def test_to_mixed_precision_structure():
    """conv2d (always) runs on float16 operands accumulating in float32; relu / add / permute
    (follow) stay float16 while their operands are; ``+ w2`` (a float32 parameter) and
    softmax (never) run in float32; the block outputs keep float32."""
    after = relax.transform.ToMixedPrecision()(from_source(AMP_BEFORE))
    tvm.ir.assert_structural_equal(after, from_source(AMP_EXPECTED))
    half = relax.transform.ToMixedPrecision(out_dtype="float16")(from_source(AMP_BEFORE))
    conv = [b.value for b in half["main"].body.blocks[0].bindings
            if b.var.name_hint == "y"][0]
    assert conv.attrs.out_dtype == "float16"
    assert conv.struct_info.dtype == "float16"
    with pytest.raises(ValueError, match="out_dtype must be 'float32' or 'float16'"):
        relax.transform.ToMixedPrecision(out_dtype="bfloat16")


@pytest.mark.parametrize("kwargs", [{}, {"out_dtype": "float16"},
                                    {"fp16_input_names": ["x"]}])
def test_to_mixed_precision_numerics(kwargs):
    before = from_source(AMP_BEFORE)
    after = relax.transform.ToMixedPrecision(**kwargs)(before)
    _roundtrip(after)
    vm0, vm = _vm(before), _vm(after)
    rng = np.random.default_rng(5)
    for n in (1, 3):
        x = rng.standard_normal((n, 3, 8, 8)).astype("float32")
        w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
        w2 = rng.standard_normal(4).astype("float32")
        d0, a0 = vm0["main"](x, w, w2)
        xin = x.astype("float16") if "fp16_input_names" in kwargs else x
        d, a = vm["main"](xin, w, w2)
        assert d.dtype == "float32" and a.dtype == "float32"
        np.testing.assert_allclose(d.numpy(), d0.numpy(), rtol=2e-2, atol=2e-2)
        np.testing.assert_allclose(a.numpy(), a0.numpy(), rtol=2e-2, atol=5e-2)


# ---------------------------------------------------------------- relax.frontend.torch.from_fx
torch = pytest.importorskip("torch")


class _LNGelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(12)
        self.fc1 = torch.nn.Linear(12, 24)
        self.fc2 = torch.nn.Linear(24, 12)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln(x)), approximate="tanh"))


class _ConvBN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = torch.nn.Conv2d(3, 8, 3, padding=1, stride=2, bias=False)
        self.bn = torch.nn.BatchNorm2d(8)

    def forward(self, x):
        return torch.relu(self.bn(self.c(x))).mean((2, 3))


class _Two(torch.nn.Module):
    def forward(self, x, y):
        return (x * y, x - y)


def test_from_fx_static_and_symbolic_shapes():
    from minitvm.relax.frontend.torch import from_fx

    torch.manual_seed(0)
    model = _LNGelu().eval()
    gm = torch.fx.symbolic_trace(model)
    mod = from_fx(gm, [((4, 12), "float32")])
    tvm.ir.assert_structural_equal(mod["main"].ret_struct_info,
                                   relax.TensorStructInfo([4, 12], "float32"))
    x = torch.randn(4, 12)
    np.testing.assert_allclose(_vm(mod)["main"](x.numpy()).numpy(), model(x).detach().numpy(),
                               rtol=1e-4, atol=1e-4)
    mod = from_fx(gm, [(("n", 12), "float32")])
    (n,) = [v for v in relax.analysis.tir_vars_in_struct_info(mod["main"].params[0].struct_info)]
    assert n.name == "n"
    vm = _vm(mod)
    for rows in (1, 6):
        x = torch.randn(rows, 12)
        np.testing.assert_allclose(vm["main"](x.numpy()).numpy(), model(x).detach().numpy(),
                                   rtol=1e-4, atol=1e-4)


def test_from_fx_inference_mode_params_as_input_and_tir_var_dims():
    """A training-mode module imports with inference semantics (running statistics) and is
    left in training mode; weights become trailing parameters with keep_params_as_input."""
    from minitvm.relax.frontend import detach_params
    from minitvm.relax.frontend.torch import from_fx

    torch.manual_seed(1)
    model = _ConvBN().train()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-1, 1)
        model.bn.running_var.uniform_(0.5, 2)
    gm = torch.fx.symbolic_trace(model)
    b = tir.Var("b", "int64")
    mod = from_fx(gm, [([b, 3, 16, 16], "float32")], keep_params_as_input=True)
    assert gm.training and model.training
    assert mod["main"].params[0].struct_info.shape.values[0].same_as(b)
    mod, params = detach_params(mod)
    vm = _vm(mod)
    model.eval()
    for batch in (1, 3):
        x = torch.randn(batch, 3, 16, 16)
        out = vm["main"](x.numpy(), *params["main"]).numpy()
        np.testing.assert_allclose(out, model(x).detach().numpy(), rtol=1e-4, atol=1e-4)


def test_from_fx_tuple_results_and_input_errors():
    from minitvm.relax.frontend.torch import from_fx

    gm = torch.fx.symbolic_trace(_Two())
    for no_bind in (False, True):
        mod = from_fx(gm, [(("n",), "float32"), (("n",), "float32")],
                      no_bind_return_tuple=no_bind)
        assert isinstance(mod["main"].body.body, relax.Tuple) == no_bind
        vm = _vm(mod)
        for k in (2, 5):
            x, y = np.random.rand(k).astype("float32"), np.random.rand(k).astype("float32")
            a, b = vm["main"](x, y)
            np.testing.assert_allclose(a.numpy(), x * y)
            np.testing.assert_allclose(b.numpy(), x - y)
    with pytest.raises(TypeError, match=r"input_info\[0\] must be a \(shape, dtype\) pair"):
        from_fx(gm, [(4,), ((4,), "float32")])
    with pytest.raises(TypeError, match=r"unknown dtype 'flaot32'"):
        from_fx(gm, [((4,), "flaot32"), ((4,), "float32")])
    with pytest.raises(NotImplementedError, match="custom_convert_map"):
        from_fx(gm, [((4,), "float32")] * 2, custom_convert_map={torch.nn.ReLU: None})


# ---------------------------------------------------------------- LambdaLift: fresh variables
def test_lambda_lift_gives_the_lifted_function_its_own_symbolic_vars():
    """A closure over ``y`` with parameters shaped ``(n,)`` like its parent's: the lifted
    function used the parent's ``n`` object, a module relax.analysis.well_formed rejects and
    whose printed text parsed back to a different module."""
    mod = from_source('''
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n",), "float32"), y: R.Tensor(("n",), "float32")):
        n = T.int64()
        @R.function
        def inner(z: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
            return R.add(z, y)
        a = inner(x)
        b = inner(a)
        return b
''')
    lifted = relax.transform.LambdaLift()(mod)
    assert relax.analysis.well_formed(lifted)
    expected = from_source('''
@I.ir_module
class Expected:
    @R.function(private=True)
    def main_inner(z: R.Tensor(("n",), "float32"), y: R.Tensor(("n",), "float32")
                   ) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        gv = R.add(z, y)
        return gv

    @R.function
    def main(x: R.Tensor(("n",), "float32"), y: R.Tensor(("n",), "float32")
             ) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        inner = R.make_closure(Expected.main_inner, (y,))
        a = R.invoke_pure_closure(inner, (x,), sinfo_args=(R.Tensor((n,), "float32"),))
        b = R.invoke_pure_closure(inner, (a,), sinfo_args=(R.Tensor((n,), "float32"),))
        return b
''')
    tvm.ir.assert_structural_equal(lifted, expected)
    _roundtrip(lifted)
    vm = _vm(lifted)
    for k in (1, 4):
        x, y = np.random.rand(k).astype("float32"), np.random.rand(k).astype("float32")
        np.testing.assert_allclose(vm["main"](x, y).numpy(), x + 2 * y, rtol=1e-6)


# ---------------------------------------------------------------- DecomposeOpsForInference
BN_BEFORE = '''
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor(("b", 4, 3), "float32"), g: R.Tensor((4,), "float32"),
             be: R.Tensor((4,), "float32"), m: R.Tensor((4,), "float32"),
             v: R.Tensor((4,), "float32")):
        with R.dataflow():
            bn = R.nn.batch_norm(x, g, be, m, v, axis=1, epsilon=1e-3, center=False)
            y = bn[0]
            R.output(y)
        return y
'''


def test_decompose_batch_norm_for_inference_structure():
    after = relax.transform.DecomposeOpsForInference()(from_source(BN_BEFORE))
    expected = from_source('''
@I.ir_module
class Expected:
    @R.function
    def main(x: R.Tensor(("b", 4, 3), "float32"), g: R.Tensor((4,), "float32"),
             be: R.Tensor((4,), "float32"), m: R.Tensor((4,), "float32"),
             v: R.Tensor((4,), "float32")) -> R.Tensor(("b", 4, 3), "float32"):
        b = T.int64()
        with R.dataflow():
            lv = R.expand_dims(m, axis=[0, 2])
            lv1 = R.subtract(x, lv)
            lv2 = R.expand_dims(v, axis=[0, 2])
            lv3 = R.add(lv2, R.const(0.001, "float32"))
            lv4 = R.sqrt(lv3)
            lv5 = R.divide(lv1, lv4)
            lv6 = R.expand_dims(g, axis=[0, 2])
            lv7 = R.multiply(lv5, lv6)
            bn = (lv7, m, v)
            y = bn[0]
            R.output(y)
        return y
''')
    tvm.ir.assert_structural_equal(after, expected)
    untouched = relax.transform.DecomposeOpsForInference("other")(from_source(BN_BEFORE))
    assert "R.nn.batch_norm" in untouched.script()


@pytest.mark.parametrize("center, scale", [(True, True), (False, True), (True, False)])
def test_decompose_batch_norm_for_inference_numerics(center, scale):
    before = from_source(BN_BEFORE.replace("center=False", f"center={center}, scale={scale}"))
    after = relax.transform.DecomposeOpsForInference()(before)
    assert "R.nn.batch_norm" not in after.script()
    vm0, vm = _vm(before), _vm(after)
    rng = np.random.default_rng(6)
    for b in (1, 3):
        x = rng.standard_normal((b, 4, 3)).astype("float32")
        g, be, m = (rng.standard_normal(4).astype("float32") for _ in range(3))
        v = rng.random(4, dtype="float32") + 0.5
        ref = (x - m[:, None]) / np.sqrt(v[:, None] + 1e-3)
        ref = ref * g[:, None] if scale else ref
        ref = ref + be[:, None] if center else ref
        np.testing.assert_allclose(vm["main"](x, g, be, m, v).numpy(), ref, rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(vm0["main"](x, g, be, m, v).numpy(), ref, rtol=1e-5,
                                   atol=1e-5)


# ---------------------------------------------------------------- build and VM API a user calls
MATMUL = '''
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), w: R.Tensor((4, 4), "float32")):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            y = R.matmul(x, w)
            R.output(y)
        return y
'''


def test_target_options_written_with_a_space_and_build_params():
    """``Target("llvm -num-cores 1")`` (TVM reads ``-key value`` as ``-key=value``) and
    ``relax.build(..., params=...)``: the option was rejected as 'invalid target option'."""
    t = tvm.target.Target("llvm -mcpu skylake -num-cores 2 -system-lib")
    assert t.attrs == {"mcpu": "skylake", "num-cores": 2, "system-lib": True}
    assert str(t) == "llvm -keys=cpu -mcpu=skylake -num-cores=2 -system-lib"  # (TVM's form)
    with pytest.raises(ValueError, match="invalid target option 'foo'"):
        tvm.target.Target("llvm foo")
    w = np.random.randn(4, 4).astype("float32")
    ex = relax.build(from_source(MATMUL), tvm.target.Target("llvm -num-cores 1"),
                     params={"w": w})
    vm = relax.VirtualMachine(ex, tvm.cpu())
    for n in (1, 3):
        x = np.random.randn(n, 4).astype("float32")
        np.testing.assert_allclose(vm["main"](x).numpy(), x @ w, rtol=1e-5, atol=1e-6)


def test_vm_arity_param_names_and_saved_functions():
    vm = _vm(from_source(MATMUL))
    assert vm.get_function_arity("main") == 2
    assert [vm.get_function_param_name("main", i) for i in range(2)] == ["x", "w"]
    with pytest.raises(IndexError, match="has 2 parameters"):
        vm.get_function_param_name("main", 2)
    x, w = np.random.randn(3, 4).astype("float32"), np.random.randn(4, 4).astype("float32")
    vm.save_function("main", "main_saved", tvm.nd.array(x), w=w)
    np.testing.assert_allclose(vm["main_saved"]().numpy(), x @ w, rtol=1e-5, atol=1e-6)
    assert vm.time_evaluator("main_saved", tvm.cpu(), number=2)().mean > 0
    vm.save_function("main", "no_return", x, w, include_return=False)
    assert vm["no_return"]() is None
    with pytest.raises(TypeError, match="missing argument 'w'"):
        vm.save_function("main", "bad", x)


# ---------------------------------------------------------------- relax.analysis helpers
ANALYSIS_MOD = '''
@I.ir_module
class M:
    @R.function
    def even(n: R.Tensor((), "int64")) -> R.Tensor((), "bool"):
        cls = M
        if R.equal(n, R.const(0, "int64")):
            r = R.const(True)
        else:
            r = cls.odd(R.subtract(n, R.const(1, "int64")))
        return r

    @R.function
    def odd(n: R.Tensor((), "int64")) -> R.Tensor((), "bool"):
        cls = M
        if R.equal(n, R.const(0, "int64")):
            r = R.const(False)
        else:
            r = cls.even(R.subtract(n, R.const(1, "int64")))
        return r

    @R.function
    def fact(n: R.Tensor((), "int64")) -> R.Tensor((), "int64"):
        cls = M
        if R.equal(n, R.const(0, "int64")):
            r = R.const(1, "int64")
        else:
            r = R.multiply(n, cls.fact(R.subtract(n, R.const(1, "int64"))))
        return r

    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), w: R.Tensor((4, 4), "float32"),
             b: R.Tensor((4,), "float32")):
        R.func_attr({"num_input": 1})
        cls = M
        with R.dataflow():
            wt = R.permute_dims(w)
            bb = R.multiply(b, R.const(2, "float32"))
            y = R.matmul(x, wt)
            z = R.add(y, bb)
            unused = R.exp(y)
            R.output(z)
        return z
'''


def test_analysis_helpers_a_user_calls():
    """relax.analysis.detect_recursion / get_var2val / name_to_binding / udchain /
    computable_at_compile_time / post_order_visit / contains_impure_call / remove_all_unused
    (TVM's names; none of them existed)."""
    an = relax.analysis
    mod = from_source(ANALYSIS_MOD)
    assert [[g.name_hint for g in grp] for grp in an.detect_recursion(mod)] == \
        [["even", "odd"], ["fact"]]
    main = mod["main"]
    block = main.body.blocks[0]
    var = {b.var.name_hint: b.var for b in block.bindings}
    v2v = an.get_var2val(main)
    assert set(v2v) == set(var.values())
    assert v2v[var["z"]] is [b for b in block.bindings if b.var is var["z"]][0].value
    assert {k: [b.var for b in v] for k, v in an.name_to_binding(main).items()} == \
        {k: [v] for k, v in var.items()}
    chains = {k.name_hint: [u.name_hint for u in v] for k, v in an.udchain(block).items()}
    assert chains == {"w": ["wt"], "wt": ["y"], "b": ["bb"], "bb": ["z"], "x": ["y"],
                      "y": ["z", "unused"], "z": [], "unused": []}
    assert [v.name_hint for v in an.computable_at_compile_time(main)] == ["w", "b", "wt", "bb"]
    seen = []
    an.post_order_visit(v2v[var["z"]], lambda e: seen.append(e))
    assert [type(e).__name__ for e in seen] == ["Op", "DataflowVar", "DataflowVar", "Call"]
    assert seen[-1] is v2v[var["z"]]
    assert not an.contains_impure_call(main)
    trimmed = an.remove_all_unused(main)
    assert "unused" not in {b.var.name_hint for b in trimmed.body.blocks[0].bindings}
    vm = _vm(mod)
    for k in (5, 6):
        assert bool(vm["even"](np.array(k, "int64")).numpy()) == (k % 2 == 0)
    assert int(vm["fact"](np.array(5, "int64")).numpy()) == 120


# ---------------------------------------------------------------- FuseOpsByPattern, then build
ADD_RELU = '''
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n", 3), "float32"), b: R.Tensor((3,), "float32")):
        with R.dataflow():
            c = R.add(x, b)
            d = R.nn.relu(c)
            R.output(d)
        return d
'''

LOWERED_COMPOSITE = '''
@I.ir_module
class Before:
    @T.prim_func(private=True)
    def add(x: T.Buffer((T.int64(2), T.int64(3)), "float32"), b: T.Buffer((T.int64(3),), "float32"),
            T_add: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        T.func_attr({"tir.noalias": True})
        for ax0, ax1 in T.grid(T.int64(2), T.int64(3)):
            with T.block("T_add"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T_add[v_ax0, v_ax1] = x[v_ax0, v_ax1] + b[v_ax1]

    @T.prim_func(private=True)
    def relu(c: T.Buffer((T.int64(2), T.int64(3)), "float32"),
             compute: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        T.func_attr({"tir.noalias": True})
        for i0, i1 in T.grid(T.int64(2), T.int64(3)):
            with T.block("compute"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                compute[v_i0, v_i1] = T.max(c[v_i0, v_i1], T.float32(0.0))

    @R.function(private=True)
    def fused_add_relu(x: R.Tensor((2, 3), "float32"), b: R.Tensor((3,), "float32")
                       ) -> R.Tensor((2, 3), "float32"):
        R.func_attr({"Composite": "my.add_relu", "Primitive": 1})
        cls = Before
        with R.dataflow():
            c = R.call_tir(cls.add, (x, b), out_sinfo=R.Tensor((2, 3), "float32"))
            gv = R.call_tir(cls.relu, (c,), out_sinfo=R.Tensor((2, 3), "float32"))
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), b: R.Tensor((3,), "float32")
             ) -> R.Tensor((2, 3), "float32"):
        cls = Before
        with R.dataflow():
            d = cls.fused_add_relu(x, b)
            R.output(d)
        return d
'''

LOWERED_COMPOSITE_EXPECTED = '''
@I.ir_module
class Expected:
    @T.prim_func(private=True)
    def fused_add_relu(x: T.Buffer((T.int64(2), T.int64(3)), "float32"),
                       b: T.Buffer((T.int64(3),), "float32"),
                       compute_intermediate: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        T.func_attr({"tir.noalias": True})
        T_add_intermediate = T.alloc_buffer((T.int64(2), T.int64(3)))
        for ax0, ax1 in T.grid(T.int64(2), T.int64(3)):
            with T.block("T_add"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(x[v_ax0, v_ax1], b[v_ax1])
                T.writes(T_add_intermediate[v_ax0, v_ax1])
                T_add_intermediate[v_ax0, v_ax1] = x[v_ax0, v_ax1] + b[v_ax1]
        for i0, i1 in T.grid(T.int64(2), T.int64(3)):
            with T.block("compute"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(T_add_intermediate[v_i0, v_i1])
                T.writes(compute_intermediate[v_i0, v_i1])
                compute_intermediate[v_i0, v_i1] = T.max(T_add_intermediate[v_i0, v_i1],
                                                         T.float32(0.0))

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), b: R.Tensor((3,), "float32")
             ) -> R.Tensor((2, 3), "float32"):
        cls = Expected
        with R.dataflow():
            d = R.call_tir(cls.fused_add_relu, (x, b), out_sinfo=R.Tensor((2, 3), "float32"))
            R.output(d)
        return d
'''


def test_fuse_tir_fuses_a_composite_function_lowered_by_legalize_ops():
    """A Composite (FuseOpsByPattern) Primitive function without a Codegen attribute whose body
    is call_tirs is fused like any Primitive function, as TVM's FuseTIR does; it was left as a
    Relax function and relax.build produced an executable the VM could not load."""
    after = relax.transform.FuseTIR()(from_source(LOWERED_COMPOSITE))
    tvm.ir.assert_structural_equal(after, from_source(LOWERED_COMPOSITE_EXPECTED))
    x, b = np.random.randn(2, 3).astype("float32"), np.random.randn(3).astype("float32")
    np.testing.assert_allclose(_vm(after)["main"](x, b).numpy(), np.maximum(x + b, 0))


def test_build_after_fuse_ops_by_pattern_and_merge_composite():
    from minitvm.relax.dpl import is_op, wildcard

    pat = is_op("relax.nn.relu")(is_op("relax.add")(wildcard(), wildcard()))
    mod = from_source(ADD_RELU)
    grouped = relax.transform.FuseOpsByPattern([("my.add_relu", pat)])(mod)
    merged = relax.transform.MergeCompositeFunctions()(grouped)
    for m in (grouped, merged):
        vm = _vm(m)
        for n in (1, 4):
            x = np.random.randn(n, 3).astype("float32")
            b = np.random.randn(3).astype("float32")
            np.testing.assert_allclose(vm["main"](x, b).numpy(), np.maximum(x + b, 0))
    _roundtrip(merged)


# ---------------------------------------------------------------- torch: arange of dynamic dims
class _PositionalAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pe = torch.nn.Embedding(64, 8)
        self.tok = torch.nn.Embedding(100, 8)

    def forward(self, ids):
        s = ids.shape[1]
        h = self.tok(ids) + self.pe(torch.arange(s))[None]
        scale = torch.arange(1, s + 1, 2, dtype=torch.float32).sum()
        mask = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
        scores = (h @ h.transpose(1, 2)).masked_fill(mask, float("-inf"))
        return torch.softmax(scores, -1) @ h * scale


def test_torch_arange_of_a_dynamic_dimension():
    """``torch.arange(x.shape[1])`` with a dynamic Dim imports as R.arange of R.Prim bounds
    (it was 'arange with symbolic bounds is not supported')."""
    from minitvm.relax.frontend.torch import from_exported_program

    torch.manual_seed(2)
    model = _PositionalAttention().eval()
    seq = torch.export.Dim("s", min=3, max=64)
    ep = torch.export.export(model, (torch.randint(0, 100, (2, 5)),),
                             dynamic_shapes={"ids": {1: seq}})
    vm = _vm(from_exported_program(ep, unwrap_unit_return_tuple=True))
    for s in (3, 11):
        ids = torch.randint(0, 100, (2, s))
        np.testing.assert_allclose(vm["main"](ids.numpy()).numpy(),
                                   model(ids).detach().numpy(), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- symbolic concat shapes
def test_concat_of_symbolic_parts_has_a_simplified_length():
    """concat of (n*m, 4), (k, 4), (n*m, 4): length ``n * m * 2 + k`` as TVM's analyzer
    simplifies it (was ``n * m + k + n * m``, unequal to a user's expected annotation)."""
    mod = from_source('''
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n", "m", 4), "float32"), y: R.Tensor(("k", 4), "float32")):
        n = T.int64()
        m = T.int64()
        k = T.int64()
        with R.dataflow():
            a = R.reshape(x, R.shape([-1, 4]))
            b = R.concat((a, y, a), axis=0)
            parts = R.split(b, indices_or_sections=[2, 5], axis=0)
            R.output(b, parts)
        return (b, parts)
''')
    main = mod["main"]
    n, m, _ = main.params[0].struct_info.shape.values
    k = main.params[1].struct_info.shape.values[0]
    tvm.ir.assert_structural_equal(main.ret_struct_info.fields[0],
                                   relax.TensorStructInfo([n * m * 2 + k, 4], "float32"))
    vm = _vm(mod)
    for n_, m_, k_ in [(1, 3, 1), (2, 2, 4)]:
        x = np.random.rand(n_, m_, 4).astype("float32")
        y = np.random.rand(k_, 4).astype("float32")
        b, parts = vm["main"](x, y)
        ref = np.concatenate([x.reshape(-1, 4), y, x.reshape(-1, 4)])
        np.testing.assert_allclose(b.numpy(), ref)
        for got, want in zip(parts, np.split(ref, [2, 5])):
            np.testing.assert_allclose(got.numpy(), want)


# ---------------------------------------------------------------- FuseTIR: non-tensor tuple fields
PRIM_IN_TUPLE = '''
@I.ir_module
class Before:
    @T.prim_func(private=True)
    def add(a: T.Buffer((T.int64(2),), "float32"), b: T.Buffer((T.int64(2),), "float32"),
            c: T.Buffer((T.int64(2),), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": True})
        for i in range(T.int64(2)):
            with T.block("c"):
                vi = T.axis.remap("S", [i])
                c[vi] = a[vi] + b[vi]

    @R.function(private=True)
    def fused_add(x: R.Tensor((2,), "float32"),
                  t: R.Tuple(R.Prim("int64"), R.Tensor((2,), "float32"))
                  ) -> R.Tensor((2,), "float32"):
        R.func_attr({"Primitive": 1})
        cls = Before
        with R.dataflow():
            v = t[1]
            gv = R.call_tir(cls.add, (x, v), out_sinfo=R.Tensor((2,), "float32"))
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((2,), "float32"), t: R.Tuple(R.Prim("int64"), R.Tensor((2,), "float32"))
             ) -> R.Tensor((2,), "float32"):
        cls = Before
        with R.dataflow():
            d = cls.fused_add(x, t)
            R.output(d)
        return d
'''

PRIM_IN_TUPLE_EXPECTED = '''
@I.ir_module
class Expected:
    @T.prim_func(private=True)
    def fused_add(x: T.Buffer((T.int64(2),), "float32"), t_0: T.Buffer((T.int64(2),), "float32"),
                  c_intermediate: T.Buffer((T.int64(2),), "float32")):
        T.func_attr({"tir.noalias": True})
        for i in range(T.int64(2)):
            with T.block("c"):
                vi = T.axis.spatial(T.int64(2), i)
                T.reads(x[vi], t_0[vi])
                T.writes(c_intermediate[vi])
                c_intermediate[vi] = x[vi] + t_0[vi]

    @R.function
    def main(x: R.Tensor((2,), "float32"), t: R.Tuple(R.Prim("int64"), R.Tensor((2,), "float32"))
             ) -> R.Tensor((2,), "float32"):
        cls = Expected
        with R.dataflow():
            lv = t[1]
            d = R.call_tir(cls.fused_add, (x, lv), out_sinfo=R.Tensor((2,), "float32"))
            R.output(d)
        return d
'''


def test_fuse_tir_skips_the_scalar_field_of_a_tuple_argument():
    """A fused function reading the tensor of a ``(R.Prim, tensor)`` parameter: the Prim field
    is no buffer (FuseTIR raised "'t_1' must be a tensor of known shape")."""
    after = relax.transform.FuseTIR()(from_source(PRIM_IN_TUPLE))
    tvm.ir.assert_structural_equal(after, from_source(PRIM_IN_TUPLE_EXPECTED))


def test_tuple_argument_with_a_scalar_field_through_relax_build():
    vm = _vm(from_source('''
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n", "m"), "float32"), p: R.Prim("float32"),
             t: R.Tuple(R.Tensor(("m",), "float32"), R.Prim("int64")), s: R.Shape(["n", "k"])):
        k = T.int64()
        with R.dataflow():
            y = R.add(x, t[0])
            z = R.multiply(y, R.full(R.shape([1]), R.const(2, "float32"), "float32"))
            R.output(z)
        return (z, p, t[1], s)
'''))
    base = np.random.rand(5, 3).astype("float32")
    # non-contiguous views (transposed, reversed) are read as numpy sees them
    for x in (base, np.asfortranarray(base), base[::-1], base[:, ::-1],
              np.random.rand(2, 4).astype("float32").T):
        v = np.random.rand(x.shape[1]).astype("float32")
        z, p, i, s = vm["main"](x, 2.5, (v, 7), SHAPE([x.shape[0], 9]))
        np.testing.assert_allclose(z.numpy(), (x + v) * 2, rtol=1e-6)
        assert float(p) == 2.5 and int(i) == 7 and tuple(s) == (x.shape[0], 9)
    with pytest.raises(TypeError, match=r"param=t.*expected an integer \(int64\), got a float"):
        vm["main"](base, 2.5, (np.ones(3, "float32"), 7.5), SHAPE([5, 9]))


# ---------------------------------------------------------------- functions passed as values
def test_global_function_passed_as_an_argument():
    """``cls.apply(cls.double, x)``: a GlobalVar argument has no ``struct_info_`` of its own;
    the call's struct info comes from the function's (it failed to parse: "argument 0 of the
    call has no struct info")."""
    mod = from_source('''
@I.ir_module
class M:
    @R.function
    def double(z: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        return R.add(z, z)

    @R.function
    def apply(f: R.Callable((R.Tensor(("n",), "float32"),), R.Tensor(("n",), "float32")),
              x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        return f(x)

    @R.function
    def main(x: R.Tensor(("n",), "float32")):
        cls = M
        return cls.apply(cls.double, x)
''')
    n = mod["main"].params[0].struct_info.shape.values[0]
    tvm.ir.assert_structural_equal(mod["main"].ret_struct_info,
                                   relax.TensorStructInfo([n], "float32"))
    _roundtrip(mod)
    vm = _vm(mod)
    for n in (1, 4):
        x = np.random.rand(n).astype("float32")
        np.testing.assert_allclose(vm["main"](x).numpy(), x * 2, rtol=1e-6)


def test_local_function_without_captures_passed_as_an_argument():
    """LambdaLift replaces a capture-free local function by its global, also where it is an
    argument; relax.build failed there with the same error."""
    mod = from_source('''
@I.ir_module
class M:
    @R.function(private=True)
    def f(a: R.Tensor(dtype="float32"), b: R.Object,
          c: R.Callable((R.Tensor((), "float32"),), R.Tensor((), "float32")), d: R.Tuple(),
          e: R.Prim(value="k"), s: R.Shape(ndim=2)
          ) -> R.Tuple(R.Tensor(dtype="float32"), R.Prim("int64")):
        k = T.int64()
        return (a, e)

    @R.function
    def main(x: R.Tensor(("n",), "float32"), k: R.Prim(value="k")
             ) -> R.Tuple(R.Tensor(dtype="float32"), R.Prim("int64")):
        n = T.int64()
        R.func_attr({"num_input": 1, "my_attr": "hello"})
        cls = M
        @R.function
        def ident(z: R.Tensor((), "float32")) -> R.Tensor((), "float32"):
            return z
        t = cls.f(x, R.str("s"), ident, R.tuple(), k, R.shape([1, 2]))
        return t
''')
    _roundtrip(mod)
    lifted = relax.transform.LambdaLift()(mod)
    call = lifted["main"].body.blocks[0].bindings[-1].value
    assert isinstance(call.args[2], tvm.ir.GlobalVar) and call.args[2].name_hint == "main_ident"
    vm = _vm(mod)
    for n in (1, 3):
        x = np.random.rand(n).astype("float32")
        a, e = vm["main"](x, 5)
        np.testing.assert_allclose(a.numpy(), x)
        assert int(e) == 5
