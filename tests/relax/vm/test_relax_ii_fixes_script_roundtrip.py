"""Regression tests (Relax II fixes): TVMScript reads back the module after every pass of
``relax.get_pipeline("default_build")`` (``R.call_packed``, ``R.call_pure_packed`` with
``sinfo_args``, ``R.builtin.alloc_tensor``, ``R.memory.*``, ``R.vm.*``,
``R.call_builtin_with_ctx``, ``R.null_value``, ``R.prim_value``, ``R.str``, ``R.shape``,
``R.ExternFunc``, direct PrimFunc calls) on the seed-003 MLP and a small conv net; the built
modules still compute what numpy does."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.expr import BindingBlock, DataflowBlock, Function, SeqExpr
from minitvm.relax.frontend import nn
from minitvm.relax.vm.build import Executable, codegen, compile_kernels, lowering_options
from minitvm.script import from_source
from minitvm.transform import PassContext


class _SeedMLP(nn.Module):  # the seed-003 model
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(self.relu1(self.fc1(x)))


def _mlp():
    mod, _ = _SeedMLP().export_tvm({"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}})
    return mod


def _convnet():
    """conv2d + bias + relu, max-pool, flatten, dense: batch ``n`` symbolic."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 3, 8, 8], "float32"))
    w = relax.Var("w", relax.TensorStructInfo([4, 3, 3, 3], "float32"))
    b = relax.Var("b", relax.TensorStructInfo([1, 4, 1, 1], "float32"))
    d = relax.Var("d", relax.TensorStructInfo([64, 5], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, b, d]):
        with bb.dataflow():
            c = bb.emit(relax.op.nn.conv2d(x, w, padding=(1, 1)))
            r = bb.emit(relax.op.nn.relu(relax.op.add(c, b)))
            p = bb.emit(relax.op.nn.max_pool2d(r, pool_size=(2, 2), strides=(2, 2)))
            f = bb.emit(relax.op.reshape(p, relax.ShapeExpr([n, 64])))
            gv = bb.emit_output(relax.op.matmul(f, d))
        bb.emit_func_output(gv)
    return bb.get()


def _merge_adjacent_blocks(mod):
    """The module with adjacent non-dataflow binding blocks of each function body merged, as
    the parser (and TVM's normalizer) makes them."""
    out = mod.shallow_copy()
    for gv, f in list(mod.functions.items()):
        if isinstance(f, Function) and isinstance(f.body, SeqExpr):
            blocks = []
            for blk in f.body.blocks:
                if blocks and not isinstance(blk, DataflowBlock) and \
                        not isinstance(blocks[-1], DataflowBlock):
                    blocks[-1] = BindingBlock([*blocks[-1].bindings, *blk.bindings])
                else:
                    blocks.append(blk)
            if len(blocks) != len(f.body.blocks):
                body = SeqExpr(blocks, f.body.body, f.body.span)
                body._checked_type = f.body._checked_type
                out[gv] = Function(f.params, body, f.ret_struct_info, f.is_pure, f.attrs,
                                   f.span)
    return out


def _stages(mod):
    seq = relax.get_pipeline("default_build")
    for p in seq.passes:
        mod = p(mod)
        yield p.info.name, mod


@pytest.mark.parametrize("make", [_mlp, _convnet], ids=["seed003_mlp", "convnet"])
def test_every_lowering_stage_round_trips(make):
    names = []
    for name, mod in _stages(make()):
        text = mod.script()
        back = from_source(text)
        tvm.ir.assert_structural_equal(back, _merge_adjacent_blocks(mod))
        assert back.script() == text, name
        names.append(name)
    for must in ("CallTIRRewrite", "StaticPlanBlockMemory", "LowerAllocTensor",
                 "KillAfterLastUse", "VMBuiltinLower", "VMShapeLower"):
        assert must in names


def test_parsed_lowered_module_still_runs():
    *_, (_, lowered) = _stages(_convnet())
    back = from_source(lowered.script())
    assert "R.vm.alloc_storage" in lowered.script()
    assert "R.call_builtin_with_ctx" in lowered.script()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 8, 8)).astype("float32")
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    b = rng.standard_normal((1, 4, 1, 1)).astype("float32")
    d = rng.standard_normal((64, 5)).astype("float32")
    vm = relax.VirtualMachine(relax.build(_convnet(), "llvm"), tvm.cpu())
    want = vm["main"](x, w, b, d).numpy()
    pad = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((2, 4, 8, 8), "float32")
    for i in range(8):
        for j in range(8):
            conv[:, :, i, j] = np.einsum("nchw,ochw->no", pad[:, :, i:i + 3, j:j + 3], w)
    r = np.maximum(conv + b, 0)
    pooled = r.reshape(2, 4, 4, 2, 4, 2).max(axis=(3, 5))
    np.testing.assert_allclose(want, pooled.reshape(2, 64) @ d, rtol=1e-4, atol=1e-4)
    # the parsed lowered module is what the VM code generator takes: it compiles and runs too
    funcs, table, consts, prims = codegen(back)
    ex = Executable(funcs, table, consts,
                    compile_kernels(prims, lowering_options(PassContext.current())))
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](x, w, b, d).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)


SNIPPET = '''
@I.ir_module
class Module:
    ext = R.ExternFunc("my_ext")

    @T.prim_func
    def f(a: T.Buffer((T.int64(4),), "float32"), b: T.Buffer((T.int64(4),), "float32")):
        for i in range(T.int64(4)):
            b[i] = a[i]

    @R.function(pure=False)
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        s: R.Object = R.memory.alloc_storage(R.shape([16]), R.prim_value(0), R.str("global"), R.dtype("float32"))
        t: R.Tensor((4,), dtype="float32") = R.memory.alloc_tensor(s, R.prim_value(0), R.shape([4]), R.dtype("float32"))
        a: R.Tensor((4,), dtype="float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.f(x, a)
        R.call_packed("my_log", a, R.str("hi"), R.null_value(), sinfo_args=(R.Tuple,))
        y: R.Tensor((4,), dtype="float32") = R.call_pure_packed("my_id", a, sinfo_args=(R.Tensor((4,), dtype="float32"),))
        h: R.Object = R.call_builtin_with_ctx("vm.builtin.alloc_shape_heap", (R.prim_value(2),), sinfo_args=(R.Object,))
        R.vm.kill_object(t)
        return y
'''


def test_snippet_of_lowered_constructs_round_trips():
    mod = from_source(SNIPPET)
    main = mod["main"]
    binds = main.body.blocks[0].bindings
    assert isinstance(binds[3].var.struct_info, relax.TupleStructInfo)  # cls.f(x, a)
    assert not binds[3].var.struct_info.fields
    # binds[4]: R.null_value(), bound first as TVM's normalizer binds a nested call
    assert isinstance(binds[4].value, relax.Call) and binds[4].value.op.name == "relax.null_value"
    assert isinstance(binds[5].var.struct_info, relax.TupleStructInfo)  # R.call_packed
    tvm.ir.assert_structural_equal(binds[6].var.struct_info,
                                   relax.TensorStructInfo([4], "float32"))
    assert isinstance(mod["ext"], relax.ExternFunc)
    again = from_source(mod.script())
    tvm.ir.assert_structural_equal(again, mod)


def test_call_packed_without_sinfo_args_is_object():
    src = SNIPPET.replace('R.call_pure_packed("my_id", a, sinfo_args=(R.Tensor((4,), '
                          'dtype="float32"),))', 'R.call_packed("my_id", a)') \
        .replace("y: R.Tensor((4,), dtype=\"float32\") =", "y: R.Object =") \
        .replace('-> R.Tensor((4,), dtype="float32"):', "-> R.Object:")
    mod = from_source(src)
    assert isinstance(mod["main"].body.blocks[0].bindings[6].var.struct_info,
                      relax.ObjectStructInfo)
