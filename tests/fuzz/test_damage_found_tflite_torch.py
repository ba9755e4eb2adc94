"""Regression tests for the TFLite and PyTorch findings of the damage fuzzer (stop 66): each
damaged artefact gets a clear error naming the tensor, operator, input or node."""

import numpy as np
import pytest

from minitvm.relay.frontend.common import ImportError_


def _tflite(damage=None):
    pytest.importorskip("tflite", reason="the damaged artefacts are TFLite flatbuffers")
    from minitvm.testing.fuzz.damage_tflite import _finish, seed_builders

    b = seed_builders()["quantized"]()
    if damage:
        damage(b)
    return _finish(b)


def _from_tflite(data):
    from minitvm.relay.frontend import from_tflite

    return from_tflite(data)


def test_tflite_truncated_file_is_a_malformed_flatbuffer():
    """A file cut short read past its end deep in the converters (``struct.error``)."""
    data = _tflite()
    with pytest.raises(ImportError_, match="malformed TFLite flatbuffer"):
        _from_tflite(data[:len(data) - 200])


def test_tflite_out_of_range_indices_name_the_operator():
    """A tensor index past the subgraph's tensors read garbage (``struct.error``); -7 (not
    the -1 of an absent optional input) became ``None`` and a Relay type error."""
    def bad_input(b):
        b.ops[0][1][1] = -7

    with pytest.raises(ImportError_, match=r"ADD \(subgraph 0 operator 0\) input 1: tensor "
                                           r"index -7"):
        _from_tflite(_tflite(bad_input))

    def bad_opcode(b):
        b.ops[1] = (9, *b.ops[1][1:])

    with pytest.raises(ImportError_, match="operator 1: opcode index 9 is out of range"):
        _from_tflite(_tflite(bad_opcode))


def test_tflite_buffer_not_matching_its_shape_names_the_tensor():
    """numpy's "buffer size must be a multiple of element size", naming nothing."""
    def short(b):
        t = next(i for i, t in enumerate(b.tensors) if t[0] == "bias")
        b.buffers[b.tensors[t][3]] = b.buffers[b.tensors[t][3]][:7]

    with pytest.raises(ImportError_, match=r"'bias'.*holds 7 bytes.*needs 16"):
        _from_tflite(_tflite(short))


@pytest.mark.parametrize("scale,zp,match", [(0.0, 3, "scale"), (float("nan"), 3, "scale"),
                                            (0.05, 300, "zero point")])
def test_tflite_unusable_quantization_names_the_tensor(scale, zp, match):
    """A zero / NaN scale or an int8 zero point of 300 imported into inf / NaN answers."""
    def bad(b):
        b.quant[b.inputs[0]] = (np.array([scale], "float32"), np.array([zp]), 0)

    with pytest.raises(ImportError_, match=f"'x'.*{match}"):
        _from_tflite(_tflite(bad))


def _traced_mix():
    torch = pytest.importorskip("torch", reason="the damaged artefacts are PyTorch programs")

    def mix(a, b):
        return torch.tanh(a) * b + 1.5

    x = torch.ones(2, 3)
    return torch, torch.jit.trace(mix, (x, x))


def test_torchscript_none_operand_is_refused_naming_the_node():
    """``aten::mul(None, b)`` (a damaged graph) imported the None as a NaN constant."""
    torch, traced = _traced_mix()
    from minitvm.relay.frontend import from_pytorch

    g = traced.graph
    mul = next(n for n in g.nodes() if n.kind() == "aten::mul")
    none = g.insertConstant(None)
    none.node().moveBefore(mul)
    mul.replaceInput(0, none)
    with pytest.raises(ImportError_, match=r"aten::mul \(output %\w+\).*NoneType"):
        from_pytorch(traced, [("a", ((2, 3), "float32")), ("b", ((2, 3), "float32"))])


@pytest.mark.parametrize("infos,match", [
    ([("a", (2, -3)), ("b", (2, 3))], r"input_infos\[0\] \('a'\): shape"),
    ([("a", (2, 3)), ("b", ((2, 3), "float99"))], r"input_infos\[1\] \('b'\): dtype"),
    ([("a", (2, 3)), "b"], r"input_infos\[1\] = 'b'"),
    ([(3, (2, 3)), ("b", (2, 3))], r"input_infos\[0\]: the input name 3")])
def test_torchscript_malformed_input_infos_name_the_entry(infos, match):
    """A negative dim reached Relay's type check naming no input; a bare name was unpacked."""
    _, traced = _traced_mix()
    from minitvm.relay.frontend import from_pytorch

    with pytest.raises((TypeError, ValueError), match=match):
        from_pytorch(traced, infos)


def _damaged_export():
    torch = pytest.importorskip("torch", reason="the damaged artefacts are PyTorch programs")

    class M(torch.nn.Module):
        def forward(self, a):
            return torch.relu(a).transpose(0, 1)

    ep = torch.export.export(M(), (torch.ones(2, 3),))
    node = next(n for n in ep.graph_module.graph.nodes if n.name == "transpose")
    node.args = node.args[:2]  # (dim1 dropped)
    ep.graph_module.recompile()
    return ep


@pytest.mark.parametrize("dialect", ["relay", "relax"])
def test_export_torch_cannot_decompose_names_the_node(dialect):
    """torch's own RuntimeError from ``run_decompositions`` escaped both importers."""
    ep = _damaged_export()
    if dialect == "relay":
        from minitvm.relay.frontend.pytorch import from_exported_program
    else:
        from minitvm.relax.frontend.torch import from_exported_program
    with pytest.raises(ValueError, match=r"(?s)cannot run the exported program.*%transpose"):
        from_exported_program(ep)


def test_unsupported_ops_name_their_nodes():
    """The unsupported-operator errors listed the op only."""
    torch = pytest.importorskip("torch", reason="the programs are PyTorch programs")
    from minitvm.relax.frontend.torch import from_exported_program as relax_import
    from minitvm.relax.frontend.torch.context import OpNotImplemented as RelaxOpNotImplemented
    from minitvm.relay.frontend import OpNotImplemented, from_pytorch
    from minitvm.relay.frontend.pytorch import from_exported_program

    class M(torch.nn.Module):
        def forward(self, x, y):
            return torch.special.zeta(x, y) + 1

    x = torch.rand(2, 3) + 1
    ep = torch.export.export(M(), (x, x))
    with pytest.raises(OpNotImplemented, match=r"special_zeta \[node special_zeta\]"):
        from_exported_program(ep)
    with pytest.raises(RelaxOpNotImplemented, match=r"special_zeta.default \(x1\) \[at nodes: "
                                                    r"special_zeta.default: special_zeta\]"):
        relax_import(ep)
    traced = torch.jit.trace(M(), (x, x))
    with pytest.raises(OpNotImplemented, match=r"aten::special_zeta \[node %\w+\]"):
        from_pytorch(traced, [("x", (2, 3)), ("y", (2, 3))])


def test_torchscript_failure_folding_a_result_names_the_node():
    """``aten::linear`` given a list for its weight built an expression holding the list;
    folding it, outside the converter's error naming, raised a bare "unhashable type"."""
    torch = pytest.importorskip("torch", reason="the damaged artefacts are PyTorch programs")
    from minitvm.relay.frontend import from_pytorch

    w, b = torch.ones(4, 3), torch.zeros(4)
    traced = torch.jit.trace(lambda x: torch.nn.functional.linear(x, w, b), (torch.ones(2, 3),))
    g = traced.graph
    linear = next(n for n in g.nodes() if n.kind() == "aten::linear")
    lst = g.insertConstant([1, 2, 3])
    lst.node().moveBefore(linear)
    linear.replaceInput(1, lst)
    with pytest.raises(ImportError_, match=r"aten::linear \(output %\w+\): cannot convert"):
        from_pytorch(traced, [("x", (2, 3))])
