"""FuseOps keeps a binding that uses a symbolic variable after the match_cast defining it, even
when the use goes through no Relax variable (a ``call_tir``'s ``tir_vars`` or ``out_sinfo``).
Before the fix the group order followed only Relax-variable uses, so the ONNX import of a DLRM
(two EmbeddingBags with offsets) built ``dynamic_strided_slice(..., tir_vars=[n])`` before
``n``'s match_cast and the VM's shape lowering failed."""

import io

import numpy as np
import pytest
from fuse_prims import PRIMS, module_text
from fuse_test_util import assert_same_results, check

from minitvm.relax import transform as rt
from minitvm.relax.analysis import check_well_formed
from minitvm.relax.expr import MatchCast
from minitvm.relax.transform.fuse_ops import symbolic_definers
from minitvm.script import from_source

MASK_ROWS = '''
    @T.prim_func(private=True)
    def mask_rows(x: T.Buffer((T.int64(4), T.int64(8)), "float32"), y: T.Buffer((T.int64(4), T.int64(8)), "float32"), n: T.int64):
        T.func_attr({"op_pattern": 8, "tir.noalias": T.bool(True)})
        for i, j in T.grid(T.int64(4), T.int64(8)):
            with T.block("mask"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(x[vi, vj])
                T.writes(y[vi, vj])
                y[vi, vj] = T.if_then_else(vi < n, x[vi, vj], T.float32(0))
'''

F = 'R.Tensor((4, 8), dtype="float32")'


def parse(text: str):
    return from_source(module_text(text.replace("F32", F), PRIMS + MASK_ROWS))


BEFORE = """
@R.function
def main(x: F32, z: R.Tensor(dtype="float32", ndim=2)) -> F32:
    n = T.int64()
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        zz = R.match_cast(z, R.Tensor((n, 8), dtype="float32"))
        b = R.call_tir(cls.mask_rows, (x,), out_sinfo=F32, tir_vars=R.shape([n]))
        gv = R.call_tir(cls.add, (a, b), out_sinfo=F32)
        R.output(gv)
    return gv
"""

EXPECTED = """
@R.function(private=True)
def fused_exp_add(x: F32, b: F32) -> F32:
    R.func_attr({"Primitive": 1})
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        gv = R.call_tir(cls.add, (a, b), out_sinfo=F32)
        R.output(gv)
    return gv

@R.function
def main(x: F32, z: R.Tensor(dtype="float32", ndim=2)) -> F32:
    n = T.int64()
    cls = Module
    with R.dataflow():
        zz = R.match_cast(z, R.Tensor((n, 8), dtype="float32"))
        b = R.call_tir(cls.mask_rows, (x,), out_sinfo=F32, tir_vars=R.shape([n]))
        gv: F32 = cls.fused_exp_add(x, b)
        R.output(gv)
    return gv
"""


def test_use_through_tir_vars_stays_after_the_match_cast():
    # the group {exp, add} first appears before the match_cast and uses mask_rows' result:
    # mask_rows (which uses n only through tir_vars) must still follow the match_cast
    before = parse(BEFORE)
    after = check(rt.FuseOps(), before, parse(EXPECTED))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype("float32")
    for rows in (1, 3):
        z = np.zeros((rows, 8), "float32")
        assert_same_results(before, after, "main", [x, z])


def test_symbolic_definers_names_the_defining_match_cast():
    bindings = parse(BEFORE)["main"].body.blocks[0].bindings
    a, zz, b, gv = (x.var for x in bindings)
    assert isinstance(bindings[1], MatchCast)
    # only mask_rows uses n (exp and add are static; the match_cast is its own definer)
    assert symbolic_definers(bindings) == {b: [zz]}


def test_a_variable_defined_outside_the_block_has_no_definer():
    # n is a parameter's dimension: a later match_cast mentioning it uses, not defines, it
    mod = parse("""
@R.function
def main(x: R.Tensor(("n", 8), dtype="float32"), z: R.Tensor(dtype="float32", ndim=2)) -> R.Tensor(("n", 8), dtype="float32"):
    n = T.int64()
    cls = Module
    with R.dataflow():
        zz = R.match_cast(z, R.Tensor((n, 8), dtype="float32"))
        gv = R.call_tir(cls.dyn_exp, (x,), out_sinfo=R.Tensor((n, 8), dtype="float32"))
        R.output(gv)
    return gv
""")
    func = mod["main"]
    bindings = func.body.blocks[0].bindings
    n = func.params[0].struct_info.shape.values[0]
    assert symbolic_definers(bindings, {id(n)}) == {}
    # looking at the block alone, the match_cast is taken for n's definition: the dependency
    # that adds follows the block's order (the fusion graph's conservative edges)
    assert symbolic_definers(bindings) == {bindings[1].var: [bindings[0].var]}
    # and FuseOps, which knows the parameters, leaves the program as it is
    after = rt.FuseOps()(mod)
    assert [type(b).__name__ for b in after["main"].body.blocks[0].bindings] == \
        ["MatchCast", "VarBinding"]


def test_long_chain_of_symbolic_uses_is_iterative():
    # 3,000 match_casts each defining a variable the next mask_rows uses: no recursion
    lines = []
    prev = "x"
    for k in range(3000):
        lines.append(f"        z{k} = R.match_cast(z, R.Tensor((n{k}, 8), dtype=\"float32\"))")
        lines.append(f"        m{k} = R.call_tir(cls.mask_rows, ({prev},), out_sinfo=F32, "
                     f"tir_vars=R.shape([n{k}]))")
        prev = f"m{k}"
    decl = "\n".join(f"    n{k} = T.int64()" for k in range(3000))
    text = f"""
@R.function
def main(x: F32, z: R.Tensor(dtype="float32", ndim=2)) -> F32:
{decl}
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
{chr(10).join(lines)}
        gv = R.call_tir(cls.add, (a, {prev}), out_sinfo=F32)
        R.output(gv)
    return gv
"""
    after = rt.FuseOps()(parse(text))
    assert check_well_formed(after) is None


def _dlrm_onnx(n_tables: int, n_bags: int):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)

    class Dlrm(torch.nn.Module):
        """A small DLRM: a bottom MLP on dense features, one EmbeddingBag (with offsets) per
        sparse feature, pairwise dot interactions and a top MLP."""

        def __init__(self):
            super().__init__()
            self.bottom = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU())
            self.tables = torch.nn.ModuleList(
                [torch.nn.EmbeddingBag(40, 8, mode="sum") for _ in range(n_tables)])
            self.top = torch.nn.Sequential(torch.nn.Linear(8 + (n_tables + 1) * n_tables // 2, 4),
                                           torch.nn.ReLU(), torch.nn.Linear(4, 1))

        def forward(self, dense, ids, offsets):
            feats = [self.bottom(dense)] + [t(ids[k], offsets[k]) for k, t in
                                             enumerate(self.tables)]
            z = torch.stack(feats, 1)
            inter = torch.bmm(z, z.transpose(1, 2))
            i, j = torch.triu_indices(n_tables + 1, n_tables + 1, 1)
            return self.top(torch.cat([feats[0], inter[:, i, j]], 1))

    model = Dlrm().eval()
    dense = torch.randn(n_bags, 5)
    ids = torch.randint(0, 40, (n_tables, 3 * n_bags))
    offsets = torch.tensor([0, 2, 3, 7][:n_bags]).repeat(n_tables, 1)
    buf = io.BytesIO()
    torch.onnx.export(model, (dense, ids, offsets), buf, dynamo=False, opset_version=17,
                      input_names=["dense", "ids", "offsets"])
    return buf.getvalue(), [dense.numpy(), ids.numpy(), offsets.numpy()]


@pytest.mark.parametrize("n_tables", [2, 3])
def test_dlrm_through_onnx_matches_onnxruntime(n_tables):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    import minitvm as tvm
    from minitvm import relax
    from minitvm.relax.frontend.onnx import from_onnx

    data, inputs = _dlrm_onnx(n_tables, 4)
    mod = from_onnx(onnx.load_from_string(data))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    got = vm["main"](*[tvm.nd.array(a) for a in inputs]).numpy()
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    want = sess.run(None, dict(zip(["dense", "ids", "offsets"], inputs, strict=True)))[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
