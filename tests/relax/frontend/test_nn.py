"""relax.frontend.nn: modules, parameters, specs and export_tvm (TVM's nn.Module API)."""

import pathlib

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.frontend import nn


class MLP(nn.Module):
    """The seed's model (TVM tutorial "Transformation")."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.fc1(x)
        x = self.relu1(x)
        x = self.fc2(x)
        return x


MLP_SPEC = {"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}}

# TVM's `origin_mod.show()` for the seed (4 spaces per level).
def _seed_text(name: str) -> str:
    """A module seed 003 prints, as TVM prints it (tests/relax/seed/seed003_<name>.txt)."""
    return (pathlib.Path(__file__).resolve().parents[2] / "relax" / "seed" /
            f"seed003_{name}.txt").read_text()


MLP_SCRIPT = _seed_text("origin")


def _dims(sinfo):
    """A TensorStructInfo's dimensions as ints (static) or the tir expressions themselves."""
    return [d.value if isinstance(d, tir.IntImm) else d for d in sinfo.shape.values]


def _bindings(func):
    return [b for block in func.body.blocks for b in block.bindings]


def _export_or_skip(module, spec, **kw):
    """Export; skip when minitvm lacks a Relax operator the module needs."""
    try:
        return module.export_tvm(spec, **kw)
    except NotImplementedError as err:
        if "is not available in minitvm" in str(err):
            pytest.skip(str(err))
        raise


# --------------------------------------------------------------------------- the seed's MLP
def test_mlp_export_function_signature():
    mod, params = MLP().export_tvm(MLP_SPEC)
    assert [gv.name_hint for gv in mod.get_global_vars()] == ["forward"]
    f = mod["forward"]
    assert isinstance(f, relax.Function)
    assert [p.name_hint for p in f.params] == [
        "x", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    assert all(type(p) is relax.Var for p in f.params)
    for p, (shape, dtype) in zip(f.params[1:], [((128, 784), "float32"), ((128,), "float32"),
                                                ((10, 128), "float32"), ((10,), "float32")]):
        assert isinstance(p.struct_info, relax.TensorStructInfo)
        assert _dims(p.struct_info) == list(shape) and p.struct_info.dtype == dtype
    x = f.params[0].struct_info
    n, d = _dims(x)
    assert isinstance(n, tir.Var) and n.name == "n" and n.dtype == "int64" and d == 784
    assert x.dtype == "float32"
    assert f.attrs["num_input"] == 1
    assert f.attrs["global_symbol"] == "forward"
    # the return struct info is R.Tensor((n, 10)) with the same n as x
    ret = f.ret_struct_info
    assert _dims(ret)[0] is n and _dims(ret)[1] == 10 and ret.dtype == "float32"
    # params: dotted names, the module's own Parameter objects, in order
    assert [name for name, _ in params] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert all(isinstance(p, nn.Parameter) for _, p in params)


def test_mlp_export_bindings():
    model = MLP()
    mod, _ = model.export_tvm(MLP_SPEC)
    f = mod["forward"]
    (block,) = f.body.blocks
    assert isinstance(block, relax.DataflowBlock)
    names = [b.var.name_hint for b in block.bindings]
    assert names == ["permute_dims", "matmul", "add", "relu", "permute_dims1", "matmul1",
                     "add1", "gv"]
    assert all(isinstance(b.var, relax.DataflowVar) for b in block.bindings[:-1])
    gv = block.bindings[-1]
    assert type(gv.var) is relax.Var and f.body.body is gv.var
    assert gv.value is block.bindings[-2].var  # gv = add1

    calls = [b.value for b in block.bindings[:-1]]
    assert [c.op.name for c in calls] == [
        "relax.permute_dims", "relax.matmul", "relax.add", "relax.nn.relu",
        "relax.permute_dims", "relax.matmul", "relax.add"]
    v = {b.var.name_hint: b.var for b in block.bindings}
    p = {q.name_hint: q for q in f.params}
    # arguments, exactly as the seed prints them
    assert calls[0].args == (p["fc1_weight"],)
    assert calls[1].args == (p["x"], v["permute_dims"])
    assert calls[2].args == (v["matmul"], p["fc1_bias"])
    assert calls[3].args == (v["add"],)
    assert calls[4].args == (p["fc2_weight"],)
    assert calls[5].args == (v["relu"], v["permute_dims1"])
    assert calls[6].args == (v["matmul1"], p["fc2_bias"])
    # attrs: permute_dims(axes=None), matmul(out_dtype="void"), none for add/relu
    for c in (calls[0], calls[4]):
        assert c.attrs.axes is None
    for c in (calls[1], calls[5]):
        assert str(c.attrs.out_dtype) == "void"
    assert calls[2].attrs is None and calls[3].attrs is None and calls[6].attrs is None
    # the module's parameters now refer to the function's parameter Vars
    assert model.fc1.weight._expr is p["fc1_weight"]


def test_mlp_symbolic_var_shared():
    mod, _ = MLP().export_tvm(MLP_SPEC)
    f = mod["forward"]
    n = _dims(f.params[0].struct_info)[0]
    expected = {
        "permute_dims": [784, 128], "matmul": [n, 128], "add": [n, 128], "relu": [n, 128],
        "permute_dims1": [128, 10], "matmul1": [n, 10], "add1": [n, 10], "gv": [n, 10],
    }
    for b in _bindings(f):
        s = b.var.struct_info
        assert isinstance(s, relax.TensorStructInfo) and s.dtype == "float32"
        dims = _dims(s)
        want = expected[b.var.name_hint]
        assert len(dims) == len(want)
        for got, w in zip(dims, want):
            # the symbolic dim is the very tir.Var of x, not another var named n
            assert got is w if isinstance(w, tir.Var) else got == w, (b.var.name_hint, dims)


def test_mlp_two_exports_are_independent():
    model = MLP()
    mod1, _ = model.export_tvm(MLP_SPEC)
    mod2, _ = model.export_tvm(MLP_SPEC)
    f1, f2 = mod1["forward"], mod2["forward"]
    assert f1.params[1] is not f2.params[1]
    assert _dims(f1.params[0].struct_info)[0] is not _dims(f2.params[0].struct_info)[0]
    assert tvm.ir.structural_equal(mod1, mod2)


def _printer_or_skip(mod):
    try:
        import minitvm.script  # noqa: F401
    except ImportError as err:
        pytest.skip(f"the TVMScript printer (minitvm.script) is not importable yet: {err}")
    try:
        return mod.script()
    except NotImplementedError as err:
        pytest.skip(f"the TVMScript printer does not print Relax modules yet: {err}")


def test_mlp_script_matches_seed():
    mod, _ = MLP().export_tvm(MLP_SPEC)
    text = _printer_or_skip(mod)
    assert text.strip() == MLP_SCRIPT.strip()


def test_mlp_show_prints_script(capsys):
    mod, _ = MLP().export_tvm(MLP_SPEC)
    _printer_or_skip(mod)
    mod.show()
    assert capsys.readouterr().out.strip() == MLP_SCRIPT.strip()


# --------------------------------------------------------------------------- module tree
class Block(nn.Module):
    def __init__(self):
        self.proj = nn.Linear(4, 4, bias=False)
        self.norm = nn.LayerNorm(4)


class Net(nn.Module):
    def __init__(self):
        self.embed = nn.Linear(8, 4)
        self.layers = nn.ModuleList([Block() for _ in range(2)])
        self.head = nn.Linear(4, 2, bias=False)
        self.act = nn.ReLU()

    def forward(self, x):
        x = self.embed(x)
        for layer in self.layers:
            x = layer.norm(layer.proj(x))
        return self.act(self.head(x))


NET_NAMES = ["embed.weight", "embed.bias", "layers.0.proj.weight", "layers.0.norm.weight",
             "layers.0.norm.bias", "layers.1.proj.weight", "layers.1.norm.weight",
             "layers.1.norm.bias", "head.weight"]


def test_named_parameters_and_parameters():
    net = Net()
    named = list(net.named_parameters())
    assert [n for n, _ in named] == NET_NAMES
    assert [p for _, p in named] == list(net.parameters())
    assert net.layers[1].proj.weight is named[5][1]
    assert [n for n, _ in net.named_parameters(prefix="model.")] == [
        "model." + n for n in NET_NAMES]
    assert len(net.layers) == 2 and list(net.layers)[0] is net.layers[0]
    assert net.head.bias is None  # bias=False registers nothing


def test_nested_module_list_names():
    outer = nn.ModuleList([nn.ModuleList([nn.Linear(2, 2)]), nn.Linear(2, 3)])

    class M(nn.Module):
        def __init__(self):
            self.blocks = outer

    assert [n for n, _ in M().named_parameters()] == [
        "blocks.0.0.weight", "blocks.0.0.bias", "blocks.1.weight", "blocks.1.bias"]


def test_module_list_append_setitem_forward():
    ml = nn.ModuleList([])
    ml.append(nn.Linear(3, 3))
    ml.append(nn.ReLU())
    ml[1] = nn.SiLU()
    assert isinstance(ml[1], nn.SiLU) and len(ml) == 2
    mod, params = ml.export_tvm({"forward": {"x": nn.spec.Tensor((1, 3), "float32")}})
    assert [n for n, _ in params] == ["0.weight", "0.bias"]
    assert [p.name_hint for p in mod["forward"].params] == ["x", "0_weight", "0_bias"]
    assert [b.var.name_hint for b in _bindings(mod["forward"])] == [
        "permute_dims", "matmul", "add", "silu", "gv"]


def test_export_nested_module_names():
    mod, params = _export_or_skip(Net(), {"forward": {"x": nn.spec.Tensor(("b", 8), "float32")}})
    f = mod["forward"]
    assert [n for n, _ in params] == NET_NAMES
    assert [p.name_hint for p in f.params] == ["x"] + [n.replace(".", "_") for n in NET_NAMES]
    assert [b.var.name_hint for b in _bindings(f)] == [
        "permute_dims", "matmul", "add",
        "permute_dims1", "matmul1", "layer_norm",
        "permute_dims2", "matmul2", "layer_norm1",
        "permute_dims3", "matmul3", "relu", "gv"]
    ln = _bindings(f)[5].value
    assert ln.op.name == "relax.nn.layer_norm"
    assert tuple(ln.attrs.axes) == (-1,) and ln.attrs.epsilon == pytest.approx(1e-5)
    assert _dims(f.ret_struct_info)[1] == 2


# --------------------------------------------------------------------------- BERT-sized
class BertLayer(nn.Module):
    def __init__(self, hidden: int, intermediate: int):
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.act = nn.GELU()
        self.output = nn.Linear(intermediate, hidden)
        self.out_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.scale = hidden ** -0.5

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        q, k, v = self.query(x), self.key(x), self.value(x)
        scores = nn.op.matmul(q, nn.op.permute_dims(k, [0, 2, 1])) * self.scale
        probs = nn.op.softmax(scores, axis=-1)
        ctx = nn.op.matmul(probs, v)
        x = self.attn_norm(self.attn_out(ctx) + x)
        h = self.output(self.act(self.intermediate(x)))
        return self.out_norm(h + x)


class Bert(nn.Module):
    def __init__(self, num_layers=12, hidden=768, intermediate=3072):
        self.layers = nn.ModuleList([BertLayer(hidden, intermediate)
                                     for _ in range(num_layers)])

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        return self.layers(x)


def test_bert_sized_export():
    model = Bert()
    names = [n for n, _ in model.named_parameters()]
    assert len(names) == 12 * 16
    assert names[:3] == ["layers.0.query.weight", "layers.0.query.bias", "layers.0.key.weight"]
    assert names[-1] == "layers.11.out_norm.bias"
    spec = {"forward": {"x": nn.spec.Tensor(("batch", "seq", 768), "float32")}}
    mod, params = _export_or_skip(model, spec)
    f = mod["forward"]
    assert len(params) == 12 * 16 and len(f.params) == 1 + 12 * 16
    assert f.params[1].name_hint == "layers_0_query_weight"
    assert f.params[-1].name_hint == "layers_11_out_norm_bias"
    assert _dims(f.params[3].struct_info) == [768, 768]
    assert _dims(f.params[1 + 10].struct_info) == [3072, 768]  # layers.0.intermediate.weight
    assert f.attrs["num_input"] == 1
    (block,) = f.body.blocks
    names = [b.var.name_hint for b in block.bindings]
    assert len(names) == len(set(names))
    assert names[-1] == "gv"
    # per layer: 6 Linear (permute_dims, matmul, add each), 1 transpose of k, 2 attention
    # matmuls, 1 scale, 1 softmax, 2 residual adds, 2 layer norms, 1 gelu
    assert sum(n.startswith("matmul") for n in names) == 12 * 8
    assert names.count("matmul95") == 1 and "matmul96" not in names
    assert sum(n.startswith("layer_norm") for n in names) == 24
    assert sum(n.startswith("gelu") for n in names) == 12
    assert sum(n.startswith("softmax") for n in names) == 12
    assert sum(n.startswith("mul") and not n.startswith("matmul") for n in names) == 12
    batch, seq, hidden = _dims(f.ret_struct_info)
    x_batch, x_seq, _ = _dims(f.params[0].struct_info)
    assert batch is x_batch and seq is x_seq and hidden == 768
    # scores: (batch, seq, seq) built from the same seq var
    (scores,) = [b for b in block.bindings if b.var.name_hint == "matmul3"]
    s_b, s_q, s_k = _dims(scores.var.struct_info)
    assert s_b is x_batch and s_q is x_seq and s_k is x_seq
    (scale,) = [b for b in block.bindings if b.var.name_hint == "mul"]
    assert scale.value.op.name == "relax.multiply"
    const = scale.value.args[1]
    assert isinstance(const, relax.Constant) and const.struct_info.dtype == "float32"
    assert float(const.data.numpy()) == pytest.approx(768 ** -0.5)


# --------------------------------------------------------------------------- spec inputs
def test_symbolic_name_shared_within_function_not_across():
    class Two(nn.Module):
        def forward(self, x, y):
            return nn.op.add(x, y)

        def other(self, x):
            return nn.op.relu(x)

    mod, _ = Two().export_tvm({
        "forward": {"x": nn.spec.Tensor(("n", 4), "float32"),
                    "y": nn.spec.Tensor(("n", 4), "float32")},
        "other": {"x": nn.spec.Tensor(("n", 4), "float32")},
    })
    assert [gv.name_hint for gv in mod.get_global_vars()] == ["forward", "other"]
    fx, fy = mod["forward"].params
    n_x, n_y = _dims(fx.struct_info)[0], _dims(fy.struct_info)[0]
    assert n_x is n_y
    n_other = _dims(mod["other"].params[0].struct_info)[0]
    assert n_other is not n_x and n_other.name == "n"
    assert mod["forward"].attrs["num_input"] == 2


def test_spec_int_and_tir_var_dims():
    class Reshape(nn.Module):
        def forward(self, x, k: int):
            return nn.op.relu(x)

    m = tir.Var("m", "int64")
    mod, _ = Reshape().export_tvm({"forward": {"x": nn.spec.Tensor((m, 3), "float32"),
                                               "k": int}})
    x, k = mod["forward"].params
    assert _dims(x.struct_info)[0] is m
    assert k.name_hint == "k" and isinstance(k.struct_info, relax.ShapeStructInfo)
    (kv,) = k.struct_info.values
    assert isinstance(kv, tir.Var) and kv.name == "k" and kv.dtype == "int64"
    assert mod["forward"].attrs["num_input"] == 2


def test_symbolic_parameter_shape_shares_spec_var():
    class Head(nn.Module):
        def __init__(self):
            self.table = nn.Parameter(("vocab", 4))

        def forward(self, ids, x):
            return nn.op.matmul(x, nn.op.permute_dims(self.table))

    m = tir.Var("m", "int64")
    mod, _ = Head().export_tvm({"forward": {"ids": nn.spec.Tensor(("vocab",), "int32"),
                                            "x": nn.spec.Tensor((m, 4), "float32")}})
    ids, x, table = mod["forward"].params
    assert table.name_hint == "table"
    vocab = _dims(ids.struct_info)[0]
    assert _dims(table.struct_info)[0] is vocab
    assert _dims(mod["forward"].ret_struct_info) == [m, vocab]


def test_spec_arguments_follow_signature_order():
    class Sub(nn.Module):
        def forward(self, a, b):
            return a - b

    spec = {"forward": {"b": nn.spec.Tensor((2,), "float32"),
                        "a": nn.spec.Tensor((2,), "float32")}}
    mod, _ = Sub().export_tvm(spec)
    a, b = mod["forward"].params
    assert (a.name_hint, b.name_hint) == ("a", "b")
    (sub, _) = _bindings(mod["forward"])
    assert sub.var.name_hint == "subtract" and sub.value.args == (a, b)
    assert "$" not in spec["forward"] and set(spec["forward"]) == {"a", "b"}


def test_spec_tuple_input():
    class Cat(nn.Module):
        def forward(self, xs):
            a, b = xs
            return nn.op.add(a, b)

    mod, _ = Cat().export_tvm({"forward": {"xs": (nn.spec.Tensor((2,), "float32"),
                                                  nn.spec.Tensor((2,), "float32"))}})
    (xs,) = mod["forward"].params
    assert isinstance(xs.struct_info, relax.TupleStructInfo)
    assert [b.var.name_hint for b in _bindings(mod["forward"])] == [
        "xs_0", "xs_1", "add", "gv"]


def test_param_mode_packed_and_none():
    class Lin(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(3, 2)

        def forward(self, x):
            return self.fc(x)

    spec = {"forward": {"x": nn.spec.Tensor((1, 3), "float32"), "$": {"param_mode": "packed"}}}
    mod, _ = Lin().export_tvm(spec)
    f = mod["forward"]
    assert [p.name_hint for p in f.params] == ["x", "packed_params"]
    assert isinstance(f.params[1].struct_info, relax.TupleStructInfo)
    assert [b.var.name_hint for b in _bindings(f)][:2] == ["fc_weight", "fc_bias"]

    class Act(nn.Module):
        def __init__(self):
            self.unused = nn.Parameter((2,))

        def forward(self, x):
            return nn.op.relu(x)

    mod, params = Act().export_tvm(
        {"forward": {"x": nn.spec.Tensor((2,), "float32"), "$": {"param_mode": "none"}}})
    assert [p.name_hint for p in mod["forward"].params] == ["x"]
    assert [n for n, _ in params] == ["unused"]


def test_debug_mode_io_effect():
    mod, _ = _export_or_skip(nn.ReLU(), {"forward": {"x": nn.spec.Tensor((3, 3), "float32")}},
                             debug=True)
    assert [gv.name_hint for gv in mod.get_global_vars()] == ["_initialize_effect", "forward"]
    f = mod["forward"]
    assert [p.name_hint for p in f.params] == ["x", "_io"]
    assert isinstance(f.params[1].struct_info, relax.ObjectStructInfo)
    assert f.attrs["num_input"] == 2
    out = f.ret_struct_info
    assert isinstance(out, relax.TupleStructInfo) and len(out.fields) == 2
    init = mod["_initialize_effect"]
    assert init.params == ()
    assert _bindings(init)[0].value.op.name == "relax.null_value"


# --------------------------------------------------------------------------- tensors and ops
def test_tensor_properties_and_repr():
    p = nn.Parameter((4, "k"), "float16")
    assert p.shape[0] == 4 and isinstance(p.shape[1], tir.Var) and p.ndim == 2
    assert p.dtype == "float16"
    assert repr(nn.Parameter((2, 3))) == 'Parameter([2, 3], "float32")'
    t = nn.Tensor.placeholder((2, "n"), "int32", name="ids")
    assert t._expr.name_hint == "ids" and t.dtype == "int32" and repr(t).startswith("Tensor([2,")
    c = nn.Tensor.from_const(np.zeros((2, 2), "float32"))
    assert c.shape == [2, 2] and isinstance(c._expr, relax.Constant)
    with pytest.raises(TypeError, match="TensorStructInfo"):
        nn.Tensor(_expr=relax.Var("o", relax.ObjectStructInfo()))
    with pytest.raises(TypeError, match="dimension"):
        nn.Parameter((2.5, 3))
    with pytest.raises(ValueError, match=">= 0"):
        nn.Parameter((-1, 3))


def test_tensor_operators_emit_tvm_names():
    class Arith(nn.Module):
        def forward(self, x, y):
            a = x + y
            b = a * 2.0
            c = 1.0 - b
            d = c / y
            e = d.reshape(4, 2)
            f = e.permute_dims(1, 0)
            return nn.op.softmax(f.astype("float16"))

    mod, _ = _export_or_skip(Arith(), {"forward": {"x": nn.spec.Tensor((2, 4), "float32"),
                                                   "y": nn.spec.Tensor((2, 4), "float32")}})
    f = mod["forward"]
    binds = _bindings(f)
    assert [b.var.name_hint for b in binds] == [
        "add", "mul", "subtract", "divide", "reshape", "permute_dims", "astype", "softmax", "gv"]
    mul = binds[1].value
    assert mul.op.name == "relax.multiply"
    assert isinstance(mul.args[1], relax.Constant) and mul.args[1].struct_info.dtype == "float32"
    sub = binds[2].value
    assert isinstance(sub.args[0], relax.Constant) and sub.args[1] is binds[1].var
    assert _dims(binds[4].var.struct_info) == [4, 2]
    assert _dims(binds[5].var.struct_info) == [2, 4]
    assert list(binds[5].value.attrs.axes) == [1, 0]
    assert f.ret_struct_info.dtype == "float16"


def test_op_name_override_and_astype_noop():
    class M(nn.Module):
        def forward(self, x):
            y = nn.op.astype(x, "float32")  # same dtype: no binding
            return nn.op.relu(y, name="activation")

    mod, _ = M().export_tvm({"forward": {"x": nn.spec.Tensor((2,), "float32")}})
    assert [b.var.name_hint for b in _bindings(mod["forward"])] == ["activation", "gv"]


def test_op_outside_export_is_a_clear_error():
    p = nn.Parameter((2, 2))
    with pytest.raises(RuntimeError, match="export_tvm"):
        nn.op.relu(p)
    with pytest.raises(RuntimeError, match="export_tvm"):
        _ = p + p


def test_identity_returns_input():
    mod, _ = nn.Identity().export_tvm({"forward": {"x": nn.spec.Tensor((2,), "float32")}})
    f = mod["forward"]
    (gv,) = _bindings(f)
    assert gv.var.name_hint == "gv" and gv.value is f.params[0]


def test_linear_out_dtype():
    lin = nn.Linear(4, 3, dtype="float16", out_dtype="float32")
    assert lin.weight.dtype == "float16" and lin.bias.dtype == "float32"
    mod, _ = _export_or_skip(lin, {"forward": {"x": nn.spec.Tensor((2, 4), "float16")}})
    binds = _bindings(mod["forward"])
    assert str(binds[1].value.attrs.out_dtype) == "float32"
    assert mod["forward"].ret_struct_info.dtype == "float32"


# a conv with bias binds the conv and the reshaped bias (``lv``, ``lv1``) before the add named
# after the module, as TVM's normalizer binds nested calls
@pytest.mark.parametrize("make, spec, want_names, out_shape", [
    (lambda: nn.Embedding(10, 4), nn.spec.Tensor(("n",), "int32"), ["take", "gv"], ["n", 4]),
    (lambda: nn.Embedding(10, 4), nn.spec.Tensor((2, 3), "int32"),
     ["reshape", "take", "reshape1", "gv"], [2, 3, 4]),
    (lambda: nn.SiLU(), nn.spec.Tensor((2, 3), "float32"), ["silu", "gv"], [2, 3]),
    (lambda: nn.GELU(), nn.spec.Tensor((2, 3), "float32"), ["gelu", "gv"], [2, 3]),
    (lambda: nn.RMSNorm(8, axes=-1), nn.spec.Tensor((2, 8), "float32"),
     ["rms_norm", "add", "gv"], [2, 8]),
    (lambda: nn.RMSNorm(8, axes=-1, bias=False), nn.spec.Tensor((2, 8), "float32"),
     ["rms_norm", "gv"], [2, 8]),
    (lambda: nn.GroupNorm(2, 4), nn.spec.Tensor((1, 4, 5, 5), "float32"),
     ["group_norm", "gv"], [1, 4, 5, 5]),
    (lambda: nn.LayerNorm(8, elementwise_affine=False), nn.spec.Tensor((2, 8), "float32"),
     ["layer_norm", "gv"], [2, 8]),
    (lambda: nn.Conv1D(3, 6, 3, padding=1), nn.spec.Tensor((1, 3, 10), "float32"),
     ["lv", "lv1", "conv1d", "gv"], [1, 6, 10]),
    (lambda: nn.Conv2D(3, 8, 3), nn.spec.Tensor((1, 3, 8, 8), "float32"),
     ["lv", "lv1", "conv2d", "gv"], [1, 8, 6, 6]),
    (lambda: nn.ConvTranspose1D(4, 2, 3, stride=2), nn.spec.Tensor((1, 4, 5), "float32"),
     ["lv", "lv1", "conv1d_transpose", "gv"], [1, 2, 11]),
])
def test_builtin_modules_export(make, spec, want_names, out_shape):
    mod, _ = _export_or_skip(make(), {"forward": {"x": spec}})
    f = mod["forward"]
    assert [b.var.name_hint for b in _bindings(f)] == want_names
    dims = _dims(f.ret_struct_info)
    assert [d.name if isinstance(d, tir.Var) else d for d in dims] == out_shape


# --------------------------------------------------------------------------- state_dict
def test_state_dict_and_load_numpy():
    net = MLP()
    sd = net.state_dict()
    assert list(sd) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert sd["fc1.weight"] is net.fc1.weight and sd["fc1.weight"].data is None
    rng = np.random.default_rng(0)
    values = {k: rng.standard_normal(p.shape).astype("float32") for k, p in sd.items()}
    missing, unexpected = net.load_state_dict(values)
    assert missing == [] and unexpected == []
    for k, p in net.state_dict().items():
        assert isinstance(p.data, tvm.nd.NDArray)
        np.testing.assert_array_equal(p.data.numpy(), values[k])
    # Parameters with data (TVM's form) load too
    other = MLP()
    other.load_state_dict(net.state_dict())
    np.testing.assert_array_equal(other.fc2.bias.data.numpy(), values["fc2.bias"])
    assert list(net.state_dict(prefix="m.")) == ["m." + k for k in sd]


def test_load_state_dict_strict_and_errors():
    net = MLP()
    ok = {"fc1.weight": np.zeros((128, 784), "float32")}
    with pytest.raises(KeyError, match=r"Missing keys: \['fc1.bias'"):
        net.load_state_dict(ok)
    assert net.fc1.weight.data is None  # nothing is bound when strict loading fails
    missing, unexpected = net.load_state_dict({**ok, "fc3.weight": np.zeros(1)}, strict=False)
    assert missing == ["fc1.bias", "fc2.weight", "fc2.bias"] and unexpected == ["fc3.weight"]
    assert net.fc1.weight.data is not None
    with pytest.raises(ValueError, match=r"'fc1.bias'.*Shape mismatch: expected \(128,\)"):
        net.load_state_dict({"fc1.bias": np.zeros((127,), "float32")}, strict=False)
    with pytest.raises(ValueError, match=r"Dtype mismatch: expected float32, got float64"):
        net.load_state_dict({"fc1.bias": np.zeros((128,))}, strict=False)
    with pytest.raises(ValueError, match="not set to any concrete tensor"):
        net.load_state_dict({"fc2.bias": nn.Parameter((10,))}, strict=False)
    with pytest.raises(TypeError, match="numpy array"):
        net.fc2.bias.data = [0.0] * 10


def test_parameter_data_setter():
    p = nn.Parameter((2, 3), "float16")
    p.data = np.ones((2, 3), "float16")
    assert p.data.dtype == "float16" and p.data.shape == (2, 3)
    p.data = tvm.nd.array(np.zeros((2, 3), "float16"))
    assert float(p.data.numpy().sum()) == 0.0
    p.data = None
    assert p.data is None
    with pytest.raises(ValueError, match="symbolic shape"):
        nn.Parameter(("n", 3)).data = np.zeros((2, 3), "float32")


# --------------------------------------------------------------------------- to(dtype)
def test_to_dtype():
    net = MLP()
    net.to("float16")
    assert {p.dtype for p in net.parameters()} == {"float16"}
    mod, _ = net.export_tvm({"forward": {"x": nn.spec.Tensor(("n", 784), "float16")}})
    f = mod["forward"]
    assert [p.struct_info.dtype for p in f.params] == ["float16"] * 5
    assert f.ret_struct_info.dtype == "float16"
    net.to(None)  # no-op
    assert net.fc1.weight.dtype == "float16"


def test_to_dtype_respects_out_dtype_and_module_dtype():
    class Holder(nn.Module):
        def __init__(self):
            self.dtype = "float32"
            self.lin = nn.Linear(2, 2, out_dtype="float32")
            self.norm = nn.LayerNorm(2)
            self.blocks = nn.ModuleList([nn.Linear(2, 2)])

    h = Holder()
    h.to("float16")
    assert h.dtype == "float16"
    assert h.lin.weight.dtype == "float16" and h.lin.bias.dtype == "float32"
    assert h.norm.weight.dtype == "float16" and h.blocks[0].bias.dtype == "float16"


def test_to_dtype_refuses_bound_parameter():
    lin = nn.Linear(2, 2)
    lin.weight.data = np.zeros((2, 2), "float32")
    with pytest.raises(ValueError, match="bound to concrete data"):
        lin.to("float16")


def test_default_dtype():
    assert nn.get_default_dtype() == "float32"
    nn.set_default_dtype("float16")
    try:
        assert nn.Linear(2, 2).weight.dtype == "float16"
    finally:
        nn.set_default_dtype("float32")


# --------------------------------------------------------------------------- errors
def test_unknown_spec_argument():
    with pytest.raises(ValueError, match=r"method 'forward' has no argument\(s\) \['y'\]; "
                                         r"its arguments are \['x'\]"):
        MLP().export_tvm({"forward": {"x": nn.spec.Tensor((1, 784), "float32"),
                                      "y": nn.spec.Tensor((1,), "float32")}})


def test_unknown_method():
    with pytest.raises(ValueError, match="MLP has no method 'decode'"):
        MLP().export_tvm({"decode": {"x": nn.spec.Tensor((1, 784), "float32")}})


def test_missing_spec_argument():
    with pytest.raises(ValueError, match=r"no spec for argument\(s\) \['x'\] of method 'forward'"):
        MLP().export_tvm({"forward": {}})


@pytest.mark.parametrize("bad, what", [
    ("float32", "str 'float32'"),
    (np.zeros((1, 784), "float32"), "ndarray"),
    (3.5, "float 3.5"),
    (nn.spec.Tensor, "the class nn.spec.Tensor"),
])
def test_wrong_spec_type(bad, what):
    with pytest.raises(TypeError, match=r"Invalid spec for argument 'x' of method 'forward'"
                                        r".*" + what.replace(".", r"\.")):
        MLP().export_tvm({"forward": {"x": bad}})


def test_wrong_spec_structure():
    with pytest.raises(TypeError, match="spec must be a dict"):
        MLP().export_tvm([("forward", {})])
    with pytest.raises(TypeError, match="spec of method 'forward' must be a dict"):
        MLP().export_tvm({"forward": nn.spec.Tensor((1, 784), "float32")})
    with pytest.raises(ValueError, match="no method to export"):
        MLP().export_tvm({})
    with pytest.raises(ValueError, match="Invalid param_mode"):
        MLP().export_tvm({"forward": {"x": nn.spec.Tensor((1, 784), "float32"),
                                      "$": {"param_mode": "bundled"}}})
    with pytest.raises(ValueError, match=r"unknown '\$' config keys \['mode'\]"):
        MLP().export_tvm({"forward": {"x": nn.spec.Tensor((1, 784), "float32"),
                                      "$": {"mode": "plain"}}})


def test_spec_tensor_validation():
    with pytest.raises(TypeError, match="shape must be a list or tuple"):
        nn.spec.Tensor("n", "float32")
    with pytest.raises(TypeError, match=r"invalid dimension 2\.0"):
        nn.spec.Tensor((2.0, 3), "float32")
    with pytest.raises(ValueError, match=">= 0"):
        nn.spec.Tensor((-1, 3), "float32")
    with pytest.raises(TypeError, match="dtype must be a str"):
        nn.spec.Tensor((2, 3), np.float32)
    with pytest.raises(TypeError, match="must be int64"):
        nn.spec.Tensor((tir.Var("n", "int32"), 3), "float32")
    assert repr(nn.spec.Tensor(("n", 784), "float32")) == "Tensor([n, 784], 'float32')"


def test_forward_returning_non_tensor():
    class Bad(nn.Module):
        def forward(self, x):
            return 3

    with pytest.raises(TypeError, match="returned an unsupported value of type int"):
        Bad().export_tvm({"forward": {"x": nn.spec.Tensor((2,), "float32")}})


def test_module_without_forward():
    class NoForward(nn.Module):
        pass

    with pytest.raises(NotImplementedError, match="does not have a `forward` method"):
        NoForward()(1)
