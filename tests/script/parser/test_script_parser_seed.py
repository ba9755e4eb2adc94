"""Seed 003 (Relax's transformation tutorial): the modules it prints parse, print back the same
text and parse again to an equal module; their structure is what the printed text says."""

import pathlib

import pytest

from minitvm import relax, tir
from minitvm.ir.expr import GlobalVar
from minitvm.ir.structural import assert_structural_equal
from minitvm.script.parser import from_source


def _seed_text(name: str) -> str:
    """A module seed 003 prints, as TVM prints it (tests/relax/seed/seed003_<name>.txt)."""
    return (pathlib.Path(__file__).resolve().parents[2] / "relax" / "seed" /
            f"seed003_{name}.txt").read_text()


ORIGIN = _seed_text("origin")

LEGALIZED = _seed_text("legalized")

FUSED = _seed_text("fused")

# the tutorial rewrites relu to gelu with a PyExprMutator
GELU = ORIGIN.replace("R.nn.relu(add)", "R.nn.gelu(add)")


SEEDS = {
    "origin": (ORIGIN, ("permute_dims", "matmul", "add", "nn.relu")),
    "legalized": (LEGALIZED, ("call_tir",)),
    "fused": (FUSED, ("call_tir",)),
    "gelu": (GELU, ("permute_dims", "matmul", "add", "nn.gelu")),
}


@pytest.mark.parametrize("name", list(SEEDS))
def test_seed_module_parses(name, sp):
    text, ops = SEEDS[name]
    sp.need_ops(*ops)
    mod = from_source(text)
    forward = mod["forward"]
    assert isinstance(forward, relax.Function)
    assert forward.attrs["global_symbol"] == "forward"
    assert forward.attrs["num_input"] == 1
    for f in mod.functions.values():
        if isinstance(f, tir.PrimFunc):
            assert "global_symbol" not in f.attrs  # @T.prim_func(private=True)
            assert f.attrs["tir.noalias"] is True


@pytest.mark.parametrize("name", list(SEEDS))
def test_seed_module_prints_back_identically(name, sp):
    text, ops = SEEDS[name]
    sp.need_ops(*ops)
    sp.need_printer()
    mod = from_source(text)
    assert mod.script() == text.rstrip("\n")
    sp.roundtrip(mod)


def test_origin_module_structure(sp):
    sp.need_ops("permute_dims", "matmul", "add", "nn.relu")
    f = from_source(ORIGIN)["forward"]
    x = f.params[0]
    n = x.struct_info.shape.values[0]
    assert isinstance(n, tir.Var) and n.name == "n" and n.dtype == "int64"
    (block,) = f.body.blocks
    assert isinstance(block, relax.DataflowBlock)
    names = [b.var.name_hint for b in block.bindings]
    assert names == ["permute_dims", "matmul", "add", "relu", "permute_dims1", "matmul1", "add1",
                     "gv"]
    assert all(isinstance(b.var, relax.DataflowVar) for b in block.bindings[:-1])
    gv = block.bindings[-1].var
    assert type(gv) is relax.Var and f.body.body is gv
    # one symbolic variable per function: the body's `n = T.int64()` is the signature's "n"
    assert block.bindings[1].var.struct_info.shape.values[0] is n
    assert f.ret_struct_info.shape.values[0] is n
    add = block.bindings[2].value
    assert isinstance(add, relax.Call) and add.op.name == "relax.add"
    assert add.args == (block.bindings[1].var, f.params[2])


def test_legalized_module_structure(sp):
    sp.need_ops("call_tir")
    mod = from_source(LEGALIZED)
    mm = mod["matmul"]
    assert [p.name for p in mm.params] == ["var_x", "permute_dims", "var_matmul"]
    assert all(p.dtype == "handle" for p in mm.params)
    x_buf = mm.buffer_map[mm.params[0]]
    n = x_buf.shape[0]
    assert isinstance(n, tir.Var) and n.dtype == "int64"
    assert mm.buffer_map[mm.params[2]].shape[0] is n
    root = mm.body
    assert isinstance(root, tir.BlockRealize) and root.block.name_hint == "root"
    loop = root.block.body
    loops = []
    while isinstance(loop, tir.For):
        loops.append(loop)
        loop = loop.body
    assert [lp.loop_var.name for lp in loops] == ["i0", "i1", "k"]
    assert loops[0].extent is n and loops[1].extent.value == 128
    block = loop.block
    assert block.name_hint == "matmul"
    assert [iv.iter_type for iv in block.iter_vars] == [
        tir.IterVar.DataPar, tir.IterVar.DataPar, tir.IterVar.CommReduce]
    assert list(loop.iter_values) == [lp.loop_var for lp in loops]
    assert isinstance(block.init, tir.BufferStore)
    assert [r.buffer.name for r in block.reads] == ["x", "permute_dims"]
    assert isinstance(block.body, tir.BufferStore)

    forward = mod["forward"]
    (dfb,) = forward.body.blocks
    first = dfb.bindings[0]
    assert first.value.op.name == "relax.call_tir"
    assert first.value.args[0] is mod.get_global_var("transpose")
    assert isinstance(first.value.args[0], GlobalVar)
    assert first.var.struct_info.dims() == (784, 128)


def test_fused_module_allocates_in_the_root_block(sp):
    sp.need_ops("call_tir")
    mod = from_source(FUSED)
    f = mod["fused_matmul_add_relu"]
    allocs = f.body.block.alloc_buffers
    assert [b.name for b in allocs] == ["matmul_intermediate", "T_add_intermediate"]
    assert isinstance(f.body.block.body, tir.SeqStmt) and len(f.body.block.body) == 3
    assert mod["transpose"].attrs["op_pattern"] == 2


def test_nn_frontend_module_round_trips(sp):
    """The tutorial's first step end to end: export an nn.Module, print, parse back."""
    sp.need_printer()
    sp.need_ops("permute_dims", "matmul", "add", "nn.relu")
    try:
        from minitvm.relax.frontend import nn
    except ImportError:
        pytest.skip("relax.frontend.nn is not there yet")

    class NNModule(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(784, 128)
            self.relu1 = nn.ReLU()
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            return self.fc2(self.relu1(self.fc1(x)))

    origin_mod, _ = NNModule().export_tvm(
        {"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}})
    text = origin_mod.script()
    assert text == ORIGIN.rstrip("\n")
    assert_structural_equal(from_source(text), origin_mod)
