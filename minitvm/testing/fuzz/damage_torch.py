"""Damaged PyTorch programs through the TorchScript importer (``relay.frontend.from_pytorch``)
and both torch.export importers (Relay's and Relax's ``from_exported_program``).

Seed programs (a conv / linear module with weights, an elementwise / reduction function of two
inputs) are traced (``torch.jit.trace``) or exported (``torch.export.export``) and damaged one
way each: ``input_infos`` with an entry too few or too many, an entry that is not a
``(name, shape)`` pair, a name that is not a string, a shape with a negative, fractional, text
or ``None`` dim, an unknown dtype; a graph node whose op is replaced by one no importer knows,
an argument dropped, or an argument replaced by a value of the wrong kind (a string, a tensor
of another rank); ``input_shapes`` of an unknown input, of the wrong rank or a negative dim.
A refusal must be a ``ValueError`` / ``TypeError`` / ``TVMError`` naming the input, the node or
the op; an accepted program is built and run and must give eager's outputs on inputs of the
shapes it was imported with (eager refusing them: ``lenient``). Needs ``torch``.
"""

from __future__ import annotations

import random

import numpy as np

from .damage import DamageCase, Lenient, Wrong

__all__ = ["cases", "seed_programs", "INFO_DAMAGES", "GRAPH_DAMAGES"]

_UNKNOWN_OP = "no_such_op"


def seed_programs() -> dict:
    """Name -> (module, example inputs as numpy arrays, their names)."""
    import torch

    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(2, 3, 3, padding=1)
            self.fc = torch.nn.Linear(3 * 4 * 4, 5)

        def forward(self, x):
            return torch.softmax(self.fc(torch.relu(self.conv(x)).flatten(1)), -1)

    class Mix(torch.nn.Module):
        def forward(self, a, b):
            s = torch.tanh(a) * b + 1.5
            return s.sum(dim=1, keepdim=True), torch.maximum(a, b).transpose(0, 1)

    rng = np.random.default_rng(0)
    return {"net": (Net().eval().requires_grad_(False), [rng.standard_normal((1, 2, 4, 4)).astype("float32")],
                    ["x"]),
            "mix": (Mix().eval(), [rng.standard_normal((2, 3)).astype("float32"),
                                   rng.standard_normal((2, 3)).astype("float32")], ["a", "b"])}


# ------------------------------------------------------------------ input_infos damages
def _infos(names, arrays):
    return [(n, (tuple(a.shape), str(a.dtype))) for n, a in zip(names, arrays)]


def _info_count(infos, rng):
    if rng.random() < 0.5 or len(infos) == 1:
        return infos + [("extra", ((2, 3), "float32"))], ("input_infos", "inputs")
    return infos[:-1], ("input_infos", "inputs")


def _info_shape(infos, rng):
    k = rng.randrange(len(infos))
    name, (shape, dtype) = infos[k]
    shape = list(shape)
    shape[rng.randrange(len(shape))] = rng.choice([-3, 2.5, "two", None, 1e30])
    infos[k] = (name, (tuple(shape), dtype))
    return infos, (name,)


def _info_dtype(infos, rng):
    k = rng.randrange(len(infos))
    name, (shape, _) = infos[k]
    infos[k] = (name, (shape, rng.choice(["float99", "tensor", "", "torch.floot32"])))
    return infos, (name, "dtype")


def _info_entry(infos, rng):
    k = rng.randrange(len(infos))
    name, (shape, dtype) = infos[k]
    infos[k] = rng.choice([name, (name,), (name, shape, dtype, 3), shape, None, 7])
    return infos, (name, "input_infos", f"entry {k}", f"input {k}")


def _info_name(infos, rng):
    k = rng.randrange(len(infos))
    _, spec = infos[k]
    infos[k] = (rng.choice([3, None, ("x",), b"x"]), spec)
    return infos, ("name", f"input {k}", f"entry {k}")


INFO_DAMAGES = {"count": _info_count, "shape": _info_shape, "dtype": _info_dtype,
                "entry": _info_entry, "name": _info_name}


# ------------------------------------------------------------------ graph damages (TorchScript)
def _ts_nodes(graph):
    return [n for n in graph.nodes() if n.kind().startswith("aten::")]


def _ts_unknown_op(graph, rng):
    node = rng.choice(_ts_nodes(graph))
    new = graph.create(f"aten::{_UNKNOWN_OP}", list(node.inputs()), node.outputsSize())
    new.insertBefore(node)
    for o, n in zip(node.outputs(), new.outputs()):
        n.setType(o.type())
        o.replaceAllUsesWith(n)
    node.destroy()
    return (_UNKNOWN_OP,)


def _ts_drop_arg(graph, rng):
    node = rng.choice([n for n in _ts_nodes(graph) if n.inputsSize()])
    node.removeInput(rng.randrange(node.inputsSize()))
    return (node.kind()[6:],)


def _ts_wrong_arg(graph, rng):
    node = rng.choice([n for n in _ts_nodes(graph) if n.inputsSize()])
    k = rng.randrange(node.inputsSize())
    c = graph.insertConstant(rng.choice(["abc", 2.5, [1, 2, 3], None]))
    c.node().moveBefore(node)
    node.replaceInput(k, c)
    return (node.kind()[6:],)


GRAPH_DAMAGES = {"unknown_op": _ts_unknown_op, "drop_arg": _ts_drop_arg,
                 "wrong_arg": _ts_wrong_arg}


# ------------------------------------------------------------------ torch.export damages
def _fx_nodes(ep):
    return [n for n in ep.graph_module.graph.nodes if n.op == "call_function"]


def _ep_unknown_op(ep, rng):
    import torch

    node = rng.choice(_fx_nodes(ep))
    node.target = rng.choice([torch.ops.aten.special_zeta.default,
                              torch.ops.aten._fft_c2c.default])
    return (str(node.target).split(".")[-2], node.name)


def _ep_drop_arg(ep, rng):
    node = rng.choice([n for n in _fx_nodes(ep) if n.args])
    k = rng.randrange(len(node.args))
    node.args = node.args[:k] + node.args[k + 1:]
    return (node.name, str(node.target).split(".")[-2])


def _ep_wrong_arg(ep, rng):
    node = rng.choice([n for n in _fx_nodes(ep) if n.args])
    k = rng.randrange(len(node.args))
    node.args = node.args[:k] + (rng.choice(["abc", 2.5, None, [1, "x"]]),) + node.args[k + 1:]
    return (node.name, str(node.target).split(".")[-2])


EXPORT_DAMAGES = {"unknown_op": _ep_unknown_op, "drop_arg": _ep_drop_arg,
                  "wrong_arg": _ep_wrong_arg}


# ------------------------------------------------------------------ running a case
def _eager(module, arrays):
    import torch

    with torch.no_grad():
        out = module(*[torch.from_numpy(a.copy()) for a in arrays])
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


def _compare(module, arrays, got):
    from .differential import compare_values

    try:
        want = _eager(module, arrays)
    except Exception as err:  # noqa: BLE001 - eager refuses what we accepted
        raise Lenient(f"eager refuses: {type(err).__name__}: {str(err)[:200]}") from None
    diff = compare_values(want, got, floor="float32")
    if diff:
        raise Wrong(diff)


def _relay_outputs(mod, params, feeds: list) -> list:
    from ...relay.build_module import build
    from ...runtime.graph_executor import GraphModule

    lib = build(mod, target="llvm", params=params)
    m = GraphModule(lib["default"]())
    for p, v in zip(mod["main"].params, feeds):
        m.set_input(p.name_hint, v)
    m.run()
    return [m.get_output(i).numpy() for i in range(m.get_num_outputs())]


def _feeds_for(infos, arrays):
    """Inputs of the shapes and dtypes ``infos`` (well formed by now) describe."""
    rng = np.random.default_rng(1)
    out = []
    for (_, (shape, dtype)), a in zip(infos, arrays):
        out.append(rng.standard_normal(tuple(shape)).astype(dtype) if a is not None else None)
    return out


def _torchscript_case(base: str, infos_damage: str | None, graph_damage: str | None, seed: int):
    def run():
        import torch

        from ...relay.frontend import from_pytorch

        rng = random.Random(seed)
        module, arrays, names = seed_programs()[base]
        example = tuple(torch.from_numpy(a) for a in arrays)
        infos = _infos(names, arrays)
        with torch.no_grad():
            if graph_damage is None:
                traced = torch.jit.trace(module, example)
            else:  # (a function: its weights are constants, its graph runs as edited)
                traced = torch.jit.trace(lambda *xs: module(*xs), example)
                GRAPH_DAMAGES[graph_damage](traced.graph, rng)
        if infos_damage is not None:
            infos, _ = INFO_DAMAGES[infos_damage](infos, rng)
        mod, params = from_pytorch(traced, infos)
        feeds = _feeds_for(infos, arrays)
        got = _relay_outputs(mod, params, feeds)
        if graph_damage is None:
            _compare(module, feeds, got)
        else:  # torch runs the damaged graph itself
            _compare(torch._C._create_function_from_graph("damaged", traced.graph), feeds, got)
    return run


def _export_case(base: str, dialect: str, damage: str | None, shapes_damage: bool, seed: int):
    def run():
        import torch

        rng = random.Random(seed)
        module, arrays, names = seed_programs()[base]
        ep = torch.export.export(module, tuple(torch.from_numpy(a) for a in arrays))
        if damage is not None:
            EXPORT_DAMAGES[damage](ep, rng)
            ep.graph_module.recompile()
        if dialect == "relay":
            from ...relay.frontend.pytorch import from_exported_program

            shapes = None
            feeds = arrays
            if shapes_damage:
                ph = [n.name for n in ep.graph_module.graph.nodes if n.op == "placeholder"][-1]
                shapes = rng.choice([{"nope": (1, 2)}, {ph: (2,)}, {ph: (-1, 3)},
                                     {ph: ("a", 3)}, {ph: (2, 3, 4, 5, 6)}])
            mod, params = from_exported_program(ep, input_shapes=shapes)
            feeds = [np.random.default_rng(1).standard_normal(
                [int(d) for d in p.checked_type.shape]).astype(p.checked_type.dtype)
                for p in mod["main"].params]
            got = _relay_outputs(mod, params, feeds)
        else:
            from ...relax import VirtualMachine
            from ...relax import build as relax_build
            from ...relax.frontend.torch import from_exported_program
            from ...runtime import cpu
            from .differential import flatten

            mod = from_exported_program(ep)
            vm = VirtualMachine(relax_build(mod, target="llvm"), cpu())
            feeds = arrays
            got = flatten(vm["main"](*[a.copy() for a in feeds]))
        _compare(module if damage is None else ep.module(), feeds, got)
    return run


def cases(seed: int, n: int) -> list[DamageCase]:
    """``n`` damaged programs: TorchScript ``input_infos`` and graphs, torch.export graphs
    (either dialect) and Relay's ``input_shapes``."""
    rng = random.Random(seed)
    out = []
    bases = ["net", "mix"]
    for i in range(n):
        base = rng.choice(bases)
        s = rng.randrange(2 ** 30)
        kind = rng.choice(["infos", "ts_graph", "export", "export", "shapes"])
        if kind == "infos":
            d = rng.choice(sorted(INFO_DAMAGES))
            expect = INFO_DAMAGES[d](_infos(*reversed(_names_arrays(base))), random.Random(s))[1]
            out.append(DamageCase(f"torch/input_infos/{d}", f"torch#{i} {base} infos {d}",
                                  _torchscript_case(base, d, None, s), expect))
        elif kind == "ts_graph":
            d = rng.choice(sorted(GRAPH_DAMAGES))
            out.append(DamageCase(f"torch/torchscript/{d}", f"torch#{i} {base} graph {d}",
                                  _torchscript_case(base, None, d, s),
                                  ("aten::", _UNKNOWN_OP, "node", "%")))
        elif kind == "export":
            d = rng.choice(sorted(EXPORT_DAMAGES))
            dialect = rng.choice(["relay", "relax"])
            out.append(DamageCase(f"torch/export_{dialect}/{d}",
                                  f"torch#{i} {base} export {dialect} {d}",
                                  _export_case(base, dialect, d, False, s),
                                  ("node", r"re:%\w+")))
        else:
            out.append(DamageCase("torch/export_relay/input_shapes",
                                  f"torch#{i} {base} input_shapes",
                                  _export_case(base, "relay", None, True, s),
                                  ("input_shapes", "a", "b", "x", "nope")))
    return out


def _names_arrays(base: str):
    """(names, shapes as zero arrays) of a seed program without building it (cheap)."""
    shapes = {"net": (["x"], [(1, 2, 4, 4)]), "mix": (["a", "b"], [(2, 3), (2, 3)])}[base]
    return [np.zeros(s, "float32") for s in shapes[1]], shapes[0]
